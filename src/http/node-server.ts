// The node:http transport (HTTP_TRANSPORT=node): the same request pipeline as uWS (pipeline.ts) behind node's own
// HTTP server, which parses HTTP/1.0, pipelining and request smuggling attempts itself, so no front is needed. What
// differs from uWS: no WebSocket (their paths answer 501 websocket_unavailable: node has no WebSocket server
// without a new dependency), and routing is done here, with the templates' regular expressions. The bound on the
// connections one client holds is the front's (connectionsPerClientMax, 429 too_many_connections), kept here.
import { createServer, ServerResponse, type IncomingMessage } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { ClientCounts } from './client-counts.ts'
import { clientKeyOf } from './client-key.ts'
import { answer, CONNECTIONS_PER_CLIENT_MAX_DEFAULT, refuseConnection } from './front.ts'
import { createPipeline, type TransportIo } from './pipeline.ts'
import { HttpProblem } from './problem.ts'
import { rawFields } from './request.ts'
import { REASONS, type HttpMethod } from './route.ts'
import { listening, type RunningServer, type ServerOptions } from './server.ts'

/** One request and its answer: the pipeline's `Res` and `Req` at once. */
interface Exchange {
  im: IncomingMessage
  res: ServerResponse
  path: string
  query: string | undefined
  params: string[]
  status: number
  /** HTTP/1.0: every answer closes its connection. */
  closeAfter: boolean
  /** name, value, name, value...: writeHead's raw form keeps repeated names (two Vary fields) as uWS writes them. */
  headers: string[]
}

const NO_PARAMS: string[] = []

/** The answers a connection still owes (node queues a pipelined request's answer behind the one before it). */
const OWED = Symbol('owed')
const LAST = Symbol('last request')
type Owing = Socket & { [OWED]?: number; [LAST]?: IncomingMessage }
/** Counts an answer the socket owes until it is written or the request is gone. */
function owe(socket: Owing, im: IncomingMessage, res: ServerResponse): void {
  socket[OWED] = (socket[OWED] ?? 0) + 1
  socket[LAST] = im
  res.once('close', () => {
    socket[OWED] = (socket[OWED] ?? 1) - 1
    if (socket[OWED] === 0) socket.emit(SETTLED)
  })
}
const SETTLED = 'agent-credit:settled'

const nodeIo: TransportIo<Exchange, Exchange> = {
  method: (ex) => ex.im.method ?? '',
  url: (ex) => ex.path,
  // The first of a repeated field, as uWS's getHeader answers (node's `headers` joins most repeated fields with `, `).
  header: (ex, name) => ex.im.headersDistinct[name]?.[0] ?? '',
  parameter: (ex, index) => ex.params[index] ?? '',
  query: (ex) => ex.query,
  // node's parser already refuses an ambiguous length (clientError below); checked so the rule does not rest on its defaults.
  fields: (ex, names, values, own) => rawFields(ex.im.rawHeaders, names, values, own),
  onAborted: (ex, hook) => {
    ex.res.once('close', () => {
      if (!ex.res.writableEnded) hook()
    })
  },
  remoteAddress: (ex) => peerAddress(ex.im.socket),
  onData: (ex, chunk) => {
    ex.im.on('data', (bytes: Buffer) => chunk(bytes, false))
    ex.im.once('end', () => chunk(Buffer.alloc(0), true))
  },
  // node sends the head with the first body write: one answer is one write already.
  cork: (_ex, write) => write(),
  writeStatus: (ex, status) => { ex.status = status },
  writeHeader: (ex, name, value) => { ex.headers.push(name, value) },
  endWithoutBody: (ex, closeConnection) => {
    // node would add Transfer-Encoding: chunked to a body-less answer other than 204 and 304.
    if (ex.status !== 204 && ex.status !== 304) ex.headers.push('content-length', '0')
    finish(ex, closeConnection).end()
  },
  endHead: (ex, lengthBytes, closeConnection) => {
    ex.headers.push('content-length', String(lengthBytes))
    // node sends no body on an answer to HEAD.
    finish(ex, closeConnection).end()
  },
  end: (ex, body, closeConnection) => {
    ex.headers.push('content-length', String(Buffer.byteLength(body)))
    finish(ex, closeConnection).end(body)
  },
  close: (ex) => { ex.im.socket.destroy() },
}

