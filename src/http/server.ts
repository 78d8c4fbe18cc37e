// uWebSockets.js transport: routing, body reading, validation, authentication, rate limiting, problem responses,
// logging and graceful shutdown. Handlers hold no transport code and no business rule of their own: they call one
// engine command and return `{ status, body }`.
import { randomBytes } from 'node:crypto'
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket, type us_socket, type WebSocketBehavior } from 'uWebSockets.js'
import { cors, type CorsPolicy } from './cors.ts'
import { documentVariants, selectVariant, type DocumentVariants } from './document-cache.ts'
import { startFront, type Front } from './front.ts'
import { duplicateKeyPointer } from './json.ts'
import { errorFields, silentLogger, stdoutLogger, type Logger } from './log.ts'
import { HttpProblem, PROBLEM_CONTENT_TYPE } from './problem.ts'
import { clientAddress, DEFAULT_RATE_LIMIT, RateLimiter, type RateDecision, type RateLimitOptions } from './rate-limit.ts'
import { statusLine, templateRegExp, toUwsPattern, type AnyRoute, type HttpMethod, type Session } from './route.ts'
import {
  ambiguousLength, bearerToken, checkedBody, compileRoutes, decodeParams, internalError, isJsonType, JSON_TYPE, jsonText, matchesEtag, parseQuery, problemReply,
  REQUEST_ID, utf8, validationProblem, type CompiledRoute, type Reply,
} from './request.ts'

/** Default largest accepted request body. Every documented request of the service is far below it. */
export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024
/** Default time `close()` waits for in-flight requests before abandoning them. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000

/** Resolves a bearer token to the session it opens, or undefined when unknown or expired. */
export type Authenticate = (token: string) => Promise<Session | undefined>

