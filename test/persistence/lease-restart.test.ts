// A lease survives a restart with its original expiry: it expires at the time it was given when it was granted, not
// at the restart time plus the TTL. Checked with explicit dispatch (ticker off) and with the internal ticker on.
// The service runs on a clock the test moves: how long a restart takes on a busy machine changes nothing here.
import t from 'tap'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { CreditClient } from '../../src/client/client.ts'

const LEASE_TTL_SECONDS = 4
/** When the restart happens, counted from the match: well inside the TTL, so restart + TTL is 1 s past the expiry. */
const RESTART_AFTER_MS = 1000
/** The ticker period of the second case, and how late after its expiry a lease may be expired by the ticker. */
const TICK_MS = 200
const TICKER_LATENESS_MS_MAX = 900

/** The service's time: the wall clock when the test starts, then only what the test moves it by. */
let serviceNowMs = Date.now()
const clock = () => serviceNowMs
const moveClockTo = (ms: number) => {
  serviceNowMs = Math.max(serviceNowMs, ms)
}

let h: Harness
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: LEASE_TTL_SECONDS }, clock })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

/** The same bearer token against the restarted service (sessions are persisted; the URL changes with PORT=0). */
function again(client: CreditClient): CreditClient {
  const next = new CreditClient(h.url)
  next.token = client.token
  next.address = client.address
  return next
}

/** A job, an approved offer and a match to `lender`; returns the lease as the match answered it. */
async function leased(jobId: string) {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(10)))
  if (decision.body.decision !== 'approved') throw new Error(`declined: ${JSON.stringify(decision.body)}`)
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  if (match.status !== 200 || match.body.lease === null) throw new Error(`match: ${match.status} ${JSON.stringify(match.body)}`)
  return { borrowerClient, lease: match.body.lease, matchedAtMs: clock() }
}

t.test('dispatch after a restart expires a lease at its original expiry, not restart + TTL', async (t) => {
  const { borrowerClient, lease } = await leased('job_lease_restart_1')
  const expiresAtMs = Date.parse(lease.expiresAt)
  t.equal(expiresAtMs - Date.parse(lease.createdAt), LEASE_TTL_SECONDS * 1000)

  moveClockTo(Date.parse(lease.createdAt) + RESTART_AFTER_MS)
  await h.restart()
  const restartedAtMs = clock()
  t.ok(restartedAtMs < expiresAtMs - 300, `the restart finished ${expiresAtMs - restartedAtMs} ms before the original expiry`)

  const lenderClient = again(lender.client)
  const borrower = again(borrowerClient)
  const actions = await lenderClient.get(`/lenders/${lender.account.address}/actions`)
  t.equal(actions.status, 200)
  t.same(
    actions.body.map((a: { lease: { leaseId: string; expiresAt: string } }) => [a.lease.leaseId, a.lease.expiresAt]),
    [[lease.leaseId, lease.expiresAt]],
    'the restarted service still lists the lease with its original expiresAt',
  )
  t.equal(BigInt(actions.body[0].authorization.deadline), BigInt(Math.floor(Date.parse(lease.expiresAt) / 1000)), 'the paySupplier deadline is the original expiry')

  const early = await borrower.post('/credit/dispatch', {})
  t.equal(early.status, 200)
  t.ok(clock() < expiresAtMs, 'this dispatch ran before the original expiry')
  t.same(early.body.expiredLeases, [], 'dispatch before the original expiry expires nothing')
  t.equal((await lenderClient.get(`/lenders/${lender.account.address}/actions`)).body.length, 1)

  moveClockTo(expiresAtMs + 50)
  t.ok(clock() < restartedAtMs + LEASE_TTL_SECONDS * 1000, 'this dispatch runs before restart + TTL')
  const late = await borrower.post('/credit/dispatch', {})
  t.equal(late.status, 200)
  t.same(late.body.expiredLeases.map((l: { leaseId: string }) => l.leaseId), [lease.leaseId], 'dispatch after the original expiry expires it')
  t.equal(late.body.expiredLeases[0].endReason, 'timeout')
  t.same((await lenderClient.get(`/lenders/${lender.account.address}/actions`)).body, [], 'no action is left for the lender')
  const wallet = await lenderClient.get(`/lenders/${lender.account.address}/wallet`)
  t.equal(wallet.body.activity.reservedAtomic, '0', 'the reservation went back to the lender')
  t.equal(wallet.body.activity.leasesExpired, 1)
  h.app.service.engine.checkInvariants()
})

t.test('the internal ticker expires a restored lease by itself, shortly after its original expiry', async (t) => {
  const { lease } = await leased('job_lease_restart_2')
  const expiresAtMs = Date.parse(lease.expiresAt)

  moveClockTo(Date.parse(lease.createdAt) + RESTART_AFTER_MS)
  await h.restart({ dispatchIntervalMs: TICK_MS })
  const restartedAtMs = clock()
  t.ok(restartedAtMs < expiresAtMs - 300, `the restart finished ${expiresAtMs - restartedAtMs} ms before the original expiry`)
  const store = h.app.service.store

  // Time passes, a step per tick, up to just past the expiry; meanwhile the ticker runs.
  for (let at = restartedAtMs + TICK_MS; at < expiresAtMs + TICK_MS; at += TICK_MS) {
    moveClockTo(Math.min(at, expiresAtMs + TICK_MS / 2))
    await sleep(TICK_MS)
  }
  // Poll the store: the ticker's commit is what makes the expiry durable.
  const deadline = Date.now() + 10_000
  let ended: { endedAtMs: number; endReason: string } | undefined
  while (Date.now() < deadline) {
    const entry = store.getSnapshot('lease', lease.leaseId)
    const context = (entry?.snapshot as { context: { endedAtMs: number | null; endReason: string } } | undefined)?.context
    if (entry?.final && context?.endedAtMs != null) {
      ended = { endedAtMs: context.endedAtMs, endReason: context.endReason }
      break
    }
    await sleep(50)
  }
  t.ok(ended, 'the ticker expired the lease without any request')
  if (ended === undefined) return
  t.equal(ended.endReason, 'timeout')
  t.ok(ended.endedAtMs >= expiresAtMs, 'not before its original expiry')
  t.ok(
    ended.endedAtMs - expiresAtMs <= TICKER_LATENESS_MS_MAX,
    `within ${TICKER_LATENESS_MS_MAX} ms of its original expiry (${ended.endedAtMs - expiresAtMs} ms), long before restart + TTL`,
  )
  t.ok(ended.endedAtMs < restartedAtMs + LEASE_TTL_SECONDS * 1000, 'restart + TTL had not come yet')
  t.equal(h.app.service.engine.getLease(lease.leaseId), undefined, 'the expired lease left memory')
  t.equal(h.app.service.engine.getLender(lender.account.address)?.reservedAtomic, 0n)
  h.app.service.engine.checkInvariants()
})
