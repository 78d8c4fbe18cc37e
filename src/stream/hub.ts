// The live event stream's hub: numbers the events of durable commits, keeps the recent ones in a ring for resuming,
// and delivers each wallet's events to its WebSocket connections in order, under bounds that keep memory flat
// whatever a client does.
//
// A wallet's events are numbered per wallet (1, 2, 3, ... in this epoch): what a subscriber sees, its hello's seq,
// oldestSeq and every event's seq, counts its own events only. One counter over every wallet let any signed-in
// stranger read how busy the service and its agents were from the numbers alone (an outsider's finding,
// test/stream/private-seq.test.ts). The ring's own positions stay internal.
//
// Retention is an in-memory ring bounded by count and age, not a persisted log: every event is a view of state the
// store already holds and the HTTP routes serve, so a client that missed more than the ring re-reads that state
// (the `resync` message) instead of the service writing every event a second time on the commit path. The epoch
// (random per process) tells a client after a restart that its sequence numbers are from a previous run.
//
// The ring keeps each event's wallets and the part of its change's record the event shows (immutable, made by the
// engine), not its text: the text (and a leased lease's signed action) is derived the first time a connection needs
// the event, live or resuming, then kept in the slot in place of the record. A commit nobody reads costs only the
// wallets and the numbering, and an event is derived at most once whoever reads it (its text never changes once sent).
import { randomBytes } from 'node:crypto'
import type { Address } from 'viem'
import type { HttpRequest, HttpResponse, us_socket_context_t, WebSocket } from 'uWebSockets.js'
import { ClientCounts } from '../http/client-counts.ts'
import { stdoutLogger, type Logger } from '../http/log.ts'
import { HttpProblem, unauthorized } from '../http/problem.ts'
import type { UpgradeGate } from '../http/pipeline.ts'
import type { Authenticate, WebSocketEndpoint } from '../http/server.ts'
import type { Change } from '../engine/types.ts'
import { eventBody, eventRecord, eventWallets, type EventSources } from './events.ts'
import { STREAM_CLOSE, type StreamHello, type StreamResync } from './messages.ts'

export interface StreamLimits {
  /** Events of all wallets kept for resuming (the ring). */
  retainedEventsMax: number
  /** No event older than this is kept for resuming. */
  retentionMs: number
  /** Events queued for one connection and not yet handed to its socket; one more and it is cut off as slow. */
  queuedEventsMax: number
  /** Bytes the socket may buffer before the hub stops handing it events (until it drains). */
  socketBufferedBytesMax: number
  /** Open streams per wallet; one more is refused with 429 too_many_streams. */
  connectionsPerWalletMax: number
  /**
   * Open streams per client (clientKeyOf: an address, an IPv6 /64), whatever their wallets; one more is refused with
   * 429 too_many_client_streams. Wallets are free (a sign-in with a fresh key), so the bound per wallet alone does
   * not stop one client from opening streams until the service's are gone.
   */
  connectionsPerClientMax: number
  /**
   * Open streams over every client. When they are all open, a newcomer takes the place of the oldest stream of the
   * client holding the most, if that client holds at least two more than the newcomer's (closed 4009 displaced);
   * else it is refused with 503 streams_full.
   */
  connectionsMax: number
  /**
   * Bytes the sockets of all open streams may buffer together (their unsent frames). Past it, the largest stream of the
   * client whose streams hold the most unread bytes together is closed as a slow reader (4008), and the next while still
   * past it (#holdBudget): each stream's own bound
   * (socketBufferedBytesMax, an event and PONGS_UNREAD_MAX pongs past it) let 4,096 streams that stop reading hold
   * some 4 GiB between them, which no bound summed (edges30, test/stream/buffered-budget.test.ts).
   */
  bufferedBytesTotalMax: number
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  retainedEventsMax: 100_000,
  retentionMs: 10 * 60_000,
  queuedEventsMax: 4096,
  socketBufferedBytesMax: 1024 * 1024,
  connectionsPerWalletMax: 16,
  connectionsPerClientMax: 128,
  connectionsMax: 4096,
  bufferedBytesTotalMax: 256 * 1024 * 1024,
}

