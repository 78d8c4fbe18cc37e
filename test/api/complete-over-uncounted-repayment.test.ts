// A completion over a full repayment the service has not counted yet. The borrower repays its only advance in full on
// chain, unreported; before the chain follower counts it (held back here, as test/api/uncounted-repayment.test.ts
// does), the client completes the job. settleJob must name exactly the advances the contract holds owing, so the
// service's call naming the repaid one is refused by the contract (AdvanceCountMismatch) and nothing is mined. That
// is a wait for the follower, not a conflict: 503 chain_unavailable, and the retry once the follower counted the
// repayment settles the job. Before, the answer was 409 contract_advance_count_mismatch (an outsider's finding: an
// agent reading 409 does not retry). Fails on the code before (409).
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedJob, readyLender, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'

let h: Harness
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: 120 } })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const follower = () => h.app.service.followers.get(h.network.slug)!

t.test('a completion over an uncounted full repayment waits for the follower: 503, then the retry settles', async (t) => {
  const jobId = 'job_complete_over_uncounted_repay'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  await follower().stop()
  await fund(h.devnet, h.network, borrower.address, usdc(200))
  const served = await borrowerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions`)
  t.equal(served.status, 200)
  await new ChainAgent(h.network, borrower).sendAll(served.body.transactions)

  const early = await jobClientApi.post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(early.status, 503, JSON.stringify(early.body))
  t.equal(early.body.code, 'chain_unavailable')
  t.match(early.body.detail, /not counted yet/)
  t.equal((await borrowerClient.get(`/credit/jobs/${jobId}`)).body.state, 'active', 'nothing recorded: the job is still open')

  follower().start()
  await until(async () => (await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state === 'repaid', 20_000, 'the follower counts the repayment')
  const settled = await jobClientApi.post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(settled.status, 200, JSON.stringify(settled.body))
  t.equal((await borrowerClient.get(`/credit/jobs/${jobId}`)).body.state, 'completed')
})
