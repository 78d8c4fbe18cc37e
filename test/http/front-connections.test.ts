// The node:net front bounds the connections one client (an address, an IPv6 /64: src/http/client-key.ts) holds open
// at once (connectionsPerClientMax): each holds file descriptors, and a stranger opening them faster than the head
// deadline closes them could use up the process's (an outsider's finding). Past the bound the front answers 429
// too_many_connections itself and closes; a closed connection gives its place back; trusted proxies are exempt.
// node:http (HTTP_TRANSPORT=node) keeps the same bound, in its server's connection event; uWS on the port directly
// (HTTP_LEGACY_CLIENTS=0) has no hook that sees a connection open, so it has none (README "Behind a reverse proxy").
import net from 'node:net'
import t from 'tap'
import { startServer, type HttpTransport, type RunningServer } from '../../src/http/server.ts'
import { parseResponse, RawConnection, rawUntil, responseEnded } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

async function start(options: { transport: HttpTransport; connectionsPerClientMax: number; trustedProxies?: string[] }): Promise<RunningServer> {
  const server = await startServer({ routes: testRoutes, port: 0, rateLimit: false, log: () => {}, ...options })
  t.teardown(() => server.close(500))
  return server
}

/** A keep-alive connection that has had one answer (so the front has passed it to uWS), left open. */
function held(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /items/abc HTTP/1.1\r\nHost: x\r\n\r\n'))
    socket.once('data', (chunk) => (chunk.toString('latin1').startsWith('HTTP/1.1 200') ? resolve(socket) : reject(new Error(chunk.toString('latin1')))))
    socket.once('error', reject)
    t.teardown(() => socket.destroy())
  })
}

const GET = 'GET /items/abc HTTP/1.1\r\nHost: x\r\n\r\n'

for (const [transport, name] of [['uws', 'the front'], ['node', 'node:http']] as const) {
  t.test(`${name}: past connectionsPerClientMax a client is answered 429 too_many_connections and closed; closing one frees a place`, async (t) => {
    const server = await start({ transport, connectionsPerClientMax: 3 })
    const sockets = [await held(server.port), await held(server.port), await held(server.port)]
    // Waits for the close (or a whole answer other than the refusal), no longer: the refusal closes at once, and the
    // deadline is well under the head's (HEAD_TIMEOUT_MS), which would close the connection anyway.
    const refusal = new RawConnection(server.port)
    t.teardown(() => refusal.destroy())
    await refusal.write(GET)
    const refused = await refusal.until((text) => responseEnded(text) && parseResponse(text).status !== 429, 5_000)
    const answer = parseResponse(refused.text)
    t.equal(answer.status, 429)
    t.equal(answer.headers['content-type'], 'application/problem+json')
    t.equal(JSON.parse(answer.body).code, 'too_many_connections')
    t.ok(refused.closedByServer, 'and the connection is closed')

    sockets[0]!.destroy()
    // The server counts the close when its socket's close event runs (the front's in the front's thread): try until it has.
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = parseResponse((await rawUntil(server.port, [GET], responseEnded)).text).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    t.equal(status, 200, 'a closed connection gives its place back')
  })

  t.test(`${name}: a trusted proxy carries many clients: its connections are not bounded`, async (t) => {
    const server = await start({ transport, connectionsPerClientMax: 1, trustedProxies: ['127.0.0.1'] })
    await held(server.port)
    await held(server.port)
    t.equal(parseResponse((await rawUntil(server.port, [GET], responseEnded)).text).status, 200)
  })
}
