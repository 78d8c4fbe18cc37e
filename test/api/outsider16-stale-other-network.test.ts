// An outsider's probe (outsider16): a borrower at `liveOffersPerBorrowerMax` ends its own offers past their TTL (and
// leases past their deadline) in its request, each judged on ITS network's observed chain time. A borrower holding
// offers on two networks whose chains keep different times must not end, through a request on the chain that ran
// ahead, a lease on the other chain that its lender may still pay: the lender would lose the lease (and 500 bps of
// reliability) and the offer could be rematched while the first lease's paySupplier is still valid on chain. Nor may
// a request on the chain that ran ahead end the other network's offer that is not past its TTL there.
// It fails if the request path judged every offer on the requesting network's clock (or the service clock moved with
// it): offer A would end `stale` with its lease, the lender's report would answer 409 lease_expired.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { advanceChainTime, creditRequest, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, backingSourceBody, expectProblem, expectReconciled, type Json } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { offerTtlSeconds: 120, leaseTtlSeconds: 60, engine: { liveOffersPerBorrowerMax: 2 } } })
})
t.teardown(async () => {
  await h.stop()
})

const LIVE = ['offered', 'leased', 'closing']

t.test('a request at the bound on the chain that ran ahead ends only that chain\'s stale offers', async (t) => {
  const a = h.network
  const b = h.devnet.networks[1]!
  const hb = { ...h, app: h.app, url: h.url, network: b } as Harness
  t.not(a.slug, b.slug)
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const borrower = privateKeyToAccount(generatePrivateKey())
  const client: CreditClient = await signedIn(h.url, borrower)
  const source = await client.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o16-two-chains', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 }))
  t.equal(source.status, 201, JSON.stringify(source.body))
  const ask = (on: Harness) => client.post('/credit/request', creditRequest(on, borrower.address, 'o16-two-chains', usdc(5), usdc(1)))
  const offer = async (id: string): Promise<Json> => (await client.get(`/credit/offers/${id}`)).body

  // Offer A on devnet-a, leased to the lender; offer B on devnet-b (no lender there): the borrower is at its bound.
  const onA = await ask(h)
  t.equal(onA.body.decision, 'approved', JSON.stringify(onA.body))
  const offerA = onA.body.offer.offerId as string
  const match = await client.post('/credit/match', { offerId: offerA })
  t.equal(match.body.lease?.lender, lender.account.address, JSON.stringify(match.body))
  const onB = await ask(hb)
  t.equal(onB.body.decision, 'approved', JSON.stringify(onB.body))
  const offerB = onB.body.offer.offerId as string
  expectProblem(t, await ask(hb), 409, 'live_offers_limit', 'at the bound')

  // devnet-b's chain runs far past offer B's TTL and any deadline of devnet-a's lease; devnet-a's does not move.
  await advanceChainTime(hb, 600)
  const again = await ask(hb)
  t.equal(again.body.decision, 'approved', 'offer B (stale on its chain) was ended by the request')
  t.notOk(LIVE.includes((await offer(offerB)).state), `offer B ended: ${(await offer(offerB)).state}`)
  t.equal((await offer(offerA)).state, 'leased', 'offer A, not past its TTL nor its lease past its deadline on devnet-a, is still leased')

  // The lender pays within its lease on devnet-a: the advance is recorded, nothing expired.
  const action = await actionFor(lender, offerA)
  const paymentTx = await new ChainAgent(a, lender.session).sendUnsigned(action['transaction'])
  const paid = await lender.client.post(`/credit/offers/${offerA}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
  t.equal(paid.status, 200, JSON.stringify(paid.body))
  t.equal((await offer(offerA)).state, 'funded')
  const profile = ((await lender.client.get('/lenders?limit=1000')).body as Json[]).find((l) => l['address'] === lender.account.address)
  t.equal(profile?.['leasesExpired'], 0, 'no lease of the lender expired')
  t.equal(profile?.['recentLeaseOutcomes'], 'P', 'its one lease was paid')

  // Reverse: a new offer on devnet-a at the bound beside the live one on devnet-b; devnet-a's chain runs past its TTL;
  // a request on devnet-a ends it, never devnet-b's offer, which is within its TTL on its own chain.
  const offerB2 = again.body.offer.offerId as string
  const onA2 = await ask(h)
  t.equal(onA2.body.decision, 'approved', JSON.stringify(onA2.body))
  expectProblem(t, await ask(h), 409, 'live_offers_limit', 'at the bound again')
  await advanceChainTime(h, 600)
  t.equal((await ask(h)).body.decision, 'approved', 'offer A2 (stale on devnet-a) was ended by the request')
  t.notOk(LIVE.includes((await offer(onA2.body.offer.offerId)).state), 'offer A2 ended')
  t.ok(LIVE.includes((await offer(offerB2)).state), `offer B2, live on devnet-b's clock, is untouched: ${(await offer(offerB2)).state}`)

  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, a.slug)
  await expectReconciled(t, operator, b.slug)
})
