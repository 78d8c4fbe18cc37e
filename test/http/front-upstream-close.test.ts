// What uWS holds of the node:net front's connections once they end early. A passed connection is two sockets in the
// front's thread and one of uWS's (its side of the private Unix socket), and uWS lets go of its side only when the
// front ends its own or when its 10 s idle timeout fires. A CONNECT with a path went to uWS as any request: answered
// (405, 404) and kept alive, so the connection and its three descriptors lived until the client or that timeout closed
// it, while node:http closes after a CONNECT (test/http/fields18-node-answers.test.ts waited ~10 s per CONNECT for the
// close). The front now sends it as the connection's last request, with `connection: close` (front-gate.ts
// lastRequest). The other early closes (a head the front refuses after a forwarded request, HTTP/1.0, an authority
// CONNECT, a client that resets mid-body or after a refused upgrade) already let uWS's side go: kept here as guards.
// uWS's sockets are counted from /proc (Linux): the accepted Unix sockets on the front's path that this process holds.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import net from 'node:net'
import t, { type Test } from 'tap'
import { PROBLEM_CONTENT_TYPE } from '../../src/http/problem.ts'
import { startServer } from '../../src/http/server.ts'
import { parseResponse, wholeResponses } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

/** Connections per case: each would hold one of uWS's sockets while it lives. */
const N = 4
const GET = 'GET /items/first HTTP/1.1\r\nHost: x\r\n\r\n'

/**
 * uWS's side of the front's upstream connections: the Unix sockets on a path in the front's socket directory
 * (front.ts SOCKET_DIR_PREFIX) but its listener (flags 00010000, __SO_ACCEPTCON), held by this process.
 */
