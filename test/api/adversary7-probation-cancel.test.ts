// Probation (README "Reputation and reliability"): an inactive lender gets one lease after lenderProbationSeconds, and
// the grant restarts its clock. A probation lease that ends with no outcome (its offer withdrawn under it: the job's
// client failed the job, so the contract refuses the payment) left the lender waiting a whole probation again, though
// it did no wrong. A competitor with a throw-away borrower could take each probation lease of a cheaper lender as
// it fell due and fail its job (the escrow comes back to its client at once), for the gas of a fundJob an hour, and
// keep that lender out of every book for good. Now such a lease gives the probation back: the lender is eligible at
// once. Fails on the old code: the honest borrower's match after the cancelled lease finds no lender.
import t from 'tap'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

// One missed lease (reliability 5000 - 500) makes the lender inactive.
const RELIABILITY_MIN = 4600
const PROBATION_SECONDS = 3600
const LEASE_TTL_SECONDS = 30

let skewMs = 0
let h: Harness
t.before(async () => {
  h = await startHarness({
    clock: () => Date.now() + skewMs,
    config: { leaseTtlSeconds: LEASE_TTL_SECONDS, engine: { lenderReliabilityMinBps: RELIABILITY_MIN, lenderProbationSeconds: PROBATION_SECONDS } },
  })
})
t.teardown(async () => {
  await h.stop()
})

async function leasedOffer(jobId: string) {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(200) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(40), usdc(2)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const match = await job.borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  if (match.status !== 200) throw new Error(JSON.stringify(match.body))
  return { ...job, lease: match.body.lease }
}

t.test('a probation lease withdrawn under its lender gives the probation back', async (t) => {
  const victim = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const profile = () => h.app.service.engine.getLender(victim.account.address)!

  // The victim misses a lease: inactive.
  const first = await leasedOffer('job_probation_missed')
  t.equal(first.lease?.lender, victim.account.address)
  await advanceChainTime(h, LEASE_TTL_SECONDS + 5)
  t.equal(profile().reliabilityBps, 5000 - 500, 'the missed lease cost 500')

  // A probation later, a stranger's throw-away borrower takes the probation lease, and its client fails the job.
  skewMs += (PROBATION_SECONDS + 1) * 1000
  const attacker = await leasedOffer('job_probation_taken')
  t.equal(attacker.lease?.lender, victim.account.address, 'the probation lease')
  const failed = await attacker.jobClientApi.post('/credit/jobs/job_probation_taken/fail', { reason: 'cancelled' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  // The chain passes the lease's deadline (the service clock runs a probation ahead of the chain).
  await advanceChainTime(h, PROBATION_SECONDS + LEASE_TTL_SECONDS + 5)
  t.equal((await victim.client.get(`/credit/offers/${attacker.lease.offerId}`)).body.state, 'declined', 'the withdrawn offer ended')
  t.equal(profile().reliabilityBps, RELIABILITY_MIN, 'no penalty: the lender stands at the minimum, as its grant left it')

  // An honest borrower asks at once: the victim, which did no wrong, is eligible for its probation lease again.
  const honest = await leasedOffer('job_probation_honest')
  t.equal(honest.lease?.lender, victim.account.address, 'the lender gets its probation lease')
})
