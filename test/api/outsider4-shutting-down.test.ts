// An outsider's conformance check of the answers the transport gives on every route: while the service stops, a
// request on a connection kept alive from before is answered 503 shutting_down (it is never left unanswered), and
// the OpenAPI document must list that status for every operation, as it lists 429 and 500, so that a client
// generated from it knows the answer and retries. Before, 37 of the 51 operations had no 503 at all.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { startHarness, type Harness } from '../fixtures/service.ts'
import { openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
})
t.teardown(() => h.stop())

/** A kept-alive connection: writes one request at a time and resolves with each answer's status line and body. */
function keptAlive(): Promise<{ socket: Socket; ask: (head: string) => Promise<{ status: number; body: string }> }> {
  const url = new URL(h.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      let buffered = ''
      let waiting: ((answer: { status: number; body: string }) => void) | undefined
      socket.setEncoding('latin1')
      socket.on('data', (chunk: string) => {
        buffered += chunk
        const end = buffered.indexOf('\r\n\r\n')
        const length = /content-length: (\d+)/i.exec(buffered.slice(0, end))
        if (end < 0 || length === null || buffered.length < end + 4 + Number(length[1])) return
        const answer = { status: Number(buffered.slice(9, 12)), body: buffered.slice(end + 4, end + 4 + Number(length[1])) }
        buffered = buffered.slice(end + 4 + Number(length[1]))
        waiting?.(answer)
      })
      resolve({
        socket,
        ask: (head) =>
          new Promise((answered) => {
            waiting = answered
            socket.write(`${head}\r\nHost: ${url.host}\r\n\r\n`)
          }),
      })
    })
    socket.on('error', reject)
  })
}

t.test('every operation documents 503: the transport answers shutting_down on any route while the service stops', async (t) => {
  const missing: string[] = []
  for (const [path, item] of Object.entries(doc['paths'] as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) if (op['responses']['503'] === undefined) missing.push(`${method.toUpperCase()} ${path}`)
  }
  t.same(missing, [], 'no operation without a 503')

  const reader = await keptAlive()
  t.equal((await reader.ask('GET /credit/state HTTP/1.1')).status, 200, 'the connection is served before the stop')
  // A request still in flight (its body not yet sent) keeps the stop draining: the window in which later requests
  // on open connections are refused.
  const inFlight = await keptAlive()
  inFlight.socket.write(`POST /credit/dispatch HTTP/1.1\r\nHost: ${new URL(h.url).host}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n`)
  // Waits, not sleeps, however loaded the machine: the request must be in flight before the stop, and the stop reaches
  // the server only after the app's other cleanups (the start-up reconciliation among them), so the reader asks until
  // the answer changes.
  while (h.app.server.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  const stopping = h.app.stop()
  let refused = await reader.ask('GET /credit/state HTTP/1.1')
  while (refused.status === 200) refused = await reader.ask('GET /credit/state HTTP/1.1')
  t.equal(refused.status, 503, 'a request while stopping is answered 503')
  t.equal(JSON.parse(refused.body).code, 'shutting_down')
  t.ok(doc['paths']['/credit/state']['get']['responses']['503'], 'GET /credit/state documents that answer')
  inFlight.socket.end('{}')
  await stopping
  reader.socket.destroy()
  inFlight.socket.destroy()
})
