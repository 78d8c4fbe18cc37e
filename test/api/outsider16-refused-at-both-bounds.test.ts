// An outsider's probe (outsider16): a request refused by another bound after the live-offers bound let it through.
// The borrower holds `liveOffersPerBorrowerMax` (2) offers on a backing source, past their TTL, and its job already has
// `advancesPerJobMax` (2) open advances. Its request on that job would end the stale offers (the live-offers bound)
// and is then refused 409 job_advances_limit: a refused request changes nothing, so the stale offers stay as they were
// (for the ticker or the borrower's next request that is answered), and nothing is written.
// It fails if the stale ends were committed with the job bound's refusal (or applied in memory and not rolled back).
// Then the finding (fixed in src/engine/engine.ts requestCredit): below the live-offers bound, an offer of the borrower
// past its TTL still counted toward the job's bound, so its request on the job was refused 409 job_advances_limit
// until the ticker ended that offer (before the fix the third test failed: 409 and the offer still `offered`). Now,
// at either bound, the borrower's own stale offers do not count: the request ends them with its answer.
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { backingSourceBody, expectProblem, fundAdvance } from './fixtures/api.ts'

let now = Date.now()
let h: Harness
t.before(async () => {
  h = await startHarness({ clock: () => now, config: { offerTtlSeconds: 120, engine: { liveOffersPerBorrowerMax: 2, advancesPerJobMax: 2 } } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a request refused job_advances_limit leaves the stale offers it would have ended', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const jobId = 'job_o16_bound'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  for (let i = 0; i < 2; i++) await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(5), maximumFeeAtomic: usdc(1) })
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o16-other-source', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  // Two offers on the backing source the lender does not take (fee under its ask): the borrower is at the bound.
  const offers: string[] = []
  for (let i = 0; i < 2; i++) {
    const reply = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'o16-other-source', usdc(5), 1n))
    t.equal(reply.body.decision, 'approved', JSON.stringify(reply.body))
    offers.push(reply.body.offer.offerId as string)
  }
  expectProblem(t, await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'o16-other-source', usdc(5), 1n)), 409, 'live_offers_limit', 'at the bound')
  now = Math.max(now + 121_000, await advanceChainTime(h, 121))

  const commits = h.app.service.store.stats().commits
  expectProblem(t, await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(5), usdc(1))), 409, 'job_advances_limit', 'the job holds its bound of open advances')
  t.equal(h.app.service.store.stats().commits, commits, 'the refusal wrote nothing')
  const reader = new CreditClient(h.url)
  for (const id of offers) t.equal((await reader.get(`/credit/offers/${id}`)).body.state, 'offered', `${id} was not ended by the refused request`)
  // A restart shows the same: nothing of the refusal was kept.
  await h.restart()
  const after = new CreditClient(h.url)
  for (const id of offers) t.equal((await after.get(`/credit/offers/${id}`)).body.state, 'offered', `${id} still offered after a restart`)
})

/**
 * A job with one open advance (of a fresh lender), and `count` offers of its borrower on a backing source that no
 * lender takes (fee 1 atomic), then the chain past their TTL.
 */
async function oneOpenAdvanceAndStaleOffers(jobId: string, sourceId: string, count: number) {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(5), maximumFeeAtomic: usdc(1) })
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId, valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(JSON.stringify(source.body))
  const offers: string[] = []
  for (let i = 0; i < count; i++) offers.push((await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, sourceId, usdc(5), 1n))).body.offer.offerId as string)
  now = Math.max(now + 121_000, await advanceChainTime(h, 121))
  return { borrower, borrowerClient, offers }
}

t.test('stale offers do not count toward the job\'s bound either: the request ends them and is approved', async (t) => {
  const jobId = 'job_o16_one_open'
  const { borrower, borrowerClient, offers } = await oneOpenAdvanceAndStaleOffers(jobId, 'o16-other-2', 2)
  // One open advance on the job, two live offers past their TTL: 1 + 0 live < 2.
  const reply = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(5), usdc(1)))
  t.equal(reply.status, 200, `the request is answered: ${reply.status} ${JSON.stringify(reply.body)}`)
  t.equal(reply.body.decision, 'approved')
  const reader = new CreditClient(h.url)
  for (const id of offers) t.equal((await reader.get(`/credit/offers/${id}`)).body.state, 'expired', `${id} ended by the request`)
})

t.test('below the live-offers bound, an offer past its TTL does not count toward the job\'s bound: the request ends it', async (t) => {
  const jobId = 'job_o16_below'
  const { borrower, borrowerClient, offers: [stale] } = await oneOpenAdvanceAndStaleOffers(jobId, 'o16-other-3', 1)
  // One open advance on the job, one live offer past its TTL (the borrower is below its live-offers bound).
  const reply = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(5), usdc(1)))
  t.equal(reply.status, 200, `not refused job_advances_limit for an offer past its TTL: ${reply.status} ${JSON.stringify(reply.body)}`)
  t.equal(reply.body.decision, 'approved')
  t.equal((await new CreditClient(h.url).get(`/credit/offers/${stale}`)).body.state, 'expired', 'the stale offer ended with the answer')
  // Now the job's bound holds: one open advance and the new live offer.
  expectProblem(t, await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(5), usdc(1))), 409, 'job_advances_limit', 'the job\'s bound, with live offers')
})
