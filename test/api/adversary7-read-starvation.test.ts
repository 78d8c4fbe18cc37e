// The chain read budget (src/service/chain-read-budget.ts) bounds the reads strangers can make the service do, per
// network, and one wallet to a quarter of it. But wallets are free (SIWE needs no funds): four of them reporting random
// transaction hashes spend the whole network's budget, and then every honest proof on the network answered 503
// chain_reads_exhausted for as long as they kept at it: a job's registration (which only its report brings in: the chain
// follower does not apply JobFunded), and the report of a repayment the follower had already counted. The follower
// reads every event of the credit contract anyway; a transaction it read is now proved from its facts, with no read
// of the request's own (src/service/observed-facts.ts). Fails on the old code: both honest requests answer 503.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectProblem, fundAdvance, randomHash, until } from './fixtures/api.ts'

// The smallest rate (a read a second for the network, one per four seconds for a wallet), so that the budget the
// strangers spend stays spent while the honest requests are made.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('strangers\' random hashes spend the network\'s chain reads; proofs of what the follower read are still served', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_starved_a', receivableAtomic: usdc(500), borrower: await fundedAccount(h.devnet, h.network, usdc(300)) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_starved_a', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const repaid = await new ChainAgent(h.network, borrower).repay(advance.advanceKey, USDC, usdc(40))

  // Another client funds a job for another borrower, who will register it while the strangers are at it.
  const victim = await fundedAccount(h.devnet, h.network, 0n)
  const victimClient = await fundedAccount(h.devnet, h.network, usdc(200))
  const chain = new ChainAgent(h.network, victimClient)
  const fundingTx = await chain.fundJob('job_starved_b', USDC, usdc(200), victim.address)
  const funded = await chain.publicClient.getTransactionReceipt({ hash: fundingTx })
  await until(() => (h.app.service.appliedChainBlocks.get(h.network.slug) ?? -1n) >= funded.blockNumber, 20_000, 'the follower past the funding')
  await until(async () => (await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.repayments.length === 1, 20_000, 'the follower counting the repayment')
  const victimApi = await signedIn(h.url, victim)

  // Four fresh wallets, each reporting random funding hashes past its share, at once.
  const strangers = await Promise.all(Array.from({ length: WALLET_SHARE_DIVISOR }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  const randomJob = (i: number) => ({
    jobId: `job_random_${i}`, network: h.network.slug, asset: USDC, agent: victim.address, receivableAtomic: usdc(1).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: randomHash(),
  })
  const attack = await Promise.all(strangers.flatMap((s, w) => Array.from({ length: WALLET_SHARE + 1 }, (_, i) => s.post('/credit/jobs', randomJob(w * 10 + i)))))
  const refused = attack.filter((r) => r.status !== 422)
  for (const r of attack.filter((r) => r.status === 422)) expectProblem(t, r, 422, 'proof_not_found', 'a stranger\'s random hash, read')
  for (const r of refused) expectProblem(t, r, 503, 'chain_reads_exhausted', 'a stranger past its share')
  // Their shares together are the network's burst: some of them found the network's budget spent, not their own.
  t.ok(refused.some((r) => /are used up/.test(r.body.detail)), 'the strangers spent the network\'s whole budget')

  const [registration, repayment] = await Promise.all([
    victimApi.post('/credit/jobs', {
      jobId: 'job_starved_b', network: h.network.slug, asset: USDC, agent: victim.address, receivableAtomic: usdc(200).toString(),
      dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
    }),
    borrowerClient.post(`/credit/advances/${advance.advanceId}/repay`, { txHash: repaid }),
  ])
  t.equal(registration.status, 201, `the job whose funding the follower read registers: ${JSON.stringify(registration.body)}`)
  t.match(registration.body, { jobId: 'job_starved_b', borrower: victim.address })
  t.equal(repayment.status, 200, `the report of a repayment the follower counted answers its receipt: ${JSON.stringify(repayment.body)}`)
  t.match(repayment.body, { advanceId: advance.advanceId, txHash: repaid, lenderAmountAtomic: usdc(40).toString() })

  // A hash the follower never read still draws on the budget, spent as it is.
  const unseen = await victimApi.post('/credit/jobs', randomJob(99))
  expectProblem(t, unseen, 503, 'chain_reads_exhausted', 'a transaction the follower did not read')
})

t.test('a transaction the follower read proves only the facts it holds', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = new ChainAgent(h.network, await fundedAccount(h.devnet, h.network, usdc(100)))
  const fundingTx = await client.fundJob('job_starved_c', USDC, usdc(100), borrower.address)
  const funded = await client.publicClient.getTransactionReceipt({ hash: fundingTx })
  await until(() => (h.app.service.appliedChainBlocks.get(h.network.slug) ?? -1n) >= funded.blockNumber, 20_000, 'the follower past the funding')
  const api = await signedIn(h.url, borrower)
  const body = (jobId: string) => ({
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
  })
  // The funding under another job's id: the follower's facts are matched as a receipt's are.
  expectProblem(t, await api.post('/credit/jobs', body('job_starved_d')), 422, 'proof_wrong_arguments', 'another job\'s funding')
  const reply = await api.post('/credit/jobs', body('job_starved_c'))
  t.equal(reply.status, 201, JSON.stringify(reply.body))
})
