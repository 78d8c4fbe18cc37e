// The transport-neutral request pipeline (see createPipeline). Handlers hold no transport code and no business rule
// of their own: they call one engine command and return `{ status, body }`.
import { clientAddress, clientKeyOf } from './client-key.ts'
import { cors, type CorsPolicy } from './cors.ts'
import { documentVariants, selectVariant, type DocumentVariants } from './document-cache.ts'
import { duplicateKeyPointer } from './json.ts'
import { errorFields, logsRequests, requestIdMinter, stdoutLogger } from './log.ts'
import { HttpProblem, PROBLEM_CONTENT_TYPE, type ValidationIssue } from './problem.ts'
import { DEFAULT_RATE_LIMIT, RateLimiter, type RateDecision } from './rate-limit.ts'
import { templateRegExp, type AnyRoute, type AuthMode, type RouteContext, type Session } from './route.ts'
import {
  AMBIGUOUS_LENGTH, bearerToken, checkedBody, compileRoutes, decodeParams, internalError, isJsonType, JSON_TYPE, jsonText, matchesEtag, parseQuery,
  problemReply, REQUEST_ID, utf8, validationProblem, type CompiledRoute, type Reply,
} from './request.ts'
import { DEFAULT_BODY_LIMIT_BYTES, type CloseResult, type ServerOptions } from './server.ts'

/**
 * What the pipeline needs of a transport. `Req` is read only synchronously, in the call that hands it over (uWS's
 * HttpRequest is stack allocated); `Res` is the answer's handle until it is ended, closed or aborted. The methods
 * take the handle instead of living on a wrapper so that uWS's own objects serve as is, with no allocation per request.
 */
export interface TransportIo<Res, Req> {
  method(req: Req): string
  /** The path, without the query. */
  url(req: Req): string
  /** A header's value, '' when absent. `name` is lower case. */
  header(req: Req, name: string): string
  /** The route's parameter at `index`, still percent-encoded. */
  parameter(req: Req, index: number): string
  /** What follows the '?', undefined without one. */
  query(req: Req): string | undefined
  /**
   * One pass over the request's fields (uWS makes two strings and a call per field of each pass): bit AMBIGUOUS_LENGTH
   * when it has two Content-Length fields, or one beside Transfer-Encoding (request smuggling). With `values`, the same
   * pass also sets `values[i]` to what `header(req, names[i])` answers (the first of a repeated field; undefined when
   * absent, '' when sent empty, which `header` cannot tell apart): one pass instead of a `header` call per name. The
   * first `own` names (a route's own fields) and X-Forwarded-For keep every value of a repeated field, joined by `, `.
   */
  fields(req: Req, names: readonly string[], values?: Array<string | undefined>, own?: number): number
  /** Called once when the client goes away before the answer is sent; after it `res` must not be touched. */
  onAborted(res: Res, hook: () => void): void
  /** The peer's address as the transport sees it (the front's PROXY header names it behind the front). */
  remoteAddress(res: Res): string
  /** The request body, chunk by chunk; an ArrayBuffer chunk is valid only during the call. */
  onData(res: Res, chunk: (bytes: ArrayBuffer | Buffer, isLast: boolean) => void): void
  /** Runs the writes of one answer as one (uWS corks them into one send); calls `write` before it returns. */
  cork(res: Res, write: () => void): void
  writeStatus(res: Res, status: number): void
  writeHeader(res: Res, name: string, value: string): void
  /** Ends an answer without a body and without Content-Length (a 204 or 304). */
  endWithoutBody(res: Res, closeConnection: boolean): void
  /** Ends a HEAD answer: the GET's Content-Length and no body. */
  endHead(res: Res, lengthBytes: number, closeConnection: boolean): void
  end(res: Res, body: string | Buffer, closeConnection: boolean): void
  /** Drops the connection without an answer (shutdown timeout). */
  close(res: Res): void
}

