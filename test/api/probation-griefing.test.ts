// Probation griefing through the service (test/engine/probation-griefing.test.ts has the whole day of 16 lenders):
// a lender that never pays got its probation lease every lenderProbationSeconds for ever, each holding a borrower's
// offer for the lease's life. Now each probation lease it leaves unpaid doubles its next wait: an hour after its
// second probation miss a borrower gets the honest lender behind it, and only two hours after, the griefer again.
// Fails on the old code: an hour after the miss the griefer has the borrower's offer again.
import t from 'tap'
import { LEASE_TTL_SECONDS, PROBATION_SECONDS, probationService } from '../fixtures/probation-service.ts'
import { advanceChainTime, readyLender, usdc } from '../fixtures/service.ts'

const service = probationService(t)

/** The service's clock and the chain both `seconds` later: the leases granted before are over on the chain. */
async function later(seconds: number): Promise<void> {
  service.skew(seconds)
  await advanceChainTime(service.h, seconds)
}

/** The lender a new borrower's offer is leased to, or null. */
async function leasedTo(jobId: string): Promise<string | null> {
  return (await service.leasedOffer(jobId)).lease?.lender ?? null
}

t.test('a lender that leaves its probation leases unpaid waits twice as long after each', async (t) => {
  const h = service.h
  const griefer = (await readyLender(h, { minFeeBps: 0, liquidityAtomic: usdc(1000) })).account.address
  const honest = (await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })).account.address

  t.equal(await leasedTo('job_griefed_1'), griefer, 'the cheapest lender first')
  await later(LEASE_TTL_SECONDS + 5)
  t.equal(h.app.service.engine.getLender(griefer)?.reliabilityBps, 5000 - 500, 'it missed its lease: inactive')

  await later(PROBATION_SECONDS)
  t.equal(await leasedTo('job_griefed_2'), griefer, 'its probation lease after the base wait')
  await later(LEASE_TTL_SECONDS + 5)

  await later(PROBATION_SECONDS)
  t.equal(await leasedTo('job_griefed_3'), honest, 'an hour after its probation miss: the honest lender, not the griefer')
  await later(LEASE_TTL_SECONDS + 5)

  await later(PROBATION_SECONDS)
  t.equal(await leasedTo('job_griefed_4'), griefer, 'two hours after it: its next probation lease')
})
