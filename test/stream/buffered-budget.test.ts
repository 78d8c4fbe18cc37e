// The streams' sockets together buffer at most bufferedBytesTotalMax: each stream was bounded alone (socketBufferedBytesMax,
// an event and a few pongs past it), so 4,096 streams that stop reading held some 4 GiB between them (edges30). Past the
// budget, the stream with the most unread bytes is closed 4008 slow_consumer, logged stream_buffer_budget_exceeded; the
// others stay open, a stream that reads gets every event.
// Real sockets through the default transport (uWS behind the front), clients that stop reading (paused).
import t from 'tap'
import type { Address } from 'viem'
import WebSocket from 'ws'
import type { LogLine } from '../../src/http/log.ts'
import { sizedChange, startPaddedHub, tokenWallet } from './fixtures.ts'

const SOCKET_BUFFERED_BYTES_MAX = 64 * 1024
/** Past one full socket (64 KiB and an event of 6 KB at most), short of two. */
const BUDGET = 100 * 1024
/** What the test publishes to a stream at most: far more than loopback's socket buffers hold. */
const PUBLISHED_BYTES_MAX = 48 * 1024 * 1024

const walletOf = tokenWallet
const change = sizedChange
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function open(url: string, token: string): Promise<{ ws: WebSocket; closed: Promise<{ code: number; reason: string }>; events: number[] }> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } })
  const events: number[] = []
  ws.on('message', (data) => {
    const message = JSON.parse(String(data))
    if (message.type === 'event') events.push(message.seq)
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, closed, events }))
    ws.once('error', reject)
  })
}

t.test('past the budget of all sockets, the stream with the most unread bytes is closed 4008 and logged; the others stay open', async (t) => {
  const logged: LogLine[] = []
  const { url, hub } = await startPaddedHub(t, { socketBufferedBytesMax: SOCKET_BUFFERED_BYTES_MAX, bufferedBytesTotalMax: BUDGET, queuedEventsMax: 1_000_000 }, undefined, (line) => logged.push(line))
  const big = walletOf('b19')
  const small = walletOf('5a11')
  const other = walletOf('4ead')
  const [first, second, reader] = await Promise.all([open(url, 'b19'), open(url, '5a11'), open(url, '4ead')])
  t.teardown(() => [first, second, reader].forEach((s) => s.ws.terminate()))
  // Two clients stop reading; the third, of another wallet, reads.
  first.ws.pause()
  second.ws.pause()
  const bufferedOf = (wallet: Address) => Math.max(0, ...hub.stats().connections.filter((c) => c.wallet === wallet).map((c) => c.bufferedBytes))

  // The first fills its socket to the bound: under the budget alone, it stays open.
  let i = 0
  for (let bytes = 0; bufferedOf(big) < SOCKET_BUFFERED_BYTES_MAX && bytes < PUBLISHED_BYTES_MAX; bytes += 6000) {
    hub.publish([change('held', big, i++)])
    if (i % 100 === 0) await sleep(1)
  }
  // And has a backlog queued in the hub, which refills its socket to the bound whenever the kernel takes some.
  for (let k = 0; k < 1000; k++) hub.publish([change('held', big, i++)])
  await sleep(50)
  const bigBuffered = bufferedOf(big)
  t.ok(bigBuffered >= SOCKET_BUFFERED_BYTES_MAX, `the first's socket holds its bound (${bigBuffered} bytes)`)
  t.equal(hub.stats().connections.length, 3, 'under the budget: all open')
  t.same(logged, [], 'nothing logged')

  // The second fills its own, an event at a time: once both together pass the budget, the first, holding the most, goes.
  const firstOpen = () => hub.stats().connections.some((c) => c.wallet === big)
  let j = 0
  for (let bytes = 0; firstOpen() && bytes < PUBLISHED_BYTES_MAX; bytes += 250) {
    hub.publish([change('job', small, j++)])
    if (j % 200 === 0) await sleep(1)
  }
  t.notOk(firstOpen(), 'the stream with the most unread bytes was closed')
  t.equal(logged.length, 1, 'one line logged')
  t.match(logged[0], { level: 'warn', msg: 'stream_buffer_budget_exceeded', wallet: big, budgetBytes: BUDGET })
  t.ok((logged[0]?.totalBytes as number) > BUDGET && (logged[0]?.bufferedBytes as number) >= SOCKET_BUFFERED_BYTES_MAX, `with its bytes and all streams' (${JSON.stringify(logged[0])})`)
  t.ok(bufferedOf(small) < (logged[0]?.bufferedBytes as number), 'the second held fewer then')
  t.same(hub.stats().connections.map((c) => c.wallet), [small, other], 'the second and the reader stay open')
  t.ok(hub.stats().bufferedBytesTotal <= BUDGET, `the open ones fit the budget (${hub.stats().bufferedBytesTotal} bytes)`)

  // The second fills to its bound too: alone, within the budget, it stays.
  for (let bytes = 0; bufferedOf(small) < SOCKET_BUFFERED_BYTES_MAX && bytes < PUBLISHED_BYTES_MAX; bytes += 250) {
    hub.publish([change('job', small, j++)])
    if (j % 200 === 0) await sleep(1)
  }
  t.ok(bufferedOf(small) >= SOCKET_BUFFERED_BYTES_MAX, 'the second reaches its own bound')
  t.equal(hub.stats().connections.length, 2, 'and stays open: the budget holds one full socket')

  first.ws.resume()
  const close = await Promise.race([first.closed, sleep(20_000).then(() => ({ code: 0, reason: 'not closed within 20 s' }))])
  t.equal(close.code, 4008, 'closed 4008')
  t.match(close.reason, /^slow_consumer: \d+ bytes unread; your address's streams held the most \(\d+\) of all \d+ \(bound \d+\)$/, 'with the reason')
  // The reader gets its wallet's events.
  for (let k = 0; k < 10; k++) hub.publish([change('job', other, k)])
  for (let k = 0; k < 500 && reader.events.length < 10; k++) await sleep(10)
  t.same(reader.events, Array.from({ length: 10 }, (_, k) => k + 1), 'the reading stream gets its events, in order')
})
