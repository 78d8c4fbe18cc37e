// An outsider's probe (outsider16) of "Live offers per borrower": a request of a borrower at the bound ends that
// borrower's OWN timers past their time, and nothing else. Strangers and other borrowers cannot end a borrower's stale
// offers (their requests leave them as they are, to the ticker or their borrower); a refused request changes nothing;
// a declined request commits the ends as an approved one does, and the borrower's event stream shows each end; an
// offer whose lease timed out (the chain follower does that on the observed chain time) and that is within its TTL
// keeps the borrower at the bound, and once past its TTL the request ends it; the lender's expired lease is counted
// once, its liquidity back, and the ledger equals the chain.
// It fails if a request ended another borrower's offers, if a refusal committed the ends, if a live offer were ended by
// the request, or if the ends were not shown (views, stream) as the ticker's would be.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { EventStream } from '../../src/client/stream.ts'
import { advanceChainTime, creditRequest, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, backingSourceBody, expectProblem, expectReconciled, until, type Json } from './fixtures/api.ts'

let now = Date.now()
let h: Harness
t.before(async () => {
  h = await startHarness({ clock: () => now, config: { offerTtlSeconds: 120, leaseTtlSeconds: 60, engine: { liveOffersPerBorrowerMax: 2 } } })
})
t.teardown(async () => {
  await h.stop()
})

interface Borrower { account: PrivateKeyAccount; client: CreditClient; source: string }
async function borrower(source: string): Promise<Borrower> {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  const reply = await client.post('/credit/backing-sources', await backingSourceBody(h, account.address, { sourceId: source, valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 }))
  if (reply.status !== 201) throw new Error(JSON.stringify(reply.body))
  return { account, client, source }
}
const ask = (who: Borrower, overrides: Json = {}, as: CreditClient = who.client) => as.post('/credit/request', { ...creditRequest(h, who.account.address, who.source, usdc(5), usdc(1)), ...overrides })
const state = async (offerId: string): Promise<string> => (await new CreditClient(h.url).get(`/credit/offers/${offerId}`)).body.state as string
async function atBound(who: Borrower): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < 2; i++) {
    const reply = await ask(who)
    if (reply.body.decision !== 'approved') throw new Error(JSON.stringify(reply.body))
    ids.push(reply.body.offer.offerId as string)
  }
  return ids
}
async function pastChainTime(seconds: number): Promise<void> {
  now = Math.max(now + seconds * 1000, await advanceChainTime(h, seconds))
}

t.test('only the borrower ends its stale offers; refusals change nothing', async (t) => {
  const victim = await borrower('o16-victim')
  const stranger = await borrower('o16-stranger')
  const stream = new EventStream({ baseUrl: h.url, token: () => new CreditClient(h.url).signIn(victim.account) })
  t.teardown(() => stream.close())
  const seen = new Map<string, string>()
  stream.on((message) => {
    if (message.type === 'event' && message.kind === 'offer') seen.set(message.offer.offerId, message.offer.state)
  })
  await stream.ready()
  const offers = await atBound(victim)
  await pastChainTime(121)
  const commits = () => h.app.service.store.stats().commits

  // A stranger asking in the victim's name is refused and ends nothing.
  const before = commits()
  const forged = await ask(victim, {}, stranger.client)
  t.ok(forged.status === 403 || forged.status === 401, `a request for another agent is refused: ${forged.status} ${JSON.stringify(forged.body)}`)
  // Refusals of the victim's own request (other than the bound) end nothing either.
  t.ok((await ask(victim, { repaymentSource: 'o16-nowhere' })).status >= 400, 'an unknown source is refused')
  t.ok((await ask(victim, { asset: 'NOPE' })).status >= 400, 'an unknown asset is refused')
  t.ok((await ask(victim, { network: 'devnet-z' })).status >= 400, 'an unknown network is refused')
  t.equal(commits(), before, 'the refusals wrote nothing')
  for (const id of offers) t.equal(await state(id), 'offered', `${id} is still offered (past its TTL, for the ticker or its borrower)`)

  // Another borrower's approved request ends only its own (none), not the victim's.
  t.equal((await ask(stranger)).body.decision, 'approved')
  for (const id of offers) t.equal(await state(id), 'offered', `${id} untouched by another borrower's request`)

  // The victim's own request ends both with its answer, a decline as well (an unknown supplier); its stream shows
  // each end; then it may ask again.
  const declined = await ask(victim, { supplierDomain: 'nowhere.example', supplier: 'Nobody' })
  t.equal(declined.body.decision, 'declined', JSON.stringify(declined.body))
  for (const id of offers) t.equal(await state(id), 'expired', `${id} expired by its borrower's declined request`)
  t.equal((await ask(victim)).body.decision, 'approved', 'below the bound again')
  await until(() => offers.every((id) => seen.get(id) === 'expired'), 10_000, `the victim's stream shows both expiries: ${JSON.stringify([...seen])}`)
  t.pass('the stream showed both expiries')
})