/** The socket's peer; an IPv4 client of a dual-stack socket shows as ::ffff:a.b.c.d, uWS and TRUSTED_PROXIES name it a.b.c.d. */
function peerAddress(socket: Socket): string {
  const address = socket.remoteAddress ?? ''
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

function finish(ex: Exchange, closeConnection: boolean): ServerResponse {
  if (closeConnection || ex.closeAfter) ex.headers.push('connection', 'close')
  return ex.res.writeHead(ex.status, REASONS[ex.status] ?? 'Status', ex.headers)
}

/** A template as a regular expression capturing its parameters, still percent-encoded as uWS hands them. */
function captureRegExp(template: string): RegExp {
  const source = template
    .split(/(\{[A-Za-z_][A-Za-z0-9_]*\})/)
    .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('')
  return new RegExp(`^${source}$`)
}

/** Static segments before parameters, segment by segment, as uWS's router prefers them (/offers/mine over /offers/{id}). */
function specificity(a: string, b: string): number {
  const as = a.split('/')
  const bs = b.split('/')
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    const ap = (as[i] as string).startsWith('{')
    const bp = (bs[i] as string).startsWith('{')
    if (ap !== bp) return ap ? 1 : -1
  }
  return 0
}

export async function startNodeServer(options: ServerOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1'
  const pipeline = createPipeline(options, nodeIo)
  const { log, compiled, handlerFor, fallback, problemFor } = pipeline
  type Entry = { regexp: RegExp; handler: (ex: Exchange, req: Exchange) => void; template: string }
  const byMethod = new Map<string, Entry[]>()
  const methodName: Record<HttpMethod, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE' }
  for (const c of compiled) {
    const method = methodName[c.route.method]
    const entries = byMethod.get(method) ?? []
    entries.push({ regexp: captureRegExp(c.route.path), handler: handlerFor(c), template: c.route.path })
    byMethod.set(method, entries)
  }
  for (const entries of byMethod.values()) entries.sort((a, b) => specificity(a.template, b.template))
  // HEAD runs the GET (same status, headers and length) and node sends no body.
  byMethod.set('HEAD', byMethod.get('GET') ?? [])
  const websocketPaths = new Set((options.websockets ?? []).map((w) => w.path))
  const websocketUnavailable = problemFor(new HttpProblem(501, 'websocket_unavailable', 'This service runs on node:http (HTTP_TRANSPORT=node), which serves no WebSocket: the event stream and the live inspector need HTTP_TRANSPORT=uws; poll GET /events or the inspector\'s JSON routes instead.', { title: 'WebSocket unavailable' }))
  const missingHost = problemFor(new HttpProblem(400, 'missing_host', 'An HTTP/1.1 request needs a Host field (RFC 9112 section 3.2).', { title: 'Missing Host' }), true)
  const versionNotSupported = problemFor(new HttpProblem(505, 'http_version_not_supported', 'Only HTTP/1.1 (or 1.0) is served.', { title: 'HTTP version not supported' }), true)
  const chunked10 = problemFor(new HttpProblem(400, 'malformed_request', 'Transfer-Encoding is not defined for HTTP/1.0; send Content-Length.', { title: 'Malformed request' }), true)
  const badHost = problemFor(new HttpProblem(400, 'bad_host', 'The request has more than one Host field.', { title: 'Bad Host' }), true)

  const onRequest = (im: IncomingMessage, res: ServerResponse, closeAfter = false): void => {
    owe(im.socket, im, res)
    const url = im.url ?? '/'
    const q = url.indexOf('?')
    const ex: Exchange = { im, res, path: q < 0 ? url : url.slice(0, q), query: q < 0 ? undefined : url.slice(q + 1), params: NO_PARAMS, status: 200, closeAfter, headers: [] }
    // The front's Host rules, which node (with requireHostHeader off) leaves to the application.
    let hosts = 0
    for (let i = 0; i < im.rawHeaders.length; i += 2) if ((im.rawHeaders[i] as string).toLowerCase() === 'host') hosts++
    if (im.httpVersionMajor !== 1) return versionNotSupported(ex, ex)
    if (im.httpVersionMinor === 0) {
      if (im.headers['transfer-encoding'] !== undefined) return chunked10(ex, ex)
      // As behind the front: an HTTP/1.0 request is answered, and its connection closes (1.0 keep-alive is not offered).
      ex.closeAfter = true
    }
    if (hosts > 1) return badHost(ex, ex)
    if (hosts === 0 && im.httpVersionMajor === 1 && im.httpVersionMinor >= 1) return missingHost(ex, ex)
    if (websocketPaths.has(ex.path)) return websocketUnavailable(ex, ex)
    for (const entry of byMethod.get(im.method ?? '') ?? []) {
      const match = entry.regexp.exec(ex.path)
      if (match === null) continue
      if (match.length > 1) ex.params = match.slice(1)
      return entry.handler(ex, ex)
    }
    fallback(ex, ex)
  }

  // requireHostHeader off: node's own refusal is a bare 400; the problem+json one above names the rule.
  const server = createServer({ requireHostHeader: false }, onRequest)
  // A request node cannot parse (a smuggling attempt, a bad request line, headers too large) never reaches the pipeline.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const problem = error.code === 'HPE_UNEXPECTED_CONTENT_LENGTH' || error.code === 'HPE_INVALID_TRANSFER_ENCODING'
      ? new HttpProblem(400, 'ambiguous_content_length', 'The request has two Content-Length fields, or one beside Transfer-Encoding: where its body ends is ambiguous.', { title: 'Ambiguous message length' })
      : new HttpProblem(400, 'malformed_request', `The request is not valid HTTP/1.1 (${error.code ?? 'parse error'}).`, { title: 'Malformed request' })
    // The answers owed to the requests before the bad one go out first (node's parser stops at it, their handlers
    // still run): ending the socket at once wrote the 400 alone (outsider18).
    const refuse = () => { if (socket.writable) socket.end(answer(400, problem, pipeline.mintRequestId())) }
    // A request whose body broke off is owed nothing more: its answer waits for bytes that will not come.
    const owing = socket as Owing
    if ((owing[OWED] ?? 0) === 0 || owing[LAST]?.complete === false) refuse()
    else socket.once(SETTLED, refuse)
  })
  // CONNECT: node hands the socket to a `connect` listener, and without one closes it with nothing written. Answered
  // as behind the front: a target that is not a path 400 malformed_request, a path by the route table (405 or 404);
  // the connection then closes (node's parser has let it go).
  server.on('connect', (im: IncomingMessage, socket: Socket) => {
    if (!(im.url ?? '').startsWith('/')) {
      const problem = new HttpProblem(400, 'malformed_request', 'The request target is not a path.', { title: 'Malformed request' })
      socket.end(answer(400, problem, pipeline.mintRequestId()))
      return
    }
    const res = new ServerResponse(im)
    res.assignSocket(socket)
    res.once('finish', () => socket.end())
    onRequest(im, res, true)
  })
  // As behind the front: one client address (an IPv6 /64) holds at most connectionsPerClientMax connections, each a
  // file descriptor until node's timeouts close it, so a stranger opening them faster cannot use up the process's;
  // trusted proxies are exempt (their connections carry many clients). node's own connection listener, which gives a
  // socket its HTTP parser, runs only for a connection within the bound: a refused one is answered 429 before
  // anything it sent is read, and none of it reaches a route.
  const [serve, ...others] = server.listeners('connection') as Array<(socket: Socket) => void>
  if (serve === undefined || others.length > 0) throw new Error(`node:http has ${others.length + (serve === undefined ? 0 : 1)} connection listeners, not the one its server adds`)
  server.removeListener('connection', serve)
  const connectionsPerClientMax = options.connectionsPerClientMax ?? CONNECTIONS_PER_CLIENT_MAX_DEFAULT
  const exempt = new Set(options.trustedProxies)
  const perClient = new ClientCounts()
  const refused = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    const peer = peerAddress(socket)
    if (exempt.has(peer)) return serve.call(server, socket)
    const key = clientKeyOf(peer)
    if (!perClient.take(key, connectionsPerClientMax)) {
      refused.add(socket)
      socket.once('close', () => refused.delete(socket))
      refuseConnection(socket, pipeline.mintRequestId(), log, { transport: 'node' })
      return
    }
    socket.once('close', () => perClient.release(key))
    serve.call(server, socket)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new Error(`cannot listen on ${host}:${options.port ?? 0}: ${error.message}`, { cause: error })))
    server.listen(options.port ?? 0, host, () => {
      server.removeAllListeners('error')
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  // Stops accepting and closes idle keep-alive connections; busy ones close after their answer (connection: close).
  let closed: Promise<void> | undefined
  return listening(pipeline, host, port, { transport: 'node' }, async () => {
    closed = new Promise<void>((resolve) => server.close(() => resolve()))
    server.closeIdleConnections()
  }, async () => {
    server.closeAllConnections()
    for (const socket of refused) socket.destroy()
    await closed
  })
}
