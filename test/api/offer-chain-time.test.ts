// Issue 10 over HTTP against the devnet: an offer's TTL runs on its network's observed chain time, as leases do. With
// the service's clock far past the TTL and the chain not (an outage as the service sees it), the offer waits; once
// the chain is observed past its expiresAt, dispatch expires it.
import t from 'tap'
import { advanceChainTime, creditRequest, fundedJob, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { expectDocumented, openApiDocument, type Json } from './fixtures/api.ts'

const OFFER_TTL_SECONDS = 30
let skewMs = 0
const clock = () => Date.now() + skewMs

let h: Harness
let doc: Json
t.before(async () => {
  h = await startHarness({ config: { offerTtlSeconds: OFFER_TTL_SECONDS }, clock })
  doc = await openApiDocument(h.url)
})
t.teardown(async () => {
  await h.stop()
})

t.test('an offer outlives its TTL on the service clock while the chain is not past it, then expires on chain time', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_offer_ttl', receivableAtomic: usdc(1000) })
  // The follower may observe the job's funding block after the job is registered: the chain time is read on both
  // sides of the request, and the offer's expiresAt must count from a chain time between them.
  const chainBeforeMs = h.app.service.engine.chainTimeMs(h.network.slug) as number
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_offer_ttl', usdc(10), usdc(1)))
  const chainAfterMs = h.app.service.engine.chainTimeMs(h.network.slug) as number
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId as string
  const expiresAtMs = Date.parse(decision.body.offer.expiresAt)
  const ttlMs = OFFER_TTL_SECONDS * 1000
  t.ok(expiresAtMs >= chainBeforeMs + ttlMs && expiresAtMs <= chainAfterMs + ttlMs, 'expiresAt: the observed chain time at creation plus the TTL', { chainBeforeMs, chainAfterMs, expiresAtMs })

  // No lender on this service: the offer waits. The service's clock moves ten minutes past its TTL; the chain does not.
  skewMs = 600_000
  const dispatch = await borrowerClient.post('/credit/dispatch', {})
  t.equal(dispatch.status, 200)
  t.notOk((dispatch.body.expiredOffers as Json[]).some((o) => o['offerId'] === offerId), 'not expired on the service clock')
  const waiting = await borrowerClient.get(`/credit/offers/${offerId}`)
  t.equal(waiting.body.state, 'offered')
  expectDocumented(t, doc, 'get', '/credit/offers/{offerId}', waiting)
  t.ok((h.app.service.engine.chainTimeMs(h.network.slug) as number) < expiresAtMs, 'the chain is not past its expiresAt')

  // The chain passes the deadline: the offer expires.
  const chainNow = h.app.service.engine.chainTimeMs(h.network.slug) as number
  await advanceChainTime(h, Math.ceil((expiresAtMs - chainNow) / 1000) + 2)
  const after = await borrowerClient.post('/credit/dispatch', {})
  const expired = (after.body.expiredOffers as Json[]).some((o) => o['offerId'] === offerId) || (await borrowerClient.get(`/credit/offers/${offerId}`)).body.state === 'expired'
  t.ok(expired, 'expired once the chain was observed past expiresAt')
  t.match((await borrowerClient.get(`/credit/offers/${offerId}`)).body, { state: 'expired', endReason: 'stale' })
})