/**
 * The expiry (ms, the service's clock) of the live session of a bearer token's hash, a refresh in place included;
 * undefined once the session ended (expired or revoked). SiweAuth.sessionExpiresAt.
 */
export type SessionExpiry = (tokenHash: string) => Promise<number | undefined>

/** When the store could not say a session's expiry, it is asked again after this long (the stream stays open). */
const SESSION_RECHECK_MS = 5_000
/**
 * Pongs a stream may leave unread past what the hub itself put in its socket buffer before a ping closes it (4008): an
 * honest client that pings now and then (Python's websockets every 20 s, any client whose keepalive fires while a
 * backlog is on its way) finds its buffer at the bound by the hub's own doing, one event past it at most.
 */
export const PONGS_UNREAD_MAX = 16
/** A pong of a ping's largest payload (125 bytes, RFC 6455 5.5) on the wire. */
const PONG_FRAME_BYTES_MAX = 127
/**
 * How long the hub still counts an ended stream (4008, 4001, 4009, 1003, 1001) against its client's
 * connectionsPerClientMax, and connectionsMax, when the socket held unread bytes as it ended. uWS calls `close` within `end()`, but keeps the
 * socket and its buffer (up to the bound and the pongs a ping may add) until the client reads to the close frame, or
 * its own timeout after `end()`: freed 8 to 14 s after it, the descriptor closed by 17 s (64 streams ended 4008 with
 * their buffers full, 08:46 UTC). Released at `end()`, a client's place came back at once, so one client cycling
 * streams through 4008 held 1 MiB per cycle for that long past its 128 (review33, test/stream/client-frames.test.ts).
 */
export const ENDED_SOCKET_LINGER_MS = 20_000
/** setTimeout's longest delay (about 24.8 days); a later expiry is asked again then. */
const TIMER_DELAY_MAX_MS = 2 ** 31 - 1

interface Retained {
  /** The commit's time: the event's `at`, and what the age bound is checked against. */
  atMs: number
  wallets: readonly Address[]
  kind: Change['kind']
  /** What the event is derived from (events.ts eventRecord), until it is: then the slot keeps only its text. */
  record: unknown
  /** The event's text after its seq (#tailOf), once derived. */
  text: string | undefined
}

/**
 * A wallet's events: the ring positions of the retained ones, oldest first, from `head` on; the wallet's sequence
 * number of positions[i] is base + i, so its latest is base + positions.length - 1 and its oldest retained base + head.
 */
interface WalletEvents {
  positions: number[]
  head: number
  base: number
}

interface UpgradeData {
  wallet: Address
  /** The client (clientKeyOf) that opened it: its count is given back when the stream ends. */
  client: string
  /** The session's token hash: a revoked session's streams are closed (endSessions). */
  tokenHash: string | undefined
  since: number | undefined
  epoch: string | undefined
}

interface Connection {
  ws: WebSocket<UpgradeData>
  wallet: Address
  client: string
  tokenHash: string | undefined
  /** Fires at the session's expiry: the stream is closed then, unless the session was refreshed (re-armed). */
  sessionTimer: ReturnType<typeof setTimeout> | undefined
  /** The wallet's sequence numbers of its events not yet handed to the socket, from `head` on. */
  queue: number[]
  head: number
  open: boolean
  /**
   * The most bytes past socketBufferedBytesMax an event the hub sent left in the socket's buffer (#pump sends while
   * under the bound, so one event past it at most): what a ping finds there by the hub's own doing, not the client's.
   */
  eventOvershoot: number
  /** Its socket's buffered bytes when last measured (#measured): its part of #bufferedTotal. */
  buffered: number
}

export interface ConnectionStats {
  wallet: Address
  queuedEvents: number
  bufferedBytes: number
}

