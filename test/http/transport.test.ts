// What differs between the transports (the shared rules run on both through the *.node.test.ts wrappers), and the
// HTTP_TRANSPORT setting.
import t from 'tap'
import { ConfigError, loadServiceConfig } from '../../src/app/config.ts'
import { startServer } from '../../src/http/server.ts'
import { parseResponse, rawExchange } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

t.test('HTTP_TRANSPORT: uws by default, node on request, anything else refused at start-up', async (t) => {
  t.equal(loadServiceConfig({}).httpTransport, 'uws')
  t.equal(loadServiceConfig({ HTTP_TRANSPORT: 'node' }).httpTransport, 'node')
  t.throws(() => loadServiceConfig({ HTTP_TRANSPORT: 'express' }), ConfigError)
  await t.rejects(startServer({ transport: 'express' as never, routes: testRoutes, port: 0 }), /transport must be uws or node/)
})

t.test('node:http: HTTP/1.0 and Host-less requests are answered without a front, even with legacyClients false', async (t) => {
  const server = await startServer({ transport: 'node', legacyClients: false, routes: testRoutes, port: 0, rateLimit: false, log: () => {} })
  t.teardown(() => server.close(500))
  const http10 = await rawExchange(server.port, ['GET /items/abc HTTP/1.0\r\n\r\n'], 2_000)
  const answer = parseResponse(http10.text)
  t.equal(answer.status, 200, 'uWS alone leaves this without an answer (edge.test.ts)')
  t.equal(answer.headers['connection'], 'close')
  t.ok(http10.closedByServer)
  const noHost = parseResponse((await rawExchange(server.port, ['GET /items/abc HTTP/1.1\r\n\r\n'], 2_000)).text)
  t.match(JSON.parse(noHost.body), { status: 400, code: 'missing_host' })
  const smuggled = parseResponse((await rawExchange(server.port, ['POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'], 2_000)).text)
  t.equal(smuggled.status, 400, 'two lengths: node\'s parser refuses, as problem+json')
  t.equal(smuggled.headers['content-type'], 'application/problem+json')
})

t.test('node:http: the WebSocket paths answer 501 websocket_unavailable, upgrade or not', async (t) => {
  const server = await startServer({ transport: 'node', routes: testRoutes, port: 0, rateLimit: false, log: () => {}, websockets: [{ path: '/events/stream', behavior: {} }] })
  t.teardown(() => server.close(500))
  const plain = await fetch(`${server.url}/events/stream`)
  t.equal(plain.status, 501)
  t.match(await plain.json(), { code: 'websocket_unavailable' })
  const upgrade = parseResponse((await rawExchange(server.port, ['GET /events/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'], 2_000)).text)
  t.equal(upgrade.status, 501)
  t.match(JSON.parse(upgrade.body), { code: 'websocket_unavailable' })
})
