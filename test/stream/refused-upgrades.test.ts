// A refused upgrade of GET /events (401, 429, 503) closes its connection. The hub answered it and left the connection
// open, kept alive for a next request no WebSocket client sends: the client's FIN did not end it, uWS's idle timeout
// did, seconds later. So each refused upgrade held the service's sockets (three descriptors behind the front) after the
// client had gone, and counted against the client address's connectionsPerClientMax meanwhile: 1,024 upgrades
// without a token, one at a time, each closed by the client after its 401, and every later request of the address
// was refused 429 too_many_connections for seconds (an adversary's probe, measured against a running service; without
// the front, nothing bounded the connections so held but the rate limiter).
// The rate limiter's refusal of an upgrade (429 rate_limited, answered before the hub sees it) did the same.
// Real sockets through the default transport (uWS behind the front).
// A refused upgrade carries X-Request-Id and the RateLimit fields as every other answer does: the hub wrote its
// refusals itself, without them (edges30); now the pipeline answers them.
import t from 'tap'
import type { Address } from 'viem'
import { startServer } from '../../src/http/server.ts'
import { EventHub } from '../../src/stream/hub.ts'
import { testRoutes } from '../http/fixtures/routes.ts'
import { upgrade } from '../http/fixtures/upgrade.ts'

const CONNECTIONS_PER_CLIENT_MAX = 4
const ATTEMPTS = 5 * CONNECTIONS_PER_CLIENT_MAX

const walletOf = (token: string): Address => `0x${token.padStart(40, '0')}` as Address

t.test('refused upgrades close their connections: a client refused again and again is never refused too_many_connections', async (t) => {
  const hub = new EventHub({ leaseAction: () => null }, { connectionsPerWalletMax: 1 })
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {}, connectionsPerClientMax: CONNECTIONS_PER_CLIENT_MAX,
    websockets: [{ path: '/events', behavior: hub.behavior(async (token) => (token === 'bad' ? undefined : { address: walletOf(token), tokenHash: token })) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  const url = `${server.url.replace(/^http/, 'ws')}/events`
  const held = await upgrade(url, { headers: { authorization: 'Bearer 1' } })
  t.teardown(() => held.ws?.terminate())
  t.equal(held.status, 101, 'the wallet\'s one stream opens')

  // upgrade() destroys the client's side of a refused one once its answer is read, as a WebSocket client does.
  const codes: string[] = []
  for (let i = 0; i < ATTEMPTS; i++) {
    const refused = await upgrade(url, { headers: i % 2 === 0 ? {} : { authorization: 'Bearer bad' } })
    codes.push(refused.problem?.code ?? String(refused.status))
    const second = await upgrade(url, { headers: { authorization: 'Bearer 1' } })
    codes.push(second.problem?.code ?? String(second.status))
  }
  t.same(new Set(codes), new Set(['unauthorized', 'too_many_streams']), `${2 * ATTEMPTS} refusals in a row, each 401 or 429 too_many_streams, never too_many_connections`)
  t.equal(hub.stats().connections.length, 1, 'the one stream is still the only one')
})

t.test('an upgrade the rate limiter refuses closes its connection too', async (t) => {
  const hub = new EventHub({ leaseAction: () => null })
  const server = await startServer({
    // One token, never refilled within the test: every upgrade but the first is refused 429 rate_limited.
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: { burst: 1, refillPerSecond: 0.001 }, log: () => {}, connectionsPerClientMax: CONNECTIONS_PER_CLIENT_MAX,
    websockets: [{ path: '/events', behavior: hub.behavior(async () => undefined) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  const url = `${server.url.replace(/^http/, 'ws')}/events`
  const codes: string[] = []
  for (let i = 0; i < ATTEMPTS; i++) codes.push((await upgrade(url)).problem?.code ?? '101')
  t.same(codes, ['unauthorized', ...Array.from({ length: ATTEMPTS - 1 }, () => 'rate_limited')], `${ATTEMPTS} refusals in a row: 401, then 429 rate_limited, never too_many_connections`)
})

t.test('a refused upgrade carries X-Request-Id and the RateLimit fields, as every answer: 400, 401, 429, 503 and the limiter\'s 429', async (t) => {
  const hub = new EventHub({ leaseAction: () => null }, { connectionsPerWalletMax: 1, connectionsMax: 2 })
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: { burst: 9, refillPerSecond: 0.001 }, log: () => {},
    websockets: [{ path: '/events', behavior: hub.behavior(async (token) => (token === 'bad' ? undefined : { address: walletOf(token), tokenHash: token })) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  const url = `${server.url.replace(/^http/, 'ws')}/events`
  const held = [await upgrade(url, { headers: { authorization: 'Bearer 1' } }), await upgrade(url, { headers: { authorization: 'Bearer 2' } })]
  t.teardown(() => held.forEach((h) => h.ws?.terminate()))
  t.same(held.map((h) => h.status), [101, 101], 'two streams open: the service is full')

  const cases: Array<[string, Record<string, string>, number, string]> = [
    ['a query it does not take', { authorization: 'Bearer 3' }, 400, 'validation_failed'],
    ['no token', {}, 401, 'unauthorized'],
    ['an unknown token', { authorization: 'Bearer bad' }, 401, 'unauthorized'],
    ['a wallet at its bound', { authorization: 'Bearer 1' }, 429, 'too_many_streams'],
    ['the service full', { authorization: 'Bearer 3' }, 503, 'streams_full'],
  ]
  let remaining = 9 - held.length
  for (const [what, headers, status, code] of cases) {
    const requestId = `edges30-${code}`
    const refused = await upgrade(what === 'a query it does not take' ? `${url}?subscribe=all` : url, { headers: { ...headers, 'x-request-id': requestId } })
    t.equal(refused.status, status, what)
    t.equal(refused.problem?.code, code, what)
    t.equal(refused.headers['x-request-id'], requestId, `${what}: the caller's X-Request-Id echoed`)
    t.match(refused.headers['ratelimit-policy'], /^"client";q=9;w=[0-9]+$/, `${what}: RateLimit-Policy`)
    t.match(refused.headers['ratelimit'], new RegExp(`^"client";r=${--remaining};t=[0-9]+$`), `${what}: RateLimit, the upgrade counted on its bucket`)
    t.equal(refused.headers['content-type'], 'application/problem+json', what)
    if (status === 401) t.equal(refused.headers['www-authenticate'], 'Bearer', `${what}: WWW-Authenticate`)
  }
  const minted = await upgrade(url)
  t.equal(minted.status, 401)
  t.match(minted.headers['x-request-id'], /^\S+$/, 'without one given, an id is minted')
  t.match(minted.headers['ratelimit'], /^"client";r=1;t=[0-9]+$/)
  hub.close()
  const stopping = await upgrade(url, { headers: { authorization: 'Bearer 3', 'x-request-id': 'edges30-stopping' } })
  t.equal(stopping.problem?.code, 'shutting_down', 'the hub stopping: 503')
  t.equal(stopping.headers['x-request-id'], 'edges30-stopping')
  t.match(stopping.headers['ratelimit'], /^"client";r=0;t=[0-9]+$/)
  const limited = await upgrade(url, { headers: { authorization: 'Bearer 3', 'x-request-id': 'edges30-limited' } })
  t.equal(limited.problem?.code, 'rate_limited', 'then the limiter\'s own 429')
  t.equal(limited.headers['x-request-id'], 'edges30-limited', 'which had them already')
  t.match(limited.headers['ratelimit'], /^"client";r=0;t=[0-9]+$/)
})
