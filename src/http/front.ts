// The node:net front: the public socket of the service when `legacyClients` is on (the default). The pinned
// uWebSockets.js build never hands an HTTP/1.0 request, nor an HTTP/1.1 request without Host, to the application
// (the client gets silence until uWS's idle timeout), and it has no hook that sees them (no filter, no adoptSocket,
// `any('/*')` is not called). So the front reads the head of each connection's FIRST request and:
// - HTTP/1.1 with one Host: hands the connection to uWS (a private Unix socket) untouched, behind a PROXY v2 header
//   that carries the client's address, then only copies bytes both ways;
// - HTTP/1.0: rewrites that head to HTTP/1.1 with `connection: close` (and a Host when it had none), so the request
//   runs through the same route table, and the connection closes after its answer (an HTTP/1.1 status line is what
//   RFC 9110 section 2.5 says a server answers a 1.0 request with; uWS always sends Content-Length);
// - no Host on HTTP/1.1, two Hosts, Transfer-Encoding on 1.0, or a request line that is not `METHOD /path HTTP/1.x`
//   (a target of `*`, an absolute URL or an authority: uWS answers nothing to them): answers 400 (505 for another HTTP
//   version) as problem+json itself and closes;
// - a head uWS would answer nothing to (framingAt's FAULT_s: a control byte or one past 0x7f in the request line or a
//   value, a bare CR or LF, a field line that is not `name:value` with a name of letters, digits and `-`) 400
//   `bad_request_head`, a method uWS does not know 501 `method_not_implemented` (headProblem), and closes (outsider17).
// Later requests on a passed connection are judged by the same rules (front-gate.ts requestLineFault; they must be
// HTTP/1.1: uWS answers nothing to a later head without Host or with a 1.0 request line, outsider18), and held one at
// a time behind the answer uWS is giving (front-gate.ts): the pinned build drops a
// connection that pipelines behind a pending answer. An HTTP/1.0 connection sends uWS its one request, nothing after,
// and so does a CONNECT (with `connection: close`: uWS answers it by the route table and closes; front-gate.ts).
//
// The front runs in its own thread (front-thread.ts; issue 11): copying every byte through node:net, two sockets per
// connection, was about a fifth of the service thread's busy CPU under the load mix, and none of it needs the engine.
// The thread owns the public socket and every client connection; the service thread only sees uWS's side. What the
// front answers itself it logs through the service's logger (a message to the service thread).
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, connect, isIPv4, isIPv6, Socket, type Server, type SocketConstructorOpts } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { ClientCounts } from './client-counts.ts'
import { clientKeyOf } from './client-key.ts'
import { FAULT_BODY_TOO_LARGE, FAULT_CONTENT_LENGTH, FAULT_CONTROL, FAULT_HOSTS, FAULT_LINE_END, FAULT_METHOD, FAULT_NO_HOST, FAULT_OBS_TEXT, FAULT_REQUEST_LINE, FAULT_TOO_LARGE, answerSaysClose, framingAt, gateConnection, type GatedConnection, KNOWN_METHODS, NO_LENGTH, UNFRAMED } from './front-gate.ts'
import { requestIdMinter, type Logger, type LogLine } from './log.ts'
import { HttpProblem, PROBLEM_CONTENT_TYPE } from './problem.ts'

/** Longest first-request head the front buffers looking for its end; one without an end by then is refused (431). */
const HEAD_LIMIT_BYTES = 16 * 1024
/**
 * Longest head passed to uWS. The pinned build keeps at most 4,096 bytes of a head that arrives in more than one read,
 * the PROXY header before it included (28 bytes for IPv4, 52 for IPv6), and closes the connection, with nothing
 * written, past that; over the front's Unix socket a head of a few KB often arrives in two reads (a third of 4-16 KB
 * heads went unanswered, found by an outsider; measured: heads of about 3,990 bytes always answered, 4,080 not
 * always). The front answers a longer head 431 instead, with room to spare under uWS's bound.
 */
