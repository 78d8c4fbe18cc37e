// A refused upgrade of GET /events (401, 429, 503) closes its connection. The hub answered it and left the connection
// open, kept alive for a next request no WebSocket client sends: the client's FIN did not end it, uWS's idle timeout
// did, seconds later. So each refused upgrade held the service's sockets (three descriptors behind the front) after the
// client had gone, and counted against the client address's connectionsPerClientMax meanwhile: 1,024 upgrades
// without a token, one at a time, each closed by the client after its 401, and every later request of the address
// was refused 429 too_many_connections for seconds (an adversary's probe, measured against a running service; without
// the front, nothing bounded the connections so held but the rate limiter).
// The rate limiter's refusal of an upgrade (429 rate_limited, answered before the hub sees it) did the same.
// Real sockets through the default transport (uWS behind the front).
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
