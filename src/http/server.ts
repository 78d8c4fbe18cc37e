// The HTTP server: options, and the uWebSockets.js transport (the default): uWS routing, its TransportIo, the node:net
// front, listening and shutdown. The request pipeline both transports share is pipeline.ts; the node:http transport
// is node-server.ts.
import { isIPv4, isIPv6 } from 'node:net'
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket, type us_socket, type us_socket_context_t, type WebSocketBehavior } from 'uWebSockets.js'
import { ipv6Bytes, startFront, type Front } from './front.ts'
import { stdoutLogger, type Logger } from './log.ts'
import { startNodeServer } from './node-server.ts'
import { createPipeline, type TransportIo, type UpgradeGate } from './pipeline.ts'
import type { RateLimitOptions } from './rate-limit.ts'
import { statusLine, toUwsPattern, type AnyRoute, type HttpMethod, type Session } from './route.ts'
import { uwsFields } from './request.ts'

/** Default largest accepted request body. Every documented request of the service is far below it. */
export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024
/** Default time `close()` waits for in-flight requests before abandoning them. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000

/** Resolves a bearer token to the session it opens, or undefined when unknown or expired. */
export type Authenticate = (token: string) => Promise<Session | undefined>

/** An `Authenticate` that may answer at once: a session it holds in memory needs no promise per request (issue 11). */
export type SessionOf = (token: string) => Session | undefined | Promise<Session | undefined>

/**
 * A WebSocket endpoint's upgrade: uWS's, also given the pipeline's gate (pipeline.ts UpgradeGate): the client
 * (clientKeyOf its address, read as the rate limiter reads it: the front's PROXY header, or what a trusted proxy
 * forwarded), so an endpoint can bound what one client holds, and `refuse`, which answers as every other answer is.
 * The endpoint sets no `onAborted` of its own (uWS keeps one handler: the pipeline's); it reads `gate.aborted()`, and
 * calls `gate.opened()` after `res.upgrade` (the request line).
 */
export type WebSocketUpgrade = (res: HttpResponse, req: HttpRequest, context: us_socket_context_t, gate: UpgradeGate) => void
/** A WebSocket endpoint's behaviour: uWS's, with an upgrade of its own (who may connect) that is told the client. */
export type WebSocketEndpoint<T> = Omit<WebSocketBehavior<T>, 'upgrade'> & { upgrade?: WebSocketUpgrade }

/** `uws`: uWebSockets.js (with the node:net front unless `legacyClients` is false). `node`: node:http. */
export type HttpTransport = 'uws' | 'node'
export const HTTP_TRANSPORTS: readonly HttpTransport[] = ['uws', 'node']

export interface ServerOptions {
  routes: readonly AnyRoute[]
  /** Default 'uws'. node:http serves HTTP/1.0 and Host checks itself (`legacyClients` is ignored) and no WebSocket. */
  transport?: HttpTransport
  /** Interface to bind; default 127.0.0.1. */
  host?: string
  /** Port to bind; 0 picks a free one (read it back from `RunningServer.port`). */
  port?: number
  bodyLimitBytes?: number
  /**
   * Token bucket per signed-in wallet (any request with a valid bearer token) and per client address (the others);
   * `false` disables it.
   */
  rateLimit?: RateLimitOptions | false
  /** Origins a browser may call from (CORS): `['*']` any (the default), `[]` none, or exact origins. */
  corsOrigins?: readonly string[]
  /** Peer addresses whose X-Forwarded-For names the client (see client-key.ts `clientAddress`); none by default. */
  trustedProxies?: readonly string[]
  /**
   * Answer HTTP/1.0 requests and refuse HTTP/1.1 requests without Host with a 400, which uWS alone leaves without
   * any answer: a node:net front (front.ts) owns the port and hands HTTP/1.1 connections to uWS. Default true;
   * `false` puts uWS on the port directly (cheaper per request, see the README's bench section).
   */
  legacyClients?: boolean
  /**
   * Connections one client address (an IPv6 /64) may hold open at once, past which the front (or node:http) answers
   * 429 too_many_connections and closes; trusted proxies are exempt. Default 1,024. uWS on the port directly
   * (`legacyClients: false`) has no hook that sees a connection open, so it has no such bound.
   */
  connectionsPerClientMax?: number
  /** The front's cut of a client that reads nothing while its answers wait (front.ts STALLED_CLIENT_MS_DEFAULT). */
  frontStalledClientMs?: number
  /**
   * WebSocket endpoints (the event stream), registered before the routes so an upgrade reaches them first. On node:http
   * their paths answer 501 websocket_unavailable (node has no WebSocket server without a new dependency).
   */
  websockets?: ReadonlyArray<{ path: string; behavior: WebSocketEndpoint<any> }>
  /** Required when any route has `auth: 'session'`. */
  authenticate?: SessionOf
  /** Default: JSON lines on stdout. Pass `silentLogger` in tests. */
  log?: Logger
  /** Check every response body against its documented schema; a mismatch becomes a 500 (for tests and CI). */
  validateResponses?: boolean
  /** Clock of the rate limiter; injectable for tests. */
  nowMs?: () => number
  /**
   * Awaited after a GET handler built its answer and before it is sent: the store's durability barrier, so a read
   * never shows a change that a crash could still lose (issue 10, hole 4).
   */
  readBarrier?: () => Promise<void>
}

