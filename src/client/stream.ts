// The event stream for agents: one WebSocket to GET /events that reconnects by itself and resumes from the last
// event it delivered, so a consumer sees every event of its wallet once, in order (a `resync` message when the
// service could not keep the gap: re-read state over HTTP then). A stream whose session ends twice within
// `sessionEndedWindowMs` stops instead of signing in again: more sign-ins of its wallet than the service keeps
// (sessionsPerWalletMax) would otherwise end each other's sessions in a loop, each new one dropping the oldest.
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
   * The service closed the stream because the session of `token` ended (4001 session_ended: revoked, or dropped by a
   * newer sign-in): called before reconnecting, so `token` signs in again instead of offering the ended token.
   */
  onSessionEnded?: (token: string) => void
  /** A second session end within this long stops the stream (`ended`) instead of signing in again (default 10 min). */
  sessionEndedWindowMs?: number
}

/** How long after one session end a second one means the wallet's sign-ins are ending each other's sessions. */
export const SESSION_ENDED_WINDOW_MS = 10 * 60_000

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
  #sessionEndedAtMs: number | undefined
  #end!: (error: Error | undefined) => void
  /**
   * Settles once the stream stops for good: undefined after close(); the reason when it gave up (its first connection
   * failed, or its session ended twice within `sessionEndedWindowMs`), with `lastClose` the service's close.
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
    this.#ws?.close(1000)
    this.#end(undefined)
  }

  /** Whether to sign in again after the session ended, or stop: see the file's head. */
  #mayReplaceSession(): boolean {
    const nowMs = Date.now()
    const windowMs = this.#options.sessionEndedWindowMs ?? SESSION_ENDED_WINDOW_MS
    const again = this.#sessionEndedAtMs !== undefined && nowMs - this.#sessionEndedAtMs < windowMs
    this.#sessionEndedAtMs = nowMs
    if (!again) return true
    this.#stopped = true
    this.#end(new Error(`event stream stopped: its session ended twice within ${windowMs / 1000} s, so more sign-ins of this wallet than the service keeps are ending each other's sessions; share one session per wallet (one AgentCredit per wallet and process does) or sign in from fewer places`))
    return false
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

  #scheduleReconnect(): void {
    if (this.#stopped) return
    const base = this.#options.reconnectDelayMs ?? 250
    const delay = base * 2 ** Math.min(this.#failures++, 3)
    setTimeout(() => {
      if (!this.#stopped) this.#connect().catch(() => this.#scheduleReconnect())
    }, delay).unref()
  }
}
