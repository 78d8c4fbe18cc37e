// Probation (README "Reputation and reliability"): an inactive lender gets one lease after lenderProbationSeconds, and
// the grant restarts its clock. A probation lease that ends with no outcome (its offer withdrawn under it: the job's
// client failed the job, so the contract refuses the payment) left the lender waiting a whole probation again, though
// it did no wrong. A competitor with a throw-away borrower could take each probation lease of a cheaper lender as
// it fell due and fail its job (the escrow comes back to its client at once), for the gas of a fundJob an hour, and
// keep that lender out of every book for good. Now such a lease gives the probation back: the lender is eligible at
// once. Fails on the old code: the honest borrower's match after the cancelled lease finds no lender.
import t from 'tap'
import { LEASE_TTL_SECONDS, PROBATION_SECONDS, RELIABILITY_MIN, probationService } from '../fixtures/probation-service.ts'
import { advanceChainTime, readyLender, usdc } from '../fixtures/service.ts'

const service = probationService(t)
const leasedOffer = service.leasedOffer

t.test('a probation lease withdrawn under its lender gives the probation back', async (t) => {
  const h = service.h
  const victim = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const profile = () => h.app.service.engine.getLender(victim.account.address)!

  // The victim misses a lease: inactive.
  const first = await leasedOffer('job_probation_missed')
  t.equal(first.lease?.lender, victim.account.address)
  await advanceChainTime(h, LEASE_TTL_SECONDS + 5)
  t.equal(profile().reliabilityBps, 5000 - 500, 'the missed lease cost 500')

  // A probation later, a stranger's throw-away borrower takes the probation lease, and its client fails the job.
  service.skew(PROBATION_SECONDS + 1)
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
