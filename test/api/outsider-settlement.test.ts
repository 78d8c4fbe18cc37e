// An outsider against the money path, over HTTP and the contracts only: credit granted against a job must be
// repayable from that job. The job's capacity counted principal only (80% of the receivable plus the whole
// collateral), so with collateral a fee of a few percent made what the job's advances owe exceed its escrow and
// collateral: the completion was then refused (409 settlement_underfunded, "liquidate instead"), a liquidation is
// refused until the due time and never takes the escrow, and the client's only way out was to fail the job and take
// its escrow back. Capacity now counts the maximum fee with the amount: such a request is declined, and one that fits
// is repaid by the completion.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, startHarness, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor } from './fixtures/api.ts'

let h: Harness
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: 120 } })
  lender = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(5000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('an advance at 5% against a job with collateral: its fee counts against the capacity, and the job completes and repays it', async (t) => {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_outsider_settle', receivableAtomic: usdc(1000) })
  await fund(h.devnet, h.network, borrower.address, usdc(4000))
  const posted = await new ChainAgent(h.network, borrower).postCollateral('job_outsider_settle', USDC, usdc(4000))
  t.equal((await borrowerClient.post('/credit/jobs/job_outsider_settle/collateral', { amountAtomic: usdc(4000).toString(), txHash: posted })).status, 201)

  // Capacity 800 + 4,000 = 4,800; the fee at 500 bps is 240: the advance would owe 5,040 against 5,000 held.
  const over = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_settle', usdc(4800), usdc(240)))
  t.equal(over.body.decision, 'declined')
  t.same(over.body.reasons.map((r: { code: string }) => r.code), ['over_capacity'], 'the amount fits the capacity, the amount and its maximum fee do not')

  // 4,560 + 240 = 4,800 fits: the advance owes at most 4,800 against 5,000 held.
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_settle', usdc(4560), usdc(240)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  t.equal((await borrowerClient.post('/credit/match', { offerId })).body.lease?.lender, lender.account.address)
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned((await actionFor(lender, offerId))['transaction'])
  const advance = (await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })).body
  const completed = await jobClientApi.post('/credit/jobs/job_outsider_settle/complete', {})
  t.equal(completed.status, 200, 'the client completes the job', { body: completed.body })
  t.equal((await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state, 'repaid', 'the lender is repaid from the escrow and collateral')
})
