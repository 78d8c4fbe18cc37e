// The event stream for agents: one WebSocket to GET /events that reconnects by itself and resumes from the last
// event it delivered, so a consumer sees every event of its wallet once, in order (a `resync` message when the
// service could not keep the gap: re-read state over HTTP then). When its session ends (revoked, or dropped by a
// newer sign-in) it signs in again at once; when the replacing session ends too within `sessionEndedWindowMs`, it
// signs in again only after a wait that doubles with each such end (`sessionEndedBackoffMs`, at most the window),
// and after `sessionEndedRetriesMax` of them it stops. More sign-ins of its wallet than the service keeps
// (sessionsPerWalletMax) would otherwise end each other's sessions in a tight loop, each new one dropping the
// oldest; the waits keep that loop slow, and let a stream recover once the other sign-ins are gone (a restart, a
// deploy, a revocation), the bound stops a stream that keeps losing.
import WebSocket from 'ws'
import { STREAM_CLOSE, type StreamEvent, type StreamMessage, type StreamResync } from '../stream/messages.ts'

export type { StreamEvent, StreamMessage, StreamResync }

export interface EventStreamOptions {
  /** The service's base URL (http or https). */
  baseUrl: string
  /** A fresh bearer token for each (re)connection: the SDK's session renews itself. */
  token: () => Promise<string>
  /** Where to resume from (a previous stream's `position`). */
  resumeFrom?: { epoch: string; seq: number }
  /** Delay before reconnecting after the connection dropped (doubles up to 8x). */
  reconnectDelayMs?: number
  /**
   * The service closed the stream because the session of `token` ended (4001 session_ended: expired, revoked, or dropped by a
   * newer sign-in): called before reconnecting, so `token` signs in again instead of offering the ended token.
   */
  onSessionEnded?: (token: string) => void
  /**
   * A session the stream signed in for after a session end that ends within this long counts as lost to the
   * wallet's other sign-ins (default 10 min): the next sign-in waits. One that lasted longer starts the count anew.
   */
  sessionEndedWindowMs?: number
  /** The wait before signing in again after the first lost session; doubles with each, up to the window (default 30 s). */
  sessionEndedBackoffMs?: number
  /** Lost sessions in a row after which the stream stops (`ended`) instead of signing in again (default 6). */
  sessionEndedRetriesMax?: number
  /**
   * Called every `sessionRenewIntervalMs` (default 30 s) while the stream is open, to keep its session from expiring
   * (the SDK's renews the session in place, the same token, `renewBeforeMs` before its end): the service closes a
   * stream at its session's expiry (4001), and an agent that only streams makes no other call that would renew it.
   */
  renewSession?: () => Promise<unknown>
  sessionRenewIntervalMs?: number
}

export const SESSION_RENEW_INTERVAL_MS = 30_000

/** How long a replacing session must last for its end not to count as lost to the wallet's other sign-ins. */
export const SESSION_ENDED_WINDOW_MS = 10 * 60_000
export const SESSION_ENDED_BACKOFF_MS = 30_000
/** With the defaults: waits of 30 s, 1, 2, 4, 8 and 10 min, about 25 minutes of losing before the stream stops. */
export const SESSION_ENDED_RETRIES_MAX = 6

type Listener = (message: StreamEvent | StreamResync) => void

