// An operator transaction mined over a repayment the service has not counted yet. Anyone may repay an advance on chain
// without reporting it; the chain follower counts it at the network's confirmations. A completion or liquidation sent
// before then acts on what the contract holds owed (less than the service thinks): the transaction is mined and moves
// the tokens, so the service must record it, never answer that the contract refused and record nothing (it did, and
// the ledger then disagreed with the chain until someone happened to retry). The follower is held back here, as
// test/api/closing-offers.test.ts does, so that "not counted yet" is certain rather than a race.
import t from 'tap'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fund, fundedAccount, fundedJob, signedIn, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectProblem, expectReconciled, fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

const JOB_SETTLED = 2
const JOB_CLOSED = 4

let h: Harness
let lender: ReadyLender
let operator: CreditClient
let payer: CreditClient
let payerAgent: ChainAgent
t.before(async () => {
  // A request waits 6 s (not the default 10) for the follower to count what was mined before its transaction: the
  // third test waits it out for its 503; the first two start the follower within it, which is past the transaction's
  // block at the devnet's next block (a second at most, at 1 confirmation).
  ({ h, lender, operator } = await lenderHarness(t, { config: { leaseTtlSeconds: 120, followerCatchUpMs: 6_000 } }))
  const account = await fundedAccount(h.devnet, h.network, usdc(1000))
  payer = await signedIn(h.url, account)
  payerAgent = new ChainAgent(h.network, account)
})

const follower = () => h.app.service.followers.get(h.network.slug)!
const contract = () => ({ address: h.network.creditContract, abi: creditFacilityV2Abi }) as const
const jobStatus = async (jobId: string) => Number(((await payerAgent.publicClient.readContract({ ...contract(), functionName: 'getJob', args: [jobKey(h.network, jobId)] })) as { status: number }).status)

/** Repays `amountAtomic` of the advance on chain, from the payer, without reporting it. */
async function repayUnreported(advanceId: string, amountAtomic: bigint): Promise<void> {
  const served = await payer.get(`/credit/advances/${advanceId}/repay-transactions?amountAtomic=${amountAtomic}&from=${payerAgent.account.address}`)
  if (served.status !== 200) throw new Error(`repay-transactions: ${served.status} ${JSON.stringify(served.body)}`)
  await payerAgent.sendAll(served.body.transactions)
}

t.test('a completion over an uncounted partial repayment is recorded with the contract\'s amounts', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_uncounted_complete', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_uncounted_complete', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  await follower().stop()
  await repayUnreported(advance.advanceId, usdc(30))

  const completing = jobClientApi.post('/credit/jobs/job_uncounted_complete/complete', {})
  // The settlement is mined against the contract's figures; only then does the follower count the repayment.
  await until(async () => (await jobStatus('job_uncounted_complete')) === JOB_SETTLED, 20_000, 'the settlement on chain')
  follower().start()
  const completed = await completing
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  const owedAtSettlement = BigInt(advance.lenderOwedAtomic) - usdc(30)
  t.match(completed.body, { jobId: 'job_uncounted_complete', toLendersAtomic: owedAtSettlement.toString(), toReserveAtomic: advance.reserveOwedAtomic }, 'the contract\'s amounts')
  t.equal((await payer.get('/credit/jobs/job_uncounted_complete')).body.state, 'completed')
  const settled = (await payer.get(`/credit/advances/${advance.advanceId}`)).body
  t.match(settled, { state: 'repaid', lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
  t.equal(settled.repayments.filter((r: Json) => r['kind'] === 'repaid').length, 1, 'the unreported repayment counted once')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a liquidation over an uncounted partial repayment is recorded with the contract\'s amounts', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_uncounted_liquidate', receivableAtomic: usdc(1000) })
  await fund(h.devnet, h.network, borrower.address, usdc(30))
  const posting = await borrowerClient.get(`/credit/jobs/job_uncounted_liquidate/collateral-transactions?amountAtomic=${usdc(30)}`)
  const posted = await new ChainAgent(h.network, borrower).sendAll(posting.body.transactions)
  t.equal((await borrowerClient.post('/credit/jobs/job_uncounted_liquidate/collateral', { amountAtomic: usdc(30).toString(), txHash: posted[posted.length - 1] })).status, 201)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_uncounted_liquidate', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  t.equal((await jobClientApi.post('/credit/jobs/job_uncounted_liquidate/fail', { reason: 'not_delivered' })).status, 200)
  await follower().stop()
  // 80 of the 101 owed is repaid: the collateral covers the rest, so the contract closes the job.
  await repayUnreported(advance.advanceId, usdc(80))

  const liquidating = lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  await until(async () => (await jobStatus('job_uncounted_liquidate')) === JOB_CLOSED, 20_000, 'the liquidation on chain')
  follower().start()
  const liquidated = await liquidating
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  const owedAtLiquidation = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic) - usdc(80)
  t.match(liquidated.body, { owedAtomic: owedAtLiquidation.toString(), recoveredAtomic: owedAtLiquidation.toString(), shortfallAtomic: '0' }, 'all of it from the collateral')
  t.match((await payer.get(`/credit/advances/${advance.advanceId}`)).body, { state: 'liquidated', lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
  const passport = (await payer.get(`/passport/${borrower.address}`)).body as Json[]
  t.same(passport.map((e) => e['kind']), ['job_failed', 'advance_defaulted'], 'no shortfall recorded against the borrower')
  await expectReconciled(t, operator, h.network.slug)
})

t.test('while the follower cannot count it: 503 chain_unavailable, nothing recorded; a retry records the mined settlement', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_uncounted_retry', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_uncounted_retry', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  await follower().stop()
  await repayUnreported(advance.advanceId, usdc(30))
  const unavailable = await jobClientApi.post('/credit/jobs/job_uncounted_retry/complete', {})
  expectProblem(t, unavailable, 503, 'chain_unavailable', 'mined, not countable yet')
  t.match(unavailable.body.detail, /is mined/, 'says the settlement is mined')
  t.equal(await jobStatus('job_uncounted_retry'), JOB_SETTLED, 'the chain settled the job')
  t.equal((await payer.get('/credit/jobs/job_uncounted_retry')).body.state, 'active', 'the service recorded nothing yet')

  follower().start()
  await until(async () => (await payer.get(`/credit/advances/${advance.advanceId}`)).body.repayments.length === 1, 20_000, 'the follower to count the repayment')
  const retried = await jobClientApi.post('/credit/jobs/job_uncounted_retry/complete', {})
  t.equal(retried.status, 200, JSON.stringify(retried.body))
  t.equal((await payer.get('/credit/jobs/job_uncounted_retry')).body.state, 'completed')
  await expectReconciled(t, operator, h.network.slug)
})
