// Collateral posted on chain and never reported (an outsider's finding). The contract holds it, so the
// service must: the chain follower applies every CollateralPosted, a posting mined before the job was registered comes
// with the registration, and a settlement or liquidation mined over a posting the follower has not counted yet is
// recorded with what the contract paid (the request waits for the follower), never with the service's smaller view.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fund, fundedAccount, fundedJob, signedIn, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

const JOB_SETTLED = 2
const JOB_FAILED = 3

let h: Harness
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  // At most 2 postings brought by a registration (the default is 1,000): the refusal of a third is tested below.
  ({ h, lender, operator } = await lenderHarness(t, { config: { leaseTtlSeconds: 120, collateralPostingsPerJobMax: 2 } }))
})

const follower = () => h.app.service.followers.get(h.network.slug)!
const onChainJob = async (jobId: string) =>
  (await new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.operator.privateKey)).publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)],
  })) as { status: number; collateral: bigint }
const collateralOf = async (jobId: string) => (await operator.get(`/credit/jobs/${jobId}`)).body.collateralAtomic as string

/** The borrower posts `amountAtomic` of collateral on chain itself and tells the service nothing. */
async function postUnreported(borrower: ReturnType<typeof privateKeyToAccount>, jobId: string, amountAtomic: bigint): Promise<`0x${string}`> {
  await fund(h.devnet, h.network, borrower.address, amountAtomic)
  return new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, amountAtomic)
}

t.test('the follower counts unreported collateral; the settlement pays the borrower what the service recorded', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_uc_settle', receivableAtomic: usdc(200) })
  const postingTx = await postUnreported(borrower, 'job_uc_settle', usdc(50))
  await until(async () => (await collateralOf('job_uc_settle')) === usdc(50).toString(), 20_000, 'the follower to count the collateral')

  const late = await borrowerClient.post('/credit/jobs/job_uc_settle/collateral', { amountAtomic: usdc(50).toString(), txHash: postingTx })
  t.equal(late.status, 201, 'a report after the follower answers the same posting')
  t.match(late.body, { amountAtomic: usdc(50).toString(), totalCollateralAtomic: usdc(50).toString() }, 'counted once')

  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_uc_settle', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const before = await new ChainAgent(h.network, borrower).balanceOf(USDC, borrower.address)
  const completed = await jobClientApi.post('/credit/jobs/job_uc_settle/complete', {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  const owed = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic)
  const toBorrower = usdc(250) - owed
  t.equal(completed.body.toBorrowerAtomic, toBorrower.toString(), 'escrow and collateral less what the advance owed')
  t.equal((await new ChainAgent(h.network, borrower).balanceOf(USDC, borrower.address)) - before, toBorrower, 'what the contract paid the borrower')
  await expectReconciled(t, operator, h.network.slug)
})

/**
 * A job funded for a fresh borrower that posts `postings` of collateral on chain before registering it; returns once the
 * follower has passed the last posting (while the service knew no such job), with the registration's answer.
 */
async function registeredAfterPostings(jobId: string, postings: readonly bigint[]) {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const fundingTx = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(300), borrower.address)
  const postingTxs: `0x${string}`[] = []
  for (const amount of postings) postingTxs.push(await postUnreported(borrower, jobId, amount))
  const posted = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: postingTxs.at(-1) as `0x${string}` })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= posted.blockNumber, 20_000, 'the follower past the postings')
  const borrowerClient = await signedIn(h.url, borrower)
  const created = await borrowerClient.post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(300).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
  })
  return { borrowerClient, postingTxs, created }
}

t.test('collateral posted before the job was registered comes with the registration', async (t) => {
  const { borrowerClient, postingTxs, created } = await registeredAfterPostings('job_uc_early', [usdc(40)])
  t.equal(created.status, 201, JSON.stringify(created.body))
  t.equal(created.body.collateralAtomic, usdc(40).toString(), 'the job holds what the contract holds for it')
  const reported = await borrowerClient.post('/credit/jobs/job_uc_early/collateral', { amountAtomic: usdc(40).toString(), txHash: postingTxs[0] })
  t.match(reported, { status: 201, body: { totalCollateralAtomic: usdc(40).toString() } }, 'its report answers the same posting')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a registration that would bring more postings than collateralPostingsPerJobMax is refused, and nothing changes', async (t) => {
  const { borrowerClient, created } = await registeredAfterPostings('job_uc_many', [usdc(1), usdc(1), usdc(1)])
  t.match(created, { status: 422, body: { code: 'too_many_collateral_postings' } })
  t.equal((await borrowerClient.get('/credit/jobs/job_uc_many')).status, 404, 'no job was created')
})