function upstreamSockets(): number {
  const mine = new Set<string>()
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`)
      if (link.startsWith('socket:[')) mine.add(link.slice(8, -1))
    } catch {
      // An fd closed since the listing (the listing's own among them).
    }
  }
  let count = 0
  for (const line of readFileSync('/proc/net/unix', 'latin1').split('\n').slice(1)) {
    const [, , , flags, , , inode, path] = line.trim().split(/\s+/)
    if (path?.includes('/agent-credit-uws-') === true && flags !== '00010000' && mine.has(inode ?? '')) count++
  }
  return count
}

/** Waits, polling, until `check` holds (no deadline of its own: the test's timeout is the bound). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20))
}

/**
 * A connection that never ends its own side (allowHalfOpen): the server's FIN is only seen, so what uWS holds after
 * it is the server's doing alone.
 */
class Held {
  text = ''
  ended = false
  readonly socket: net.Socket
  readonly #changed = new Set<() => void>()

  constructor(t: Test, port: number, bytes: string) {
    this.socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => this.socket.write(bytes))
    const changed = () => { for (const listener of [...this.#changed]) listener() }
    this.socket.on('data', (data) => { this.text += data.toString('latin1'); changed() })
    this.socket.on('end', () => { this.ended = true; changed() })
    this.socket.on('error', () => { this.ended = true; changed() })
    t.teardown(() => { this.socket.destroy() })
  }

  /** Resolves once the server ended the connection or sent `answers` whole answers. */
  until(answers: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!this.ended && wholeResponses(this.text) < answers) return
        this.#changed.delete(check)
        resolve()
      }
      this.#changed.add(check)
      check()
    })
  }
}

const server = await startServer({
  routes: testRoutes,
  port: 0,
  rateLimit: false,
  log: () => {},
  // An upgrade refused as the event stream refuses one (src/stream/hub.ts): an answer, the connection kept.
  websockets: [{ path: '/ws', behavior: { upgrade: (res) => res.cork(() => { res.writeStatus('401 Unauthorized').writeHeader('content-type', PROBLEM_CONTENT_TYPE).end('{}') }) } }],
})
t.teardown(() => server.close(500))
const baseline = upstreamSockets()

t.test('a CONNECT with a path is the last request: answered by the route table, then uWS closes its side', async (t) => {
  // A request behind the CONNECT (a tunnel's bytes would be there): before, it was answered 200 on the kept connection.
  const clients = Array.from({ length: N }, () => new Held(t, server.port, `CONNECT /items/first HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n${GET}`))
  await Promise.all(clients.map((client) => client.until(2)))
  for (const client of clients) {
    t.equal(wholeResponses(client.text), 1, 'one answer, none to the request behind it')
    const answer = parseResponse(client.text)
    t.same([answer.status, JSON.parse(answer.body).code, answer.headers.connection], [405, 'method_not_allowed', 'close'])
    t.ok(client.ended, 'the server closed the connection')
  }
  if (clients.every((client) => client.ended)) await until(() => upstreamSockets() === baseline)
  t.equal(upstreamSockets(), baseline, 'uWS holds none of their sockets while the clients still hold theirs')
  // A path without routes: 404, closed the same way.
  const nowhere = new Held(t, server.port, `CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n${GET}`)
  await nowhere.until(2)
  t.same([wholeResponses(nowhere.text), parseResponse(nowhere.text).status, nowhere.ended], [1, 404, true])
})

t.test('a CONNECT body goes to uWS; the bytes after it do not', async (t) => {
  const client = new Held(t, server.port, `CONNECT /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}${GET}`)
  await client.until(2)
  t.equal(wholeResponses(client.text), 1)
  t.equal(parseResponse(client.text).status, 405)
  t.ok(client.ended)
})

t.test('the final answer says `connection: close` past uWS\'s own 100 Continue; an HTTP/1.0 request\'s Expect is ignored', async (t) => {
  // uWS writes `100 Continue` to an `Expect: 100-continue` itself: before, the front put the field in that head.
  const connect = new Held(t, server.port, 'CONNECT /echo/a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}')
  await connect.until(3)
  const final = connect.text.slice(connect.text.indexOf('\r\n\r\n') + 4)
  t.match(connect.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 405 /)
  t.same([parseResponse(final).status, parseResponse(final).headers.connection, connect.ended], [405, 'close', true])
  // RFC 9110 sections 10.1.1 and 15.2: a 1.0 request's 100-continue is ignored, and a 1.0 client gets no 1xx answer.
  const old = new Held(t, server.port, 'POST /echo/a HTTP/1.0\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')
  await old.until(2)
  t.same([wholeResponses(old.text), parseResponse(old.text).status, parseResponse(old.text).headers.connection, old.ended], [1, 400, 'close', true])
})

const closedByTheFront: Array<[string, string, number[]]> = [
  ['a head refused 400 bad_request_head after a forwarded request', `${GET}GET /items/first HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n`, [200, 400]],
  ['a method uWS does not know, 501, after a forwarded request', `${GET}FOO /items/first HTTP/1.1\r\nHost: x\r\n\r\n`, [200, 501]],
  ['a Content-Length of 10 digits, 413, after a forwarded request', `${GET}POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1234567890\r\n\r\n`, [200, 413]],
  ['a head longer than uWS takes, 431, after a forwarded request', `${GET}GET /items/first HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(4000)}\r\n\r\n`, [200, 431]],
  ['HTTP/1.0', 'GET /items/first HTTP/1.0\r\n\r\n', [200]],
  ['a CONNECT with an authority (the front answers it alone)', 'CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n', [400]],
]
for (const [name, bytes, statuses] of closedByTheFront) {
  t.test(`${name}: the server closes, and uWS's side with it`, async (t) => {
    const clients = Array.from({ length: N }, () => new Held(t, server.port, bytes))
    await Promise.all(clients.map((client) => client.until(statuses.length + 1)))
    for (const client of clients) {
      const answers: number[] = []
      for (let text = client.text; wholeResponses(text) > 0;) {
        const answer = parseResponse(text)
        answers.push(answer.status)
        text = text.slice(text.indexOf('\r\n\r\n') + 4 + Number(answer.headers['content-length'] ?? 0))
      }
      t.same(answers, statuses)
      t.ok(client.ended, 'the server closed the connection')
    }
    await until(() => upstreamSockets() === baseline)
    t.equal(upstreamSockets(), baseline, 'uWS holds none of their sockets while the clients still hold theirs')
  })
}

const resetByTheClient: Array<[string, string, number]> = [
  ['a client that resets mid-body', 'POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"amountAtomic":', 0],
  ['a client that resets after its upgrade was refused', 'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n', 1],
]
for (const [name, bytes, answers] of resetByTheClient) {
  t.test(`${name}: uWS's side closes`, async (t) => {
    const clients = Array.from({ length: N }, () => new Held(t, server.port, bytes))
    await Promise.all(clients.map((client) => client.until(answers)))
    // Each connection is uWS's (passed, and accepted) before the client goes.
    await until(() => upstreamSockets() === baseline + N)
    for (const client of clients) {
      t.equal(wholeResponses(client.text), answers)
      client.socket.resetAndDestroy()
    }
    await until(() => upstreamSockets() === baseline)
    t.equal(upstreamSockets(), baseline)
  })
}