export const UPSTREAM_HEAD_MAX_BYTES = 4000
/**
 * A connection that has not sent a whole head this long after it opened is closed (uWS's own idle timeout is 10 s), and
 * so is one the front answered itself that is still open this long after the answer. A deadline, not an idle timeout:
 * reset by every byte, a head of 16 KiB sent a byte every 9 s held its connection for 41 hours, and a few hundred such
 * connections per 1,000 file descriptors kept every other client out (an outsider's finding,
 * test/api/outsider8-slow-head.test.ts).
 */
const HEAD_TIMEOUT_MS = 10_000
const CRLF2 = Buffer.from('\r\n\r\n')
/** Largest read from either side of a passed connection (Node's own reads are 64 KiB). */
const READ_BYTES = 64 * 1024
let threadRead: Buffer | undefined
/**
 * The one buffer every passed connection of this thread reads both sides' bytes into: reads run one at a time on the
 * thread, and each chunk is copied out before the next (made on first use: only the fronts' thread reads into it).
 */
const readBuffer = (): Buffer => (threadRead ??= Buffer.allocUnsafe(READ_BYTES))
/** An `onread` callback that hands `take` a copy of each chunk read into readBuffer (the gate may keep it). */
const copiedOut = (take: (chunk: Buffer) => void) => (length: number): boolean => {
  const chunk = Buffer.allocUnsafe(length)
  ;(threadRead as Buffer).copy(chunk, 0, 0, length)
  take(chunk)
  return true
}
/**
 * The private symbols a net.Socket keeps its `onread` option under (`kBuffer`, `kBufferCb`, `kBufferGen` of Node's
 * stream_base_commons), read off a socket made with one; undefined when this Node has not all of them.
 */
let onreadSymbols: readonly [symbol, symbol, symbol] | null | undefined
function socketOnreadSymbols(): readonly [symbol, symbol, symbol] | undefined {
  if (onreadSymbols === undefined) {
    // (Node takes `onread` in a Socket's options; this @types/node version does not declare it.)
    const options = { onread: { buffer: Buffer.alloc(1), callback: () => true } } as SocketConstructorOpts
    const own = Object.getOwnPropertySymbols(new Socket(options))
    const [buffer, callback, gen] = ['kBuffer', 'kBufferCb', 'kBufferGen'].map((name) => own.find((symbol) => symbol.description === name))
    onreadSymbols = buffer !== undefined && callback !== undefined && gen !== undefined ? [buffer, callback, gen] : null
  }
  return onreadSymbols ?? undefined
}

/**
 * Has a socket net.Server accepted read from now on into readBuffer and hand `take` a copy of each chunk, as `onread`
 * does for a socket the front connects (net.Server takes no `onread`): no 64 KiB allocated per read, no readable
 * stream's push and 'data' event (issue 11: about a microsecond a request on the front's thread). It sets what
 * `new Socket({ onread })` sets: the stream's user buffer (its handle's `useUserBuffer`), and its callback under the
 * socket's own symbols, which Node's read path, pause and resume read. False, changing nothing, when this Node lacks
 * either; the caller then reads 'data' events.
 */
export function readAcceptedIntoBuffer(socket: Socket, take: (chunk: Buffer) => void): boolean {
  const symbols = socketOnreadSymbols()
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (buffer: Buffer) => void } | null })._handle
  if (symbols === undefined || typeof handle?.useUserBuffer !== 'function') return false
  const [buffer, callback, gen] = symbols
  const read = readBuffer()
  Object.assign(socket, { [buffer]: read, [callback]: copiedOut(take), [gen]: null })
  handle.useUserBuffer(read)
  return true
}
// The target is a path (origin-form): uWS answers nothing to `*`, an absolute URL or an authority (outsider18).
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\/[^ \t]*) HTTP\/([0-9])\.([0-9])$/

export interface FrontOptions {
  host: string
  port: number
  log: Logger
  /** Connections one client (clientKeyOf: an address, an IPv6 /64) may hold open at once; default 1,024. */
  connectionsPerClientMax?: number
  /** Peers exempt from that bound: the trusted proxies, whose connections carry many clients. */
  trustedProxies?: readonly string[]
  /** How long a client may read nothing while its answers wait before its connection is cut; default 60 s. */
  stalledClientMs?: number
}

