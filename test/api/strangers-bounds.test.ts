// Issue 10, hole 6 over HTTP: live offers per borrower are bounded (engine liveOffersPerBorrowerMax): one more is
// refused 409 live_offers_limit, changing nothing; another borrower is not affected; once an offer ends the borrower
// may ask again; one at the bound whose offers are past their TTL is not refused (its request ends them).
import { rmSync } from 'node:fs'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startApp } from '../../src/app/app.ts'
import { advanceChainTime, creditRequest, tempDataDir, testConfig, type Harness, usdc } from '../fixtures/service.ts'
import { backingSourceBody, expectProblem } from './fixtures/api.ts'

const devnet = await startDevnet()
t.teardown(() => devnet.stop())
const dataDir = tempDataDir()
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
let now = Date.now()
const app = await startApp(testConfig(dataDir, { offerTtlSeconds: 60, engine: { liveOffersPerBorrowerMax: 2 } }), { devnet, clock: () => now, validateResponses: true })
t.teardown(() => app.stop())
const h = { devnet, network: devnet.networks[0], app, url: app.url } as unknown as Harness

async function borrowerWithSource(sourceId: string): Promise<{ account: PrivateKeyAccount; client: CreditClient }> {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(app.url)
  await client.signIn(account)
  const body = await backingSourceBody(h, account.address, { sourceId, valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 })
  const reply = await client.post('/credit/backing-sources', body)
  if (reply.status !== 201) throw new Error(JSON.stringify(reply.body))
  return { account, client }
}

t.test('a borrower holds at most liveOffersPerBorrowerMax live offers', async (t) => {
  const a = await borrowerWithSource('src-a')
  const ask = (who: { account: PrivateKeyAccount; client: CreditClient }, source: string) =>
    who.client.post('/credit/request', creditRequest(h, who.account.address, source, usdc(1), usdc(1)))
  t.equal((await ask(a, 'src-a')).body.decision, 'approved')
  t.equal((await ask(a, 'src-a')).body.decision, 'approved')
  const before = app.service.store.stats().commits
  expectProblem(t, await ask(a, 'src-a'), 409, 'live_offers_limit', 'the third live offer')
  t.equal(app.service.store.stats().commits, before, 'the refusal wrote nothing')
  t.equal((await new CreditClient(app.url).get('/.well-known/service.json')).body.limits.liveOffersPerBorrowerMax, 2, 'the catalog publishes the bound')
  const b = await borrowerWithSource('src-b')
  t.equal((await ask(b, 'src-b')).body.decision, 'approved', 'another borrower is not affected')
  // Offer TTLs run on the chain's time: the chain (and the service's clock with it) moves past them.
  now = Math.max(now + 60_000, await advanceChainTime(h, 61))
  const dispatched = await a.client.post('/credit/dispatch', {})
  t.ok(dispatched.body.expiredOffers.length >= 2, 'the offers went stale')
  t.equal((await ask(a, 'src-a')).body.decision, 'approved', 'once its offers ended the borrower may ask again')
})

t.test('a borrower at the bound whose offers are past their TTL is not refused: its request ends them (no dispatch)', async (t) => {
  const c = await borrowerWithSource('src-c')
  const ask = () => c.client.post('/credit/request', creditRequest(h, c.account.address, 'src-c', usdc(1), usdc(1)))
  const first = await ask()
  t.equal(first.body.decision, 'approved')
  t.equal((await ask()).body.decision, 'approved')
  expectProblem(t, await ask(), 409, 'live_offers_limit', 'at the bound, its offers live')
  // The chain (and the service's clock) moves past their TTL; nobody dispatches (dispatchIntervalMs 0: no ticker).
  now = Math.max(now + 60_000, await advanceChainTime(h, 61))
  const third = await ask()
  t.equal(third.status, 200, JSON.stringify(third.body))
  t.equal(third.body.decision, 'approved', 'approved: its stale offers do not count')
  const ended = await c.client.get(`/credit/offers/${first.body.offer.offerId}`)
  t.equal(ended.body.state, 'expired', 'the oldest expired with the request, and is stored so')
  t.equal(ended.body.endReason, 'stale')
  app.service.engine.checkInvariants()
})
