// Sign-In with Ethereum over real HTTP, against a real chain (anvil) and a real LMDB database.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import Type from 'typebox'
import { createPublicClient, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { createSiweMessage } from 'viem/siwe'
import { Address as AddressSchema, checksum, StrictObject } from '../../src/api/common.ts'
import { buildOpenApi } from '../../src/api/openapi.ts'
import { requireSame } from '../../src/auth/guard.ts'
import { authRoutes } from '../../src/auth/routes.ts'
import { DEFAULT_NONCE_TTL_MS, DEFAULT_SESSION_TTL_MS, hashToken, SESSION_REFRESH_HORIZON_MS, SiweAuth } from '../../src/auth/siwe.ts'
import { StoreAuthRecords } from '../../src/auth/store-records.ts'
import { silentLogger } from '../../src/http/log.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { Store } from '../../src/store/index.ts'
import { checkResponse } from '../http/fixtures/openapi-check.ts'
import { startAnvil } from './fixtures/anvil.ts'

const DOMAIN = 'credit.test:8402'
const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const dir = await mkdtemp(path.join(os.tmpdir(), 'auth-siwe-'))
let now = Date.now()
const store = await Store.open({ dataDir: dir, clock: () => now })
const records = new StoreAuthRecords(store)
t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })

const client = createPublicClient({ chain: foundry, transport: http(anvil.url, { retryCount: 0 }) })
const auth = new SiweAuth({ records, domain: DOMAIN, clients: { [foundry.id]: client }, nowMs: () => now })

// A session route that names a wallet in its path: only that wallet may call it.
const ownedRoute = defineRoute({
  method: 'post',
  path: '/owned/{address}',
  operationId: 'actAsOwner',
  callers: 'any caller (a test route)',
  summary: 'Act on a resource owned by a wallet',
  auth: 'session',
  params: StrictObject({ address: AddressSchema }),
  responses: { 200: { description: 'Done', schema: StrictObject({ actor: AddressSchema }) }, 403: { description: 'Not the owner' } },
  handler: ({ params, session }) => {
    requireSame(session.address, params.address, `the resource of ${params.address}`)
    return { status: 200, body: { actor: session.address } }
  },
})
const whoamiRoute = defineRoute({
  method: 'get',
  path: '/whoami',
  operationId: 'whoami',
  callers: 'any caller (a test route)',
  summary: 'The signed-in wallet',
  auth: 'session',
  responses: { 200: { description: 'The session', schema: StrictObject({ address: AddressSchema, kind: Type.Literal('session') }) } },
  handler: ({ session }) => ({ status: 200, body: { address: session.address, kind: 'session' as const } }),
})
const routes = [...authRoutes(auth), ownedRoute, whoamiRoute]
const document = buildOpenApi(routes, { info: { title: 'auth test' } })
// `session`, as the app passes it: a cached session answers without a promise.
const server = await startServer({ routes, log: silentLogger, rateLimit: false, authenticate: auth.session, validateResponses: true })
t.teardown(() => server.close(1000))

const alice = privateKeyToAccount(generatePrivateKey())
const mallory = privateKeyToAccount(generatePrivateKey())

async function getNonce(): Promise<{ nonce: string; expiresAt: string; domain: string; chainIds: number[] }> {
  const response = await fetch(`${server.url}/auth/nonce`)
  const body = await response.json()
  if (response.status !== 200) throw new Error(`nonce: ${response.status}`)
  if (!checkResponse(document, 'get', '/auth/nonce', 200, body).valid) throw new Error('nonce response breaks its schema')
  return body as { nonce: string; expiresAt: string; domain: string; chainIds: number[] }
}

function message(address: Address, nonce: string, overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}): string {
  return createSiweMessage({ domain: DOMAIN, address, uri: `https://${DOMAIN}/`, version: '1', chainId: foundry.id, nonce, issuedAt: new Date(now), statement: 'Sign in to agent-credit.', ...overrides })
}