export const CONNECTIONS_PER_CLIENT_MAX_DEFAULT = 1024
/**
 * A passed connection whose client reads nothing this long while the front holds bytes for it (the front stopped
 * reading uWS's side until the client drains) is cut, both sides. Paused, uWS's side never shows its end: after uWS
 * closed a stream 4008 slow_consumer, or its own idle timeout, a client that kept its connection and read nothing held
 * it, its place among its address's connections and the kernel's buffers for it (about 4 MB of send queue per
 * connection on loopback) for ever (review33's finding). An honest client that reads nothing for a minute while its
 * answer waits has gone away.
 */
export const STALLED_CLIENT_MS_DEFAULT = 60_000

export interface Front {
  readonly port: number
  /** The Unix socket uWS must listen on (in a directory only this user can enter). */
  readonly upstreamPath: string
  /** Stops accepting connections; the open ones keep going. */
  stopAccepting(): void
  /** Stops accepting, lets passed connections end with uWS's, cuts the others, removes the socket directory. */
  close(): void
}

type Decision =
  | { kind: 'pass'; bytes: Buffer; http10: boolean; bodyLeft?: number }
  | { kind: 'answer'; status: number; problem: HttpProblem; method: string; path: string }

/** What to do with a connection whose first head ends at `end` (the index of its CRLFCRLF) in `head`. */
export function decideFirstRequest(head: Buffer, end: number, localHost: string): Decision {
  let start = 0
  // RFC 9112 section 2.2: a server SHOULD ignore at least one empty line received before the request line.
  while (head[start] === 0x0d && head[start + 1] === 0x0a) start += 2
  if (end + 4 - start > UPSTREAM_HEAD_MAX_BYTES) return { kind: 'answer', status: 431, method: '', path: '', problem: headTooLarge() }
  // Bytes uWS would answer nothing to (framingAt's FAULT_s), before the request line's form: a bare LF ends no line.
  const framing = framingAt(head, start, end)
  if (framing < UNFRAMED) {
    const problem = headProblem(framing)
    return { kind: 'answer', status: problem.status, method: '', path: '', problem }
  }
  const lineEnd = head.indexOf('\r\n', start)
  const line = head.toString('latin1', start, lineEnd)
  const match = REQUEST_LINE.exec(line)
  if (match === null) return { kind: 'answer', status: 400, method: '', path: '', problem: headProblem(FAULT_REQUEST_LINE) }
  const [, method = '', target = '', major, minor] = match
  const path = target.split('?', 1)[0] ?? ''
  if (major !== '1' || (minor !== '0' && minor !== '1')) {
    return { kind: 'answer', status: 505, method, path, problem: new HttpProblem(505, 'http_version_not_supported', `HTTP/${major}.${minor} is not served; use HTTP/1.1 (or 1.0).`, { title: 'HTTP version not supported' }) }
  }
  if (!(KNOWN_METHODS as readonly string[]).includes(method)) return { kind: 'answer', status: 501, method, path, problem: headProblem(FAULT_METHOD) }
  const lines = end > lineEnd ? head.toString('latin1', lineEnd + 2, end).split('\r\n') : []
  let hosts = 0
  let chunked = false
  for (const header of lines) {
    const colon = header.indexOf(':')
    const name = (colon < 0 ? header : header.slice(0, colon)).toLowerCase()
    if (name === 'host') hosts++
    else if (name === 'transfer-encoding') chunked = true
  }
  if (hosts > 1) return { kind: 'answer', status: 400, method, path, problem: headProblem(FAULT_HOSTS) }
  if (minor === '1') {
    if (hosts === 0) return { kind: 'answer', status: 400, method, path, problem: headProblem(FAULT_NO_HOST) }
    return { kind: 'pass', bytes: head, http10: false }
  }
  if (chunked || framing === UNFRAMED) {
    const detail = chunked ? 'Transfer-Encoding is not defined for HTTP/1.0; send Content-Length.' : 'An HTTP/1.0 request needs one decimal Content-Length, or none, and no Upgrade.'
    return { kind: 'answer', status: 400, method, path, problem: new HttpProblem(400, 'malformed_request', detail, { title: 'Malformed request' }) }
  }
  // HTTP/1.0: the same request as HTTP/1.1 that closes its connection (1.0 keep-alive is not offered). Without its
  // Expect: a server MUST ignore a 100-continue expectation in a 1.0 request and MUST NOT send a 1.0 client a 1xx
  // answer (RFC 9110 sections 10.1.1 and 15.2), and uWS writes `100 Continue` itself to a 1.1 request that has one.
  const kept = lines.filter((header) => {
    const name = header.slice(0, Math.max(0, header.indexOf(':'))).trim().toLowerCase()
    return name !== 'connection' && name !== 'keep-alive' && name !== 'proxy-connection' && name !== 'expect'
  })
  if (hosts === 0) kept.push(`host: ${localHost}`)
  kept.push('connection: close')
  const rewritten = `${method} ${target} HTTP/1.1\r\n${kept.map((h) => `${h}\r\n`).join('')}\r\n`
  // Only this request goes to uWS (its body, `bodyLeft` of which is still to come, follows it): the connection closes
  // after its answer, and uWS drops the answer when another request reaches it while it is pending (outsider17).
  const bodyLeft = framing === NO_LENGTH ? 0 : framing
  const body = head.subarray(end + 4, end + 4 + bodyLeft)
  return { kind: 'pass', bytes: Buffer.concat([Buffer.from(rewritten, 'latin1'), body]), http10: true, bodyLeft: bodyLeft - body.length }
}

