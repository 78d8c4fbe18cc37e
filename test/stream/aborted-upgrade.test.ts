// An upgrade of GET /events whose client goes away while its token is still being checked (the session store answers
// later): the pipeline holds the response's abort handler (uWS keeps one; the hub set its own before edges30) and the
// hub asks the gate. The dead socket is not upgraded, the answer to it is not written, no place of the client is held
// (its one stream opens afterwards), the upgrade stays counted on the client's bucket as any request, and the request
// log says it was aborted (review36). An upgrade that opens is logged too (101): it left no request line.
// Real sockets through the default transport (uWS behind the front).
import net from 'node:net'
import t from 'tap'
import type { Address } from 'viem'
import type { LogLine } from '../../src/http/log.ts'
import type { Session } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { EventHub } from '../../src/stream/hub.ts'
import { testRoutes } from '../http/fixtures/routes.ts'
import { upgrade } from '../http/fixtures/upgrade.ts'

const walletOf = (token: string): Address => `0x${token.padStart(40, '0')}` as Address
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Sends an upgrade request of `token` on a raw socket, then destroys the socket at once (no answer read). */
async function upgradeAndLeave(port: number, token: string): Promise<void> {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(
    'GET /events HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: review36-${token}\r\n\r\n`,
  )
  await sleep(50)
  socket.destroy()
}

for (const outcome of ['a session', 'no session', 'a failure'] as const) t.test(`an upgrade whose client left while its token was checked (then ${outcome}) is neither upgraded nor answered, holds no place, and stays counted`, async (t) => {
  const logged: LogLine[] = []
  const hub = new EventHub({ leaseAction: () => null }, { connectionsPerClientMax: 1, connectionsMax: 1 })
  const pending: Array<(session: Session | undefined | Error) => void> = []
  const authenticate = (token: string): Promise<Session | undefined> => {
    if (token !== 'slow') return Promise.resolve({ address: walletOf(token), tokenHash: token } as Session)
    return new Promise((resolve, reject) => pending.push((session) => (session instanceof Error ? reject(session) : resolve(session))))
  }
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: { burst: 3, refillPerSecond: 0.001 }, log: (line) => logged.push(line),
    websockets: [{ path: '/events', behavior: hub.behavior(authenticate) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  const url = `${server.url.replace(/^http/, 'ws')}/events`
  const port = Number(new URL(server.url).port)

  await upgradeAndLeave(port, 'slow')
  const abortedLine = () => logged.find((line) => line.msg === 'request' && line.requestId === 'review36-slow')
  for (let k = 0; k < 200 && abortedLine() === undefined; k++) await sleep(10)
  t.match(abortedLine(), { status: null, aborted: true }, 'the request log says the client went away')
  t.equal(pending.length, 1, 'the token is still being checked')
  pending[0]!(outcome === 'a session' ? ({ address: walletOf('5107'), tokenHash: 'slow' } as Session) : outcome === 'no session' ? undefined : new Error('store down'))
  await sleep(100)
  t.equal(hub.stats().connections.length, 0, 'no stream was opened for the dead socket')
  t.equal(logged.filter((line) => line.requestId === 'review36-slow').length, 1, 'nothing answered to it (one line: the abort)')

  const first = await upgrade(url, { headers: { authorization: 'Bearer 1', 'x-request-id': 'review36-open' } })
  t.teardown(() => first.ws?.terminate())
  t.equal(first.status, 101, 'the client\'s one place and the service\'s one are free: its stream opens')
  t.match(logged.filter((line) => line.requestId === 'review36-open'), [{ msg: 'request', method: 'GET', path: '/events', status: 101 }], 'its upgrade is logged, one request line as every answer')
  const second = await upgrade(url, { headers: { authorization: 'Bearer 2' } })
  t.equal(second.problem?.code, 'too_many_client_streams', 'a second is refused by the hub')
  t.match(second.headers['ratelimit'], /^"client";r=0;t=[0-9]+$/, 'on a bucket of 3 that the aborted upgrade was counted on')
})