t.test('an offer whose lease timed out stays live until its TTL; then the borrower\'s request ends it, the lease counted once', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(50) })
  const who = await borrower('o16-leased')
  const [leasedOffer, otherOffer] = await atBound(who)
  const match = await who.client.post('/credit/match', { offerId: leasedOffer })
  t.equal(match.body.lease?.lender, lender.account.address, JSON.stringify(match.body))
  const profile = async (): Promise<Json> => ((await new CreditClient(h.url).get('/lenders?limit=1000')).body as Json[]).find((l) => l['address'] === lender.account.address) as Json
  t.equal((await profile())['reservedAtomic'], usdc(5).toString(), 'the lease holds 5 USDC')

  // 61 s: the lease is past its deadline, the offers are not past their TTL (120 s). The chain follower's batch that
  // observed that time timed the lease out (no ticker runs here: dispatchIntervalMs 0); the offer waits for a lender.
  await pastChainTime(61)
  await until(async () => (await state(leasedOffer!)) === 'offered', 10_000, 'the lease timed out on the observed chain time')
  t.equal((await profile())['leasesExpired'], 1, 'one expired lease')
  t.equal((await profile())['reservedAtomic'], '0', 'its liquidity is back')
  const commits = h.app.service.store.stats().commits
  expectProblem(t, await ask(who), 409, 'live_offers_limit', 'nothing of the borrower is stale yet')
  t.equal(h.app.service.store.stats().commits, commits, 'the refusal wrote nothing')

  // 60 s more: the offers are past their TTL; the request times the lease out and expires both offers.
  await pastChainTime(60)
  const own = await ask(who)
  t.equal(own.body.decision, 'approved', JSON.stringify(own.body))
  t.equal(await state(leasedOffer!), 'expired', 'the offer whose lease timed out expired')
  t.equal(await state(otherOffer!), 'expired')
  const after = await profile()
  t.equal(after['reservedAtomic'], '0', 'the lender\'s reserved liquidity came back')
  t.equal(after['availableAtomic'], usdc(50).toString())
  t.equal(after['leasesExpired'], 1, 'the expired lease counted once')
  // A dispatch afterwards finds nothing of these to end again.
  const dispatched = await who.client.post('/credit/dispatch', {})
  t.notOk(JSON.stringify(dispatched.body).includes(leasedOffer!), `the dispatch does not end them again: ${JSON.stringify(dispatched.body)}`)
  t.equal((await profile())['leasesExpired'], 1, 'still one')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})

t.test('an offer past its TTL under a live lease is not ended by its borrower\'s request: the lender pays it in time', async (t) => {
  const who = await borrower('o16-late-lease')
  const [first, second] = await atBound(who)
  // 100 s into the offers' 120 s, a cheaper lender arrives: its leases' deadlines (60 s) fall after the offers' TTL.
  await pastChainTime(100)
  const lender = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(50) })
  for (const offerId of [first!, second!]) {
    const match = await who.client.post('/credit/match', { offerId })
    t.equal(match.body.lease?.lender, lender.account.address, JSON.stringify(match.body))
  }
  // Past the offers' TTL, within the leases.
  await pastChainTime(21)
  const commits = h.app.service.store.stats().commits
  expectProblem(t, await ask(who), 409, 'live_offers_limit', 'offers under live leases are not stale')
  t.equal(h.app.service.store.stats().commits, commits, 'the refusal wrote nothing')
  t.equal(await state(first!), 'leased')
  t.equal(await state(second!), 'leased')
  // The lender pays the first in time: funded, the advance recorded.
  const action = await actionFor(lender, first!)
  const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const paid = await lender.client.post(`/credit/offers/${first}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
  t.equal(paid.status, 200, JSON.stringify(paid.body))
  t.equal(await state(first!), 'funded')
  // Below the bound now: the borrower may ask; the second lease runs to its deadline, then ends with its offer.
  t.equal((await ask(who)).body.decision, 'approved')
  await pastChainTime(40)
  await until(async () => (await state(second!)) === 'expired', 10_000, 'the second offer ended with its lease')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a keyed request at the bound that ended stale offers replays its answer and ends nothing more', async (t) => {
  const who = await borrower('o16-keyed')
  const offers = await atBound(who)
  await pastChainTime(121)
  const key = `o16-${Date.now()}`
  const body = creditRequest(h, who.account.address, who.source, usdc(5), usdc(1))
  const first = await who.client.post('/credit/request', body, { idempotencyKey: key })
  t.equal(first.body.decision, 'approved', JSON.stringify(first.body))
  for (const id of offers) t.equal(await state(id), 'expired', `${id} ended with the keyed answer`)
  // One more live offer of its own, then past its TTL: a replay must not end it (nor create another offer).
  const second = await ask(who)
  t.equal(second.body.decision, 'approved')
  await pastChainTime(121)
  const commits = h.app.service.store.stats().commits
  const replay = await who.client.post('/credit/request', body, { idempotencyKey: key })
  t.equal(replay.headers.get('idempotent-replayed'), 'true', 'replayed')
  t.same(replay.body, first.body, 'the same answer')
  t.equal(h.app.service.store.stats().commits, commits, 'the replay wrote nothing')
  t.equal(await state(first.body.offer.offerId), 'offered', 'the keyed answer\'s offer, past its TTL, is left to the ticker')
  t.equal(await state(second.body.offer.offerId), 'offered')
})
