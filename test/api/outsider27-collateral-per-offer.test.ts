// An outsider's finding (outsider27, test/api/outsider27-scripts/collateral-counted-per-offer.ts): a job's collateral
// was counted whole in the risk band of every request on the job. A fresh borrower (nothing repaid, so its receivable
// does not count) posted 10 of collateral and asked offers of 5: each was band A (coverage 20000 bps) however many
// live offers and advances already leaned on the same 10, so a band-A-only lender lent 20 on it; the party's client
// failed the job (its escrow back at once) and the lender's liquidations recovered the 10. Now a request's band reads
// what the job's live offers and open advances leave of it. Fails without the fix: the second and third offers are band A, and the lender takes the second.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('a job\'s collateral backs band A once: an offer on the rest of it is not band A', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100), riskBands: ['A'] })
  const jobId = 'job_o27_collateral_once'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  await fund(h.devnet, h.network, borrower.address, usdc(10))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(10))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(10).toString(), txHash: posting })).status, 201)

  // An advance of 4 at band A (10 of collateral for 4), then a live offer of 3: what they hold is not there for more.
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(4), maximumFeeAtomic: usdc(1) })
  t.equal(advance.state, 'active', 'the first advance: band A, lent')
  const second = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(3), usdc(1)))
  t.equal(second.body.decision, 'approved')
  t.equal(second.body.offer.riskBand, 'B', 'the 4.04 the advance owes leaves 5.96 for 3: 19866 bps, band B (A before)')
  const match = await borrowerClient.post('/credit/match', { offerId: second.body.offer.offerId })
  t.equal(match.body.lease, null, 'the band-A lender does not take it')
  const third = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(2), 0n))
  t.equal(third.body.offer?.riskBand, 'C', 'the live offer of 3 (and its maximum fee of 1) leaves 1.96 for 2: band C (A before)')
})
