// The front stops reading uWS's side of a connection while its client drains nothing (front.ts: `up.pause()` when the
// client's write buffer is full), and paused, that side never shows its end. So a client that pipelined requests and
// then read nothing kept its connection, its place among its address's connectionsPerClientMax and the kernel's
// buffers for it for ever, after uWS had long closed its side (review33's finding: a stream closed 4008 slow_consumer
// whose client kept its connection held about 4 MB of send queue each, 1,024 per address). Now a client that drains
// nothing for stalledClientMs (60 s by default; here 3 s) is cut.
import { once } from 'node:events'
import net from 'node:net'
import t from 'tap'
import { startServer } from '../../src/http/server.ts'
import { parseResponse, rawUntil, responseEnded } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

const GET = 'GET /text HTTP/1.1\r\nHost: x\r\n\r\n'

t.test('a client that reads nothing while its answers wait is cut, and its place among its address\'s connections comes back', async (t) => {
  const server = await startServer({ routes: testRoutes, port: 0, rateLimit: false, log: () => {}, connectionsPerClientMax: 1, frontStalledClientMs: 3_000 })
  t.teardown(() => server.close(500))

  // Pipelines far more answers than the kernel buffers on both ends hold (each answer is about 200 bytes), reads none.
  const stalled = net.connect(server.port, '127.0.0.1')
  t.teardown(() => stalled.destroy())
  stalled.on('error', () => {})
  await new Promise<void>((resolve) => stalled.once('connect', () => resolve()))
  stalled.pause()
  const burst = Buffer.from(GET.repeat(2_000))
  // Writes until the front stops reading them: its answers wait for the client to drain, then its requests do.
  for (let i = 0; i < 500; i++) {
    if (stalled.write(burst)) continue
    const drained = await Promise.race([once(stalled, 'drain').then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300))])
    if (!drained) break
  }

  // The stalled connection holds the address's only place until the front cuts it.
  let status = 0
  let refused = 0
  for (let attempt = 0; attempt < 150 && status !== 200; attempt++) {
    status = parseResponse((await rawUntil(server.port, [GET], responseEnded)).text).status
    if (status === 429) refused++
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.ok(refused > 0, `the stalled connection held the address's place while the front still wrote to it (${refused} refusals)`)
  t.equal(status, 200, 'the front cut the client that read nothing: its place came back')
})