/** PROXY protocol v2 header (PROXY command, TCP over IPv4 or IPv6): how uWS learns the client's address. */
export function proxyV2Header(remote: string | undefined, remotePort: number | undefined, local: string | undefined, localPort: number | undefined): Buffer {
  const signature = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]
  const v4 = (address: string) => address.split('.').map(Number)
  const mapped = (address: string | undefined) => (address?.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address)
  const from = mapped(remote)
  const to = mapped(local)
  if (from !== undefined && to !== undefined && isIPv4(from) && isIPv4(to)) {
    return Buffer.from([...signature, 0x21, 0x11, 0, 12, ...v4(from), ...v4(to), (remotePort ?? 0) >> 8, (remotePort ?? 0) & 0xff, (localPort ?? 0) >> 8, (localPort ?? 0) & 0xff])
  }
  if (from !== undefined && to !== undefined && isIPv6(from) && isIPv6(to)) {
    return Buffer.from([...signature, 0x21, 0x21, 0, 36, ...ipv6Bytes(from), ...ipv6Bytes(to), (remotePort ?? 0) >> 8, (remotePort ?? 0) & 0xff, (localPort ?? 0) >> 8, (localPort ?? 0) & 0xff])
  }
  // LOCAL command, no address: uWS then reports an empty proxied address (never seen for TCP peers).
  return Buffer.from([...signature, 0x20, 0x00, 0, 0])
}

/** The 16 bytes of a textual IPv6 address (already checked by isIPv6; a trailing dotted IPv4 part allowed). */
export function ipv6Bytes(address: string): number[] {
  let text = address.split('%', 1)[0] as string
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a = 0, b = 0, c = 0, d = 0] = (dotted[1] as string).split('.').map(Number)
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [left = '', right] = text.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)))
  const head = groups(left)
  const tail = right === undefined ? [] : groups(right)
  const all = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
  return all.flatMap((g) => [g >> 8, g & 0xff])
}

/**
 * The problem of a request head the front refuses for a framingAt FAULT_ (400 `bad_request_head`, the rule in `detail`),
 * an unknown method (501) or its length (431): uWS would answer none of them (it stalls until its idle timeout, closes
 * with nothing written, or drops bytes past 0x7f at the end of a value; outsider17).
 */
