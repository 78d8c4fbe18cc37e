// Issue 10, holes 6 and 9 over HTTP against the whole service: GET /auth/nonce writes nothing durable (stateless
// nonces), a used or expired or forged nonce is refused with its stable code, sessions are revocable at once and
// bounded per wallet (the oldest ends).
import { rmSync } from 'node:fs'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { startDevnet } from '../../src/chain/devnet.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startApp, type App } from '../../src/app/app.ts'
import { DEFAULT_NONCE_TTL_MS } from '../../src/auth/siwe.ts'
import { tempDataDir, testConfig } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, openApiDocument } from './fixtures/api.ts'

const devnet = await startDevnet()
t.teardown(() => devnet.stop())
const dataDir = tempDataDir()
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
let now = Date.now()
const start = () => startApp(testConfig(dataDir, { sessionsPerWalletMax: 3 }), { devnet, clock: () => now, validateResponses: true })
let app: App = await start()
t.teardown(() => app.stop())

async function nonce(client = new CreditClient(app.url)): Promise<{ nonce: string; domain: string; chainIds: number[] }> {
  const reply = await client.get('/auth/nonce')
  if (reply.status !== 200) throw new Error(`nonce ${reply.status}`)
  return reply.body
}

function signed(account: PrivateKeyAccount, issued: { nonce: string; domain: string; chainIds: number[] }) {
  const message = createSiweMessage({
    domain: issued.domain, address: account.address, uri: `${app.url}/`, version: '1', chainId: issued.chainIds[0] as number,
    nonce: issued.nonce, issuedAt: new Date(now), statement: 'Sign in to agent-credit',
  })
  return account.signMessage({ message }).then((signature) => ({ message, signature }))
}

async function signIn(account: PrivateKeyAccount): Promise<CreditClient> {
  const client = new CreditClient(app.url)
  const reply = await client.post('/auth/session', await signed(account, await nonce(client)))
  if (reply.status !== 201) throw new Error(`sign-in ${reply.status} ${JSON.stringify(reply.body)}`)
  client.token = reply.body.token
  return client
}

/** A call that needs a session and changes nothing a test here looks at (on the current URL: restarts move the port). */
function probe(client: CreditClient) {
  const current = new CreditClient(app.url)
  current.token = client.token
  return current.post('/credit/dispatch', {})
}

