// An outsider against the money path, over HTTP and the contracts only: a lease granted shortly before its job falls
// due must not be payable after the job's credit end (its due time less the minimum credit period). An advance paid
// after it is born (nearly) past due: its lender (or an operator) may liquidate it at once, taking the borrower's
// collateral and charging it a default, although the borrower never had time to repay. A lease always gets its whole
// TTL, so a request is approved only while a whole lease still fits before the credit end, and its offer expires when
// one no longer does (outsider19: a lease cut short there could be unpayable, its expiry the lender's miss).
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, advanceChainTime, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor } from './fixtures/api.ts'

const CREDIT_PERIOD_MIN_SECONDS = defaultEngineConfig.creditPeriodMinMs / 1000
const LEASE_TTL_SECONDS = 300
let h: Harness
let lender: ReadyLender
// The service's clock follows the chain's when the test moves it (past due is judged on the service's clock).
let clockOffsetMs = 0
t.before(async () => {
  // A long lease TTL: the lease's, not the test's, decides the deadline.
  h = await startHarness({ config: { leaseTtlSeconds: LEASE_TTL_SECONDS }, clock: () => Date.now() + clockOffsetMs })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a request on a job due within the minimum credit period, or within it plus a lease TTL, is declined', async (t) => {
  for (const [jobId, dueInSeconds] of [['job_outsider_due_soon', CREDIT_PERIOD_MIN_SECONDS / 2], ['job_outsider_due_lease', CREDIT_PERIOD_MIN_SECONDS + 60]] as const) {
    const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000), dueInSeconds })
    const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(5)))
    t.equal(decision.body.decision, 'declined', `due in ${dueInSeconds} s`)
    t.same(decision.body.reasons.map((r: { code: string }) => r.code), ['job_due_too_soon'])
    t.equal(decision.body.offer ?? null, null, 'no offer')
  }
})

t.test('a lease gets its whole TTL and ends by its job\'s credit end: a payment after it funds nothing', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_due', receivableAtomic: usdc(1000), dueInSeconds: CREDIT_PERIOD_MIN_SECONDS + LEASE_TTL_SECONDS + 60 })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_due', usdc(100), usdc(5)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  const creditEndMs = Date.parse(decision.body.offer.dueAt) - CREDIT_PERIOD_MIN_SECONDS * 1000
  t.ok(Date.parse(decision.body.offer.expiresAt) <= creditEndMs - LEASE_TTL_SECONDS * 1000, 'the offer expires when a whole lease no longer fits before the credit end')
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address, 'leased before the credit end')
  t.ok(Date.parse(match.body.lease.expiresAt) - Date.parse(match.body.lease.createdAt) >= LEASE_TTL_SECONDS * 1000, 'the whole TTL')
  const action = await actionFor(lender, offerId)
  const { deadline, dueAt } = action['authorization']
  t.ok(BigInt(deadline) <= BigInt(dueAt) - BigInt(CREDIT_PERIOD_MIN_SECONDS), 'the authorization\'s deadline leaves the minimum credit period before its due time', { deadline, dueAt })
  t.ok(Date.parse(match.body.lease.expiresAt) <= creditEndMs, 'the lease expires by the offer\'s credit end')

  // The chain passes the credit end (not yet the due time); the lender pays under its lease all the same.
  const chainTimeMs = await advanceChainTime(h, LEASE_TTL_SECONDS + 80)
  clockOffsetMs = chainTimeMs - Date.now()
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction']).catch(() => null)
  t.equal(paid, null, 'the contract refuses a payment after the lease\'s deadline')
})
