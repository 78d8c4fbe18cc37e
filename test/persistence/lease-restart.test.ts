// A lease survives a restart with its original deadline: it expires when the chain is observed past the deadline it
// was given when it was granted, not at the restart time plus the TTL, and without any request (the chain follower's
// batch expires it). The service's clock moves with the chain's (the test moves both).
import t from 'tap'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { CreditClient } from '../../src/client/client.ts'

const LEASE_TTL_SECONDS = 30

/** The service's time: the wall clock plus what the test moved it by (with the chain). */
let skewMs = 0
const clock = () => Date.now() + skewMs
const moveClockTo = (ms: number) => {
  skewMs = Math.max(skewMs, ms - Date.now())
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

t.test('after a restart a lease keeps its original deadline and expires once the chain passes it, with no request', async (t) => {
  const { lease } = await leased('job_lease_restart_1')
  const expiresAtMs = Date.parse(lease.expiresAt)
  // The deadline is the network's observed chain time at the lease plus the TTL (the last block's timestamp, a
  // second or so behind the service clock that stamps createdAt), never later than createdAt + TTL.
  const ttlSeenMs = expiresAtMs - Date.parse(lease.createdAt)
  t.ok(ttlSeenMs <= LEASE_TTL_SECONDS * 1000 && ttlSeenMs > LEASE_TTL_SECONDS * 1000 - 5_000, `a TTL on chain time (${ttlSeenMs} ms)`)

  await h.restart()
  const lenderClient = again(lender.client)
  const actions = await lenderClient.get(`/lenders/${lender.account.address}/actions`)
  t.equal(actions.status, 200)
  t.same(
    actions.body.map((a: { lease: { leaseId: string; expiresAt: string } }) => [a.lease.leaseId, a.lease.expiresAt]),
    [[lease.leaseId, lease.expiresAt]],
    'the restarted service still lists the lease with its original expiresAt',
  )
  t.equal(BigInt(actions.body[0].authorization.deadline), BigInt(Math.floor(Date.parse(lease.expiresAt) / 1000)), 'the paySupplier deadline is the original expiry')

  // The chain moves past the original deadline (and the service's clock with it), well before restart + TTL.
  const chainNow = h.app.service.engine.chainTimeMs(h.network.slug) as number
  const chainTimeMs = await advanceChainTime(h, Math.ceil((expiresAtMs - chainNow) / 1000) + 2)
  moveClockTo(chainTimeMs)
  await h.app.service.store.durable()
  const entry = h.app.service.store.getSnapshot('lease', lease.leaseId)
  const context = (entry?.snapshot as { context: { endReason: string | null } } | undefined)?.context
  t.ok(entry?.final, 'the follower\'s batch expired the lease, durably, without any request')
  t.equal(context?.endReason, 'timeout')
  t.same((await lenderClient.get(`/lenders/${lender.account.address}/actions`)).body, [], 'no action is left for the lender')
  const wallet = await lenderClient.get(`/lenders/${lender.account.address}/wallet`)
  t.equal(wallet.body.activity.reservedAtomic, '0', 'the reservation went back to the lender')
  t.equal(wallet.body.activity.leasesExpired, 1)
  h.app.service.engine.checkInvariants()
})

t.test('the observed chain time survives a restart: a lease the chain is not yet past stays live', async (t) => {
  const before = h.app.service.engine.chainTimeMs(h.network.slug) as number
  const { lease } = await leased('job_lease_restart_2')
  await h.restart()
  const restored = h.app.service.engine.chainTimeMs(h.network.slug)
  t.ok(restored !== undefined && restored >= before, 'the restarted engine starts from the chain time it committed')
  t.equal(h.app.service.engine.getLease(lease.leaseId)?.state, 'leased', 'the lease is live: the chain is not past its deadline')
  h.app.service.engine.checkInvariants()
})
