// GET /inspect/live: the inspector's live feed over a WebSocket on the service's own server, so the page updates as
// commits become durable instead of polling. Public and read-only like the inspector's JSON routes: each message is
// what GET /inspect/counts and GET /inspect/transitions would answer (nothing the public reads do not show). A
// snapshot first, then at most one update per flush interval carrying the transitions made durable since the last one
// and the counts after them; under a burst of commits the updates coalesce instead of growing with the commit rate.
// Bounded: a fixed number of watchers over every client and a smaller one per client (429 beyond either: one stranger
// cannot take every place and lock the operators out), and a watcher whose socket buffers more than a bound is cut
// off (4008 slow_consumer) rather than allowed to grow the service's memory.
import type { HttpRequest, HttpResponse, us_socket_context_t, WebSocket } from 'uWebSockets.js'
import { toWire } from '../api/wire.ts'
import { ClientCounts } from '../http/client-counts.ts'
import { HttpProblem } from '../http/problem.ts'
import type { UpgradeGate } from '../http/pipeline.ts'
import type { WebSocketEndpoint } from '../http/server.ts'
import { ENDED_SOCKET_LINGER_MS } from '../stream/hub.ts'
import { FEED_ENTRIES_MAX, type FeedEntry, type Inspector } from './inspector.ts'

export const INSPECT_LIVE_PATH = '/inspect/live'

export interface InspectLiveLimits {
  /** Open watchers at once, over every client. */
  readonly watchersMax: number
  /** Open watchers at once of one client (clientKeyOf: an address, an IPv6 /64). */
  readonly watchersPerClientMax: number
  /** Shortest time between two updates. */
  readonly flushIntervalMs: number
  /** Bytes a watcher's socket may hold unsent before it is cut off. */
  readonly bufferedBytesMax: number
}

export const INSPECT_LIVE_LIMITS: InspectLiveLimits = { watchersMax: 32, watchersPerClientMax: 4, flushIntervalMs: 250, bufferedBytesMax: 1 << 20 }

/** Close codes of the live feed (4000-4999 are the application's, RFC 6455 section 7.4.2). */
export const INSPECT_LIVE_CLOSE = { slowConsumer: 4008, displaced: 4009, stopping: 1001 } as const

/** Transitions a snapshot message carries (the page shows this many). */
const SNAPSHOT_TRANSITIONS = 50

/** What a watcher's upgrade gives it: its client, whose count its close gives back. */
interface WatcherData {
  client: string
}
type Watcher = WebSocket<WatcherData>

export class InspectorLive {
  readonly limits: InspectLiveLimits
  readonly #inspector: Inspector
  readonly #watchers = new Set<Watcher>()
  readonly #perClient = new ClientCounts()
  /** Transitions durable since the last update, oldest first, at most the feed's size. */
  #pending: FeedEntry[] = []
  #timer: NodeJS.Timeout | undefined
  #closed = false
  readonly #unsubscribe: () => void
  /** ENDED_SOCKET_LINGER_MS (shorter in tests). */
  readonly #endedLingerMs: number

  constructor(inspector: Inspector, limits: InspectLiveLimits = INSPECT_LIVE_LIMITS, endedLingerMs = ENDED_SOCKET_LINGER_MS) {
    this.#inspector = inspector
    this.limits = limits
    this.#endedLingerMs = endedLingerMs
    this.#unsubscribe = inspector.subscribe((entries) => this.#onEntries(entries))
  }

  get watchers(): number {
    return this.#watchers.size
  }