export interface ServerOptions {
  routes: readonly AnyRoute[]
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
  /** Peer addresses whose X-Forwarded-For names the client (see `clientAddress`); none by default. */
  trustedProxies?: readonly string[]
  /**
   * Answer HTTP/1.0 requests and refuse HTTP/1.1 requests without Host with a 400, which uWS alone leaves without
   * any answer: a node:net front (front.ts) owns the port and hands HTTP/1.1 connections to uWS. Default true;
   * `false` puts uWS on the port directly (cheaper per request, see the README's bench section).
   */
  legacyClients?: boolean
  /** WebSocket endpoints (the event stream), registered before the routes so an upgrade reaches them first. */
  websockets?: ReadonlyArray<{ path: string; behavior: WebSocketBehavior<any> }>
  /** Required when any route has `auth: 'session'`. */
  authenticate?: Authenticate
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


interface RequestState {
  res: HttpResponse
  method: string
  path: string
  /** HEAD: every header of the GET answer, content-length included, and no body. */
  head: boolean
  requestId: string
  /** The Origin header, '' when absent. */
  origin: string
  startNs: bigint
  aborted: boolean
  responded: boolean
  /** Made only when a handler reads its `signal`: most never do, and one costs about 1.5% of a request (issue 11). */
  controller: AbortController | undefined
  /** The body reader's hook on abort. */
  onAbort: (() => void) | undefined
  /** The bucket this request was counted on, for the RateLimit fields. */
  rate: { policy: string; key: string; decision: RateDecision } | undefined
}

/** Starts listening; resolves once the socket is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log ?? stdoutLogger
  // With the request log off, no line (and no clock reading for it) is built per request.
  const requestLog = log !== silentLogger
  const host = options.host ?? '127.0.0.1'
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES
  if (!(Number.isInteger(bodyLimitBytes) && bodyLimitBytes > 0)) throw new RangeError('bodyLimitBytes must be a positive integer')
  const nowMs = options.nowMs ?? Date.now
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT)
  const policies = limiter === undefined ? undefined : {
    wallet: `"wallet";q=${limiter.burst};w=${limiter.windowSeconds}`,
    client: `"client";q=${limiter.burst};w=${limiter.windowSeconds}`,
  }
  const corsPolicy: CorsPolicy = cors(options.corsOrigins ?? ['*'])
  const trustedProxies = new Set(options.trustedProxies ?? [])
  const compiled = compileRoutes(options.routes, options)
  const matchers = compiled.map((c) => ({ method: c.route.method, regexp: templateRegExp(c.route.path) }))
  const inFlight = new Map<RequestState, Promise<void>>()
  // Minted request ids: unique within this process by the counter, across processes by the random prefix.
  const requestIdPrefix = `${randomBytes(6).toString('hex')}-`
  let requestCount = 0
  const mintRequestId = () => requestIdPrefix + (++requestCount).toString(36)
  let closing = false
  let closePromise: Promise<CloseResult> | undefined

  /** Methods a path answers (HEAD with GET, OPTIONS always), for Allow and the CORS preflight. */
  const allowOf = (methods: Iterable<string>): string => {
    const set = new Set([...methods].map((m) => m.toUpperCase()))
    if (set.has('GET')) set.add('HEAD')
    set.add('OPTIONS')
    return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => set.has(m)).join(', ')
  }

  const send = (state: RequestState, reply: Reply): void => {
    if (state.aborted || state.responded) return
    state.responded = true
    // During shutdown every answer closes its connection, so keep-alive clients go away with it.
    const closeConnection = reply.closeConnection === true || closing
    state.res.cork(() => {
      state.res.writeStatus(statusLine(reply.status))
      for (const [name, value] of reply.headers) state.res.writeHeader(name, value)
      state.res.writeHeader('x-request-id', state.requestId)
      if (state.rate !== undefined && policies !== undefined) {
        const { decision } = state.rate
        state.res.writeHeader('ratelimit-policy', state.rate.policy === 'wallet' ? policies.wallet : policies.client)
        state.res.writeHeader('ratelimit', `"${state.rate.policy}";r=${decision.remaining};t=${decision.resetSeconds}`)
      }
      if (corsPolicy.vary) state.res.writeHeader('vary', 'Origin')
      if (state.origin !== '') {
        const allowed = corsPolicy.allowOrigin(state.origin)
        if (allowed !== undefined) {
          state.res.writeHeader('access-control-allow-origin', allowed)
          state.res.writeHeader('access-control-expose-headers', corsPolicy.exposeHeaders)
        }
      }
      // Without arguments uWS writes no Content-Length (none is allowed on a 204 or 304); `undefined` would write a
      // garbage one. Closing needs the argument form, whose Content-Length: 0 is harmless on a closing connection.
      if (reply.body === undefined) {
        if (closeConnection) state.res.end(undefined, true)
        else state.res.endWithoutBody()
      }
      // HEAD: the GET's headers and content-length, no body. The pinned uWS counts a length given to endWithoutBody as
      // body still to come, and drops the connection at the next request: the length goes in as a plain header.
      else if (state.head) {
        if (closeConnection) state.res.endWithoutBody(Buffer.byteLength(reply.body), true)
        else state.res.writeHeader('content-length', String(Buffer.byteLength(reply.body))).endWithoutBody()
      }
      else state.res.end(reply.body, closeConnection)
    })
    if (requestLog) log({ level: 'info', msg: 'request', method: state.method, path: state.path, status: reply.status, requestId: state.requestId, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
  }

  const fail = (state: RequestState, error: unknown): void => {
    if (error instanceof HttpProblem) {
      send(state, problemReply(error))
      return
    }
    log({ level: 'error', msg: 'handler_failed', method: state.method, path: state.path, requestId: state.requestId, ...errorFields(error) })
    send(state, problemReply(internalError()))
  }

  const rateLimited = (decision: RateDecision, who: string) =>
    new HttpProblem(429, 'rate_limited', `Too many requests from this ${who}; retry in ${decision.retryAfterSeconds} s.`, { headers: { 'retry-after': String(decision.retryAfterSeconds) } })

  /** Counts the request on a bucket; false (and answered 429) when it is empty. */
  const admit = (state: RequestState, policy: 'wallet' | 'client', key: string): boolean => {
    if (limiter === undefined) return true
    const decision = limiter.take(`${policy}:${key}`, nowMs())
    state.rate = { policy, key, decision }
    if (decision.allowed) return true
    send(state, problemReply(rateLimited(decision, policy === 'wallet' ? 'wallet' : 'address')))
    return false
  }

  /** Shared entry: request id, abort hook, bookkeeping and shutdown. Returns undefined when already answered. */
  const begin = (res: HttpResponse, req: HttpRequest): RequestState | undefined => {
    const incomingId = req.getHeader('x-request-id')
    const method = req.getCaseSensitiveMethod()
    const state: RequestState = {
      res,
      method,
      path: req.getUrl(),
      head: method === 'HEAD',
      requestId: incomingId !== '' && REQUEST_ID.test(incomingId) ? incomingId : mintRequestId(),
      origin: req.getHeader('origin'),
      startNs: requestLog ? process.hrtime.bigint() : 0n,
      aborted: false,
      responded: false,
      controller: undefined,
      onAbort: undefined,
      rate: undefined,
    }
    // uWS requires the abort handler before any asynchronous step; after it fires `res` must not be touched.
    res.onAborted(() => {
      state.aborted = true
      state.controller?.abort()
      state.onAbort?.()
      if (!state.responded && requestLog) log({ level: 'info', msg: 'request', method: state.method, path: state.path, status: null, aborted: true, requestId: state.requestId, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
    })
    if (closing) {
      send(state, problemReply(new HttpProblem(503, 'shutting_down', 'The service is shutting down; retry on another instance or later.'), true))
      return undefined
    }
    return state
  }

  // Behind the front, uWS's peer is the front's Unix socket; the PROXY v2 header the front sends names the client.
  // Without the front the proxied address is never read: a client could send such a header itself.
  const addressOf = (res: HttpResponse, forwardedFor: string): string =>
    clientAddress(Buffer.from(front === undefined ? res.getRemoteAddressAsText() : res.getProxiedRemoteAddressAsText()).toString('utf8'), forwardedFor, trustedProxies)
  const peerOf = (res: HttpResponse, req: HttpRequest): string => addressOf(res, trustedProxies.size === 0 ? '' : req.getHeader('x-forwarded-for'))

  /** The handler's abort signal, made on first use (already aborted if the client went away before). */
  const signalOf = (state: RequestState): AbortSignal => {
    if (state.controller === undefined) {
      state.controller = new AbortController()
      if (state.aborted) state.controller.abort()
    }
    return state.controller.signal
  }

  const fallback = (res: HttpResponse, req: HttpRequest): void => {
    try {
      const state = begin(res, req)
      if (state === undefined) return
      if (limiter !== undefined && !admit(state, 'client', peerOf(res, req))) return
      const methods = matchers.filter((m) => m.regexp.test(state.path)).map((m) => m.method)
      if (methods.length === 0) {
        send(state, problemReply(new HttpProblem(404, 'not_found', `No route ${state.path}.`)))
        return
      }
      const allow = allowOf(methods)
      if (state.method === 'OPTIONS') {
        send(state, preflight(state, req, allow))
        return
      }
      send(state, problemReply(new HttpProblem(405, 'method_not_allowed', `${state.method} is not allowed on ${state.path}; allowed: ${allow}.`, { headers: { allow } })))
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  /** OPTIONS: 204 with Allow; a CORS preflight from an allowed origin also gets the Access-Control-Allow-* fields. */
  const preflight = (state: RequestState, req: HttpRequest, allow: string): Reply => {
    const headers: Array<[string, string]> = [['allow', allow]]
    const requestedMethod = req.getHeader('access-control-request-method')
    if (state.origin !== '' && requestedMethod !== '' && corsPolicy.allowOrigin(state.origin) !== undefined) {
      headers.push(['access-control-allow-methods', allow], ['access-control-allow-headers', corsPolicy.allowHeaders], ['access-control-max-age', String(corsPolicy.maxAgeSeconds)])
    }
    return { status: 204, headers, body: undefined }
  }

  const readBody = (state: RequestState): Promise<Buffer | 'too_large' | 'aborted'> =>
    new Promise((resolve) => {
      const chunks: Buffer[] = []
      let total = 0
      let finished = false
      state.onAbort = () => {
        finished = true
        resolve('aborted')
      }
      state.res.onData((chunk, isLast) => {
        if (finished) return
        total += chunk.byteLength
        if (total > bodyLimitBytes) {
          finished = true
          resolve('too_large')
          return
        }
        // uWS neuters the chunk when this callback returns: copy it.
        chunks.push(Buffer.from(new Uint8Array(chunk)))
        if (isLast) {
          finished = true
          resolve(Buffer.concat(chunks, total))
        }
      })
    })

  const tooLarge = () => new HttpProblem(413, 'payload_too_large', `The request body exceeds the limit of ${bodyLimitBytes} bytes.`)

  const handleRequest = async (state: RequestState, c: CompiledRoute, input: {
    rawParams: string[]
    rawQuery: string
    token: string | undefined
    headers: Record<string, string>
    /** Read lazily: a signed-in request never needs it unless a handler asks (issue 11). */
    clientIp: () => string
    body: Promise<Buffer | 'too_large' | 'aborted'> | 'empty' | undefined
  }): Promise<void> => {
    try {
      let bodyBytes: Buffer | undefined
      if (input.body !== undefined && input.body !== 'empty') {
        const read = await input.body
        if (read === 'aborted') return
        if (read === 'too_large') {
          // The client may still be sending: close the connection rather than read the rest.
          send(state, problemReply(tooLarge(), true))
          return
        }
        bodyBytes = read
      }
      // Who is counted: a valid bearer token counts on its wallet, anything else on the client address (already
      // admitted in the synchronous part when no token was sent).
      let session: Session | undefined
      if (input.token !== undefined && options.authenticate !== undefined) {
        session = await options.authenticate(input.token)
        if (state.aborted) return
        if (!admit(state, session === undefined ? 'client' : 'wallet', session === undefined ? input.clientIp() : session.address)) return
      }
      if (c.route.auth === 'session') {
        if (input.token === undefined) throw new HttpProblem(401, 'unauthorized', 'This route needs an Authorization: Bearer <token> header from POST /auth/session.', { headers: { 'www-authenticate': 'Bearer' } })
        if (session === undefined) throw new HttpProblem(401, 'unauthorized', 'The bearer token is unknown or expired; sign in again.', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
      }
      if (c.route.immutable === true) {
        send(state, await documentReply(state, c, input.headers))
        return
      }
      let body: unknown
      if (input.body === 'empty' || (c.bodyOptional && bodyBytes?.length === 0)) {
        body = {}
      } else if (bodyBytes !== undefined) {
        let text: string
        try {
          text = utf8.decode(bodyBytes)
          body = JSON.parse(text)
        } catch {
          throw new HttpProblem(400, 'malformed_json', 'The request body is not valid UTF-8 JSON.')
        }
        const duplicate = duplicateKeyPointer(text)
        if (duplicate !== undefined) {
          throw new HttpProblem(400, 'duplicate_json_key', `The request body names the key at ${duplicate} twice; which one would count is ambiguous.`, {
            title: 'Duplicate JSON key',
            errors: [{ path: `/body${duplicate}`, message: 'duplicate key' }],
          })
        }
      }
      const params = decodeParams(c.paramNames, input.rawParams)
      const query = parseQuery(input.rawQuery, c.integerQuery)
      const issues = [...params.issues, ...query.issues]
      if (c.params !== undefined && !c.params.check(params.values)) issues.push(...c.params.issues(params.values, '/params'))
      if (c.query !== undefined) {
        if (!c.query.check(query.values)) issues.push(...c.query.issues(query.values, '/query'))
      } else {
        for (const name of Object.keys(query.values)) issues.push({ path: `/query/${name}`, message: 'unknown field' })
      }
      if (c.body !== undefined && !c.body.check(body)) issues.push(...c.body.issues(body, '/body'))
      if (issues.length > 0) throw validationProblem(issues)

      const result = await c.route.handler({
        params: params.values,
        query: query.values,
        body,
        session,
        headers: input.headers,
        get clientIp() { return input.clientIp() },
        get signal() { return signalOf(state) },
      })
      if (state.aborted) return
      // What the answer cost beyond the token that admitted it (a page of 100 items costs 100).
      if (c.route.cost !== undefined && limiter !== undefined && state.rate !== undefined && result.status < 300) {
        const extra = c.route.cost(result.body) - 1
        if (extra > 0) state.rate.decision = limiter.charge(`${state.rate.policy}:${state.rate.key}`, nowMs(), extra)
      }
      // Serialized before the barrier: the answer is what memory held now, shown once the disk has caught up.
      const reply = serialize(state, c, result)
      if (c.route.method === 'get' && options.readBarrier !== undefined) {
        await options.readBarrier()
        if (state.aborted) return
      }
      send(state, reply)
    } catch (error) {
      fail(state, error)
    }
  }

  /** An immutable route's answer: built once, then served from memory by representation and validator. */
  const documentReply = async (state: RequestState, c: CompiledRoute, headers: Record<string, string>): Promise<Reply> => {
    c.document ??= (async () => {
      const result = await c.route.handler({ params: {}, query: {}, body: undefined, session: undefined, headers: {}, clientIp: '', signal: signalOf(state) })
      const reply = serialize(state, c, result)
      if (reply.status !== 200 || reply.body === undefined) throw new Error(`${c.route.path}: an immutable route must answer 200 with a body`)
      return documentVariants(reply.body, reply.headers)
    })()
    let variants: DocumentVariants
    try {
      variants = await c.document
    } catch (error) {
      c.document = undefined
      throw error
    }
    const variant = selectVariant(variants, headers['accept-encoding'] ?? '')
    const validators: Array<[string, string]> = [['etag', variant.etag], ['cache-control', variants.cacheControl], ['vary', 'Accept-Encoding']]
    if (matchesEtag(headers['if-none-match'] ?? '', variant.etag)) return { status: 304, headers: validators, body: undefined }
    const encoding: Array<[string, string]> = variant.encoding === 'identity' ? [] : [['content-encoding', variant.encoding]]
    return { status: 200, headers: [...variants.headers, ...validators, ...encoding], body: variant.body }
  }

  const serialize = (state: RequestState, c: CompiledRoute, result: { status: number; body: unknown; headers?: Record<string, string> }): Reply => {
    const spec = c.route.responses[result.status]
    if (spec === undefined) {
      log({ level: 'error', msg: 'undeclared_status', method: state.method, path: state.path, status: result.status })
      return problemReply(internalError())
    }
    const validator = c.responses.get(result.status)
    if (validator !== undefined && !validator.check(checkedBody(result.body))) {
      log({ level: 'error', msg: 'response_invalid', method: state.method, path: state.path, status: result.status, errors: validator.issues(checkedBody(result.body), '/response') })
      return problemReply(internalError())
    }
    const contentType = spec.contentType ?? (result.status >= 400 ? PROBLEM_CONTENT_TYPE : JSON_TYPE)
    const headers: Array<[string, string]> = []
    let body: string | undefined
    if (result.body !== undefined) {
      headers.push(['content-type', contentType])
      if (isJsonType(contentType)) body = jsonText(result.body)
      else if (typeof result.body === 'string') body = result.body
      else throw new TypeError(`${state.method} ${state.path}: a ${contentType} body must be a string`)
    }
    for (const [name, value] of Object.entries(result.headers ?? {})) {
      const lower = name.toLowerCase()
      // uWS writes the length itself; a second one would corrupt the response.
      if (lower === 'content-length' || lower === 'transfer-encoding') continue
      if (lower === 'content-type') {
        const index = headers.findIndex(([n]) => n === 'content-type')
        if (index >= 0) headers.splice(index, 1)
      }
      headers.push([lower, value])
    }
    return { status: result.status, headers, body }
  }

  const handlerFor = (c: CompiledRoute) => (res: HttpResponse, req: HttpRequest): void => {
    try {
      const state = begin(res, req)
      if (state === undefined) return
      // HttpRequest is stack allocated: copy everything needed before the first await.
      // The peer's address is read once and only when needed (the rate limit of a request without a token, or a
      // handler that asks); X-Forwarded-For lives in the stack-allocated HttpRequest, so it is copied now.
      const forwardedFor = trustedProxies.size === 0 ? '' : req.getHeader('x-forwarded-for')
      let peer: string | undefined
      const clientIp = () => (peer ??= state.aborted ? '' : addressOf(res, forwardedFor))
      const token = options.authenticate === undefined ? undefined : bearerToken(req.getHeader('authorization'))
      // Without a token the bucket is known now: refuse before reading a body. With one, after authentication.
      if (token === undefined && limiter !== undefined && !admit(state, 'client', clientIp())) return
      if (req.getHeader('content-length') !== '' && ambiguousLength(req)) {
        send(state, problemReply(new HttpProblem(400, 'ambiguous_content_length', 'The request has two Content-Length fields, or one beside Transfer-Encoding: where its body ends is ambiguous.', { title: 'Ambiguous message length' }), true))
        return
      }
      const rawParams = c.paramNames.map((_, index) => req.getParameter(index))
      const rawQuery = c.route.immutable === true ? '' : req.getQuery() ?? ''
      const headers: Record<string, string> = {}
      for (const name of c.headerNames) {
        const value = req.getHeader(name)
        if (value !== '') headers[name] = value
      }
      if (c.route.immutable === true) {
        headers['accept-encoding'] = req.getHeader('accept-encoding')
        headers['if-none-match'] = req.getHeader('if-none-match')
      }
      let body: Promise<Buffer | 'too_large' | 'aborted'> | 'empty' | undefined
      if (c.body !== undefined) {
        const contentType = req.getHeader('content-type')
        const declaredLength = req.getHeader('content-length')
        if (contentType === '' && c.bodyOptional && (declaredLength === '' || declaredLength === '0') && req.getHeader('transfer-encoding') === '') {
          // An action whose body is optional, called without one.
          body = 'empty'
        } else if (contentType.split(';', 1)[0]?.trim().toLowerCase() !== JSON_TYPE) {
          send(state, problemReply(new HttpProblem(415, 'unsupported_media_type', `This route takes a JSON body: send content-type: ${JSON_TYPE}.`)))
          return
        } else if (declaredLength !== '' && Number(declaredLength) > bodyLimitBytes) {
          send(state, problemReply(tooLarge(), true))
          return
        } else {
          // onData must be attached before this callback returns, or uWS drops the body.
          body = readBody(state)
        }
      }
      const work = handleRequest(state, c, { rawParams, rawQuery, token, headers, clientIp, body })
        .finally(() => inFlight.delete(state))
      inFlight.set(state, work)
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  const optionsFor = (allow: string) => (res: HttpResponse, req: HttpRequest): void => {
    try {
      const state = begin(res, req)
      if (state === undefined) return
      if (limiter !== undefined && !admit(state, 'client', peerOf(res, req))) return
      send(state, preflight(state, req, allow))
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  const app: TemplatedApp = uWS.App()
  const front: Front | undefined = options.legacyClients === false
    ? undefined
    : await startFront({ host, port: options.port ?? 0, log, requestId: mintRequestId })
  const register: Record<HttpMethod, (pattern: string, handler: (res: HttpResponse, req: HttpRequest) => void) => TemplatedApp> = {
    get: (p, h) => app.get(p, h),
    post: (p, h) => app.post(p, h),
    put: (p, h) => app.put(p, h),
    patch: (p, h) => app.patch(p, h),
    delete: (p, h) => app.del(p, h),
  }
  for (const socket of options.websockets ?? []) app.ws(socket.path, socket.behavior)
  const methodsByPattern = new Map<string, HttpMethod[]>()
  for (const c of compiled) {
    const pattern = toUwsPattern(c.route.path)
    const handler = handlerFor(c)
    register[c.route.method](pattern, handler)
    // HEAD runs the GET (same status, headers and length) and sends no body (`state.head`).
    if (c.route.method === 'get') app.head(pattern, handler)
    methodsByPattern.set(pattern, [...(methodsByPattern.get(pattern) ?? []), c.route.method])
  }
  for (const [pattern, methods] of methodsByPattern) app.options(pattern, optionsFor(allowOf(methods)))
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
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  log({ level: 'info', msg: 'listening', host, port, routes: compiled.length })

  const close = async (timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS): Promise<CloseResult> => {
    closing = true
    front?.stopAccepting()
    uWS.us_listen_socket_close(listenSocket)
    const pending = [...inFlight.values()]
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) })
    const outcome = await Promise.race([Promise.allSettled(pending).then(() => 'drained' as const), timedOut])
    clearTimeout(timer)
    const abandoned = [...inFlight.keys()]
    for (const state of abandoned) {
      if (!state.aborted && !state.responded) {
        state.responded = true
        state.res.close()
      }
    }
    // Idle keep-alive connections would hold the event loop open until they time out: close them all now.
    ;(app as TemplatedApp & { close?: () => void }).close?.()
    front?.close()
    log({ level: outcome === 'drained' ? 'info' : 'warn', msg: 'closed', drained: outcome === 'drained', abandoned: abandoned.length })
    return { drained: outcome === 'drained', abandoned: abandoned.length }
  }

  return {
    host,
    port,
    url,
    inFlight: () => inFlight.size,
    close: (timeoutMs) => (closePromise ??= close(timeoutMs)),
  }
}