export function headProblem(fault: number): HttpProblem {
  if (fault === FAULT_TOO_LARGE) return headTooLarge()
  // Also the first head's (decideFirstRequest), which takes HTTP/1.0 as well: a later head on a connection is HTTP/1.1.
  if (fault === FAULT_REQUEST_LINE) {
    return new HttpProblem(400, 'malformed_request', 'The request line is not `METHOD /path HTTP/1.1`: the target is a path (not `*`, an absolute URL or an authority), one space each side of it; HTTP/1.0 only as the first request of a connection.', { title: 'Malformed request' })
  }
  if (fault === FAULT_HOSTS) return new HttpProblem(400, 'bad_host', 'The request has more than one Host field.', { title: 'Bad Host' })
  if (fault === FAULT_BODY_TOO_LARGE) {
    return new HttpProblem(413, 'payload_too_large', 'The request body\'s Content-Length has 10 digits or more: far past the body limit.', { title: 'Payload too large' })
  }
  if (fault === FAULT_NO_HOST) return new HttpProblem(400, 'missing_host', 'An HTTP/1.1 request needs a Host field (RFC 9112 section 3.2).', { title: 'Missing Host' })
  if (fault === FAULT_METHOD) {
    return new HttpProblem(501, 'method_not_implemented', `The method is not one this service implements: ${KNOWN_METHODS.join(', ')} (case-sensitive).`, { title: 'Method not implemented' })
  }
  const rule =
    fault === FAULT_CONTROL ? 'a control byte (other than tab) in the request line or a field value'
    : fault === FAULT_OBS_TEXT ? 'a byte 0x80 or above in the request line or a field value (send ASCII; percent-encode the target)'
    : fault === FAULT_LINE_END ? 'a CR without LF or an LF without CR: every line ends in CRLF'
    : fault === FAULT_CONTENT_LENGTH ? 'a Content-Length that is not a decimal number (no sign, no list, not empty)'
    : 'a field line that is not `name: value` (no colon, white space before the colon, a name byte other than a letter, digit or `-`, or a continuation line, obs-fold)'
  return new HttpProblem(400, 'bad_request_head', `The request head has ${rule}.`, { title: 'Bad request head' })
}

/** The problem of a request head longer than UPSTREAM_HEAD_MAX_BYTES. */
export function headTooLarge(): HttpProblem {
  return new HttpProblem(431, 'request_header_fields_too_large', `The request head exceeds ${UPSTREAM_HEAD_MAX_BYTES} bytes.`, { title: 'Request header fields too large' })
}

const REASONS: Readonly<Record<number, string>> = { 400: 'Bad Request', 413: 'Content Too Large', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 501: 'Not Implemented', 505: 'HTTP Version Not Supported' }

/** A whole problem+json answer that closes its connection, written on a raw socket (also node-server.ts's parse errors). */
export function answer(status: number, problem: HttpProblem, requestId: string): Buffer {
  const body = JSON.stringify(problem.toBody())
  const reason = REASONS[status] ?? 'Bad Request'
  return Buffer.from(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    'latin1',
  )
}

/** What the fronts' thread tells the service thread, about the front `id`. */
export type FrontMessage =
  | { readonly type: 'listening'; readonly id: number; readonly port: number }
  | { readonly type: 'failed'; readonly id: number; readonly message: string }
  | { readonly type: 'log'; readonly id: number; readonly line: LogLine }

/** What the service thread tells the fronts' thread. */
export type FrontCommand =
  | { readonly type: 'listen'; readonly id: number; readonly settings: FrontSettings }
  | { readonly type: 'stop-accepting' | 'close'; readonly id: number }

export interface FrontSettings {
  readonly host: string
  readonly port: number
  readonly upstreamPath: string
  readonly connectionsPerClientMax: number
  readonly trustedProxies: readonly string[]
  readonly stalledClientMs: number
}

export interface ListeningFront {
  readonly port: number
  stopAccepting(): void
  /** Stops accepting, lets passed connections end with uWS's, cuts the others (all of them after a grace period). */
  close(): void
}

/**
 * Answers a connection past its client's bound 429 and closes it, reading nothing (the answer goes before its head).
 * Also node:http's (node-server.ts), whose log line says so in `fields`.
 */
