// The node:net front runs in its own thread (src/http/front.ts, issue 11): it keeps answering what it answers itself
// (here a Host-less HTTP/1.1 request, a 400) while the service thread is blocked, which a front on the service
// thread could not: nothing on that thread runs until the block ends.
import { Worker } from 'node:worker_threads'
import t from 'tap'
import { startServer } from '../../src/http/server.ts'
import { parseResponse } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

/** A client in another thread: sends one Host-less request, stores 1 (answered) or 2 (closed without one) in `flag`. */
const CLIENT = `
const { workerData } = require('node:worker_threads')
const net = require('node:net')
const flag = new Int32Array(workerData.shared)
let text = ''
const socket = net.connect(workerData.port, '127.0.0.1', () => socket.write('GET /items/abc HTTP/1.1\\r\\n\\r\\n'))
socket.setEncoding('utf8')
socket.on('data', (chunk) => { text += chunk })
socket.on('close', () => {
  require('node:worker_threads').parentPort.postMessage(text)
  Atomics.store(flag, 0, text.includes('\\r\\n\\r\\n') ? 1 : 2)
  Atomics.notify(flag, 0)
})
socket.on('error', () => {})
`

t.test('the front answers while the service thread is blocked', async (t) => {
  const server = await startServer({ transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {} })
  t.teardown(() => server.close(500))
  const shared = new SharedArrayBuffer(4)
  const flag = new Int32Array(shared)
  const client = new Worker(CLIENT, { eval: true, workerData: { port: server.port, shared } })
  const answered = new Promise<string>((resolve) => client.once('message', resolve))
  // Blocks this (the service's) thread until the client has its answer, or 20 s: with the front on this thread the
  // wait can only time out.
  const outcome = Atomics.wait(flag, 0, 0, 20_000)
  t.equal(outcome, 'ok', 'the client was answered while the service thread waited')
  t.equal(Atomics.load(flag, 0), 1, 'with a whole answer, before its connection closed')
  const answer = parseResponse(await answered)
  t.equal(answer.status, 400)
  t.match(JSON.parse(answer.body), { code: 'missing_host' })
  await client.terminate()
})

t.test('a front that cannot listen fails the start', async (t) => {
  const first = await startServer({ transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {} })
  t.teardown(() => first.close(500))
  await t.rejects(startServer({ transport: 'uws', routes: testRoutes, port: first.port, rateLimit: false, log: () => {} }), /cannot listen/)
})