export class EventStream {
  readonly #options: EventStreamOptions
  readonly #listeners = new Set<Listener>()
  #ws: WebSocket | undefined
  #stopped = false
  #epoch: string | undefined
  #seq: number | undefined
  #failures = 0
  #opened: Promise<void>
  /** When the stream last signed in again after a session end (after its wait), and how many in a row were lost. */
  #replacedAtMs: number | undefined
  #sessionsLost = 0
  /** The wait before the next connection, set by a lost session. */
  #sessionWaitMs = 0
  #renewTimer: ReturnType<typeof setInterval> | undefined
  #end!: (error: Error | undefined) => void
  /**
   * Settles once the stream stops for good: undefined after close(); the reason when it gave up (its first connection
   * failed, or `sessionEndedRetriesMax` sessions in a row were lost), with `lastClose` the service's close.
   */
  readonly ended: Promise<Error | undefined> = new Promise((resolve) => (this.#end = resolve))
  /** Close code and reason of the last drop (a slow consumer learns why here). */
  lastClose: { code: number; reason: string } | undefined

  constructor(options: EventStreamOptions) {
    this.#options = options
    this.#epoch = options.resumeFrom?.epoch
    this.#seq = options.resumeFrom?.seq
    this.#opened = this.#connect()
    // A first connection that fails is not tried again: ready() rejects, and the stream has ended with that reason.
    this.#opened.catch((error: Error) => this.#end(error))
  }

  /** Resolves once the first connection is open (its hello received). */
  ready(): Promise<void> {
    return this.#opened
  }

  /** The last event delivered: pass it as `resumeFrom` to a later stream. */
  get position(): { epoch: string; seq: number } | undefined {
    return this.#epoch === undefined || this.#seq === undefined ? undefined : { epoch: this.#epoch, seq: this.#seq }
  }

  /** Calls `listener` with every event and resync, in order; returns the unsubscribe. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Resolves with the first event from now on that satisfies `match`. */
  next<E extends StreamEvent>(match: (event: StreamEvent) => event is E, timeoutMs?: number): Promise<E>
  next(match: (event: StreamEvent) => boolean, timeoutMs?: number): Promise<StreamEvent>
  next(match: (event: StreamEvent) => boolean, timeoutMs = 60_000): Promise<StreamEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off()
        reject(new Error('no matching event in time'))
      }, timeoutMs)
      const off = this.on((message) => {
        if (message.type !== 'event' || !match(message)) return
        clearTimeout(timer)
        off()
        resolve(message)
      })
    })
  }

  close(): void {
    this.#stopped = true
    clearInterval(this.#renewTimer)
    this.#ws?.close(1000)
    this.#end(undefined)
  }

  /** Whether to sign in again after the session ended (after #sessionWaitMs), or stop: see the file's head. */
  #mayReplaceSession(): boolean {
    const nowMs = Date.now()
    const windowMs = this.#options.sessionEndedWindowMs ?? SESSION_ENDED_WINDOW_MS
    const lost = this.#replacedAtMs !== undefined && nowMs - this.#replacedAtMs < windowMs
    this.#sessionsLost = lost ? this.#sessionsLost + 1 : 0
    const retriesMax = this.#options.sessionEndedRetriesMax ?? SESSION_ENDED_RETRIES_MAX
    if (this.#sessionsLost > retriesMax) {
      this.#stopped = true
      clearInterval(this.#renewTimer)
      this.#end(new Error(`event stream stopped: ${this.#sessionsLost} sessions in a row ended within ${windowMs / 1000} s of its sign-in, so more sign-ins of this wallet than the service keeps are ending each other's sessions; share one session per wallet (one AgentCredit per wallet and process does) or sign in from fewer places`))
      return false
    }
    const backoffMs = this.#options.sessionEndedBackoffMs ?? SESSION_ENDED_BACKOFF_MS
    this.#sessionWaitMs = this.#sessionsLost === 0 ? 0 : Math.min(backoffMs * 2 ** (this.#sessionsLost - 1), windowMs)
    this.#replacedAtMs = nowMs + this.#sessionWaitMs
    return true
  }

  async #connect(): Promise<void> {
    const token = await this.#options.token()
    const query = this.#epoch !== undefined && this.#seq !== undefined ? `?since=${this.#seq}&epoch=${this.#epoch}` : ''
    const ws = new WebSocket(`${this.#options.baseUrl.replace(/^http/, 'ws').replace(/\/$/, '')}/events${query}`, { headers: { authorization: `Bearer ${token}` } })
    this.#ws = ws
    return new Promise<void>((resolve, reject) => {
      let helloSeen = false
      ws.on('message', (data) => {
        const message = JSON.parse(String(data)) as StreamMessage
        if (message.type === 'hello') {
          // A stream that never resumed starts from the hello: what comes after it is new.
          if (this.#epoch === undefined) this.#epoch = message.epoch
          if (this.#seq === undefined) this.#seq = message.seq
          helloSeen = true
          this.#failures = 0
          this.#keepSession()
          resolve()
          return
        }
        if (message.type === 'resync') {
          this.#epoch = message.epoch
          this.#seq = message.seq
        } else {
          // Never deliver twice (a resume replays from the position; nothing at or before it is expected).
          if (message.epoch === this.#epoch && this.#seq !== undefined && message.seq <= this.#seq) return
          this.#epoch = message.epoch
          this.#seq = message.seq
        }
        for (const listener of [...this.#listeners]) listener(message)
      })
      ws.on('unexpected-response', (req, res) => {
        req.destroy()
        // 401: the session ended between the sign-in and the upgrade, as a 4001 would say on an open stream.
        if (res.statusCode === 401 && this.#mayReplaceSession()) this.#options.onSessionEnded?.(token)
        reject(new Error(`event stream refused: HTTP ${res.statusCode}`))
      })
      ws.on('error', (error) => {
        if (!helloSeen) reject(error)
      })
      ws.on('close', (code, reason) => {
        this.lastClose = { code, reason: String(reason) }
        if (code === STREAM_CLOSE.sessionEnded.code && this.#mayReplaceSession()) this.#options.onSessionEnded?.(token)
        // Closed before its hello (a proxy or the service dropping it, the session ended meanwhile): the attempt
        // failed, so a reconnect's caller schedules the next one and ready() does not wait for ever. (After an
        // 'error' it is rejected already; a second reject is a no-op.)
        if (helloSeen) this.#scheduleReconnect()
        else reject(new Error(`event stream closed before its hello: ${code} ${String(reason)}`.trimEnd()))
      })
    })
  }

  #keepSession(): void {
    const renew = this.#options.renewSession
    if (renew === undefined || this.#renewTimer !== undefined || this.#stopped) return
    this.#renewTimer = setInterval(() => void renew().catch(() => undefined), this.#options.sessionRenewIntervalMs ?? SESSION_RENEW_INTERVAL_MS)
    this.#renewTimer.unref()
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return
    const base = this.#options.reconnectDelayMs ?? 250
    const delay = Math.max(base * 2 ** Math.min(this.#failures++, 3), this.#sessionWaitMs)
    this.#sessionWaitMs = 0
    setTimeout(() => {
      if (!this.#stopped) this.#connect().catch(() => this.#scheduleReconnect())
    }, delay).unref()
  }
}
