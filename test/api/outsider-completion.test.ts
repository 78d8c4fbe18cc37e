// An outsider against the money path, over HTTP and the contracts only: a borrower must not be able to keep its job's
// client (or an operator) from completing the job, and so keep the escrow from repaying the job's lenders. An offer
// that no lender holds (no live lease, so no authorization anyone could still pay under) is withdrawn by the
// completion instead of refusing it; the borrower has no way to withdraw an offer itself, and may always ask again.
import t from 'tap'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'

let h: Harness
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: 120 } })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('an offer no lender holds does not block the job\'s completion: the escrow repays the lender', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_outsider_stall', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_outsider_stall', amountAtomic: usdc(500), maximumFeeAtomic: usdc(50) })

  // The borrower asks for the least advance (1 USDC) at a fee no lender takes: the offer waits, leased to nobody, for
  // the offer TTL; the borrower can ask again whenever it ends.
  const stall = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_stall', usdc(1), 0n))
  t.equal(stall.body.decision, 'approved')
  const match = await borrowerClient.post('/credit/match', { offerId: stall.body.offer.offerId })
  t.equal(match.body.lease, null, 'no lender takes it')

  const completed = await jobClientApi.post('/credit/jobs/job_outsider_stall/complete', {})
  t.equal(completed.status, 200, 'the client completes the job', { body: completed.body })
  t.equal((await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state, 'repaid', 'the lender is repaid from the escrow')
  const offer = (await borrowerClient.get(`/credit/offers/${stall.body.offer.offerId}`)).body
  t.match(offer, { state: 'declined', endReason: 'source_closed' }, 'the waiting offer ended with the job')
})