/** Until every network's chain follower has caught up with its chain (then, with no new block, it writes nothing). */
async function followersCaughtUp(): Promise<void> {
  const deadline = Date.now() + 20_000
  const caughtUp = () => app.networks.every((n) => {
    const follower = app.service.followerHealth(n.slug)
    return follower.state === 'ok' && follower.lagBlocks === 0
  })
  while (!caughtUp()) {
    if (Date.now() > deadline) throw new Error('the chain followers did not catch up')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  await app.service.store.durable()
}

t.test('many nonces write nothing: no record, no commit', async (t) => {
  const store = app.service.store
  await nonce() // the first nonce of a data directory makes its secret (one record, once)
  await followersCaughtUp() // the chain followers' own commits (start-up catch-up) are not the nonces'
  const before = { records: store.verify().records, commits: store.stats().commits, transactions: store.stats().transactions }
  const nonces = new Set<string>()
  for (let i = 0; i < 300; i++) nonces.add((await nonce()).nonce)
  t.equal(nonces.size, 300, 'every nonce is new')
  t.same({ records: store.verify().records, commits: store.stats().commits, transactions: store.stats().transactions }, before, 'the store did not grow and nothing was committed')
})

t.test('a used SIWE message is refused on replay; the nonce is recorded with the session', async (t) => {
  const alice = privateKeyToAccount(generatePrivateKey())
  const body = await signed(alice, await nonce())
  const client = new CreditClient(app.url)
  t.equal((await client.post('/auth/session', body)).status, 201)
  expectProblem(t, await client.post('/auth/session', body), 401, 'siwe_nonce_invalid', 'replay')
  const racing = await signed(alice, await nonce())
  const statuses = (await Promise.all([1, 2, 3].map(() => client.post('/auth/session', racing)))).map((r) => r.status).sort()
  t.same(statuses, [201, 401, 401], 'of three racing sign-ins with one nonce, one opens a session')
})

t.test('an expired nonce, a forged one, an altered one: refused with their codes', async (t) => {
  const bob = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(app.url)
  const old = await nonce()
  now += DEFAULT_NONCE_TTL_MS + 1
  expectProblem(t, await client.post('/auth/session', await signed(bob, old)), 401, 'siwe_nonce_expired', 'expired')
  const fresh = await nonce()
  const forged = { ...fresh, nonce: `${now.toString(16).padStart(12, '0')}${'ab'.repeat(32)}` }
  expectProblem(t, await client.post('/auth/session', await signed(bob, forged)), 401, 'siwe_nonce_invalid', 'forged')
  const last = fresh.nonce.at(-1) === '0' ? '1' : '0'
  const altered = { ...fresh, nonce: `${fresh.nonce.slice(0, -1)}${last}` }
  expectProblem(t, await client.post('/auth/session', await signed(bob, altered)), 401, 'siwe_nonce_invalid', 'one digit altered')
  const backdated = { ...fresh, nonce: `${(now - DEFAULT_NONCE_TTL_MS * 2).toString(16).padStart(12, '0')}${fresh.nonce.slice(12)}` }
  expectProblem(t, await client.post('/auth/session', await signed(bob, backdated)), 401, 'siwe_nonce_invalid', 'issue time altered')
  t.equal((await client.post('/auth/session', await signed(bob, fresh))).status, 201, 'the untouched nonce still works')
})

t.test('DELETE /auth/session ends this session at once; DELETE /auth/sessions ends every one of the wallet', async (t) => {
  const document = await openApiDocument(app.url)
  const carol = privateKeyToAccount(generatePrivateKey())
  const [a, b] = [await signIn(carol), await signIn(carol)]
  const dave = await signIn(privateKeyToAccount(generatePrivateKey()))
  t.equal((await probe(a)).status, 200, 'the session works (and is cached)')
  const revoked = await a.call('DELETE', '/auth/session')
  t.equal(revoked.status, 200)
  t.same(revoked.body, { address: carol.address, revoked: 1 })
  expectDocumented(t, document, 'delete', '/auth/session', revoked)
  expectProblem(t, await probe(a), 401, 'unauthorized', 'the revoked token, at once')
  t.equal((await probe(b)).status, 200, 'the wallet\'s other session is untouched')
  const c = await signIn(carol)
  const all = await b.call('DELETE', '/auth/sessions')
  t.same(all.body, { address: carol.address, revoked: 2 })
  expectDocumented(t, document, 'delete', '/auth/sessions', all)
  expectProblem(t, await probe(b), 401, 'unauthorized', 'this session')
  expectProblem(t, await probe(c), 401, 'unauthorized', 'and the other')
  t.equal((await probe(dave)).status, 200, 'another wallet\'s session is untouched')
  const again = await signIn(carol)
  t.equal((await probe(again)).status, 200, 'the wallet signs in again')
  expectProblem(t, await a.call('DELETE', '/auth/session'), 401, 'unauthorized', 'a revoked token cannot revoke')
  app = await (app.stop().then(start))
  expectProblem(t, await probe(a), 401, 'unauthorized', 'still refused after a restart')
  expectProblem(t, await probe(b), 401, 'unauthorized', 'still refused after a restart')
  t.equal((await probe(again)).status, 200, 'the live session survives a restart')
})

t.test('sessions per wallet are bounded: a sign-in beyond the bound ends the oldest', async (t) => {
  const erin = privateKeyToAccount(generatePrivateKey())
  const sessions: CreditClient[] = []
  for (let i = 0; i < 5; i++) {
    sessions.push(await signIn(erin))
    now += 1
  }
  const statuses = await Promise.all(sessions.map(async (s) => (await probe(s)).status))
  t.same(statuses, [401, 401, 200, 200, 200], 'the bound is 3: the two oldest ended')
  const catalog = (await new CreditClient(app.url).get('/.well-known/service.json')).body
  t.equal(catalog.auth.sessionsPerWalletMax, 3, 'the catalog publishes the bound')
  t.same(catalog.auth.revoke, { current: 'DELETE /auth/session', all: 'DELETE /auth/sessions' }, 'and the revocation routes')
})

t.test('a nonce issued before a restart still signs in after it (the secret is kept in the store)', async (t) => {
  const issued = await nonce()
  app = await (app.stop().then(start))
  const frank = privateKeyToAccount(generatePrivateKey())
  // A restart on port 0 moves the port, and the SIWE domain with it; the nonce is the one issued before.
  const reply = await new CreditClient(app.url).post('/auth/session', await signed(frank, { ...issued, domain: new URL(app.url).host }))
  t.equal(reply.status, 201, 'signed in', { body: reply.body })
})
