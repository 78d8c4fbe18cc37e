// The chain read budget (src/service/chain-read-budget.ts) bounds the reads strangers can make the service do, per
// network, and one wallet to a quarter of it. But wallets are free (SIWE needs no funds): four of them reporting random
// transaction hashes spend the whole network's budget, and then every honest proof on the network answered 503
// chain_reads_exhausted for as long as they kept at it: a job's registration (which only its report brings in: the chain
// follower does not apply JobFunded), and the report of a repayment the follower had already counted. The follower
// reads every event of the credit contract anyway; a transaction it read is now proved from its facts, with no read
// of the request's own (src/service/observed-facts.ts). Fails on the old code: both honest requests answer 503.
import t from 'tap'
import { createTestClient, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Test } from 'tap'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { actionFor, expectProblem, fundAdvance, postFrom, randomHash, until } from './fixtures/api.ts'

// The smallest rate (a read a second for the network, one per four seconds for a wallet), so that the budget the
// strangers spend stays spent while the honest requests are made.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

// The service's clock, which the budget refills by: real time, held still while a test needs the budget to stay as
// its requests left it (on a loaded machine a second between them gives a read back). Moved on by `REFILL_MS` before
// each test: the honest agents all come from the test's own address, whose part of the budget
// (CLIENT_PART_DIVISOR, 2 reads) the tests before spent; moved on, every part and share is whole again.
let heldAtMs: number | undefined
let aheadMs = 0
// The test's connection a trusted proxy: each stranger comes from a client address of its own (x-forwarded-for).
const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] }, clock: () => heldAtMs ?? Date.now() + aheadMs })
/** Longer than any share, part or network budget takes to fill up again (burst 8 at 1 a second; 2 at a quarter). */
const REFILL_MS = 10_000
t.beforeEach(() => {
  aheadMs += REFILL_MS
})
t.teardown(() => h.stop())

/** Runs `steps` with the service's clock held still: no read of the budget comes back meanwhile. */
async function clockHeld<T>(steps: () => Promise<T>): Promise<T> {
  heldAtMs = Date.now() + aheadMs
  try {
    return await steps()
  } finally {
    heldAtMs = undefined
  }
}

