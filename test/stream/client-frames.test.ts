// What a client sends on GET /events, which takes no messages (server to client only), and what it made the service
// hold (adversary's findings, measured against a running service through its published documents alone):
// - A stream that pings and never reads: uWS answers every ping with a pong on its own, queued behind what the client
//   has not read, up to maxBackpressure (4 x socketBufferedBytesMax), and kept the connection open at that ceiling. So
//   a stranger with no event at all made the service hold 4 MiB per stream (128 streams of one address, 8 MiB of
//   pings each, took its RSS from 261 to 793 MB). The hub now closes such a stream (4008 slow_consumer) once its
//   socket holds more than socketBufferedBytesMax: the documented bound holds for pongs too.
// - An honest client that pings now and then (Python's websockets does every 20 s) must not be closed for what the
//   hub itself put in its buffer: while a backlog waits for `drain` the hub fills the buffer to the bound and one event
//   past it, so a ping held to the bound alone closed a client that read everything it was sent (review33). A ping
//   is held to the hub's own bytes and PONGS_UNREAD_MAX pongs.
// - A stream ended with unread bytes (4008 above) keeps its socket and buffer in uWS after `end()` until the client
//   reads to the close frame or uWS's timeout (8 to 17 s), but its place came back to its client at once: one client
//   cycling streams through 4008 held 1 MiB per cycle past its connectionsPerClientMax. Its place, and its place in
//   connectionsMax, now come back after ENDED_SOCKET_LINGER_MS (review33).
// - Data frames: uWS read and dropped them, as many as a client sent, and a client that subscribed was told nothing.
//   The first one now closes the stream (1003 unsupported_data).
// Real sockets through the default transport (uWS behind the front).
import t from 'tap'
import type { Address } from 'viem'
import WebSocket from 'ws'
import { EventHub, PONGS_UNREAD_MAX, type StreamLimits } from '../../src/stream/hub.ts'
import { upgrade } from '../http/fixtures/upgrade.ts'
import { sizedChange, startPaddedHub, tokenWallet } from './fixtures.ts'

const SOCKET_BUFFERED_BYTES_MAX = 64 * 1024
/** A ping's largest payload (RFC 6455 5.5): its pong is 127 bytes on the wire. */
const PING = Buffer.alloc(125, 0x2a)
const PONG_FRAME_BYTES = 2 + PING.length
/** What the client sends at most: far more than loopback's socket buffers and 4 x the bound together. */
const PINGS_SENT_MAX_BYTES = 48 * 1024 * 1024

const walletOf = tokenWallet

function start(limits: Partial<StreamLimits> = {}, endedLingerMs?: number): Promise<{ url: string; hub: EventHub }> {
  // A held payment's event carries 6 KB more than its record: an event larger than PONGS_UNREAD_MAX pongs.
  return startPaddedHub(t, { socketBufferedBytesMax: SOCKET_BUFFERED_BYTES_MAX, ...limits }, endedLingerMs)
}

const closeOf = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))

t.test('a stream that pings and never reads is closed 4008 once its socket holds more than socketBufferedBytesMax; the others stay open', async (t) => {
  const { url, hub } = await start()
  const flooder = await upgrade(url, { headers: { authorization: 'Bearer f100d' } })
  const reader = await upgrade(url, { headers: { authorization: 'Bearer 4ead' } })
  t.teardown(() => {
    flooder.ws?.terminate()
    reader.ws?.terminate()
  })
  t.same([flooder.status, reader.status], [101, 101], 'both streams open')
  const ws = flooder.ws as WebSocket
  const closed = closeOf(ws)
  ws.pause()

  const flooderOpen = () => hub.stats().connections.some((c) => c.wallet === walletOf('f100d'))
  let sent = 0
  let peakBuffered = 0
  while (flooderOpen() && sent < PINGS_SENT_MAX_BYTES) {
    for (let i = 0; i < 2000; i++) ws.ping(PING)
    sent += 2000 * (PING.length + 6)
    // Let the pings reach the service and its pongs fill what lies between.
    await new Promise((resolve) => setTimeout(resolve, 2))
    for (const c of hub.stats().connections) if (c.wallet === walletOf('f100d')) peakBuffered = Math.max(peakBuffered, c.bufferedBytes)
  }
  t.notOk(flooderOpen(), `the pinging stream was closed (after ${(sent / 1024 / 1024).toFixed(1)} MiB of pings)`)
  t.ok(peakBuffered <= SOCKET_BUFFERED_BYTES_MAX + (PONGS_UNREAD_MAX + 1) * PONG_FRAME_BYTES, `its socket never held more than the bound and ${PONGS_UNREAD_MAX + 1} pongs (peak ${peakBuffered} bytes)`)
  t.ok(hub.stats().connections.some((c) => c.wallet === walletOf('4ead')), 'the reading stream stays open')

  if (flooderOpen()) return // failed above: no close to read
  ws.resume()
  const close = await closed
  t.equal(close.code, 4008, 'close code 4008')
  t.match(close.reason, /^slow_consumer: \d+ bytes unread, pongs included/, 'with the reason')
})

