// TRUSTED_PROXIES names a proxy by its address as the operator writes it (`::1`, `127.0.0.1`). uWS writes a peer's
// address its own way: an IPv6 one in full (0000:...:0001), an IPv4 one on a dual-stack socket (HOST `::`) mapped
// (0000:0000:0000:0000:0000:ffff:7f00:0001), so such a proxy never matched its peer: its X-Forwarded-For was ignored and
// every client behind it shared one bucket (README "Behind a reverse proxy"). Real servers, real sockets.
import { connect } from 'node:net'
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer, type ServerOptions } from '../../src/http/server.ts'

const whoami = defineRoute({
  method: 'get', path: '/whoami', operationId: 'whoami', callers: 'any caller (a test route)', summary: 'The client key', auth: 'none',
  responses: { 200: { description: 'Its client key', schema: StrictObject({ clientKey: Type.String() }) } },
  handler: ({ clientKey }) => ({ status: 200, body: { clientKey } }),
})

async function clientBehind(options: Partial<ServerOptions>, peer: string): Promise<string> {
  const server = await startServer({ routes: [whoami], host: '::', port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate: async () => undefined, ...options })
  try {
    const answer = await fetch(`http://${peer}:${server.port}/whoami`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
    return ((await answer.json()) as { clientKey: string }).clientKey
  } finally {
    await server.close(500)
  }
}

for (const transport of ['uws', 'node'] as const) {
  t.test(`${transport}: a proxy listed as ::1 forwards its clients' addresses`, async (t) => {
    t.equal(await clientBehind({ transport, trustedProxies: ['::1'] }, '[::1]'), '203.0.113.9')
  })
}

t.test('uWS without the front on a dual-stack socket: a proxy listed as 127.0.0.1 forwards its clients\' addresses', async (t) => {
  t.equal(await clientBehind({ transport: 'uws', legacyClients: false, trustedProxies: ['127.0.0.1'] }, '127.0.0.1'), '203.0.113.9')
  t.equal(await clientBehind({ transport: 'uws', legacyClients: false }, '127.0.0.1'), '127.0.0.1', 'an untrusted peer is its own client')
})

t.test('the front on a dual-stack socket: a proxy listed as 127.0.0.1 is exempt from the bound on connections per client', async (t) => {
  const server = await startServer({ routes: [whoami], host: '::', port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate: async () => undefined, transport: 'uws', trustedProxies: ['127.0.0.1'], connectionsPerClientMax: 1 })
  t.teardown(() => server.close(500))
  // One connection held open (the front sees it as ::ffff:127.0.0.1), then a request on a second.
  const held = connect(server.port, '127.0.0.1')
  t.teardown(() => void held.destroy())
  await new Promise((resolve) => held.once('connect', resolve))
  const answer = await fetch(`http://127.0.0.1:${server.port}/whoami`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
  t.equal(answer.status, 200, 'not 429 too_many_connections: the proxy carries many clients')
  t.same(await answer.json(), { clientKey: '203.0.113.9' })
})

// review22: a proxy's IPv6 address written another way than node:net writes a peer (`0:0:0:0:0:0:0:1`, upper case)
// matched only uWS's full form: node:http's peer and the front's (`::1`) never, so behind the front its connections
// were bounded as one client's, and on node:http its X-Forwarded-For was ignored.
t.test('a proxy\'s IPv6 address in another spelling is its peer for node:http and for the front', async (t) => {
  t.equal(await clientBehind({ transport: 'node', trustedProxies: ['0:0:0:0:0:0:0:1'] }, '[::1]'), '203.0.113.9', 'node:http')
  const server = await startServer({ routes: [whoami], host: '::', port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate: async () => undefined, transport: 'uws', trustedProxies: ['0:0:0:0:0:0:0:1'], connectionsPerClientMax: 1 })
  t.teardown(() => server.close(500))
  const held = connect(server.port, '::1')
  t.teardown(() => void held.destroy())
  await new Promise((resolve) => held.once('connect', resolve))
  const answer = await fetch(`http://[::1]:${server.port}/whoami`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
  t.equal(answer.status, 200, 'the front: not 429 too_many_connections')
  t.same(await answer.json(), { clientKey: '203.0.113.9' })
})