export interface CloseResult {
  /** True when every in-flight request finished before the timeout. */
  drained: boolean
  /** Requests still running at the timeout; their connections were closed. */
  abandoned: number
}

export interface RunningServer {
  readonly host: string
  readonly port: number
  /** `http://host:port` */
  readonly url: string
  /** Requests accepted and not yet answered or aborted. */
  inFlight(): number
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then resolves. Idempotent. */
  close(timeoutMs?: number): Promise<CloseResult>
}


/**
 * The trusted proxies, each also as the transports write a peer: uWS's getRemoteAddressAsText gives an IPv6 address
 * in full (`0000:0000:0000:0000:0000:0000:0000:0001`) and, on a dual-stack socket (HOST `::`, without the front), an
 * IPv4 one mapped (`0000:0000:0000:0000:0000:ffff:7f00:0001`); node:net, the front's, gives it `::ffff:127.0.0.1`. So
 * `::1`, or `127.0.0.1` on HOST `::`, never matched its peer: the X-Forwarded-For of such a proxy was ignored (all its
 * clients were one) and its connections were bounded as one client's. Once, at start; the proxy's own spelling is kept
 * for the forwarded hops.
 */
export function peerAddressForms(proxies: readonly string[]): string[] {
  const full = (bytes: number[]) => Array.from({ length: 8 }, (_, i) => (((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)).toString(16).padStart(4, '0')).join(':')
  return [...new Set(proxies.flatMap((proxy) => (isIPv6(proxy) ? [proxy, full(ipv6Bytes(proxy)), ...compressed(proxy)] : isIPv4(proxy) ? [proxy, `::ffff:${proxy}`, full(ipv6Bytes(`::ffff:${proxy}`))] : [proxy])))]
}

/**
 * An IPv6 address as node:net writes a peer (RFC 5952: lower case, the longest run of zeros as `::`): a proxy written
 * `0:0:0:0:0:0:0:1` or in upper case matched uWS's full form only, never the front's or node:http's `::1` (review22).
 */
function compressed(address: string): string[] {
  try {
    return [new URL(`http://[${address}]`).hostname.slice(1, -1)]
  } catch {
    return []
  }
}

/** Starts listening; resolves once the socket is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const trustedProxies = options.trustedProxies === undefined ? undefined : peerAddressForms(options.trustedProxies)
  if (options.transport === 'node') return startNodeServer(trustedProxies === undefined ? options : { ...options, trustedProxies })
  if (options.transport !== undefined && options.transport !== 'uws') throw new RangeError(`transport must be uws or node, got ${String(options.transport)}`)
  const host = options.host ?? '127.0.0.1'
  // Built first: a route table it refuses must leave no front listening.
  const pipeline = createPipeline(trustedProxies === undefined ? options : { ...options, trustedProxies }, uwsIo(options.legacyClients !== false))
  const front: Front | undefined = options.legacyClients === false
    ? undefined
    : await startFront({
      host,
      port: options.port ?? 0,
      log: options.log ?? stdoutLogger,
      ...(options.connectionsPerClientMax === undefined ? {} : { connectionsPerClientMax: options.connectionsPerClientMax }),
      ...(options.frontStalledClientMs === undefined ? {} : { stalledClientMs: options.frontStalledClientMs }),
      ...(trustedProxies === undefined ? {} : { trustedProxies }),
    })
  const { log, compiled, allowOf, handlerFor, preflightFor, fallback } = pipeline

  const app: TemplatedApp = uWS.App()
  const register: Record<HttpMethod, (pattern: string, handler: (res: HttpResponse, req: HttpRequest) => void) => TemplatedApp> = {
    get: (p, h) => app.get(p, h),
    post: (p, h) => app.post(p, h),
    put: (p, h) => app.put(p, h),
    patch: (p, h) => app.patch(p, h),
    delete: (p, h) => app.del(p, h),
  }
  for (const socket of options.websockets ?? []) {
    const { upgrade } = socket.behavior
    if (upgrade === undefined) throw new Error(`${socket.path}: a WebSocket behaviour needs its own upgrade (who may connect)`)
    app.ws(socket.path, {
      ...socket.behavior,
      upgrade: (res, req, context) => {
        const gate = pipeline.admitUpgrade(res, req)
        if (gate !== undefined) upgrade(res, req, context, gate)
      },
    })
  }
  const methodsByPattern = new Map<string, HttpMethod[]>()
  for (const c of compiled) {
    const pattern = toUwsPattern(c.route.path)
    const handler = handlerFor(c)
    register[c.route.method](pattern, handler)
    // HEAD runs the GET (same status, headers and length) and sends no body (`state.head`).
    if (c.route.method === 'get') app.head(pattern, handler)
    methodsByPattern.set(pattern, [...(methodsByPattern.get(pattern) ?? []), c.route.method])
  }
  for (const [pattern, methods] of methodsByPattern) app.options(pattern, preflightFor(allowOf(methods)))
  // Every known pattern answers other methods with 405; everything else is a 404.
  for (const pattern of methodsByPattern.keys()) app.any(pattern, fallback)
  app.any('/*', fallback)

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    const listening = (socket: us_listen_socket | false) => {
      if (socket === false) reject(new Error(front === undefined ? `cannot listen on ${host}:${options.port ?? 0}` : `cannot listen on ${front.upstreamPath}`))
      else resolve(socket)
    }
    if (front === undefined) app.listen(host, options.port ?? 0, listening)
    else app.listen_unix(listening, front.upstreamPath)
  })
  const port = front?.port ?? uWS.us_socket_local_port(listenSocket as unknown as us_socket)
  return listening(pipeline, host, port, {}, async () => {
    front?.stopAccepting()
    uWS.us_listen_socket_close(listenSocket)
  }, async () => {
    // Idle keep-alive connections would hold the event loop open until they time out: close them all now.
    ;(app as TemplatedApp & { close?: () => void }).close?.()
    front?.close()
  })
}

/**
 * The running server of either transport, once it listens: logs it, and closes at most once: `stop` stops accepting,
 * in-flight requests drain (up to the timeout), then `after` closes what is left.
 */
export function listening(
  pipeline: { log: Logger; compiled: readonly unknown[]; drain: (timeoutMs: number) => Promise<CloseResult>; inFlight: () => number },
  host: string,
  port: number,
  logFields: Record<string, unknown>,
  stop: () => Promise<void>,
  after: () => Promise<void>,
): RunningServer {
  const { log } = pipeline
  log({ level: 'info', msg: 'listening', host, port, routes: pipeline.compiled.length, ...logFields })
  let closePromise: Promise<CloseResult> | undefined
  const close = async (timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS): Promise<CloseResult> => {
    await stop()
    const result = await pipeline.drain(timeoutMs)
    await after()
    log({ level: result.drained ? 'info' : 'warn', msg: 'closed', ...result })
    return result
  }
  return {
    host,
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    inFlight: pipeline.inFlight,
    close: (timeoutMs) => (closePromise ??= close(timeoutMs)),
  }
}

/**
 * uWS's objects as the pipeline's TransportIo. Behind the front, uWS's peer is the front's Unix socket and the PROXY
 * v2 header the front sends names the client; without the front the proxied address is never read: a client could
 * send such a header itself.
 */
function uwsIo(behindFront: boolean): TransportIo<HttpResponse, HttpRequest> {
  /**
   * The answer's status line and fields, written to uWS in one call when the answer ends: uWS's writeStatus writes
   * `HTTP/1.1 <text>\r\n` and writeHeader `<name>: <value>\r\n`, so a status text that carries the fields after it
   * gives the same bytes, for one crossing into C++ (and one string conversion) instead of one per field (issue 11).
   * The pipeline writes an answer's head and ends it within one cork (pipeline.ts writeAnswer), so one is pending at most.
   */
  let head = ''
  const flushHead = (res: HttpResponse): HttpResponse => {
    const text = head
    head = ''
    return res.writeStatus(text)
  }
  return {
    method: (req) => req.getCaseSensitiveMethod(),
    url: (req) => req.getUrl(),
    header: (req, name) => req.getHeader(name),
    parameter: (req, index) => req.getParameter(index) ?? '',
    query: (req) => req.getQuery(),
    fields: uwsFields,
    onAborted: (res, hook) => { res.onAborted(hook) },
    remoteAddress: (res) => Buffer.from(behindFront ? res.getProxiedRemoteAddressAsText() : res.getRemoteAddressAsText()).toString('utf8'),
    onData: (res, chunk) => { res.onData(chunk) },
    cork: (res, write) => { res.cork(write) },
    writeStatus: (_res, status) => { head = statusLine(status) },
    writeHeader: (_res, name, value) => { head += `\r\n${name}: ${value}` },
    // Without arguments uWS writes no Content-Length; `undefined` would write a garbage one. Closing needs the
    // argument form, whose Content-Length: 0 is harmless on a closing connection.
    endWithoutBody: (res, closeConnection) => {
      if (closeConnection) flushHead(res).end(undefined, true)
      else flushHead(res).endWithoutBody()
    },
    // The pinned uWS counts a length given to endWithoutBody as body still to come, and drops the connection at the
    // next request: the length goes in as a plain header.
    endHead: (res, lengthBytes, closeConnection) => {
      if (closeConnection) flushHead(res).endWithoutBody(lengthBytes, true)
      else {
        head += `\r\ncontent-length: ${lengthBytes}`
        flushHead(res).endWithoutBody()
      }
    },
    end: (res, body, closeConnection) => { flushHead(res).end(body, closeConnection) },
    close: (res) => { res.close() },
  }
}