export function refuseConnection(client: Socket, requestId: string, log: Logger, fields: Record<string, unknown> = { front: true }): void {
  log({ level: 'info', msg: 'request', method: '', path: '', status: 429, requestId, ...fields })
  client.on('error', () => client.destroy())
  client.end(answer(429, new HttpProblem(429, 'too_many_connections', 'This client address holds as many open connections as the service allows one client; close one first (or reuse it: keep-alive).', { title: 'Too many connections' }), requestId))
  client.resume()
  setTimeout(() => client.destroy(), HEAD_TIMEOUT_MS).unref()
}

/** The front's server, in the thread that runs it (front-thread.ts). `log` receives what the front answers itself. */
export async function listenFront(settings: FrontSettings, log: Logger): Promise<ListeningFront> {
  const { upstreamPath } = settings
  // The front's own answers get ids of their own: the service thread's minter is out of reach here.
  const mintRequestId = requestIdMinter()
  const open = new Set<Socket>()
  const upstreams = new WeakMap<Socket, Socket>()
  // Each open connection holds file descriptors (about three once passed to uWS) until its head's deadline at least,
  // so one client opening them faster than they time out could use up the process's descriptors: each client holds at
  // most connectionsPerClientMax at once (an outsider's finding: 347 trickling connections kept every other client
  // out of a 400-descriptor process). Only clients that hold one are kept.
  const perClient = new ClientCounts()
  const exempt = new Set(settings.trustedProxies)

  const onConnection = (client: Socket): void => {
    const peer = client.remoteAddress ?? ''
    const key = exempt.has(peer) ? undefined : clientKeyOf(peer)
    if (key !== undefined) {
      if (!perClient.take(key, settings.connectionsPerClientMax)) {
        refuseConnection(client, mintRequestId(), log)
        return
      }
      client.once('close', () => perClient.release(key))
    }
    open.add(client)
    client.setNoDelay(true)
    let upstream: Socket | undefined
    client.once('close', () => {
      open.delete(client)
      upstream?.destroy()
    })
    client.on('error', () => client.destroy())
    let deadline = setTimeout(() => client.destroy(), HEAD_TIMEOUT_MS)
    client.once('close', () => clearTimeout(deadline))
    let head: Buffer | undefined
    let searchFrom = 0
    const onData = (chunk: Buffer): void => {
      head = head === undefined ? chunk : Buffer.concat([head, chunk])
      // Empty lines before the request line are skipped (decideFirstRequest): two of them are not the head's end.
      let lead = 0
      while (head[lead] === 0x0d && head[lead + 1] === 0x0a) lead += 2
      const end = head.indexOf(CRLF2, Math.max(searchFrom, lead))
      if (end < 0 && head.length <= HEAD_LIMIT_BYTES) {
        searchFrom = Math.max(0, head.length - 3)
        return
      }
      client.off('data', onData)
      clearTimeout(deadline)
      const localHost = `${client.localAddress?.includes(':') === true ? `[${client.localAddress}]` : client.localAddress}:${client.localPort}`
      const decision: Decision = end < 0 ? { kind: 'answer', status: 431, method: '', path: '', problem: headTooLarge() } : decideFirstRequest(head, end, localHost)
      head = undefined
      if (decision.kind === 'answer') {
        const requestId = mintRequestId()
        log({ level: 'info', msg: 'request', method: decision.method, path: decision.path, status: decision.status, requestId, front: true })
        client.end(answer(decision.status, decision.problem, requestId))
        // Read and drop what the client still sends: unread bytes at close would reset the connection and could
        // destroy the answer.
        client.resume()
        deadline = setTimeout(() => client.destroy(), HEAD_TIMEOUT_MS)
        return
      }
      // A passed connection reads both sides into the thread's one read buffer (`onread`; readAcceptedIntoBuffer), and
      // the gate is handed a copy the size of the chunk: Node's own reads allocate 64 KiB per read and go through the
      // stream's events.
      let gate: GatedConnection | undefined
      const up = decision.http10 ? connect({ path: upstreamPath }) : connect({ path: upstreamPath, onread: { buffer: readBuffer(), callback: copiedOut((chunk) => gate?.fromUpstream(chunk)) } })
      upstream = up
      upstreams.set(client, up)
      up.setNoDelay(true)
      up.write(proxyV2Header(client.remoteAddress, client.remotePort, client.localAddress, client.localPort))
      up.on('error', () => client.destroy())
      // uWS's side is paused only while the client does not drain what was written to it (both paths below): a client
      // that drains nothing for stalledClientMs is cut (STALLED_CLIENT_MS_DEFAULT).
      let stalled: ReturnType<typeof setTimeout> | undefined
      up.on('pause', () => {
        if (stalled === undefined && client.writableNeedDrain) stalled = setTimeout(() => client.destroy(), settings.stalledClientMs)
      })
      up.on('resume', () => {
        clearTimeout(stalled)
        stalled = undefined
      })
      client.once('close', () => clearTimeout(stalled))
      if (!decision.http10) {
        const gated = gateConnection(client, up, decision.bytes, UPSTREAM_HEAD_MAX_BYTES, (fault) => {
          const requestId = mintRequestId()
          const problem = headProblem(fault)
          log({ level: 'info', msg: 'request', method: '', path: '', status: problem.status, requestId, front: true })
          return answer(problem.status, problem, requestId)
        })
        gate = gated
        if (!readAcceptedIntoBuffer(client, gated.fromClient)) client.on('data', gated.fromClient)
        return
      }
      up.write(decision.bytes)
      // The rest of the request's body goes on; what follows it is read and dropped (the connection closes after the
      // answer). The client's FIN is passed on: uWS then aborts the request, as it does when it owns the socket.
      let bodyLeft = decision.bodyLeft ?? 0
      client.on('data', (chunk: Buffer) => {
        if (bodyLeft === 0) return
        const part = chunk.length <= bodyLeft ? chunk : chunk.subarray(0, bodyLeft)
        bodyLeft -= part.length
        if (!up.write(part)) client.pause()
      })
      up.on('drain', () => client.resume())
      client.on('end', () => up.end())
      // uWS closes after a `connection: close` request without saying so: say it in the answer's head.
      let said = false
      up.on('data', (chunk: Buffer) => {
        if (!said) {
          const saying = answerSaysClose(chunk)
          if (saying !== undefined) {
            said = true
            chunk = saying
          }
        }
        if (!client.write(chunk)) up.pause()
      })
      client.on('drain', () => up.resume())
      up.on('end', () => client.end())
    }
    client.on('data', onData)
    // The client's FIN before its head was passed or answered: nothing more comes, the front's side ends too.
    client.once('end', () => { if (upstream === undefined) client.end() })
  }

  // Half-open: a client's FIN ends only its side. Node's default ended the front's side at once, so the answer to a
  // request sent with its FIN (`nc -N`'s way, a client that shuts down its writing once it sent) was written after the end and
  // lost, while uWS on the port answers it; the gate passes the FIN on once the request has gone, and ends the client's
  // side when uWS ends its own (review22).
  const server: Server = createServer({ noDelay: true, allowHalfOpen: true }, onConnection)
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new Error(`cannot listen on ${settings.host}:${settings.port}: ${error.message}`)))
    server.listen(settings.port, settings.host, () => resolve())
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : settings.port,
    stopAccepting: () => {
      server.close()
    },
    close: () => {
      server.close()
      // A passed connection ends when uWS closes its side (after the last answer is copied); one still sending its
      // first head has no answer coming. Whatever is left after a grace period is cut.
      for (const socket of open) if (upstreams.get(socket) === undefined) socket.destroy()
      setTimeout(() => { for (const socket of open) socket.destroy() }, 2_000).unref()
    },
  }
}