interface RequestState<Res> {
  res: Res
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
  /** The routed request whose body is being read, for the abort hook (`bodyRead`). */
  reading: RouteInput<Res> | undefined
  /** The bucket this request was counted on, for the RateLimit fields. */
  rate: { policy: string; key: string; decision: RateDecision } | undefined
  /** X-Forwarded-For, copied while the request is readable ('' unless a trusted proxy may have written it). */
  forwardedFor: string
  /** The client (clientKeyOf its address), read on first use (`clientKeyOfState`). */
  clientKey: string | undefined
}

/** A request body as read: its text (undefined when it is not UTF-8) and its length in bytes. */
interface BodyText {
  text: string | undefined
  byteLength: number
}
type BodyRead = BodyText | 'too_large' | 'aborted'
/**
 * What a routed request's handler needs of it, copied while the request is readable; `body` once it is read. It also
 * carries the body reader's state, so that reading a body makes one closure (uWS's onData callback), not three.
 */
interface RouteInput<Res> {
  state: RequestState<Res>
  c: CompiledRoute
  rawParams: string[]
  rawQuery: string
  token: string | undefined
  headers: Record<string, string>
  body: BodyRead | 'empty' | undefined
  /** Body bytes read so far. */
  bytesRead: number
  /** Made only for a body of more than one chunk (a small one comes in one). */
  chunks: Buffer[] | undefined
}
const EMPTY_BODY: BodyText = { text: '', byteLength: 0 }
const NO_PARAMS: string[] = []
/**
 * The params of a route without path parameters, the query of a request without one, the fields of a request that
 * sent none of its route's own: one frozen empty object each instead of a new one per request (issue 11).
 */
const NO_VALUES: Record<string, never> = Object.freeze({})
const NO_NAMES: readonly string[] = []
const FORWARDED_NAME: readonly string[] = ['x-forwarded-for']
/**
 * The fields of an answer with a body and no field of its handler's own: its content type's, one frozen list per
 * media type (the route table's few), not a new list and pair per answer (issue 11).
 */
const contentTypeFields = new Map<string, Array<[string, string]>>()
const contentTypeFieldsOf = (contentType: string): Array<[string, string]> => {
  let fields = contentTypeFields.get(contentType)
  if (fields === undefined) contentTypeFields.set(contentType, (fields = Object.freeze([Object.freeze(['content-type', contentType])]) as Array<[string, string]>))
  return fields
}
/** The fields of an answer without a body and without a field of its handler's own. */
const NO_FIELDS = Object.freeze([]) as unknown as Array<[string, string]>