const change = sizedChange

for (const [kind, events] of [['job', 60_000], ['held', 3_000]] as const) t.test(`a client that reads all it is sent and pings while a backlog fills its buffer to the bound stays open and gets every event (${kind} events)`, async (t) => {
  const { url, hub } = await start({ queuedEventsMax: events })
  const wallet = walletOf('5105')
  // 15 to 18 MB waiting for this client: more than the kernel's buffers take.
  for (let i = 0; i < events; i++) hub.publish([change(kind, wallet, i)])
  const ws = new WebSocket(`${url}?since=0&epoch=${hub.epoch}`, { headers: { authorization: 'Bearer 5105' } })
  t.teardown(() => ws.terminate())
  const seqs: number[] = []
  ws.on('message', (data) => {
    const message = JSON.parse(String(data))
    if (message.type === 'event') seqs.push(message.seq)
  })
  const closed = closeOf(ws)
  await new Promise((resolve) => ws.once('open', resolve))
  // Busy for a while (or on a slow link): what is not read yet fills the kernel's buffers, then uWS's to the bound.
  ws.pause()
  const bufferedOf = () => hub.stats().connections.find((c) => c.wallet === wallet)?.bufferedBytes ?? 0
  const full = async () => {
    for (let i = 0; i < 200 && bufferedOf() < SOCKET_BUFFERED_BYTES_MAX; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    return bufferedOf()
  }
  const atPings: number[] = []
  // Its keepalive fires meanwhile, a few times (each ping reaches the service as the previous one's pong waits).
  for (let i = 0; i < 4; i++) {
    atPings.push(await full())
    ws.ping()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.ok(atPings.every((buffered) => buffered >= SOCKET_BUFFERED_BYTES_MAX), `each ping found the buffer at the bound, the hub's backlog waiting (${atPings.join(', ')} bytes)`)
  ws.resume()
  const outcome = await Promise.race([closed, new Promise<'all'>((resolve) => {
    const check = setInterval(() => {
      if (seqs.length < events) return
      clearInterval(check)
      resolve('all')
    }, 20)
    t.teardown(() => clearInterval(check))
  })])
  t.equal(outcome, 'all', 'not closed: every event arrived')
  t.same(seqs, Array.from({ length: events }, (_, i) => i + 1), 'once each, in order')
})

/** Pings on `ws` (paused: reading nothing) until the hub has closed the stream of `wallet`; false if it never did. */
async function pingUntilClosed(ws: WebSocket, hub: EventHub, wallet: Address): Promise<boolean> {
  const open = () => hub.stats().connections.some((c) => c.wallet === wallet)
  for (let sent = 0; open() && sent < PINGS_SENT_MAX_BYTES; sent += 2000 * (PING.length + 6)) {
    for (let i = 0; i < 2000; i++) ws.ping(PING)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  return !open()
}

/** Opens two streams of one client (127.0.0.1), one per token, and has each closed 4008 with its buffer full. */
async function endTwoFull(t: { teardown: (fn: () => unknown) => void; same: (a: unknown, b: unknown, m: string) => unknown; ok: (v: unknown, m: string) => unknown }, url: string, hub: EventHub, tokens: [string, string]): Promise<void> {
  const streams = await Promise.all(tokens.map((token) => upgrade(url, { from: '127.0.0.1', headers: { authorization: `Bearer ${token}` } })))
  t.teardown(() => { for (const s of streams) s.ws?.terminate() })
  t.same(streams.map((s) => s.status), [101, 101], 'the client holds its two streams')
  for (const [i, token] of tokens.entries()) {
    const ws = streams[i]!.ws as WebSocket
    ws.pause()
    t.ok(await pingUntilClosed(ws, hub, walletOf(token)), `stream ${token}, reading nothing, was closed 4008 with its buffer full`)
  }
}

t.test('a stream ended with unread bytes keeps its place against connectionsPerClientMax while uWS keeps its socket', async (t) => {
  const lingerMs = 3_000
  const { url, hub } = await start({ connectionsPerClientMax: 2 }, lingerMs)
  await endTwoFull(t, url, hub, ['c1', 'c2'])
  t.equal(hub.stats().connections.length, 0, 'the hub holds no stream')
  const endedAtMs = Date.now()
  const third = await upgrade(url, { headers: { authorization: 'Bearer c3' } })
  t.teardown(() => third.ws?.terminate())
  if (Date.now() - endedAtMs < lingerMs) {
    t.equal(third.status, 429, 'a third stream of the client is refused while the ended ones linger')
    t.equal(third.problem?.code, 'too_many_client_streams', 'too_many_client_streams')
  }
  await new Promise((resolve) => setTimeout(resolve, lingerMs + 200 - (Date.now() - endedAtMs)))
  const later = await upgrade(url, { headers: { authorization: 'Bearer c4' } })
  t.teardown(() => later.ws?.terminate())
  t.equal(later.status, 101, 'their places come back after the linger')
})

t.test('streams ended with unread bytes count against connectionsMax while uWS keeps their sockets', async (t) => {
  const lingerMs = 3_000
  const { url, hub } = await start({ connectionsMax: 2 }, lingerMs)
  await endTwoFull(t, url, hub, ['d1', 'd2'])
  const endedAtMs = Date.now()
  const other = await upgrade(url, { from: '127.0.0.2', headers: { authorization: 'Bearer d3' } })
  t.teardown(() => other.ws?.terminate())
  if (Date.now() - endedAtMs < lingerMs) {
    t.equal(other.status, 503, 'a stream of another address is refused while the ended ones linger')
    t.equal(other.problem?.code, 'streams_full', 'streams_full')
  }
  await new Promise((resolve) => setTimeout(resolve, lingerMs + 200 - (Date.now() - endedAtMs)))
  const later = await upgrade(url, { from: '127.0.0.2', headers: { authorization: 'Bearer d4' } })
  t.teardown(() => later.ws?.terminate())
  t.equal(later.status, 101, 'admitted after the linger')
})

t.test('a data frame closes the stream 1003 unsupported_data, whatever its size; the others stay open', async (t) => {
  const { url, hub } = await start()
  const streams = await Promise.all(['5e4d', '5e4e', '4eae'].map((token) => upgrade(url, { headers: { authorization: `Bearer ${token}` } })))
  t.teardown(() => { for (const s of streams) s.ws?.terminate() })
  t.same(streams.map((s) => s.status), [101, 101, 101], 'three streams open')
  const [text, binary] = streams.map((s) => s.ws as WebSocket)
  const closes = [closeOf(text!), closeOf(binary!)]
  // A subscribe message an agent might try first, and a binary frame of a byte.
  text!.send(JSON.stringify({ type: 'subscribe', filter: '*' }))
  binary!.send(Buffer.alloc(1))
  const stillOpen = new Promise<{ code: number; reason: string }>((resolve) => setTimeout(() => resolve({ code: 0, reason: 'still open after 10 s' }), 10_000).unref())
  for (const close of await Promise.all(closes.map((close) => Promise.race([close, stillOpen])))) {
    t.equal(close.code, 1003, 'close code 1003')
    t.match(close.reason, /^unsupported_data: this stream takes no messages/, 'with the reason')
  }
  const open = hub.stats().connections.map((c) => c.wallet)
  t.same(open, [walletOf('4eae')], 'the hub holds only the stream that sent nothing')
})