/**
 * The thread's entry, loaded through tsx's loader: the service runs TypeScript through tsx, and on Node 20 a worker
 * does not share its parent's module loader. Registering it costs a few hundred ms, so one thread per process serves
 * every front the process starts.
 */
const THREAD_BOOT = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(new URL('./front-thread.ts', import.meta.url).href)}) })`

interface FrontHandlers {
  listening(port: number): void
  failed(error: Error): void
  log(line: LogLine): void
}

/** The fronts' thread of this process, started with the first front; it holds the process open only while a front is. */
class FrontThread {
  readonly #worker = new Worker(THREAD_BOOT, { eval: true, stdout: false, stderr: false })
  readonly #fronts = new Map<number, FrontHandlers>()
  #nextId = 0

  constructor() {
    this.#worker.on('message', (message: FrontMessage) => {
      const front = this.#fronts.get(message.id)
      if (message.type === 'log') front?.log(message.line)
      else if (message.type === 'listening') front?.listening(message.port)
      else front?.failed(new Error(message.message))
    })
    // The fronts own the public ports: without their thread the service is unreachable, so losing it is fatal, never
    // silent (a front still starting gets the error; a running one takes the process down).
    const lost = (error: Error) => {
      if (this.#fronts.size === 0) return
      throw error
    }
    this.#worker.on('error', (error) => lost(new Error(`the HTTP front's thread failed: ${error.message}`, { cause: error })))
    this.#worker.on('exit', (code) => lost(new Error(`the HTTP front's thread exited (code ${code})`)))
    this.#worker.unref()
  }

  /** Starts a front; resolves with its port once it listens. */
  listen(settings: FrontSettings, log: Logger): { id: number; listening: Promise<number> } {
    const id = ++this.#nextId
    const listening = new Promise<number>((resolve, reject) => {
      this.#fronts.set(id, {
        listening: resolve,
        failed: (error) => {
          this.#forget(id)
          reject(error)
        },
        log,
      })
    })
    this.#worker.ref()
    this.#worker.postMessage({ type: 'listen', id, settings } satisfies FrontCommand)
    return { id, listening }
  }

  stopAccepting(id: number): void {
    this.#worker.postMessage({ type: 'stop-accepting', id } satisfies FrontCommand)
  }

  close(id: number): void {
    this.#worker.postMessage({ type: 'close', id } satisfies FrontCommand)
    this.#forget(id)
  }

  #forget(id: number): void {
    this.#fronts.delete(id)
    if (this.#fronts.size === 0) this.#worker.unref()
  }
}

