// Probation griefing through the service (test/engine/probation-griefing.test.ts has the whole day of 16 lenders):
// a lender that never pays got its probation lease every lenderProbationSeconds for ever, each holding a borrower's
// offer for the lease's life. Now each probation lease it leaves unpaid doubles its next wait: an hour after its
// second probation miss a borrower gets the honest lender behind it, and only two hours after, the griefer again.
// Fails on the old code: an hour after the miss the griefer has the borrower's offer again.
import t from 'tap'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

// One missed lease (reliability 5000 - 500) makes a lender inactive.
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

/** The service's clock and the chain both `seconds` later: the leases granted before are over on the chain. */
async function later(seconds: number): Promise<void> {
  skewMs += seconds * 1000
  await advanceChainTime(h, seconds)
}

/** A borrower's job, an offer on it and its match: the lender it was leased to, or null. */
async function leasedTo(jobId: string): Promise<string | null> {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(200) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(40), usdc(2)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const match = await job.borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  if (match.status !== 200) throw new Error(JSON.stringify(match.body))
  return match.body.lease?.lender ?? null
}

t.test('a lender that leaves its probation leases unpaid waits twice as long after each', async (t) => {
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
