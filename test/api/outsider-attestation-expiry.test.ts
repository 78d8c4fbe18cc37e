// An outsider against the money path, over HTTP and the contracts only: a backing source gets no new credit from its
// attestation's validUntil on (README "Underwriting"). An offer approved just before that must not be leased after it:
// the lender would pay the supplier against a valuation nobody vouches for any more. The offer expires at validUntil
// when that comes before its TTL, as an offer on a job expires at the job's due time.
import t from 'tap'
import { creditRequest, fundedAccount, readyLender, signedIn, startHarness, usdc, advanceChainTime, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { backingSourceBody } from './fixtures/api.ts'

let h: Harness
let lender: ReadyLender
// The service's clock follows the chain's when the test moves it: attestations expire on the service's clock, offers
// on the chain's.
let clockOffsetMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + clockOffsetMs })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('an offer on a backing source expires at the attestation\'s validUntil: no lease after it', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const borrowerClient = await signedIn(h.url, borrower)
  const validUntilMs = Math.floor(Date.now() / 1000 + 60) * 1000
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'src_outsider_expiring', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000, validUntilMs }))
  t.equal(source.status, 201)
  const request = { ...creditRequest(h, borrower.address, 'src_outsider_expiring', usdc(100), usdc(5)), productType: 'asset-backed' }
  const decision = await borrowerClient.post('/credit/request', request)
  t.equal(decision.body.decision, 'approved', 'approved while the attestation is valid')
  const offerId = decision.body.offer.offerId as string
  t.ok(Date.parse(decision.body.offer.expiresAt) <= validUntilMs, 'the offer expires by validUntil', { expiresAt: decision.body.offer.expiresAt, validUntil: new Date(validUntilMs).toISOString() })

  const chainTimeMs = await advanceChainTime(h, 120)
  clockOffsetMs = chainTimeMs - Date.now()
  await borrowerClient.signIn(borrower)
  t.match((await borrowerClient.post('/credit/request', request)).body, { decision: 'declined', reasons: [{ code: 'source_attestation_expired' }] }, 'a new request is declined')

  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease ?? null, null, 'the offer approved before validUntil is not leased after it', { match: match.body })
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'expired')
  t.equal((await lender.client.get(`/lenders/${lender.account.address}/wallet`)).body.activity.reservedAtomic, '0', 'none of the lender\'s liquidity is reserved')
})

t.test('a backing source whose attestation expires before a lease granted now would end is declined as expired', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const borrowerClient = await signedIn(h.url, borrower)
  // Within the lease TTL (30 s) of the service's clock: a lease granted now would be payable after validUntil.
  const validUntilMs = Math.floor((Date.now() + clockOffsetMs) / 1000 + 20) * 1000
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'src_outsider_within_lease', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000, validUntilMs }))
  t.equal(source.status, 201, 'registered: its attestation is valid')
  const request = { ...creditRequest(h, borrower.address, 'src_outsider_within_lease', usdc(100), usdc(5)), productType: 'asset-backed' }
  t.match((await borrowerClient.post('/credit/request', request)).body, { decision: 'declined', reasons: [{ code: 'source_attestation_expired' }], offer: null }, 'declined: no whole lease fits before validUntil')
})
