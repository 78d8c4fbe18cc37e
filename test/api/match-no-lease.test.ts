// POST /credit/match's answer says why it made no lease (noLease, outsider24's finding: lease null named no reason, so
// an agent could not tell a risk band no lender accepts from a fee above its maximum, a duration nobody lends for, or an
// empty book); a leased answer has no noLease.
import t from 'tap'
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())

async function offerFor(jobId: string, maximumFeeAtomic = usdc(5)) {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(10), maximumFeeAtomic))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  return { ...job, offerId: decision.body.offer.offerId as string, riskBand: decision.body.riskBand as string }
}

async function matchOf(offer: Awaited<ReturnType<typeof offerFor>>) {
  const match = await offer.borrowerClient.post('/credit/match', { offerId: offer.offerId })
  if (match.status !== 200) throw new Error(JSON.stringify(match.body))
  return match.body
}

t.test('an empty book: no_funded_lender', async (t) => {
  const body = await matchOf(await offerFor('job_nolease_1'))
  t.equal(body.lease, null)
  t.equal(body.offerExpired, false)
  t.equal(body.noLease?.reason, 'no_funded_lender')
  t.equal(body.noLease?.lendersInBook, 0)
  t.equal(body.noLease?.lendersScanned, 0)
})

t.test('the only lender refuses the band, then two more lend for too short: the rule that passed over the most', async (t) => {
  const first = await offerFor('job_nolease_2')
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100), riskBands: ['A', 'B', 'C'].filter((band) => band !== first.riskBand) })
  const banded = await matchOf(first)
  t.equal(banded.lease, null)
  t.equal(banded.noLease?.reason, 'risk_band_not_accepted')
  t.same(banded.noLease?.passedOver, { feeAboveMaximum: 0, riskBandNotAccepted: 1, durationNotOffered: 0, amountAboveLiquidity: 0, excluded: 0, busy: 0 })
  t.match(banded.noLease?.detail, new RegExp(`risk band ${first.riskBand}`))
  for (let i = 0; i < 2; i++) await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100), maxDurationSeconds: 60 })
  const short = await matchOf(first)
  t.equal(short.lease, null)
  t.equal(short.noLease?.reason, 'duration_not_offered')
  t.equal(short.noLease?.lendersInBook, 3)
  t.equal(short.noLease?.lendersScanned, 3)
  t.same(short.noLease?.passedOver, { feeAboveMaximum: 0, riskBandNotAccepted: 1, durationNotOffered: 2, amountAboveLiquidity: 0, excluded: 0, busy: 0 })
})

t.test('a maximum fee below every ask: fee_above_maximum; a lender that takes the offer leases it, with no noLease', async (t) => {
  const cheap = await offerFor('job_nolease_3', 1n)
  const body = await matchOf(cheap)
  t.equal(body.lease, null)
  t.equal(body.noLease?.reason, 'fee_above_maximum')
  t.equal(body.noLease?.passedOver.feeAboveMaximum, 3)
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const leased = await matchOf(await offerFor('job_nolease_4'))
  t.not(leased.lease, null)
  t.notOk('noLease' in leased, 'a leased answer carries no noLease')
})