  behavior(): WebSocketEndpoint<WatcherData> {
    return {
      // Watchers never need to send anything but control frames.
      maxPayloadLength: 256,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      // Above the feed's own bound, so uWS never drops a frame silently: the feed cuts the watcher first.
      maxBackpressure: this.limits.bufferedBytesMax * 4,
      upgrade: (res, req, context, gate) => this.#upgrade(res, req, context, gate),
      // uWS opens the socket within res.upgrade: what the upgrade checked still holds here.
      open: (ws) => {
        this.#watchers.add(ws)
        this.#perClient.add(ws.getUserData().client)
        ws.send(this.#message('snapshot', this.#inspector.recent(SNAPSHOT_TRANSITIONS)))
      },
      // uWS has queued the pong already, behind what the watcher has not read: one that pinged and never read held
      // maxBackpressure (4 x the bound) of pongs, and stayed open (the event stream's finding; test/inspect/live-ping.test.ts).
      ping: (ws) => {
        const buffered = ws.getBufferedAmount()
        if (buffered > this.limits.bufferedBytesMax) this.#end(ws, INSPECT_LIVE_CLOSE.slowConsumer, `slow_consumer: ${buffered} bytes unread, pongs included`)
      },
      close: (ws) => {
        if (this.#watchers.delete(ws)) this.#perClient.release(ws.getUserData().client)
      },
    }
  }

  /** Ends every watcher (the service is stopping) and stops following the inspector. */
  close(): void {
    this.#closed = true
    this.#unsubscribe()
    clearTimeout(this.#timer)
    for (const ws of [...this.#watchers]) ws.end(INSPECT_LIVE_CLOSE.stopping, 'the service is stopping')
  }

  #upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, gate: UpgradeGate): void {
    const { client } = gate
    // Answered by the pipeline, as every answer (X-Request-Id, RateLimit fields), and the connection closed after it.
    const refuse = (problem: HttpProblem) => gate.refuse(problem)
    if (this.#closed) return refuse(new HttpProblem(503, 'shutting_down', 'the service is stopping'))
    if ((req.getQuery() ?? '') !== '') return refuse(new HttpProblem(400, 'validation_failed', `${INSPECT_LIVE_PATH} takes no query parameters`))
    if (this.#perClient.held(client) >= this.limits.watchersPerClientMax) {
      return refuse(new HttpProblem(429, 'too_many_watchers', `this client address holds ${this.limits.watchersPerClientMax} inspector feeds, the most one client may; close one, or poll GET /inspect/counts`))
    }
    if (this.#watchers.size >= this.limits.watchersMax && !this.#displaceForShare(client)) {
      return refuse(new HttpProblem(429, 'too_many_watchers', `at most ${this.limits.watchersMax} inspector feeds are open at once; poll GET /inspect/counts instead`))
    }
    const data: WatcherData = { client }
    res.upgrade(data, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context)
    gate.opened()
  }

  /**
   * All watchersMax feeds are open: frees a place for a feed of `client` by closing the oldest feed of the client
   * holding the most, when that one holds at least two more (ClientCounts.displaceable): first come alone let 8
   * addresses (4 feeds each) keep every operator's feed out; now that takes an address per place.
   */
  #displaceForShare(client: string): boolean {
    // Set order is opening order.
    const oldest = this.#perClient.displaceable(this.#watchers, (ws) => ws.getUserData().client, client)
    if (oldest === undefined) return false
    this.#end(oldest, INSPECT_LIVE_CLOSE.displaced, 'displaced: the inspector is full and your address held the most feeds')
    return true
  }

  /**
   * Ends a watcher. One with bytes unread keeps its client's place ENDED_SOCKET_LINGER_MS longer: uWS keeps its socket and
   * buffer after `end()` until the client reads to the close frame or its own timeout (as the event stream's; review33,
   * test/inspect/live-ping.test.ts), and given back at once, one client cycling feeds through 4008 held 1 MiB a cycle.
   */
  #end(ws: Watcher, code: number, reason: string): void {
    if (!this.#watchers.delete(ws)) return
    const { client } = ws.getUserData()
    if (ws.getBufferedAmount() > 0) setTimeout(() => this.#perClient.release(client), this.#endedLingerMs).unref()
    else this.#perClient.release(client)
    ws.end(code, reason)
  }

  #onEntries(entries: readonly FeedEntry[]): void {
    if (this.#watchers.size === 0) return
    this.#pending.push(...entries)
    if (this.#pending.length > FEED_ENTRIES_MAX) this.#pending = this.#pending.slice(-FEED_ENTRIES_MAX)
    this.#timer ??= setTimeout(() => this.#flush(), this.limits.flushIntervalMs)
  }

  #flush(): void {
    this.#timer = undefined
    const entries = this.#pending.reverse()
    this.#pending = []
    if (entries.length === 0) return
    const message = this.#message('update', entries)
    for (const ws of [...this.#watchers]) {
      if (ws.getBufferedAmount() > this.limits.bufferedBytesMax) {
        this.#end(ws, INSPECT_LIVE_CLOSE.slowConsumer, `slow_consumer: more than ${this.limits.bufferedBytesMax} bytes unread`)
        continue
      }
      ws.send(message)
    }
  }

  /** One message: the counts now and `entries` (newest first). */
  #message(type: 'snapshot' | 'update', entries: readonly FeedEntry[]): string {
    // The wire form of GET /inspect/transitions (times as ISO strings), so the page reads both alike.
    return JSON.stringify({ type, machines: this.#inspector.counts(), ...(toWire({ transitions: entries }) as object) })
  }
}
