// The budget of all streams' sockets (bufferedBytesTotalMax) against a stranger (review36). Past the budget the stream
// with the most unread bytes was closed, whoever held the rest: a stranger needs no event of its own to fill a socket
// (the pongs of its pings stay unread up to socketBufferedBytesMax, client-frames.test.ts), so from one address it kept a
// few streams of fresh wallets each just under an honest reader catching up on a backlog (at the bound, an event past
// it), passed the budget with them, and the honest reader was the one closed 4008. Past the budget the client (an
// address, an IPv6 /64) holding the most unread bytes over its streams now gives up its largest stream first: a
// stranger must spread its bytes over as many addresses as a reader's socket holds to have it closed.
// And the running total of the sockets' bytes comes back to 0 when streams end however they end (client close,
// terminate, 4008 per stream, 4008 by the budget, 1003, session revoked, service stopping), and to what the open ones
// hold after they read: it neither climbs (the budget firing for nothing after hours) nor sinks (never firing).
// Real sockets through the default transport (uWS behind the front).
import t from 'tap'
import type { Address } from 'viem'
import WebSocket from 'ws'
import type { LogLine } from '../../src/http/log.ts'
import type { EventHub } from '../../src/stream/hub.ts'
import { upgrade } from '../http/fixtures/upgrade.ts'
import { sizedChange, startPaddedHub, tokenWallet } from './fixtures.ts'

const SOCKET_BUFFERED_BYTES_MAX = 64 * 1024
/** An honest reader's full socket (64 KiB and an event) and two of the stranger's streams; not three. */
const BUDGET = 160 * 1024
/** What the stranger's streams each hold: well under the honest reader's bound. */
const STRANGER_BYTES = 40 * 1024
/** A ping's largest payload (RFC 6455 5.5): its pong is 127 bytes on the wire. */
const PING = Buffer.alloc(125, 0x2a)
/** What a client sends or has published to it at most: far more than loopback's socket buffers hold. */
const SENT_BYTES_MAX = 48 * 1024 * 1024

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const closeOf = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
const bufferedOf = (hub: EventHub, wallet: Address) => hub.stats().connections.find((c) => c.wallet === wallet)?.bufferedBytes ?? 0
const isOpen = (hub: EventHub, wallet: Address) => hub.stats().connections.some((c) => c.wallet === wallet)

/** Pings on `ws` (paused) until its stream holds `bytes` unread, or is closed; a few pongs at a time. */
async function pingUntilHolding(ws: WebSocket, hub: EventHub, wallet: Address, bytes: number): Promise<void> {
  for (let sent = 0; isOpen(hub, wallet) && bufferedOf(hub, wallet) < bytes && sent < SENT_BYTES_MAX; sent += 40 * PING.length) {
    for (let i = 0; i < 40; i++) ws.ping(PING)
    await sleep(2)
  }
}

/**
 * Publishes 6-KB events of `wallet` until its stream's socket holds the bound and `backlog` events wait in the hub
 * behind it, a moment after each batch (the kernel's buffers take more as they grow); the count published.
 */
async function fillToBound(hub: EventHub, wallet: Address, backlog: number): Promise<number> {
  const queuedOf = () => hub.stats().connections.find((c) => c.wallet === wallet)?.queuedEvents ?? 0
  let i = 0
  for (let bytes = 0; bytes < SENT_BYTES_MAX; bytes += 20 * 6000) {
    await sleep(20)
    if (bufferedOf(hub, wallet) >= SOCKET_BUFFERED_BYTES_MAX && queuedOf() >= backlog) break
    for (let k = 0; k < 20; k++) hub.publish([sizedChange('held', wallet, i++)])
  }
  return i
}

