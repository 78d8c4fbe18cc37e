// A job's client takes its escrow back on chain (CreditFacilityV2.reclaimJob; an outsider's finding: a borrower that
// never registers its job, or a service that stops, left the escrow locked forever). The service learns it from the
// chain follower: a registered job ends failed (escrow_reclaimed), its offers declined, its leased one closing and
// then declined at no cost to the lender, and its borrower is neither suspended nor penalised; reconciliation agrees.
// A registration refuses a job that is no longer open on chain, and one whose client could reclaim it before its
// credit ends.
import t from 'tap'
import { createTestClient, http, type PrivateKeyAccount } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, signedIn, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectProblem, expectReconciled, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim } from './fixtures/reclaim.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

const JOB_RECLAIMED = 5

let h: Harness
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  // Offers wait long enough not to expire on the service's clock while a test runs.
  ({ h, lender, operator } = await lenderHarness(t, { config: { offerTtlSeconds: 3600 } }))
})

const follower = () => h.app.service.followers.get(h.network.slug)!
const chain = () => networkChain(h.network)
const onChainStatus = async (jobId: string) =>
  (await new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.operator.privateKey)).publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)],
  })).status

/** The client moves the chain past the job's reclaim time (anvil) and reclaims it, calling the contract directly. */
async function reclaim(client: PrivateKeyAccount, jobId: string): Promise<`0x${string}`> {
  await pastReclaimDelay(h.network)
  const receipt = await sendReclaim(h.network, client, jobId)
  if (receipt.status !== 'success') throw new Error(`reclaimJob ${receipt.transactionHash} reverted`)
  return receipt.transactionHash
}