t.test('a liquidation mined over collateral the follower has not counted yet records what the contract recovered from it', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_uc_liquidate', receivableAtomic: usdc(200) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_uc_liquidate', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  await follower().stop()
  await postUnreported(borrower, 'job_uc_liquidate', usdc(30))
  t.equal((await jobClientApi.post('/credit/jobs/job_uc_liquidate/fail', { reason: 'not_delivered' })).status, 200)
  t.equal((await onChainJob('job_uc_liquidate')).status, JOB_FAILED)
  t.equal(await collateralOf('job_uc_liquidate'), '0', 'the service has not seen the posting')

  const liquidating = lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  await until(async () => (await onChainJob('job_uc_liquidate')).collateral === 0n, 20_000, 'the liquidation on chain')
  follower().start()
  const liquidated = await liquidating
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  t.match((liquidated.body.steps as Json[]).find((s) => s['step'] === 'collateral'), { amountAtomic: usdc(30).toString() }, 'the contract\'s recovery from the collateral')
  t.equal(await collateralOf('job_uc_liquidate'), usdc(30).toString())
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a settlement mined over collateral the follower has not counted yet pays the borrower what the receipt says', async (t) => {
  const { borrower, jobClientApi } = await fundedJob(h, { jobId: 'job_uc_complete', receivableAtomic: usdc(200) })
  await follower().stop()
  await postUnreported(borrower, 'job_uc_complete', usdc(25))
  const completing = jobClientApi.post('/credit/jobs/job_uc_complete/complete', {})
  await until(async () => (await onChainJob('job_uc_complete')).status === JOB_SETTLED, 20_000, 'the settlement on chain')
  follower().start()
  const completed = await completing
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  t.equal(completed.body.toBorrowerAtomic, usdc(225).toString(), 'escrow and the uncounted collateral, as the contract paid')
  await expectReconciled(t, operator, h.network.slug)
})

/**
 * A job funded for a fresh borrower that posts `amountAtomic` of collateral on chain before the job is registered, then
 * registered as a release before registrations read earlier postings did it (the job without that collateral), once
 * the follower has passed the posting (it applied the posting to no job).
 */
async function registeredByOldRelease(jobId: string, amountAtomic: bigint) {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const fundingTx = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(300), borrower.address)
  const postingTx = await postUnreported(borrower, jobId, amountAtomic)
  const posted = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: postingTx })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= posted.blockNumber, 20_000, 'the follower past the posting')
  const service = h.app.service
  await service.run(null, () => service.engine.createJob({
    jobId, jobKey: jobKey(h.network, jobId), client: client.address, borrower: borrower.address, network: h.network.slug, asset: USDC, receivableAtomic: usdc(300),
    dueAtMs: Date.now() + 24 * 3600 * 1000, funding: { network: h.network.slug, txHash: fundingTx, logIndex: 0 }, caller: borrower.address,
  }, service.now()), () => [])
  return { borrower, client, posted, postingTx }
}

t.test('a settlement over collateral an older release never counted (posted before the registration) backfills the postings', async (t) => {
  const jobId = 'job_uc_old'
  const { client, posted, postingTx } = await registeredByOldRelease(jobId, usdc(40))
  t.equal(await collateralOf(jobId), '0', 'the service never counted the posting')

  const completed = await (await signedIn(h.url, client)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  t.equal(completed.body.toBorrowerAtomic, usdc(340).toString(), 'the escrow and the backfilled collateral, as the contract paid')
  t.equal(await collateralOf(jobId), usdc(40).toString(), 'the job holds the posting now')
  const postingLog = posted.logs.find((log) => log.address.toLowerCase() === h.network.creditContract.toLowerCase())
  t.equal(h.app.service.store.proofs.get(`${h.network.slug}:${postingTx.toLowerCase()}:${postingLog?.logIndex}`)?.usedBy, `collateral:${jobId}`, 'counted with its proof')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('the backfill bounds only the postings it counts: more counted ones than collateralPostingsPerJobMax do not refuse it', async (t) => {
  const jobId = 'job_uc_old_many'
  const { borrower, client } = await registeredByOldRelease(jobId, usdc(40))
  // Two more postings after the registration, which the follower counts: three on chain, over the bound of 2.
  for (const amount of [usdc(1), usdc(2)]) await postUnreported(borrower, jobId, amount)
  await until(async () => (await collateralOf(jobId)) === usdc(3).toString(), 20_000, 'the follower to count the later postings')

  const completed = await (await signedIn(h.url, client)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  t.equal(completed.body.toBorrowerAtomic, usdc(343).toString(), 'the escrow and all the collateral, as the contract paid')
  t.equal(await collateralOf(jobId), usdc(43).toString(), 'the old posting is counted, the later ones once')
  await expectReconciled(t, operator, h.network.slug)
})