export class EventHub {
  readonly epoch = randomBytes(8).toString('hex')
  readonly limits: StreamLimits
  readonly #sources: EventSources
  readonly #nowMs: () => number
  readonly #ring: Array<Retained | undefined>
  /** Positions of the ring (internal, over every wallet): it holds #first..#last (empty when #first > #last). */
  #first = 1
  #last = 0
  readonly #byWallet = new Map<Address, Set<Connection>>()
  readonly #perClient = new ClientCounts()
  /**
   * Per wallet, its numbering and the ring positions of its retained events (WalletEvents): a resume reads the
   * wallet's own events instead of every slot of the ring (100,000 slots, some milliseconds of the service thread per
   * resume, which any signed-in wallet could ask for again and again: an outsider's finding). An entry stays for the
   * epoch once the wallet had an event (its counter must not start again), a few dozen bytes per wallet with events.
   */
  readonly #byWalletEvents = new Map<Address, WalletEvents>()
  /** `{"type":"event","epoch":"<epoch>","seq":`, what every event's text starts with before its wallet's seq. */
  readonly #eventHead = `{"type":"event","epoch":${JSON.stringify(this.epoch)},"seq":`
  /** Sequence numbers resumes have read, in total: a resume's cost, which the tests hold to the wallet's own events. */
  #resumeSeqsRead = 0
  readonly #connections = new Map<WebSocket<UpgradeData>, Connection>()
  /** Streams ended with bytes unread whose sockets uWS may still keep (ENDED_SOCKET_LINGER_MS): counted in connectionsMax. */
  #lingering = 0
  /** The live session's expiry of a token hash (SessionExpiry), given by behavior(); none: streams are not timed. */
  #sessionExpiry: SessionExpiry | undefined
  /** The largest queue and socket buffer any connection has had: what the tests hold against the bounds. */
  #peakQueued = 0
  #peakBuffered = 0
  /**
   * The open streams' buffered bytes as last measured, summed: what bufferedBytesTotalMax bounds. A socket's buffer
   * grows only by what the hub or uWS (a pong, before the ping handler) puts in it, each measured then; it shrinks
   * unseen as the client reads, so the sum may be high, never low: past the budget every socket is measured again.
   */
  #bufferedTotal = 0
  #closed = false
  readonly #log: Logger

  /** ENDED_SOCKET_LINGER_MS (shorter in tests). */
  readonly #endedLingerMs: number