t.test('a registered job reclaimed on chain ends failed (escrow_reclaimed) through the follower; nobody is penalised', async (t) => {
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId: 'job_rc_main', receivableAtomic: usdc(200), dueInSeconds: 3600 })
  const other = await fundedJob(h, { jobId: 'job_rc_other', receivableAtomic: usdc(200), dueInSeconds: 3600, borrower })

  // One offer leased to the lender (never paid), one waiting (no lender takes a fee that small).
  const leasedDecision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_rc_main', usdc(50), usdc(5)))
  const leasedOfferId = leasedDecision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId: leasedOfferId })
  t.equal(match.body.lease?.lender, lender.account.address, 'the first offer is leased')
  const waiting = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_rc_main', usdc(20), 1n))
  const waitingOfferId = waiting.body.offer.offerId as string
  t.equal((await borrowerClient.get(`/credit/offers/${waitingOfferId}`)).body.state, 'offered', 'the second offer waits')
  const lenderBefore = structuredClone(h.app.service.engine.getLender(lender.account.address)!)
  const borrowerBefore = h.app.service.engine.getBorrower(borrower.address)

  // The reclaim and the chain time past the lease's deadline reach the follower in one batch: its events come first.
  await follower().stop()
  const reclaimTx = await reclaim(jobClient, 'job_rc_main')
  t.equal(await onChainStatus('job_rc_main'), JOB_RECLAIMED)
  follower().start()
  await until(async () => (await borrowerClient.get('/credit/jobs/job_rc_main')).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')

  const job = (await borrowerClient.get('/credit/jobs/job_rc_main')).body
  t.equal(job.state, 'failed', 'the job ended')
  t.equal(job.committedAtomic, '0', 'no capacity is held on it')
  t.match((await borrowerClient.get(`/credit/offers/${waitingOfferId}`)).body, { state: 'declined', endReason: 'source_closed' }, 'its waiting offer is declined')
  const leased = (await borrowerClient.get(`/credit/offers/${leasedOfferId}`)).body
  t.equal(leased.state, 'declined', 'its leased offer is declined once the lease ended unpaid')
  t.equal(leased.endReason, 'source_closed', 'the job is no longer open')
  t.equal(h.app.service.store.proofs.get(`${h.network.slug}:${reclaimTx.toLowerCase()}:0`)?.usedBy, 'reclaim:job_rc_main', 'the JobReclaimed is recorded as the proof of the job\'s end')

  const borrowerAfter = h.app.service.engine.getBorrower(borrower.address)
  t.equal(borrowerAfter?.suspended, false, 'the borrower is not suspended')
  t.equal(borrowerAfter?.reputationBps, borrowerBefore?.reputationBps, 'nor penalised: nobody defaulted')
  const lenderAfter = structuredClone(h.app.service.engine.getLender(lender.account.address)!)
  t.equal(lenderAfter.reliabilityBps, lenderBefore.reliabilityBps, 'the lender whose lease could not be paid takes no penalty')
  t.same(lenderAfter.recentLeaseOutcomes, lenderBefore.recentLeaseOutcomes, 'no missed order is counted')
  const again = await other.borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_rc_other', usdc(10), usdc(1)))
  // The reclaim moved the chain's clock 10 days on, past the other job's credit end (it was due in an hour): a lease on
  // it would end after its credit end on chain, so that is the only reason it is declined; nothing is refused for the
  // borrower's standing (a job due later cannot be registered while the chain is that far ahead: the reclaim window).
  const reasons = (again.body.reasons as { code: string }[] | undefined ?? []).map((r) => r.code)
  t.same(reasons, ['job_due_too_soon'], 'the borrower is refused nothing on its other job (its credit end is past on chain)', { body: again.body })
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a registration of a reclaimed job is refused, and nothing changes; the unregistered reclaim is no difference', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const fundingTx = await new ChainAgent(h.network, client).fundJob('job_rc_gone', USDC, usdc(100), borrower.address)
  await reclaim(client, 'job_rc_gone')
  const borrowerClient = await signedIn(h.url, borrower)
  const created = await borrowerClient.post('/credit/jobs', {
    jobId: 'job_rc_gone', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(Date.now() + 3600_000).toISOString(), fundingTxHash: fundingTx,
  })
  expectProblem(t, created, 409, 'job_not_open_on_chain', 'the escrow is gone')
  t.equal((await borrowerClient.get('/credit/jobs/job_rc_gone')).status, 404, 'no job was created')
  t.equal(h.app.service.store.proofs.get(`${h.network.slug}:${fundingTx.toLowerCase()}:0`), undefined, 'its funding proof is not used')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a registration whose due time (plus a lease, on the chain\'s clock) passes the reclaim time is refused; one within it is taken', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  // The chain's clock ahead of the service's by more than a lease (the earlier tests' reclaims moved it too).
  await createTestClient({ chain: chain(), transport: http(h.network.rpcUrl), mode: 'anvil' }).increaseTime({ seconds: 2 * h.app.service.config.leaseTtlSeconds })
  const fundingTx = await new ChainAgent(h.network, client).fundJob('job_rc_late', USDC, usdc(100), borrower.address)
  const receipt = await new ChainAgent(h.network, client).publicClient.getTransactionReceipt({ hash: fundingTx })
  const fundedAtMs = Number((await new ChainAgent(h.network, client).publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp) * 1000
  const reclaimableAtMs = fundedAtMs + Number(devnetReclaimDelaySeconds) * 1000
  const borrowerClient = await signedIn(h.url, borrower)
  const body = (dueAtMs: number) => ({
    jobId: 'job_rc_late', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(dueAtMs).toISOString(), fundingTxHash: fundingTx,
  })
  const leaseMs = h.app.service.config.leaseTtlSeconds * 1000
  // Offers and leases run on the chain's clock, so a lease signed at the due time by the service's clock ends that much later on chain. The chain
  // time is read in whole seconds and moves on meanwhile: a margin of seconds on either side of the bound.
  const head = await new ChainAgent(h.network, client).publicClient.getBlock({ blockTag: 'latest' })
  const chainAheadMs = Number(head.timestamp) * 1000 - h.app.service.now()
  t.ok(chainAheadMs > leaseMs, 'the chain\'s clock is ahead of the service\'s by more than a lease')
  const marginMs = 5000
  expectProblem(t, await borrowerClient.post('/credit/jobs', body(reclaimableAtMs)), 422, 'job_reclaimable_before_due', 'due at the reclaim time')
  expectProblem(t, await borrowerClient.post('/credit/jobs', body(reclaimableAtMs - leaseMs + 1000)), 422, 'job_reclaimable_before_due', 'a lease signed at the due time would outlive the escrow')
  expectProblem(
    t, await borrowerClient.post('/credit/jobs', body(reclaimableAtMs - leaseMs - chainAheadMs + marginMs)), 422, 'job_reclaimable_before_due',
    'a lease signed at the due time by the service\'s clock would outlive the escrow on the chain\'s',
  )
  t.equal((await borrowerClient.get('/credit/jobs/job_rc_late')).status, 404, 'no job was created')
  const created = await borrowerClient.post('/credit/jobs', body(reclaimableAtMs - leaseMs - chainAheadMs - marginMs))
  t.equal(created.status, 201, 'due a lease before the reclaim time on the chain\'s clock', { body: created.body })
})

t.test('a client cannot fail its job as reclaimed: /fail refuses the reserved reason before anything is sent on chain', async (t) => {
  const { borrower, jobClientApi } = await fundedJob(h, { jobId: 'job_rc_fake', receivableAtomic: usdc(100), dueInSeconds: 3600 })
  const faked = await jobClientApi.post('/credit/jobs/job_rc_fake/fail', { reason: 'escrow_reclaimed' })
  expectProblem(t, faked, 400, 'failure_reason_reserved', 'only the chain follower records a reclaim')
  t.equal(await onChainStatus('job_rc_fake'), 1, 'the job is still open on chain')
  t.equal((await jobClientApi.get('/credit/jobs/job_rc_fake')).body.state, 'funded', 'and in the service')
  t.equal(h.app.service.engine.getBorrower(borrower.address)?.suspended ?? false, false, 'its borrower is not suspended')
  const failed = await jobClientApi.post('/credit/jobs/job_rc_fake/fail', { reason: 'not_delivered' })
  t.equal(failed.status, 200, 'another reason fails it', { body: failed.body })
  t.equal((await jobClientApi.get('/credit/jobs/job_rc_fake')).body.failureReason, 'not_delivered')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a reclaim mined and applied by the follower while a registration runs is refused (409), not registered live', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const fundingTx = await new ChainAgent(h.network, client).fundJob('job_rc_race', USDC, usdc(100), borrower.address)
  // The registration's first read of the job (at the head: open, reclaimable after its credit ends) returns only once
  // the client has reclaimed it and the follower has applied that block, while the job was unknown to the engine.
  const publicClient = h.app.service.clientsOf(h.network.slug).publicClient
  const readContract = publicClient.readContract
  let raced = false
  publicClient.readContract = (async (args: Parameters<typeof readContract>[0]) => {
    const result = await readContract(args)
    if (!raced && args.functionName === 'getJob' && args.args?.[0] === jobKey(h.network, 'job_rc_race')) {
      raced = true
      const reclaimTx = await reclaim(client, 'job_rc_race')
      const { blockNumber } = await new ChainAgent(h.network, client).publicClient.getTransactionReceipt({ hash: reclaimTx })
      await until(async () => (h.app.service.appliedChainBlocks.get(h.network.slug) ?? 0n) >= blockNumber, 20_000, 'the follower to pass the reclaim')
    }
    return result
  }) as typeof readContract
  t.teardown(() => {
    publicClient.readContract = readContract
  })
  const borrowerClient = await signedIn(h.url, borrower)
  const created = await borrowerClient.post('/credit/jobs', {
    jobId: 'job_rc_race', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(Date.now() + 3600_000).toISOString(), fundingTxHash: fundingTx,
  })
  t.ok(raced, 'the reclaim was mined during the registration')
  expectProblem(t, created, 409, 'job_not_open_on_chain', 'the escrow went while the job was registered')
  t.equal((await borrowerClient.get('/credit/jobs/job_rc_race')).status, 404, 'no job was created')
  t.equal(h.app.service.store.proofs.get(`${h.network.slug}:${fundingTx.toLowerCase()}:0`), undefined, 'its funding proof is not used')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a reclaim releasing collateral the job never counted (an older release\'s registration) counts it: the job and the reconciliation agree with the contract', async (t) => {
  const jobId = 'job_rc_uncounted'
  const borrower = await fundedAccount(h.devnet, h.network, usdc(40))
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const fundingTx = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(100), borrower.address)
  const postingTx = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(40))
  const posted = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: postingTx })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= posted.blockNumber, 20_000, 'the follower past the posting')
  // Registered as a release before registrations read earlier postings did it: the job without its 40 of collateral.
  const service = h.app.service
  await service.run(null, () => service.engine.createJob({
    jobId, jobKey: jobKey(h.network, jobId), client: client.address, borrower: borrower.address, network: h.network.slug, asset: USDC, receivableAtomic: usdc(100),
    dueAtMs: service.now() + 3600_000, funding: { network: h.network.slug, txHash: fundingTx, logIndex: 0 }, caller: borrower.address,
  }, service.now()), () => [])
  t.equal(service.view('job', jobId)?.collateralAtomic, 0n, 'the job counts no collateral')

  await reclaim(client, jobId)
  await until(() => service.view('job', jobId)?.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal(service.view('job', jobId)?.collateralAtomic, usdc(40), 'the 40 the contract released to the borrower is counted')
  await expectReconciled(t, operator, h.network.slug)
})