/** The text of UTF-8 bytes, or undefined when they are not UTF-8 (the answer is then malformed_json). */
function utf8Text(bytes: ArrayBuffer | Buffer): string | undefined {
  try {
    return utf8.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * The request pipeline of both transports (uWS and node:http): request ids, rate limit, CORS, body limits, parsing
 * and validation, authentication, the handler, the read barrier, reply building, the request log and draining on
 * shutdown. A transport routes a request to `handlerFor(route)`, `preflightFor(allow)` or `fallback`, and gives the
 * pipeline its `TransportIo`.
 */
/**
 * A WebSocket upgrade the pipeline admitted (counted on a bucket, given a request id): who asked, and how the endpoint
 * refuses it. Refused by the endpoint itself (400, 401, 429, 503), it answered without X-Request-Id or the RateLimit
 * fields every other answer carries (edges30, test/stream/refused-upgrades.test.ts).
 */
export interface UpgradeGate {
  /** The client (clientKeyOf its address, read as the rate limiter reads it): what an endpoint bounds per client. */
  client: string
  /** Answers the upgrade with `problem` as the pipeline answers any request, and closes the connection. */
  refuse(problem: HttpProblem): void
  /** Whether the client went away: the pipeline holds the response's abort handler (uWS keeps one), not the endpoint. */
  aborted(): boolean
  /**
   * The endpoint upgraded it (`res.upgrade`, 101): logged as every answer is, one `request` line. A stream that opened
   * left no line before (review36, test/stream/aborted-upgrade.test.ts).
   */
  opened(): void
}

export function createPipeline<Res, Req>(options: ServerOptions, io: TransportIo<Res, Req>) {
  const log = options.log ?? stdoutLogger
  // With the request log off, no line (and no clock reading for it) is built per request.
  const requestLog = logsRequests(log)
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
  /** Requests routed to a handler and not yet finished; their last one to finish during a drain calls `drained`. */
  const inFlight = new Set<RequestState<Res>>()
  let drained: (() => void) | undefined
  const mintRequestId = requestIdMinter()
  let closing = false

  /** Methods a path answers (HEAD with GET, OPTIONS always), for Allow and the CORS preflight. */
  const allowOf = (methods: Iterable<string>): string => {
    const set = new Set([...methods].map((m) => m.toUpperCase()))
    if (set.has('GET')) set.add('HEAD')
    set.add('OPTIONS')
    return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => set.has(m)).join(', ')
  }

  /**
   * The answer `send` is writing, for `writeAnswer`: the transport calls the write back at once (uWS's cork), so one
   * function made here serves every answer instead of a closure per answer (issue 11).
   */
  let writing: RequestState<Res> | undefined
  let writingReply: Reply | undefined
  let writingClose = false
  const writeAnswer = (): void => {
    const state = writing as RequestState<Res>
    const reply = writingReply as Reply
    const closeConnection = writingClose
    writing = undefined
    writingReply = undefined
    io.writeStatus(state.res, reply.status)
    const { headers } = reply
    for (let i = 0; i < headers.length; i++) {
      const field = headers[i] as [string, string]
      io.writeHeader(state.res, field[0], field[1])
    }
    io.writeHeader(state.res, 'x-request-id', state.requestId)
    if (state.rate !== undefined && policies !== undefined) {
      const { decision } = state.rate
      io.writeHeader(state.res, 'ratelimit-policy', state.rate.policy === 'wallet' ? policies.wallet : policies.client)
      io.writeHeader(state.res, 'ratelimit', `"${state.rate.policy}";r=${decision.remaining};t=${decision.resetSeconds}`)
    }
    if (corsPolicy.vary) io.writeHeader(state.res, 'vary', 'Origin')
    if (state.origin !== '') {
      const allowed = corsPolicy.allowOrigin(state.origin)
      if (allowed !== undefined) {
        io.writeHeader(state.res, 'access-control-allow-origin', allowed)
        io.writeHeader(state.res, 'access-control-expose-headers', corsPolicy.exposeHeaders)
      }
    }
    // No Content-Length is allowed on a 204 or 304.
    if (reply.body === undefined) {
      io.endWithoutBody(state.res, closeConnection)
    }
    // HEAD: the GET's headers and content-length, no body.
    else if (state.head) io.endHead(state.res, Buffer.byteLength(reply.body), closeConnection)
    else io.end(state.res, reply.body, closeConnection)
  }

  const send = (state: RequestState<Res>, reply: Reply): void => {
    if (state.aborted || state.responded) return
    state.responded = true
    writing = state
    writingReply = reply
    // During shutdown every answer closes its connection, so keep-alive clients go away with it.
    writingClose = reply.closeConnection === true || closing
    io.cork(state.res, writeAnswer)
    if (requestLog) logAnswered(state, reply.status)
  }

  /** The request's `request` line, once answered with `status`. */
  const logAnswered = (state: RequestState<Res>, status: number): void => {
    log({ level: 'info', msg: 'request', method: state.method, path: state.path, status, requestId: state.requestId, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
  }

  const fail = (state: RequestState<Res>, error: unknown): void => {
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
  const admit = (state: RequestState<Res>, policy: 'wallet' | 'client', key: string, closeConnection = false): boolean => {
    if (limiter === undefined) return true
    const decision = limiter.take(`${policy}:${key}`, nowMs())
    state.rate = { policy, key, decision }
    if (decision.allowed) return true
    send(state, problemReply(rateLimited(decision, policy === 'wallet' ? 'wallet' : 'address'), closeConnection))
    return false
  }

  /** Shared entry: request id, abort hook, bookkeeping and shutdown. Returns undefined when already answered. */
  const begin = (res: Res, req: Req, incomingId = io.header(req, 'x-request-id'), origin = io.header(req, 'origin')): RequestState<Res> | undefined => {
    const method = io.method(req)
    const state: RequestState<Res> = {
      res,
      method,
      path: io.url(req),
      head: method === 'HEAD',
      requestId: incomingId !== '' && REQUEST_ID.test(incomingId) ? incomingId : mintRequestId(),
      origin,
      startNs: requestLog ? process.hrtime.bigint() : 0n,
      aborted: false,
      responded: false,
      controller: undefined,
      reading: undefined,
      rate: undefined,
      forwardedFor: '',
      clientKey: undefined,
    }
    // uWS requires the abort handler before any asynchronous step; after it fires `res` must not be touched.
    io.onAborted(res, () => {
      state.aborted = true
      state.controller?.abort()
      if (state.reading !== undefined) bodyRead(state.reading, 'aborted')
      if (!state.responded && requestLog) log({ level: 'info', msg: 'request', method: state.method, path: state.path, status: null, aborted: true, requestId: state.requestId, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
    })
    if (closing) {
      send(state, problemReply(new HttpProblem(503, 'shutting_down', 'The service is shutting down; retry on another instance or later.'), true))
      return undefined
    }
    return state
  }

  const addressOf = (res: Res, forwardedFor: string): string => clientAddress(io.remoteAddress(res), forwardedFor, trustedProxies)
  /** X-Forwarded-For, every field of it joined (a proxy may add its hop as a field of its own, HAProxy's `option
   * forwardfor`, after the client's): the first alone would be the client's word. Read only with trusted proxies. */
  const forwarded: Array<string | undefined> = [undefined]
  const forwardedOf = (req: Req): string => {
    io.fields(req, FORWARDED_NAME, forwarded)
    return forwarded[0] ?? ''
  }
  const peerOf = (res: Res, req: Req): string => addressOf(res, trustedProxies.size === 0 ? '' : forwardedOf(req))
  /**
   * The client of a routed request (clientKeyOf its address), read once and only when needed: the rate limiter's key of
   * an anonymous request, and a signed-in request never needs it unless a handler asks (issue 11). A function of the
   * state, not a closure per request: under tsx (esbuild's keepNames) each named closure also costs an
   * Object.defineProperty, 0.5% of the service thread's busy time in the load mix.
   */
  const clientKeyOfState = (state: RequestState<Res>): string => (state.clientKey ??= state.aborted ? '' : clientKeyOf(addressOf(state.res, state.forwardedFor)))

  /** The handler's abort signal, made on first use (already aborted if the client went away before). */
  const signalOf = (state: RequestState<Res>): AbortSignal => {
    if (state.controller === undefined) {
      state.controller = new AbortController()
      if (state.aborted) state.controller.abort()
    }
    return state.controller.signal
  }

  /**
   * A handler's context. `clientKey` and `signal` are read through the request's state, only when asked: getters on
   * the prototype, where an object literal's would be two new closures per request (issue 11).
   */
  class HandlerContext implements RouteContext<unknown, unknown, unknown, AuthMode> {
    readonly #state: RequestState<Res>
    constructor(state: RequestState<Res>, readonly route: AnyRoute, readonly params: Record<string, string>, readonly query: Record<string, string | number>, readonly body: unknown, readonly session: Session | undefined, readonly headers: Record<string, string>) {
      this.#state = state
    }

    get clientKey(): string {
      return clientKeyOfState(this.#state)
    }

    get signal(): AbortSignal {
      return signalOf(this.#state)
    }
  }

  const fallback = (res: Res, req: Req): void => {
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
  const preflight = (state: RequestState<Res>, req: Req, allow: string): Reply => {
    const headers: Array<[string, string]> = [['allow', allow]]
    const requestedMethod = io.header(req, 'access-control-request-method')
    if (state.origin !== '' && requestedMethod !== '' && corsPolicy.allowOrigin(state.origin) !== undefined) {
      headers.push(['access-control-allow-methods', allow], ['access-control-allow-headers', corsPolicy.allowHeaders], ['access-control-max-age', String(corsPolicy.maxAgeSeconds)])
    }
    return { status: 204, headers, body: undefined }
  }

  /**
   * Reads the body into `input.body`, then runs the request (`bodyRead`) once, with its text (undefined when it is not
   * UTF-8) or with why there is none. A body in one chunk (every small one) is decoded straight from uWS's chunk,
   * without the copy and the concatenation a multi-chunk body needs. No promise, and one closure per request (uWS's
   * onData callback names no request): the reader's state is the input's.
   */
  const readBody = (input: RouteInput<Res>): void => {
    input.state.reading = input
    io.onData(input.state.res, (chunk, isLast) => { bodyChunk(input, chunk, isLast) })
  }

  const bodyChunk = (input: RouteInput<Res>, chunk: ArrayBuffer | Buffer, isLast: boolean): void => {
    if (input.body !== undefined) return
    const total = (input.bytesRead += chunk.byteLength)
    if (total > bodyLimitBytes) {
      bodyRead(input, 'too_large')
      return
    }
    if (isLast && input.chunks === undefined) {
      bodyRead(input, { text: utf8Text(chunk), byteLength: total })
      return
    }
    // uWS neuters its chunk (an ArrayBuffer) when this callback returns: copy it. node's are ours to keep.
    const list = (input.chunks ??= [])
    list.push(chunk instanceof ArrayBuffer ? Buffer.from(new Uint8Array(chunk)) : chunk)
    if (isLast) bodyRead(input, { text: utf8Text(Buffer.concat(list, total)), byteLength: total })
  }

  /** The body as read, or why there is none (the client went away): runs the request, once. Once the body is read,
   * the handler that runs sees `state.aborted` itself. */
  const bodyRead = (input: RouteInput<Res>, read: BodyRead): void => {
    if (input.body !== undefined) return
    input.body = read
    input.state.reading = undefined
    void handleRequest(input)
  }

  const tooLarge = () => new HttpProblem(413, 'payload_too_large', `The request body exceeds the limit of ${bodyLimitBytes} bytes.`)

  const handleRequest = async (input: RouteInput<Res>): Promise<void> => {
    const { state, c } = input
    try {
      let bodyText: BodyText | undefined
      if (input.body !== undefined && input.body !== 'empty') {
        const read = input.body
        if (read === 'aborted') return
        if (read === 'too_large') {
          // The client may still be sending: close the connection rather than read the rest.
          send(state, problemReply(tooLarge(), true))
          return
        }
        bodyText = read
      }
      // Who is counted: a valid bearer token counts on its wallet, anything else on the client address (already
      // admitted in the synchronous part when no token was sent).
      let session: Session | undefined
      if (input.token !== undefined && options.authenticate !== undefined) {
        const found = options.authenticate(input.token)
        if (found instanceof Promise) {
          session = await found
          if (state.aborted) return
        } else {
          session = found
        }
        if (!admit(state, session === undefined ? 'client' : 'wallet', session === undefined ? clientKeyOfState(state) : session.address)) return
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
      if (input.body === 'empty' || (c.bodyOptional && bodyText?.byteLength === 0)) {
        body = {}
      } else if (bodyText !== undefined) {
        const { text } = bodyText
        try {
          if (text === undefined) throw new TypeError('not UTF-8')
          body = JSON.parse(text)
        } catch {
          throw new HttpProblem(400, 'malformed_json', 'The request body is not valid UTF-8 JSON.')
        }
        const duplicate = duplicateKeyPointer(text, body)
        if (duplicate !== undefined) {
          throw new HttpProblem(400, 'duplicate_json_key', `The request body names the key at ${duplicate} twice; which one would count is ambiguous.`, {
            title: 'Duplicate JSON key',
            errors: [{ path: `/body${duplicate}`, message: 'duplicate key' }],
          })
        }
      }
      // A route without path parameters and a request without a query make no object and no issue list (issue 11).
      let issues: ValidationIssue[] | undefined
      let params: Record<string, string> = NO_VALUES
      let query: Record<string, string | number> = NO_VALUES
      if (c.paramNames.length > 0) params = decodeParams(c.paramNames, input.rawParams, (issues ??= []))
      if (input.rawQuery !== '') query = parseQuery(input.rawQuery, c.integerQuery, (issues ??= []))
      if (c.params !== undefined && !c.params.check(params)) (issues ??= []).push(...c.params.issues(params, '/params'))
      if (c.query !== undefined) {
        if (!c.query.check(query)) (issues ??= []).push(...c.query.issues(query, '/query'))
      } else if (query !== NO_VALUES) {
        for (const name of Object.keys(query)) (issues ??= []).push({ path: `/query/${name}`, message: 'unknown field' })
      }
      if (c.body !== undefined && !c.body.check(body)) (issues ??= []).push(...c.body.issues(body, '/body'))
      if (issues !== undefined && issues.length > 0) throw validationProblem(issues)

      const result = await c.route.handler(new HandlerContext(state, c.route, params, query, body, session, input.headers))
      if (state.aborted) return
      // What the answer cost beyond the token that admitted it (a page of 100 items costs 100).
      if (c.route.cost !== undefined && limiter !== undefined && state.rate !== undefined && result.status < 300) {
        const extra = c.route.cost(result.body) - 1
        if (extra > 0) state.rate.decision = limiter.charge(`${state.rate.policy}:${state.rate.key}`, nowMs(), extra)
      }
      // Serialized before the barrier: the answer is what memory held now, shown once the disk has caught up.
      const reply = serialize(state, c, result)
      if (c.route.method === 'get' && options.readBarrier !== undefined && c.route.ownReadBarrier !== true) {
        await options.readBarrier()
        if (state.aborted) return
      }
      send(state, reply)
    } catch (error) {
      fail(state, error)
    } finally {
      inFlight.delete(state)
      if (inFlight.size === 0) drained?.()
    }
  }

  /** An immutable route's answer: built once, then served from memory by representation and validator. */
  const documentReply = async (state: RequestState<Res>, c: CompiledRoute, headers: Record<string, string>): Promise<Reply> => {
    const revision = c.route.documentRevision?.() ?? 0
    if (revision !== c.documentRevision) {
      c.document = undefined
      c.documentRevision = revision
    }
    c.document ??= (async () => {
      const result = await c.route.handler({ params: {}, query: {}, body: undefined, session: undefined, headers: {}, clientKey: '', signal: signalOf(state), route: c.route })
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

  const serialize = (state: RequestState<Res>, c: CompiledRoute, result: { status: number; body: unknown; headers?: Record<string, string> }): Reply => {
    const spec = c.route.responses[result.status]
    if (spec === undefined) {
      log({ level: 'error', msg: 'undeclared_status', method: state.method, path: state.path, status: result.status })
      return problemReply(internalError())
    }
    const validator = c.responses.get(result.status)
    const checked = validator === undefined ? undefined : checkedBody(result.body)
    if (validator !== undefined && !validator.check(checked)) {
      log({ level: 'error', msg: 'response_invalid', method: state.method, path: state.path, status: result.status, errors: validator.issues(checked, '/response') })
      return problemReply(internalError())
    }
    const contentType = spec.contentType ?? (result.status >= 400 ? PROBLEM_CONTENT_TYPE : JSON_TYPE)
    let body: string | undefined
    if (result.body !== undefined) {
      if (contentType === JSON_TYPE || isJsonType(contentType)) body = jsonText(result.body)
      else if (typeof result.body === 'string') body = result.body
      else throw new TypeError(`${state.method} ${state.path}: a ${contentType} body must be a string`)
    }
    const typed = result.body === undefined ? NO_FIELDS : contentTypeFieldsOf(contentType)
    if (result.headers === undefined) return { status: result.status, headers: typed, body }
    const headers = [...typed]
    for (const [name, value] of Object.entries(result.headers)) {
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

  /**
   * The fields a route with a body reads, after its own (whose values come first): such a request has a
   * Content-Length, so the field pass (AMBIGUOUS_LENGTH) runs anyway, and the same pass collects their values instead
   * of one `header` call (a crossing into C++ and a string) per name (issue 11). A route without a body reads its few
   * fields one by one: a GET from a browser has many more fields than it reads, and usually no pass.
   */
  const PASS_FIELDS = ['x-request-id', 'origin', 'authorization', 'content-length', 'content-type', 'transfer-encoding', ...(trustedProxies.size > 0 ? ['x-forwarded-for'] : [])]
  const [ID, ORIGIN, AUTHORIZATION, LENGTH, TYPE, TRANSFER, FORWARDED] = [0, 1, 2, 3, 4, 5, 6] as const
  /** A field's value: from the pass's `values` when there was one, else read alone. */
  const fieldOf = (req: Req, values: Array<string | undefined> | undefined, index: number, name: string): string => values === undefined ? io.header(req, name) : values[index] ?? ''

  const handlerFor = (c: CompiledRoute) => {
    const own = c.headerNames.length
    // A route with its own fields reads them in a pass even without a body: `header` would see only a repeated one's
    // first value (uWS), and an empty one as none.
    const names = c.body !== undefined ? [...c.headerNames, ...PASS_FIELDS] : own > 0 ? c.headerNames : undefined
    // Reused by every request of the route: filled and read synchronously, before the first await.
    const values: Array<string | undefined> | undefined = names === undefined ? undefined : new Array<string | undefined>(names.length)
    /** PASS_FIELDS' values, when the pass reads them. */
    const passed = c.body === undefined ? undefined : values
    return (res: Res, req: Req): void => {
      try {
        const fields = names === undefined ? 0 : io.fields(req, names, values, own)
        const state = passed === undefined ? begin(res, req) : begin(res, req, passed[own + ID] ?? '', passed[own + ORIGIN] ?? '')
        if (state === undefined) return
        // The request (uWS's HttpRequest is stack allocated) is read only here: copy everything needed before the first await.
        // X-Forwarded-For lives in the request, so it is copied now.
        if (trustedProxies.size > 0) state.forwardedFor = passed === undefined ? forwardedOf(req) : passed[own + FORWARDED] ?? ''
        const token = options.authenticate === undefined ? undefined : bearerToken(fieldOf(req, passed, own + AUTHORIZATION, 'authorization'))
        // Without a token the bucket is known now: refuse before reading a body. With one, after authentication.
        if (token === undefined && limiter !== undefined && !admit(state, 'client', clientKeyOfState(state))) return
        const declaredLength = fieldOf(req, passed, own + LENGTH, 'content-length')
        if (declaredLength !== '' && ((names === undefined ? io.fields(req, NO_NAMES) : fields) & AMBIGUOUS_LENGTH) !== 0) {
          send(state, problemReply(new HttpProblem(400, 'ambiguous_content_length', 'The request has two Content-Length fields, or one beside Transfer-Encoding: where its body ends is ambiguous.', { title: 'Ambiguous message length' }), true))
          return
        }
        let headers: Record<string, string> = NO_VALUES
        // An empty field is sent, not absent: `Idempotency-Key:` with no value is refused (invalid_idempotency_key),
        // never a request without a key, which the client would believe protected against a retry. A repeated one
        // comes joined (`k-1, k-2`), on either transport, and is refused too.
        for (let index = 0; index < own; index++) {
          const value = (values as Array<string | undefined>)[index]
          if (value === undefined) continue
          if (headers === NO_VALUES) headers = {}
          headers[c.headerNames[index] as string] = value
        }
        const rawParams = c.paramNames.length === 0 ? NO_PARAMS : c.paramNames.map((_, index) => io.parameter(req, index))
        const rawQuery = c.route.immutable === true ? '' : io.query(req) ?? ''
        if (c.route.immutable === true) {
          if (headers === NO_VALUES) headers = {}
          headers['accept-encoding'] = io.header(req, 'accept-encoding')
          headers['if-none-match'] = io.header(req, 'if-none-match')
        }
        const input: RouteInput<Res> = { state, c, rawParams, rawQuery, token, headers, body: undefined, bytesRead: 0, chunks: undefined }
        let reading = false
        if (c.body !== undefined) {
          const contentType = fieldOf(req, passed, own + TYPE, 'content-type')
          if (contentType === '' && c.bodyOptional && (declaredLength === '' || declaredLength === '0') && fieldOf(req, passed, own + TRANSFER, 'transfer-encoding') === '') {
            // An action whose body is optional, called without one.
            input.body = 'empty'
          } else if (contentType !== JSON_TYPE && contentType.split(';', 1)[0]?.trim().toLowerCase() !== JSON_TYPE) {
            send(state, problemReply(new HttpProblem(415, 'unsupported_media_type', `This route takes a JSON body: send content-type: ${JSON_TYPE}.`)))
            return
          } else if (declaredLength !== '' && Number(declaredLength) > bodyLimitBytes) {
            send(state, problemReply(tooLarge(), true))
            return
          } else if (declaredLength === '0' && fieldOf(req, passed, own + TRANSFER, 'transfer-encoding') === '') {
            // No body bytes to wait for: the pinned uWS build does not always call onData for an empty body (with the
            // front on its own thread, about one request in twenty waited until uWS's idle timeout closed it).
            input.body = EMPTY_BODY
          } else {
            reading = true
          }
        }
        // Counted from here (it may finish at once); it removes itself (no `.finally` promise per request).
        inFlight.add(state)
        // onData must be attached before this callback returns, or uWS drops the body.
        if (reading) readBody(input)
        else void handleRequest(input)
      } catch (error) {
        log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
      }
    }
  }

  const preflightFor = (allow: string) => (res: Res, req: Req): void => {
    try {
      const state = begin(res, req)
      if (state === undefined) return
      if (limiter !== undefined && !admit(state, 'client', peerOf(res, req))) return
      send(state, preflight(state, req, allow))
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  /** Refuses new requests (503) and closes every later answer's connection, waits for those in flight (up to the
   * timeout), then closes the connections of the ones still running. */
  const drain = async (timeoutMs: number): Promise<CloseResult> => {
    closing = true
    let timer: NodeJS.Timeout | undefined
    const outcome = inFlight.size === 0 ? 'drained' : await new Promise<'drained' | 'timeout'>((resolve) => {
      drained = () => resolve('drained')
      timer = setTimeout(() => resolve('timeout'), timeoutMs)
    })
    clearTimeout(timer)
    drained = undefined
    const abandoned = [...inFlight]
    for (const state of abandoned) {
      if (!state.aborted && !state.responded) {
        state.responded = true
        io.close(state.res)
      }
    }
    return { drained: outcome === 'drained', abandoned: abandoned.length }
  }

  /** Answers with a fixed problem (what a transport refuses itself, through the same ids, CORS and log). */
  const problemFor = (problem: HttpProblem, closeConnection = false) => (res: Res, req: Req): void => {
    try {
      const state = begin(res, req)
      if (state !== undefined) send(state, problemReply(problem, closeConnection))
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  /**
   * Counts a WebSocket upgrade like any other request: on the wallet of a bearer token whose session is known at once
   * (cached), else on the client address, so made-up tokens spend the address's bucket. False when it was answered
   * instead: 429 with an empty bucket, 503 while the service stops. Before, upgrades were served past any bucket (an
   * outsider's finding).
   */
  const admitUpgrade = (res: Res, req: Req): UpgradeGate | undefined => {
    const state = begin(res, req)
    if (state === undefined) return undefined
    if (limiter !== undefined) {
      const token = options.authenticate === undefined ? undefined : bearerToken(io.header(req, 'authorization'))
      const session = token === undefined ? undefined : options.authenticate?.(token)
      // A refused upgrade closes its connection: kept alive, it outlived the client's FIN until uWS's idle timeout and
      // counted against the address's connectionsPerClientMax meanwhile (test/stream/refused-upgrades.test.ts).
      const admitted = session !== undefined && !(session instanceof Promise) ? admit(state, 'wallet', session.address, true) : admit(state, 'client', peerOf(res, req), true)
      if (!admitted) return undefined
    }
    return {
      client: clientKeyOf(peerOf(res, req)),
      // As every answer (writeAnswer): X-Request-Id, the RateLimit fields of the bucket the upgrade was counted on,
      // CORS, the request log; and the connection closed after it.
      refuse: (problem) => send(state, problemReply(problem, true)),
      aborted: () => state.aborted,
      opened: () => {
        if (state.aborted || state.responded) return
        state.responded = true
        if (requestLog) logAnswered(state, 101)
      },
    }
  }

  return { log, compiled, allowOf, mintRequestId, handlerFor, preflightFor, fallback, problemFor, drain, admitUpgrade, inFlight: () => inFlight.size }
}