t.test('past the budget, the address holding the most unread bytes loses its largest stream: a stranger\'s streams just under an honest reader\'s do not get it closed', async (t) => {
  const logged: LogLine[] = []
  const { url, hub } = await startPaddedHub(t, { socketBufferedBytesMax: SOCKET_BUFFERED_BYTES_MAX, bufferedBytesTotalMax: BUDGET, queuedEventsMax: 1_000_000 }, undefined, (line) => logged.push(line))
  const honestWallet = tokenWallet('40e5')
  const honest = await upgrade(url, { from: '127.0.0.1', headers: { authorization: 'Bearer 40e5' } })
  t.teardown(() => honest.ws?.terminate())
  const honestWs = honest.ws as WebSocket
  const seqs: number[] = []
  honestWs.on('message', (data) => {
    const message = JSON.parse(String(data))
    if (message.type === 'event') seqs.push(message.seq)
  })
  const honestClosed = closeOf(honestWs)
  // Catching up on a slow link: its socket at the bound, a backlog in the hub behind it.
  honestWs.pause()
  const published = await fillToBound(hub, honestWallet, 100)
  t.ok(bufferedOf(hub, honestWallet) >= SOCKET_BUFFERED_BYTES_MAX, `the honest reader's socket holds its bound (${bufferedOf(hub, honestWallet)} bytes)`)

  // A stranger, another address, three fresh wallets: each stream pings and reads nothing, to just under the reader.
  const tokens = ['5a1', '5a2', '5a3']
  const strangers = await Promise.all(tokens.map((token) => upgrade(url, { from: '127.0.0.2', headers: { authorization: `Bearer ${token}` } })))
  t.teardown(() => { for (const s of strangers) s.ws?.terminate() })
  t.same(strangers.map((s) => s.status), [101, 101, 101], 'the stranger\'s three streams open')
  const strangerCloses = strangers.map((s) => closeOf(s.ws as WebSocket))
  for (const [i, token] of tokens.entries()) {
    const ws = strangers[i]!.ws as WebSocket
    ws.pause()
    await pingUntilHolding(ws, hub, tokenWallet(token), STRANGER_BYTES)
  }
  t.ok(logged.length >= 1, `the budget was passed (${logged.length} lines logged)`)
  t.ok(isOpen(hub, honestWallet), 'the honest reader stays open')
  t.ok(logged.every((line) => line.msg === 'stream_buffer_budget_exceeded' && tokens.some((token) => line.wallet === tokenWallet(token))), `only the stranger's streams were closed (${JSON.stringify(logged)})`)
  t.ok(tokens.some((token) => !isOpen(hub, tokenWallet(token))), 'one of the stranger\'s streams was closed')
  t.ok(hub.stats().bufferedBytesTotal <= BUDGET, `the open ones fit the budget (${hub.stats().bufferedBytesTotal} bytes)`)

  // The honest reader reads again: every event, in order, not closed.
  honestWs.resume()
  const outcome = await Promise.race([honestClosed.then((close) => `closed ${close.code} ${close.reason}`), (async () => {
    for (let k = 0; k < 2000 && seqs.length < published; k++) await sleep(10)
    return seqs.length < published ? `${seqs.length} of ${published} events` : 'all'
  })()])
  t.equal(outcome, 'all', 'the honest reader gets every event')
  t.same(seqs, Array.from({ length: published }, (_, k) => k + 1), 'once each, in order')
  for (const s of strangers) s.ws?.resume()
  const closed = await Promise.all(strangerCloses.map((close, i) => isOpen(hub, tokenWallet(tokens[i]!)) ? undefined : close))
  t.ok(closed.some((close) => close?.code === 4008 && /^slow_consumer: \d+ bytes unread; your address's streams held the most/.test(close.reason)), `the stranger's closed stream got 4008 (${JSON.stringify(closed)})`)
})

t.test('the running total of the sockets\' bytes comes back to 0 however streams end, round after round', async (t) => {
  // Two full sockets fit, three do not.
  const budget = 150 * 1024
  const { url, hub } = await startPaddedHub(t, { socketBufferedBytesMax: SOCKET_BUFFERED_BYTES_MAX, bufferedBytesTotalMax: budget, queuedEventsMax: 1_000_000 }, undefined, () => {})
  const total = () => hub.stats().bufferedBytesTotal
  const closedOnHub = async (wallet: Address) => {
    for (let k = 0; k < 500 && isOpen(hub, wallet); k++) await sleep(10)
    return !isOpen(hub, wallet)
  }
  /** Once the open streams read all they were sent, the total is what they hold: 0. */
  const settlesAtZero = async () => {
    for (let k = 0; k < 500 && total() !== 0; k++) await sleep(10)
    return total()
  }
  const totals: number[] = []
  for (let round = 0; round < 3; round++) {
    const open = async (name: string) => {
      const token = `${round}${name}`
      const opened = await upgrade(url, { headers: { authorization: `Bearer ${token}` } })
      t.teardown(() => opened.ws?.terminate())
      return { ws: opened.ws as WebSocket, wallet: tokenWallet(token), token }
    }
    const reader = await open('e')
    let readerEvents = 0
    reader.ws.on('message', (data) => { if (JSON.parse(String(data)).type === 'event') readerEvents++ })
    for (let k = 0; k < 200; k++) hub.publish([sizedChange('held', reader.wallet, k)])

    // Each filled to its bound, then ended one way or another.
    const ends: Array<[string, (s: { ws: WebSocket; token: string }) => void]> = [
      ['a', (s) => s.ws.terminate()], // the client gone without a close frame
      ['b', (s) => s.ws.close(1000)], // a close frame, read behind nothing
      ['d', (s) => hub.endSessions([s.token])], // 4001
    ]
    for (const [name, end] of ends) {
      const s = await open(name)
      s.ws.pause()
      await fillToBound(hub, s.wallet, 20)
      t.ok(total() >= SOCKET_BUFFERED_BYTES_MAX, `round ${round}, ${name}: its bytes counted (${total()})`)
      end(s)
      if (name === 'b') s.ws.resume()
      t.ok(await closedOnHub(s.wallet), `round ${round}, ${name}: ended`)
    }
    // 4008 by its own bound (pongs), and 1003 (a data frame) after a few pongs.
    const pinger = await open('c')
    pinger.ws.pause()
    await pingUntilHolding(pinger.ws, hub, pinger.wallet, Infinity)
    t.ok(await closedOnHub(pinger.wallet), `round ${round}: the pinging stream was closed 4008`)
    const sender = await open('f')
    sender.ws.pause()
    await pingUntilHolding(sender.ws, hub, sender.wallet, 4096)
    sender.ws.send('subscribe')
    t.ok(await closedOnHub(sender.wallet), `round ${round}: the sending stream was closed 1003`)
    // 4008 by the budget: three full sockets.
    const full = [await open('g'), await open('h'), await open('i')]
    for (const s of full) {
      s.ws.pause()
      await fillToBound(hub, s.wallet, 20)
    }
    t.ok(full.some((s) => !isOpen(hub, s.wallet)), `round ${round}: the budget closed one of three full sockets (${JSON.stringify(hub.stats().connections)})`)
    t.ok(total() <= budget && total() >= 0, `round ${round}: the rest fit (${total()})`)
    for (const s of full) s.ws.terminate()
    for (const s of full) await closedOnHub(s.wallet)
    for (let k = 0; k < 500 && readerEvents < 200; k++) await sleep(10)
    t.equal(readerEvents, 200, `round ${round}: the reader got its 200 events`, { found: readerEvents })
    totals.push(await settlesAtZero())
    reader.ws.terminate()
    await closedOnHub(reader.wallet)
  }
  t.same(totals, [0, 0, 0], 'with only a reader open, having read all, the total is 0 after each round')
  t.equal(hub.stats().connections.length, 0, 'no stream open')
  t.equal(total(), 0, 'and the total is 0')
})
