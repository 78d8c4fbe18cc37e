// Issue 9 over HTTP against the devnet: a job failed while one of its offers is leased. The lease authorization the
// service signed stays payable until its deadline, so the offer is `closing`, not declined: a payment mined before
// the failJob (learned by the follower after it) funds the offer, and its advance is the failed job's, defaulted and
// liquidated like the others; a lease nobody pays ends with its deadline on chain time, without a penalty.
import t from 'tap'
import { erc20Abi } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, expectDocumented, openApiDocument, until, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: 60 } })
  doc = await openApiDocument(h.url)
  lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const chain = () => new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))

async function leasedOnJob(jobId: string) {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(200) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(40), usdc(2)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId as string
  const match = await job.borrowerClient.post('/credit/match', { offerId })
  if (match.body.lease?.lender !== lender.account.address) throw new Error(JSON.stringify(match.body))
  return { ...job, offerId, lease: match.body.lease as Json }
}

t.test('paid before failJob, seen by the follower after it: the closing offer is funded, its advance defaulted and liquidated', async (t) => {
  const { jobClientApi, offerId } = await leasedOnJob('job_closing_paid')
  // The follower is held back: the payment is mined before the failure and learned after it.
  const follower = h.app.service.followers.get(h.network.slug)!
  await follower.stop()
  const token = chain().token(USDC)
  const supplierBefore = await chain().publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [h.devnet.accounts.supplier.address] })
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned((await actionFor(lender, offerId))['transaction'])

  const failed = await jobClientApi.post('/credit/jobs/job_closing_paid/fail', { reason: 'not_delivered' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  t.same(failed.body.declinedOfferIds, [offerId])
  const closing = await lender.client.get(`/credit/offers/${offerId}`)
  t.equal(closing.body.state, 'closing', 'withdrawn under a live lease: closing, not declined')
  expectDocumented(t, doc, 'get', '/credit/offers/{offerId}', closing)
  t.equal((await lender.client.get('/credit/jobs/job_closing_paid')).body.state, 'defaulted', 'the failed job is not final while its offer is closing')

  follower.start()
  await until(async () => (await lender.client.get(`/credit/offers/${offerId}`)).body.state === 'funded', 20_000, 'the follower to fund the closing offer')
  const advanceId = (await lender.client.get(`/credit/offers/${offerId}`)).body.advanceId as string
  const advance = await lender.client.get(`/credit/advances/${advanceId}`)
  t.match(advance.body, { offerId, state: 'defaulted', principalAtomic: usdc(40).toString(), payment: { txHash: paid.toLowerCase() } }, 'the failed job\'s advance, defaulted')
  const supplierAfter = await chain().publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [h.devnet.accounts.supplier.address] })
  t.equal(supplierAfter - supplierBefore, usdc(40), 'the supplier got the principal on chain')
  const onChain = await chain().publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.body.advanceKey] }) as { lenderOwed: bigint; reserveOwed: bigint }
  t.equal((onChain.lenderOwed + onChain.reserveOwed).toString(), (BigInt(advance.body.lenderOwedAtomic) + BigInt(advance.body.reserveOwedAtomic)).toString(), 'the service owes what the contract says')

  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const liquidated = await operator.post(`/credit/advances/${advanceId}/liquidate`, {})
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  const job = await chain().publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, 'job_closing_paid')] }) as { status: number }
  t.equal(job.status, 4, 'the job is closed on chain: nothing of it is unresolved')
  t.equal((await lender.client.get('/credit/jobs/job_closing_paid')).body.state, 'failed', 'and final in the service')
})

t.test('a closing offer nobody pays ends declined when the chain passes its lease deadline, and the lender is not penalised', async (t) => {
  const { jobClientApi, offerId, lease } = await leasedOnJob('job_closing_unpaid')
  const before = structuredClone(h.app.service.engine.getLender(lender.account.address)!)
  const leaseIdsInActions = async () => ((await lender.client.get(`/lenders/${lender.account.address}/actions`)).body as Array<{ lease?: { leaseId: string } }>).map((a) => a.lease?.leaseId)
  t.ok((await leaseIdsInActions()).includes(lease['leaseId'] as string), 'while the job is open, the lease is the lender\'s action')
  const failed = await jobClientApi.post('/credit/jobs/job_closing_unpaid/fail', { reason: 'cancelled' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  t.equal((await lender.client.get(`/credit/offers/${offerId}`)).body.state, 'closing')
  t.notOk((await leaseIdsInActions()).includes(lease['leaseId'] as string), 'after failJob the contract refuses the payment (JobNotOpen): the lease is no longer offered as an action')
  await advanceChainTime(h, Math.ceil((Date.parse(lease['expiresAt']) - Date.now()) / 1000) + 5)
  await until(async () => (await lender.client.get(`/credit/offers/${offerId}`)).body.state === 'declined', 20_000, 'the closing offer to end')
  const offer = (await lender.client.get(`/credit/offers/${offerId}`)).body
  t.match(offer, { state: 'declined', endReason: 'borrower_suspended' })
  const after = structuredClone(h.app.service.engine.getLender(lender.account.address)!)
  t.equal(after.leasesExpired, before.leasesExpired, 'no missed lease counted')
  t.equal(after.reliabilityBps, before.reliabilityBps, 'no reliability penalty')
  t.equal((await lender.client.get('/credit/jobs/job_closing_unpaid')).body.state, 'failed')
})