const postSession = (body: unknown) => fetch(`${server.url}/auth/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function expectRefused(t: Test, response: Response, status: number, code: string) {
  t.equal(response.status, status, `status ${status}`)
  t.equal(response.headers.get('content-type'), 'application/problem+json')
  const body = await response.json() as { code: string }
  t.equal(body.code, code, `code ${code}`)
  t.ok(checkResponse(document, 'post', '/auth/session', status, body).valid || status === 403, 'problem matches the document')
}

let aliceToken = ''

t.test('nonce, signed message, session: the token is returned once and stored only hashed', async (t) => {
  const issued = await getNonce()
  t.match(issued.nonce, /^[A-Za-z0-9]{8,}$/)
  t.equal(issued.domain, DOMAIN)
  t.same(issued.chainIds, [foundry.id])
  t.equal(Date.parse(issued.expiresAt), now + DEFAULT_NONCE_TTL_MS)
  const text = message(alice.address, issued.nonce)
  const response = await postSession({ message: text, signature: await alice.signMessage({ message: text }) })
  t.equal(response.status, 201)
  t.equal(response.headers.get('cache-control'), 'no-store')
  const body = await response.json() as { token: string; tokenType: string; address: string; chainId: number; expiresAt: string }
  t.same(checkResponse(document, 'post', '/auth/session', 201, body), { valid: true, errors: [] })
  t.match(body.token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.equal(body.tokenType, 'Bearer')
  t.equal(body.address, alice.address)
  t.equal(Date.parse(body.expiresAt), now + DEFAULT_SESSION_TTL_MS)
  const stored = await records.getSession(hashToken(body.token))
  t.equal(stored?.address, alice.address)
  t.equal(await records.getSession(body.token), undefined, 'the token itself is not a key')
  t.notMatch(JSON.stringify(stored), body.token, 'nor a value')
  t.ok(await records.isNonceUsed(issued.nonce), 'the nonce is recorded as used, with the session')
  aliceToken = body.token
})

t.test('a bearer token that works, one that does not, and a wrong owner', async (t) => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const who = await fetch(`${server.url}/whoami`, { headers: bearer(aliceToken) })
  t.equal(who.status, 200)
  t.same(await who.json(), { address: alice.address, kind: 'session' })
  t.equal((await fetch(`${server.url}/owned/${alice.address.toLowerCase()}`, { method: 'POST', headers: bearer(aliceToken) })).status, 200, 'own resource, any letter case')
  const forbidden = await fetch(`${server.url}/owned/${mallory.address}`, { method: 'POST', headers: bearer(aliceToken) })
  t.equal(forbidden.status, 403)
  t.equal(((await forbidden.json()) as { code: string }).code, 'forbidden')
  for (const [label, headers] of [
    ['no header', {}],
    ['not bearer', { authorization: `Basic ${aliceToken}` }],
    ['unknown token', bearer('A'.repeat(43))],
    ['malformed token', bearer('not a token')],
    ['token with a changed character', bearer(`${aliceToken.slice(0, -1)}${aliceToken.endsWith('A') ? 'B' : 'A'}`)],
  ] as const) {
    const response = await fetch(`${server.url}/whoami`, { headers })
    t.equal(response.status, 401, label)
    t.equal(((await response.json()) as { code: string }).code, 'unauthorized', label)
    t.match(response.headers.get('www-authenticate') ?? '', /^Bearer/, `${label}: WWW-Authenticate`)
  }
})

t.test('a cached session answers at once, the same session each time; a token not in memory waits for the store', async (t) => {
  // aliceToken has served requests above: it is cached.
  const cached = auth.session(aliceToken)
  t.notOk(cached instanceof Promise, 'no promise for a cached session')
  t.same(cached, { address: alice.address, tokenHash: hashToken(aliceToken) })
  t.equal(auth.session(aliceToken), cached, 'the same object: nothing is built per request')
  t.ok(Object.isFrozen(cached), 'which no handler can change for the next request')
  t.equal(await auth.authenticate(aliceToken), cached, 'authenticate (the event stream\'s) answers the same session')
  const unknown = auth.session('B'.repeat(43))
  t.ok(unknown instanceof Promise, 'an unknown token is looked up in the store')
  t.equal(await unknown, undefined)
})

t.test('a reused nonce is refused', async (t) => {
  const { nonce } = await getNonce()
  const text = message(alice.address, nonce)
  const signed = { message: text, signature: await alice.signMessage({ message: text }) }
  t.equal((await postSession(signed)).status, 201)
  await expectRefused(t, await postSession(signed), 401, 'siwe_nonce_invalid')
})

t.test('two sign-ins racing on one nonce: exactly one session', async (t) => {
  const { nonce } = await getNonce()
  const text = message(alice.address, nonce)
  const signed = { message: text, signature: await alice.signMessage({ message: text }) }
  const statuses = (await Promise.all([postSession(signed), postSession(signed), postSession(signed)])).map((r) => r.status).sort()
  t.same(statuses, [201, 401, 401])
})

t.test('a nonce never issued is refused', async (t) => {
  const text = message(alice.address, 'abcdefgh12345678')
  await expectRefused(t, await postSession({ message: text, signature: await alice.signMessage({ message: text }) }), 401, 'siwe_nonce_invalid')
})

t.test('a message for another domain is refused and does not burn the nonce', async (t) => {
  const { nonce } = await getNonce()
  const phishing = message(alice.address, nonce, { domain: 'evil.example', uri: 'https://evil.example/' })
  await expectRefused(t, await postSession({ message: phishing, signature: await alice.signMessage({ message: phishing }) }), 401, 'siwe_domain_mismatch')
  const honest = message(alice.address, nonce)
  t.equal((await postSession({ message: honest, signature: await alice.signMessage({ message: honest }) })).status, 201, 'the nonce still works for the right domain')
})

t.test('an expired nonce is refused', async (t) => {
  const { nonce } = await getNonce()
  now += DEFAULT_NONCE_TTL_MS + 1
  const text = message(alice.address, nonce)
  await expectRefused(t, await postSession({ message: text, signature: await alice.signMessage({ message: text }) }), 401, 'siwe_nonce_expired')
})

t.test('an expired message, a message from the future, another chain, a garbage message', async (t) => {
  const expired = await getNonce()
  const late = message(alice.address, expired.nonce, { expirationTime: new Date(now - 1000) })
  await expectRefused(t, await postSession({ message: late, signature: await alice.signMessage({ message: late }) }), 401, 'siwe_message_expired')
  const future = await getNonce()
  const early = message(alice.address, future.nonce, { issuedAt: new Date(now + 10 * 60_000) })
  await expectRefused(t, await postSession({ message: early, signature: await alice.signMessage({ message: early }) }), 401, 'siwe_message_not_yet_valid')
  const chain = await getNonce()
  const mainnet = message(alice.address, chain.nonce, { chainId: 1 })
  await expectRefused(t, await postSession({ message: mainnet, signature: await alice.signMessage({ message: mainnet }) }), 401, 'siwe_chain_unsupported')
  await expectRefused(t, await postSession({ message: 'hello', signature: '0x1234' }), 400, 'siwe_message_invalid')
  await expectRefused(t, await postSession({ message: 'hello', signature: 'nothex' }), 400, 'validation_failed')
})

t.test('a signature by another wallet is refused', async (t) => {
  const { nonce } = await getNonce()
  const text = message(alice.address, nonce)
  await expectRefused(t, await postSession({ message: text, signature: await mallory.signMessage({ message: text }) }), 401, 'siwe_signature_invalid')
  const tampered = message(alice.address, nonce, { statement: 'Sign in to something else.' })
  await expectRefused(t, await postSession({ message: tampered, signature: await alice.signMessage({ message: message(alice.address, nonce) }) }), 401, 'siwe_signature_invalid')
})

t.test('a session expires', async (t) => {
  const { nonce } = await getNonce()
  const text = message(mallory.address, nonce)
  const response = await postSession({ message: text, signature: await mallory.signMessage({ message: text }) })
  const { token, address } = await response.json() as { token: string; address: string }
  t.equal(address, checksum(mallory.address))
  t.equal((await fetch(`${server.url}/whoami`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
  now += DEFAULT_SESSION_TTL_MS
  t.equal((await fetch(`${server.url}/whoami`, { headers: { authorization: `Bearer ${token}` } })).status, 401, 'expired at its expiry')
})

t.test('a refresh extends the live session in place: no new record, never past its message\'s expirationTime nor a week after the signature', async (t) => {
  const HOUR = 3600_000
  const signIn = async (overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}) => {
    const wallet = privateKeyToAccount(generatePrivateKey())
    const text = message(wallet.address, (await getNonce()).nonce, overrides)
    const { token } = (await (await postSession({ message: text, signature: await wallet.signMessage({ message: text }) })).json()) as { token: string }
    return { token, address: checksum(wallet.address) as Address }
  }
  const refresh = async (token: string) => {
    const response = await fetch(`${server.url}/auth/session/refresh`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    const body = (await response.json()) as { expiresAt: string; code?: string }
    if (response.status === 200) t.ok(checkResponse(document, 'post', '/auth/session/refresh', 200, body).valid, 'the answer matches the document')
    return { status: response.status, expiresAtMs: Date.parse(body.expiresAt), code: body.code }
  }
  const whoami = async (token: string) => (await fetch(`${server.url}/whoami`, { headers: { authorization: `Bearer ${token}` } })).status
  // A message that expires in three days.
  const signedMs = now
  const bob = await signIn({ expirationTime: new Date(signedMs + 72 * HOUR) })
  now += 12 * HOUR
  t.same(await refresh(bob.token), { status: 200, expiresAtMs: now + DEFAULT_SESSION_TTL_MS, code: undefined }, 'a day from now')
  const stored = await records.getSession(hashToken(bob.token))
  t.equal(stored?.expiresAtMs, now + DEFAULT_SESSION_TTL_MS, 'stored, not only cached')
  t.equal((await records.sessionsOf(bob.address)).length, 1, 'the same record: the store keeps nothing more')
  now += 23 * HOUR
  t.equal(await whoami(bob.token), 200, 'past its first expiry, the token works')
  t.equal((await refresh(bob.token)).expiresAtMs, now + DEFAULT_SESSION_TTL_MS)
  now += 20 * HOUR
  t.equal((await refresh(bob.token)).expiresAtMs, signedMs + 72 * HOUR, 'never past the message\'s expirationTime')
  now = signedMs + 72 * HOUR
  t.equal(await whoami(bob.token), 401, 'ended then')
  t.match(await refresh(bob.token), { status: 401, code: 'unauthorized' }, 'and refreshes nothing')
  // Without expirationTime: at most a week after the signature.
  const carolSignedMs = now
  const carol = await signIn()
  let last = 0
  while (now < carolSignedMs + SESSION_REFRESH_HORIZON_MS) {
    now += 20 * HOUR
    const refreshed = await refresh(carol.token)
    if (refreshed.status !== 200) break
    last = refreshed.expiresAtMs
  }
  t.equal(last, carolSignedMs + SESSION_REFRESH_HORIZON_MS, 'refreshed up to a week after the signature, not further')
  now = carolSignedMs + SESSION_REFRESH_HORIZON_MS
  t.equal(await whoami(carol.token), 401, 'then the wallet signs in again')
  // A revoked session refreshes nothing.
  const dave = await signIn()
  t.equal((await fetch(`${server.url}/auth/session`, { method: 'DELETE', headers: { authorization: `Bearer ${dave.token}` } })).status, 200)
  t.equal((await refresh(dave.token)).status, 401)
})
