// The inspector's live feed is public when enabled: a watcher that pings and never reads made uWS queue a pong per
// ping behind what it had not read, up to maxBackpressure (4 x bufferedBytesMax), and stayed open there, whatever the
// feed's own bound (the event stream's finding, test/stream/client-frames.test.ts). Such a watcher is now closed 4008
// slow_consumer once its socket holds more than bufferedBytesMax. Real sockets through the default transport.
import t from 'tap'
import WebSocket from 'ws'
import { startServer } from '../../src/http/server.ts'
import { Inspector } from '../../src/inspect/inspector.ts'
import { INSPECT_LIVE_LIMITS, INSPECT_LIVE_PATH, InspectorLive, type InspectLiveLimits } from '../../src/inspect/live.ts'
import { upgrade } from '../http/fixtures/upgrade.ts'
import { testRoutes } from '../http/fixtures/routes.ts'
import { freshStore } from '../store/fixtures/helpers.ts'

const LIMITS = { ...INSPECT_LIVE_LIMITS, bufferedBytesMax: 64 * 1024 }
const PING = Buffer.alloc(125, 0x2a)
/** What the watcher sends at most: far more than loopback's socket buffers and 4 x the bound together. */
const PINGS_SENT_MAX_BYTES = 48 * 1024 * 1024

/** A live feed on the default transport, closed on `t`'s teardown, and its URL. */
async function start(t: { teardown: (fn: () => unknown) => void }, limits: InspectLiveLimits, endedLingerMs?: number): Promise<{ live: InspectorLive; url: string }> {
  const { store } = await freshStore(t)
  const live = new InspectorLive(new Inspector(store), limits, endedLingerMs)
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {},
    websockets: [{ path: INSPECT_LIVE_PATH, behavior: live.behavior() }],
  })
  t.teardown(async () => {
    live.close()
    await server.close(500)
  })
  return { live, url: `${server.url.replace(/^http/, 'ws')}${INSPECT_LIVE_PATH}` }
}

t.test('a watcher that pings and never reads is closed 4008 once its socket holds more than bufferedBytesMax', async (t) => {
  const { live, url } = await start(t, LIMITS)
  const flooder = await upgrade(url)
  const reader = await upgrade(url)
  t.teardown(() => {
    flooder.ws?.terminate()
    reader.ws?.terminate()
  })
  t.same([flooder.status, reader.status], [101, 101], 'two feeds open')
  const ws = flooder.ws as WebSocket
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
  ws.pause()
  let sent = 0
  while (live.watchers === 2 && sent < PINGS_SENT_MAX_BYTES) {
    for (let i = 0; i < 2000; i++) ws.ping(PING)
    sent += 2000 * (PING.length + 6)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  t.equal(live.watchers, 1, `the pinging feed was closed (after ${(sent / 1024 / 1024).toFixed(1)} MiB of pings); the reading one stays`)
  if (live.watchers !== 1) return // failed above: no close to read
  ws.resume()
  const close = await closed
  t.equal(close.code, 4008, 'close code 4008')
  t.match(close.reason, /^slow_consumer: \d+ bytes unread, pongs included/, 'with the reason')
})

t.test('a watcher ended with unread bytes keeps its place against watchersPerClientMax while uWS keeps its socket (review33)', async (t) => {
  const lingerMs = 3_000
  const { live, url } = await start(t, { ...LIMITS, watchersPerClientMax: 2 }, lingerMs)
  const feeds = [await upgrade(url), await upgrade(url)]
  t.teardown(() => { for (const feed of feeds) feed.ws?.terminate() })
  t.same(feeds.map((feed) => feed.status), [101, 101], 'the client holds its two feeds')
  for (const feed of feeds) {
    const ws = feed.ws as WebSocket
    ws.pause()
    const before = live.watchers
    for (let sent = 0; live.watchers === before && sent < PINGS_SENT_MAX_BYTES; sent += 2000 * (PING.length + 6)) {
      for (let i = 0; i < 2000; i++) ws.ping(PING)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  }
  t.equal(live.watchers, 0, 'both feeds, reading nothing, were closed 4008 with their buffers full')
  const endedAtMs = Date.now()
  const third = await upgrade(url)
  t.teardown(() => third.ws?.terminate())
  if (Date.now() - endedAtMs < lingerMs) t.equal(third.status, 429, 'a third feed of the client is refused while the ended ones linger')
  await new Promise((resolve) => setTimeout(resolve, lingerMs + 200 - (Date.now() - endedAtMs)))
  const later = await upgrade(url)
  t.teardown(() => later.ws?.terminate())
  t.equal(later.status, 101, 'their places come back after the linger')
})