let frontThread: FrontThread | undefined

/** Longest path of a Unix socket on Linux: `sun_path` holds 108 bytes, the terminating NUL included. */
export const UNIX_SOCKET_PATH_MAX_BYTES = 107
const SOCKET_DIR_PREFIX = 'agent-credit-uws-'
const SOCKET_NAME = 'uws.sock'

/**
 * Where to make a directory for Unix sockets whose paths are at most `socketBytesBelow` bytes longer than it: the
 * temporary directory, or /tmp when the temporary directory is too deep for them (a TMPDIR inside a deep CI
 * workspace: nothing can listen on a longer path).
 */
export function socketTempDir(socketBytesBelow: number): string {
  return Buffer.byteLength(tmpdir()) + socketBytesBelow <= UNIX_SOCKET_PATH_MAX_BYTES ? tmpdir() : '/tmp'
}

/** The upstream socket's path, in a new directory only this user can enter (else the service would not start). */
function upstreamSocketPath(): string {
  const below = Buffer.byteLength(join('/', `${SOCKET_DIR_PREFIX}XXXXXX`, SOCKET_NAME))
  return join(mkdtempSync(join(socketTempDir(below), SOCKET_DIR_PREFIX)), SOCKET_NAME)
}

/** Starts a front in the fronts' thread; resolves once it listens on the public port. */
export async function startFront(options: FrontOptions): Promise<Front> {
  const upstreamPath = upstreamSocketPath()
  const dir = dirname(upstreamPath)
  const thread = (frontThread ??= new FrontThread())
  const settings: FrontSettings = {
    host: options.host,
    port: options.port,
    upstreamPath,
    connectionsPerClientMax: options.connectionsPerClientMax ?? CONNECTIONS_PER_CLIENT_MAX_DEFAULT,
    trustedProxies: options.trustedProxies ?? [],
    stalledClientMs: options.stalledClientMs ?? STALLED_CLIENT_MS_DEFAULT,
  }
  const { id, listening } = thread.listen(settings, options.log)
  let port: number
  try {
    port = await listening
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    port,
    upstreamPath,
    stopAccepting: () => thread.stopAccepting(id),
    close: () => {
      thread.close(id)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