  constructor(sources: EventSources, limits: Partial<StreamLimits> = {}, nowMs: () => number = Date.now, endedLingerMs = ENDED_SOCKET_LINGER_MS, log: Logger = stdoutLogger) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...limits }
    this.#log = log
    this.#endedLingerMs = endedLingerMs
    this.#sources = sources
    this.#nowMs = nowMs
    this.#ring = new Array(this.limits.retainedEventsMax)
  }

  /**
   * Numbers and retains the events of one durable commit's `changes` (in their order), then hands each to the open
   * connections of its wallets. An event some connection takes is derived now, so what a live subscriber receives
   * reflects the engine as of its commit even when its socket is slow to drain.
   */
  publish(changes: readonly Change[]): void {
    let nowMs: number | undefined
    let touched: Set<Connection> | undefined
    for (const change of changes) {
      const wallets = eventWallets(change)
      if (wallets === undefined) continue
      nowMs ??= this.#nowMs()
      const position = ++this.#last
      const retained: Retained = { atMs: nowMs, wallets, kind: change.kind, record: eventRecord(change), text: undefined }
      const slot = position % this.limits.retainedEventsMax
      const overwritten = this.#ring[slot]
      if (overwritten !== undefined) this.#unindex(overwritten)
      this.#ring[slot] = retained
      if (position - this.#first >= this.limits.retainedEventsMax) this.#first = position - this.limits.retainedEventsMax + 1
      for (const wallet of wallets) {
        let indexed = this.#byWalletEvents.get(wallet)
        if (indexed === undefined) this.#byWalletEvents.set(wallet, (indexed = { positions: [position], head: 0, base: 1 }))
        else indexed.positions.push(position)
        const connections = this.#byWallet.get(wallet)
        if (connections === undefined) continue
        const seq = indexed.base + indexed.positions.length - 1
        for (const connection of connections) {
          if (!this.#enqueue(connection, seq)) continue
          this.#tailOf(retained)
          touched ??= new Set()
          touched.add(connection)
        }
      }
    }
    if (nowMs === undefined) return
    this.#evictOlderThan(nowMs - this.limits.retentionMs)
    if (touched !== undefined) for (const connection of touched) this.#pump(connection)
  }

  /** firstPosition..lastPosition: the ring's events of every wallet (internal: no subscriber sees these numbers). */
  stats(): { connections: ConnectionStats[]; bufferedBytesTotal: number; peakQueuedEvents: number; peakBufferedBytes: number; firstPosition: number; lastPosition: number; resumeSeqsRead: number } {
    const connections = [...this.#connections.values()].map((c) => ({ wallet: c.wallet, queuedEvents: c.queue.length - c.head, bufferedBytes: c.ws.getBufferedAmount() }))
    return { connections, bufferedBytesTotal: this.#bufferedTotal, peakQueuedEvents: this.#peakQueued, peakBufferedBytes: this.#peakBuffered, firstPosition: this.#first, lastPosition: this.#last, resumeSeqsRead: this.#resumeSeqsRead }
  }

  /** A wallet's numbering: its latest sequence number (0: none yet) and its oldest still retained (what hello says). */
  walletSeqs(wallet: Address): { seq: number; oldestSeq: number } {
    const indexed = this.#byWalletEvents.get(wallet)
    if (indexed === undefined) return { seq: 0, oldestSeq: 1 }
    return { seq: indexed.base + indexed.positions.length - 1, oldestSeq: indexed.base + indexed.head }
  }

  /**
   * Closes the streams opened with these sessions (4001 session_ended): a revoked session stops receiving at once,
   * not only at its next HTTP request. One pass over the open connections (bounded per wallet, rare).
   */
  endSessions(tokenHashes: readonly string[]): void {
    if (tokenHashes.length === 0) return
    const ended = new Set(tokenHashes)
    for (const connection of [...this.#connections.values()]) {
      if (connection.tokenHash !== undefined && ended.has(connection.tokenHash)) {
        this.#end(connection, STREAM_CLOSE.sessionEnded, 'the session was revoked or replaced; sign in again')
      }
    }
  }

  /** Ends every connection (the service is stopping); later upgrades are refused. */
  close(): void {
    this.#closed = true
    for (const connection of [...this.#connections.values()]) this.#end(connection, STREAM_CLOSE.shuttingDown, 'the service is stopping; reconnect and resume')
  }

  /**
   * The uWebSockets.js behaviour of GET /events: bearer-token upgrade, hello, resume, live delivery. With
   * `sessionExpiry`, a stream is closed (4001 session_ended) when its session expires, as a revoked one is at once.
   */
  behavior(authenticate: Authenticate, sessionExpiry?: SessionExpiry): WebSocketEndpoint<UpgradeData> {
    this.#sessionExpiry = sessionExpiry
    return {
      // Events are small; a client never needs to send anything but control frames.
      maxPayloadLength: 1024,
      // So the first data frame closes the stream (1003): uWS read and dropped them before, whatever their count, and a
      // client that sent a subscribe message was told nothing (an adversary's probe, test/stream/client-frames.test.ts).
      // Control frames still flow at the client's bandwidth, as bytes on any connection do (README).
      message: (ws) => {
        const connection = this.#connections.get(ws)
        if (connection !== undefined) this.#end(connection, STREAM_CLOSE.unsupportedData, 'this stream takes no messages (server to client only)')
      },
      idleTimeout: 120,
      sendPingsAutomatically: true,
      // Above the hub's own bound (one event past socketBufferedBytesMax at most), so uWS never drops a frame silently.
      maxBackpressure: this.limits.socketBufferedBytesMax * 4,
      upgrade: (res, req, context, gate) => this.#upgrade(res, req, context, gate, authenticate),
      open: (ws) => this.#open(ws),
      drain: (ws) => {
        const connection = this.#connections.get(ws)
        if (connection !== undefined) this.#pump(connection)
      },
      // uWS has queued the pong already, behind whatever the client has not read: a client that pings and never
      // reads made the socket buffer up to maxBackpressure (4 MiB) of pongs, past the hub's bound, with no event of
      // its own, and kept it open (128 such streams of one address took the RSS from 261 to 793 MB; an adversary's
      // finding, test/stream/client-frames.test.ts). The bound a ping is held to is the hub's own (one event past
      // socketBufferedBytesMax at most, while a backlog waits for `drain`) and PONGS_UNREAD_MAX pongs: held to the
      // bound alone, an honest client that read all it was sent was closed by a ping of its keepalive arriving while a
      // backlog filled its buffer, as the hub fills it (review33, same test).
      ping: (ws) => {
        const connection = this.#connections.get(ws)
        if (connection === undefined) return
        const buffered = this.#measured(connection)
        const bound = this.limits.socketBufferedBytesMax + connection.eventOvershoot + PONGS_UNREAD_MAX * PONG_FRAME_BYTES_MAX
        if (buffered > bound) this.#end(connection, STREAM_CLOSE.slowConsumer, `${buffered} bytes unread, pongs included (bound ${bound})`)
        else this.#holdBudget()
      },
      close: (ws) => {
        const connection = this.#connections.get(ws)
        if (connection !== undefined) this.#forget(connection)
      },
    }
  }

  #upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, gate: UpgradeGate, authenticate: Authenticate): void {
    // The request is only valid until the first await: read everything now.
    const key = req.getHeader('sec-websocket-key')
    const protocol = req.getHeader('sec-websocket-protocol')
    const extensions = req.getHeader('sec-websocket-extensions')
    const authorization = req.getHeader('authorization')
    const query = new URLSearchParams(req.getQuery() ?? '')
    const { client } = gate
    // Answered by the pipeline, as every answer: X-Request-Id and the RateLimit fields (before, the hub wrote its own,
    // without them: edges30), and closed after the answer: kept alive, the connection outlived the client's FIN until
    // uWS's idle timeout, and 1,024 refused upgrades of one address held its connectionsPerClientMax for seconds (an
    // adversary's probe, test/stream/refused-upgrades.test.ts). Ignored once the client went away.
    const refuse = (problem: HttpProblem) => gate.refuse(problem)
    const since = query.get('since')
    const epoch = query.get('epoch')
    const unknown = [...query.keys()].filter((name) => name !== 'since' && name !== 'epoch')
    if (unknown.length > 0 || (since !== null && !/^(0|[1-9][0-9]{0,15})$/.test(since)) || (epoch !== null && !/^[0-9a-f]{16}$/.test(epoch))) {
      refuse(new HttpProblem(400, 'validation_failed', 'GET /events takes ?since=<seq>&epoch=<epoch> (both from messages of an earlier connection) and nothing else'))
      return
    }
    if (this.#closed) return refuse(new HttpProblem(503, 'shutting_down', 'the service is stopping'))
    const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1]
    if (token === undefined) return refuse(unauthorized('send Authorization: Bearer <token> from POST /auth/session'))
    authenticate(token).then(
      (session) => {
        if (session === undefined) return refuse(unauthorized('unknown or expired bearer token'))
        if ((this.#byWallet.get(session.address)?.size ?? 0) >= this.limits.connectionsPerWalletMax) {
          return refuse(new HttpProblem(429, 'too_many_streams', `a wallet holds at most ${this.limits.connectionsPerWalletMax} open streams; close one first`))
        }
        if (this.#perClient.held(client) >= this.limits.connectionsPerClientMax) {
          return refuse(new HttpProblem(429, 'too_many_client_streams', `this client address holds ${this.limits.connectionsPerClientMax} open streams, of any wallets, the most one client may; close one first`))
        }
        if (gate.aborted()) return
        if (this.#connections.size + this.#lingering >= this.limits.connectionsMax && !this.#displaceForShare(client)) {
          return refuse(new HttpProblem(503, 'streams_full', `the service holds ${this.limits.connectionsMax} open streams, the most it serves; open it again later, or read over HTTP`))
        }
        // uWS opens the socket within res.upgrade (#open): the counts checked here still hold when it is counted.
        const data: UpgradeData = { wallet: session.address, client, tokenHash: session.tokenHash, since: since === null ? undefined : Number(since), epoch: epoch ?? undefined }
        res.cork(() => res.upgrade(data, key, protocol, extensions, context))
        gate.opened()
      },
      () => refuse(new HttpProblem(503, 'auth_unavailable', 'the session could not be checked; retry')),
    )
  }

  #open(ws: WebSocket<UpgradeData>): void {
    const { wallet, client, tokenHash, since, epoch } = ws.getUserData()
    const connection: Connection = { ws, wallet, client, tokenHash, sessionTimer: undefined, queue: [], head: 0, open: true, eventOvershoot: 0, buffered: 0 }
    this.#connections.set(ws, connection)
    this.#watchSession(connection)
    this.#perClient.add(client)
    let set = this.#byWallet.get(wallet)
    if (set === undefined) this.#byWallet.set(wallet, (set = new Set()))
    set.add(connection)
    this.#evictOlderThan(this.#nowMs() - this.limits.retentionMs)
    const { seq, oldestSeq } = this.walletSeqs(wallet)
    const hello: StreamHello = {
      type: 'hello',
      epoch: this.epoch,
      wallet,
      seq,
      oldestSeq,
      retention: { events: this.limits.retainedEventsMax, seconds: Math.ceil(this.limits.retentionMs / 1000) },
    }
    ws.send(JSON.stringify(hello))
    if (since === undefined) return void this.#measured(connection)
    const resync = this.#resumeProblem(since, epoch, seq, oldestSeq)
    if (resync !== undefined) {
      ws.send(JSON.stringify({ type: 'resync', epoch: this.epoch, seq, ...resync } satisfies StreamResync))
      return void this.#measured(connection)
    }
    // The wallet's events since+1..seq are all retained: its own numbers, no search.
    if (seq - since > this.limits.queuedEventsMax) {
      const detail = `more than ${this.limits.queuedEventsMax} events of this wallet since ${since}`
      ws.send(JSON.stringify({ type: 'resync', epoch: this.epoch, seq, reason: 'backlog_too_large', detail } satisfies StreamResync))
      return void this.#measured(connection)
    }
    for (let missed = since + 1; missed <= seq; missed++) connection.queue.push(missed)
    this.#resumeSeqsRead += seq - since
    this.#pump(connection)
  }

  /** Drops a retained event leaving the ring from its wallets' indexes (it is the oldest of each of them). */
  #unindex(retained: Retained): void {
    for (const wallet of retained.wallets) {
      const indexed = this.#byWalletEvents.get(wallet)
      if (indexed === undefined) continue
      indexed.head++
      if (indexed.head === indexed.positions.length || indexed.head >= 1024) {
        // Dropped entries go in batches, so an index never holds more than its live entries plus 1,024; the wallet's
        // numbering goes on from where it was.
        indexed.base += indexed.head
        if (indexed.head === indexed.positions.length) indexed.positions = []
        else indexed.positions.splice(0, indexed.head)
        indexed.head = 0
      }
    }
  }

  /** Why a resume after the wallet's `since` cannot be served exactly, its latest being `seq` and oldest retained `oldestSeq`. */
  #resumeProblem(since: number, epoch: string | undefined, seq: number, oldestSeq: number): Pick<StreamResync, 'reason' | 'detail'> | undefined {
    if (epoch !== this.epoch) return { reason: 'unknown_epoch', detail: `sequence numbers of epoch ${epoch ?? '(none given)'} are not this run's (${this.epoch}): the service restarted` }
    if (since > seq) return { reason: 'ahead_of_stream', detail: `seq ${since} was never sent to this wallet in this epoch (latest ${seq})` }
    if (since < oldestSeq - 1) return { reason: 'beyond_retention', detail: `events after ${since} are no longer retained (oldest ${oldestSeq})` }
    return undefined
  }

  /** Queues `seq` for `connection`; false when the connection was cut off instead (its queue is full). */
  #enqueue(connection: Connection, seq: number): boolean {
    if (!connection.open) return false
    const queued = connection.queue.length - connection.head
    if (queued >= this.limits.queuedEventsMax) {
      this.#end(connection, STREAM_CLOSE.slowConsumer, `${queued} events undelivered (bound ${this.limits.queuedEventsMax})`)
      return false
    }
    connection.queue.push(seq)
    if (queued + 1 > this.#peakQueued) this.#peakQueued = queued + 1
    return true
  }

  /** Hands queued events to the socket while its buffer is under the bound; `drain` calls it again. */
  #pump(connection: Connection): void {
    if (!connection.open) return
    const { ws } = connection
    const indexed = this.#byWalletEvents.get(connection.wallet)
    ws.cork(() => {
      // Whether this pass sent an event yet (each from under the bound): then what the buffer holds past the bound is
      // the last one's (eventOvershoot).
      let sent = false
      const measure = (): number => {
        const buffered = this.#measured(connection)
        if (buffered > this.#peakBuffered) this.#peakBuffered = buffered
        const past = buffered - this.limits.socketBufferedBytesMax
        if (sent && past > connection.eventOvershoot) connection.eventOvershoot = past
        return buffered
      }
      while (connection.open && connection.head < connection.queue.length) {
        if (measure() >= this.limits.socketBufferedBytesMax) break
        const seq = connection.queue[connection.head] as number
        // A queued seq is one of the wallet's, so its index exists; one before `head` has left the ring.
        const { positions, head, base } = indexed as WalletEvents
        if (seq - base < head) {
          this.#end(connection, STREAM_CLOSE.slowConsumer, `fell behind the retention (next event ${seq}, oldest ${base + head})`)
          return
        }
        const position = positions[seq - base] as number
        ws.send(this.#eventHead + seq + this.#tailOf(this.#ring[position % this.limits.retainedEventsMax] as Retained))
        sent = true
        connection.head++
      }
      measure()
    })
    // Delivered entries are dropped in batches, so the array never holds more than twice the bound.
    if (connection.head >= 1024 || connection.head === connection.queue.length) {
      connection.queue.splice(0, connection.head)
      connection.head = 0
    }
    this.#holdBudget()
  }

  /** The socket's buffered bytes now, kept as the connection's part of #bufferedTotal. */
  #measured(connection: Connection): number {
    const buffered = connection.ws.getBufferedAmount()
    this.#bufferedTotal += buffered - connection.buffered
    connection.buffered = buffered
    return buffered
  }

  /**
   * Holds the open streams' buffered bytes to bufferedBytesTotalMax: past it, measures every socket again (the sum is
   * of last measures, and a client that read since holds less), then, until the rest fit, closes the largest stream of
   * the client (clientKeyOf: an address, an IPv6 /64) whose streams hold the most unread bytes together (4008, as a slow
   * reader; logged). The largest stream alone was closed before, whoever held the rest: a stranger fills a socket with
   * the pongs of its pings, no event needed, so a few streams of one address each kept just under an honest reader's
   * full socket (one catching up on a backlog) passed the budget and had that reader closed (review36,
   * test/stream/budget-share.test.ts); now it takes as many addresses as the budget holds full sockets.
   * O(1) while under the budget; O(streams) past it (and O(clients) per stream closed).
   */
  #holdBudget(): void {
    const budget = this.limits.bufferedBytesTotalMax
    if (this.#bufferedTotal <= budget) return
    for (const connection of this.#connections.values()) this.#measured(connection)
    if (this.#bufferedTotal <= budget) return
    // Each client's streams, largest first, and their bytes together.
    const byClient = new Map<string, { bytes: number; streams: Connection[]; next: number }>()
    for (const connection of [...this.#connections.values()].sort((a, b) => b.buffered - a.buffered)) {
      let held = byClient.get(connection.client)
      if (held === undefined) byClient.set(connection.client, (held = { bytes: 0, streams: [], next: 0 }))
      held.bytes += connection.buffered
      held.streams.push(connection)
    }
    while (this.#bufferedTotal > budget) {
      let most: { bytes: number; streams: Connection[]; next: number } | undefined
      for (const held of byClient.values()) if (held.next < held.streams.length && (most === undefined || held.bytes > most.bytes)) most = held
      if (most === undefined) break
      const connection = most.streams[most.next++] as Connection
      const { buffered } = connection
      this.#log({ level: 'warn', msg: 'stream_buffer_budget_exceeded', wallet: connection.wallet, bufferedBytes: buffered, clientBytes: most.bytes, totalBytes: this.#bufferedTotal, budgetBytes: budget, streams: this.#connections.size })
      this.#end(connection, STREAM_CLOSE.slowConsumer, `${buffered} bytes unread; your address's streams held the most (${most.bytes}) of all ${this.#bufferedTotal} (bound ${budget})`)
      most.bytes -= buffered
    }
  }

  /**
   * The event's text after its seq (`,"at":...}`; #eventHead and the wallet's seq go before it: an event of two
   * wallets has a seq of each), derived (and its record let go) the first time a connection needs it.
   */
  #tailOf(retained: Retained): string {
    if (retained.text === undefined) {
      const body = eventBody(retained.kind, retained.record, new Date(retained.atMs).toISOString(), this.#sources)
      retained.text = `,${JSON.stringify(body).slice(1)}`
      retained.record = undefined
    }
    return retained.text
  }

  #evictOlderThan(cutoffMs: number): void {
    while (this.#first <= this.#last) {
      const slot = this.#first % this.limits.retainedEventsMax
      const retained = this.#ring[slot] as Retained
      if (retained.atMs >= cutoffMs) break
      this.#unindex(retained)
      this.#ring[slot] = undefined
      this.#first++
    }
  }

  /**
   * The service holds connectionsMax streams: frees a place for a stream of `client` by closing the oldest stream of
   * the client holding the most, when that one holds at least two more (ClientCounts.displaceable). First come alone
   * let 32 IPv6 /64s at the defaults hold every place and keep every other wallet's stream out (an SDK lender's loop
   * then missed its leases); now that takes an address per place. False when no client holds that many more.
   */
  #displaceForShare(client: string): boolean {
    // Map order is opening order.
    const oldest = this.#perClient.displaceable(this.#connections.values(), (connection) => connection.client, client)
    if (oldest === undefined) return false
    this.#end(oldest, STREAM_CLOSE.displaced, 'the service is full and your address held the most streams; one gave its place to another address\'s')
    return true
  }

  #end(connection: Connection, close: { code: number; name: string }, detail: string): void {
    if (!connection.open) return
    // Unread bytes: uWS keeps the socket after `end()` (ENDED_SOCKET_LINGER_MS), so its client keeps the place as long.
    this.#forget(connection, connection.ws.getBufferedAmount() > 0)
    // A close reason is at most 123 bytes (RFC 6455 5.5).
    connection.ws.end(close.code, `${close.name}: ${detail}`.slice(0, 123))
  }

  /**
   * Closes `connection` at its session's expiry: asks for the session's expiry now (a refresh in place moves it later,
   * the same token) and again when it comes. Expiry ended nothing before: a stream opened just before its session's
   * end kept receiving the wallet's events for as long as the connection lived, and no revocation could reach it
   * once the session had expired (an outsider's finding, test/stream/outsider20-session-expiry.test.ts).
   */
  #watchSession(connection: Connection): void {
    const sessionExpiry = this.#sessionExpiry
    const { tokenHash } = connection
    if (sessionExpiry === undefined || tokenHash === undefined) return
    connection.sessionTimer = undefined
    sessionExpiry(tokenHash).then(
      (expiresAtMs) => {
        if (!connection.open) return
        if (expiresAtMs === undefined) return this.#end(connection, STREAM_CLOSE.sessionEnded, 'the session expired; sign in again')
        this.#rewatch(connection, expiresAtMs - this.#nowMs())
      },
      // The store could not say: keep the stream, ask again soon.
      () => connection.open && this.#rewatch(connection, SESSION_RECHECK_MS),
    )
  }

  #rewatch(connection: Connection, delayMs: number): void {
    connection.sessionTimer = setTimeout(() => this.#watchSession(connection), Math.min(Math.max(delayMs, 0), TIMER_DELAY_MAX_MS))
    connection.sessionTimer.unref()
  }

  #forget(connection: Connection, lingering = false): void {
    connection.open = false
    this.#bufferedTotal -= connection.buffered
    connection.buffered = 0
    if (connection.sessionTimer !== undefined) clearTimeout(connection.sessionTimer)
    connection.sessionTimer = undefined
    connection.queue = []
    connection.head = 0
    this.#connections.delete(connection.ws)
    if (lingering) {
      this.#lingering++
      setTimeout(() => {
        this.#lingering--
        this.#perClient.release(connection.client)
      }, this.#endedLingerMs).unref()
    } else this.#perClient.release(connection.client)
    const set = this.#byWallet.get(connection.wallet)
    set?.delete(connection)
    if (set?.size === 0) this.#byWallet.delete(connection.wallet)
  }
}