t.test('strangers\' random hashes spend the network\'s chain reads; proofs of what the follower read are still served', async (t) => {
  const borrowerAccount = await fundedAccount(h.devnet, h.network, usdc(300))
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_starved_a', receivableAtomic: usdc(500), borrower: borrowerAccount })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_starved_a', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const repaid = await new ChainAgent(h.network, borrower).repay(advance.advanceKey, USDC, usdc(40))

  // Another client funds a job for another borrower, who will register it while the strangers are at it.
  const victim = await fundedSeen('job_starved_b', usdc(200))
  await until(async () => (await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.repayments.length === 1, 20_000, 'the follower counting the repayment')
  await clockHeld(async () => {
    await spendBudget(t, victim.borrower.address)

    const [registration, repayment] = await Promise.all([
      victim.api.post('/credit/jobs', victim.body('job_starved_b')),
      borrowerClient.post(`/credit/advances/${advance.advanceId}/repay`, { txHash: repaid }),
    ])
    t.equal(registration.status, 201, `the job whose funding the follower read registers: ${JSON.stringify(registration.body)}`)
    t.match(registration.body, { jobId: 'job_starved_b', borrower: victim.borrower.address })
    t.equal(repayment.status, 200, `the report of a repayment the follower counted answers its receipt: ${JSON.stringify(repayment.body)}`)
    t.match(repayment.body, { advanceId: advance.advanceId, txHash: repaid, lenderAmountAtomic: usdc(40).toString() })

    // A hash the follower never read still draws on the budget, spent as it is.
    const unseen = await victim.api.post('/credit/jobs', { ...victim.body('job_starved_unseen'), fundingTxHash: randomHash() })
    expectProblem(t, unseen, 503, 'chain_reads_exhausted', 'a transaction the follower did not read')
  })
})

/** A job funded on chain for a fresh borrower, once the follower has read its funding (its registration reads nothing). */
async function fundedSeen(jobId: string, receivableAtomic: bigint) {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const clientAccount = await fundedAccount(h.devnet, h.network, receivableAtomic)
  const client = new ChainAgent(h.network, clientAccount)
  const fundingTx = await client.fundJob(jobId, USDC, receivableAtomic, borrower.address)
  const funded = await client.publicClient.getTransactionReceipt({ hash: fundingTx })
  await until(() => (h.app.service.appliedChainBlocks.get(h.network.slug) ?? -1n) >= funded.blockNumber, 20_000, 'the follower past the funding')
  const api = await signedIn(h.url, borrower)
  const body = (id: string) => ({
    jobId: id, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: receivableAtomic.toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
  })
  return { borrower, clientAccount, api, body }
}

/**
 * Fresh wallets reporting random funding hashes, each past its share, at once: the network's budget is spent. One
 * wallet more than the shares the budget holds, so that the network refuses some whatever was left of it before. Each
 * from a client address of its own: one address takes at most its part of the budget (CLIENT_PART_DIVISOR).
 */
async function spendBudget(t: Test, agent: Address) {
  const strangers = await Promise.all(Array.from({ length: WALLET_SHARE_DIVISOR + 1 }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  const attack = await Promise.all(strangers.flatMap((s, w) => Array.from({ length: WALLET_SHARE + 1 }, (_, i) => postFrom(s, `198.51.100.${w + 1}`, '/credit/jobs', {
    jobId: `job_random_${w}_${i}`, network: h.network.slug, asset: USDC, agent, receivableAtomic: usdc(1).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: randomHash(),
  }))))
  t.ok(attack.some((r) => r.status === 503 && /are used up/.test(r.body.detail)), 'the strangers spent the network\'s whole budget')
}

t.test('a transaction the follower read proves only the facts it holds', async (t) => {
  const { api, body } = await fundedSeen('job_starved_c', usdc(100))
  // The funding under another job's id: the follower's facts are matched as a receipt's are.
  expectProblem(t, await api.post('/credit/jobs', body('job_starved_d')), 422, 'proof_wrong_arguments', 'another job\'s funding')
  const reply = await api.post('/credit/jobs', body('job_starved_c'))
  t.equal(reply.status, 201, JSON.stringify(reply.body))
})

t.test('a timely payment whose report the spent budget refused is counted by the follower, at no cost to its lender', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(500) })
  const { borrower, api, body } = await fundedSeen('job_starved_e', usdc(300))
  t.equal((await api.post('/credit/jobs', body('job_starved_e'))).status, 201)
  const decision = await api.post('/credit/request', creditRequest(h, borrower.address, 'job_starved_e', usdc(50), usdc(2)))
  const offerId = decision.body.offer.offerId as string
  const match = await api.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address, 'the cheapest lender is leased')
  const before = structuredClone(h.app.service.engine.getLender(lender.account.address)!)

  // The payment is mined in time while the follower is held back, so its report can only be proved by a chain read.
  const follower = h.app.service.followers.get(h.network.slug)!
  await follower.stop()
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned((await actionFor(lender, offerId))['transaction'])
  await clockHeld(async () => {
    await spendBudget(t, borrower.address)
    const report = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
    expectProblem(t, report, 503, 'chain_reads_exhausted', 'the lender\'s report')
  })

  // The chain passes the lease's deadline before the follower reads on: the payment comes first in its batch.
  const chain = networkChain(h.network)
  const test = createTestClient({ chain, transport: http(h.network.rpcUrl), mode: 'anvil' })
  await test.increaseTime({ seconds: 3600 })
  await test.mine({ blocks: 1 })
  follower.start()
  await until(async () => (await api.get(`/credit/offers/${offerId}`)).body.state === 'funded', 20_000, 'the follower to fund the offer')
  const after = h.app.service.engine.getLender(lender.account.address)!
  t.equal(after.leasesExpired, before.leasesExpired, 'no missed lease')
  t.equal(after.reliabilityBps, before.reliabilityBps + 100, 'the lease counts as paid in time')
  const advanceId = (await api.get(`/credit/offers/${offerId}`)).body.advanceId as string
  t.match((await api.get(`/credit/advances/${advanceId}`)).body, { payment: { txHash: paid.toLowerCase() }, principalAtomic: usdc(50).toString() })
})

t.test('a registration failing after its chain reads, its funding proof free, repeats them only within the caller\'s own share', async (t) => {
  // The client of a job it funded registers it again and again with a consent the borrower never signed: each attempt
  // reads the borrower's wallet on chain (getCode, then its ERC-1271 answer) and fails, the funding proof unused.
  const { clientAccount, body } = await fundedSeen('job_starved_f', usdc(10))
  const clientApi = await signedIn(h.url, clientAccount)
  const forged = `0x${'11'.repeat(64)}1b`
  const replies = await clockHeld(() => Promise.all(Array.from({ length: WALLET_SHARE + 3 }, () => clientApi.post('/credit/jobs', { ...body('job_starved_f'), borrowerConsent: forged }))))
  const read = replies.filter((r) => r.status === 403)
  for (const r of read) expectProblem(t, r, 403, 'borrower_consent_invalid', 'within the share')
  t.equal(read.length, WALLET_SHARE, 'the client\'s own share of reads, and no more')
  for (const r of replies.filter((r) => r.status !== 403)) expectProblem(t, r, 503, 'chain_reads_exhausted', 'past its share')
})
