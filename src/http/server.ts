// uWebSockets.js transport: routing, body reading, validation, authentication, rate limiting, problem responses,
// logging and graceful shutdown. Handlers hold no transport code and no business rule of their own: they call one
// engine command and return `{ status, body }`.
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket, type us_socket } from 'uWebSockets.js'
import { openObjectPaths } from '../api/common.ts'
import { errorFields, stdoutLogger, type Logger } from './log.ts'
import { HttpProblem, PROBLEM_CONTENT_TYPE, type ValidationIssue } from './problem.ts'
import { DEFAULT_RATE_LIMIT, RateLimiter, type RateLimitOptions } from './rate-limit.ts'
import { pathParamNames, statusLine, templateRegExp, toUwsPattern, type AnyRoute, type HttpMethod, type Session } from './route.ts'
import { compileSchema, type CompiledSchema } from './validate.ts'

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
  /** Token bucket per client address; `false` disables it. */
  rateLimit?: RateLimitOptions | false
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

interface CompiledRoute {
  route: AnyRoute
  paramNames: string[]
  params: CompiledSchema | undefined
  query: CompiledSchema | undefined
  body: CompiledSchema | undefined
  responses: Map<number, CompiledSchema | undefined>
  headerNames: readonly string[]
}

interface RequestState {
  res: HttpResponse
  method: string
  path: string
  startNs: bigint
  aborted: boolean
  responded: boolean
  controller: AbortController
}

type Reply = { status: number; headers: Array<[string, string]>; body: string | undefined; closeConnection?: boolean }

const JSON_TYPE = 'application/json'

function isJsonType(contentType: string): boolean {
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? ''
  return mediaType === JSON_TYPE || mediaType.endsWith('+json')
}

function problemReply(problem: HttpProblem, closeConnection = false): Reply {
  const headers: Array<[string, string]> = [['content-type', PROBLEM_CONTENT_TYPE]]
  for (const [name, value] of Object.entries(problem.headers ?? {})) headers.push([name, value])
  return { status: problem.status, headers, body: JSON.stringify(problem.toBody()), closeConnection }
}

function validationProblem(issues: ValidationIssue[]): HttpProblem {
  return new HttpProblem(400, 'validation_failed', 'The request does not match the documented schema.', { errors: issues })
}

const internalError = () => new HttpProblem(500, 'internal_error', 'The service failed to handle the request; it has been logged.')

function compileRoutes(routes: readonly AnyRoute[], options: ServerOptions): CompiledRoute[] {
  const seen = new Set<string>()
  const operationIds = new Set<string>()
  return routes.map((route) => {
    const where = `${route.method.toUpperCase()} ${route.path}`
    if (!route.path.startsWith('/')) throw new Error(`${where}: path must start with /`)
    const key = `${route.method} ${route.path.replace(/\{[^}]+\}/g, '{}')}`
    if (seen.has(key)) throw new Error(`${where}: declared twice`)
    seen.add(key)
    if (operationIds.has(route.operationId)) throw new Error(`${where}: operationId ${route.operationId} declared twice`)
    operationIds.add(route.operationId)
    const paramNames = pathParamNames(route.path)
    const declared = Object.keys((route.params as { properties?: object } | undefined)?.properties ?? {})
    if (paramNames.length !== declared.length || paramNames.some((name) => !declared.includes(name))) {
      throw new Error(`${where}: params schema properties [${declared.join(', ')}] must be the path parameters [${paramNames.join(', ')}]`)
    }
    for (const [part, schema] of [['params', route.params], ['query', route.query], ['body', route.body]] as const) {
      if (schema === undefined) continue
      const open = openObjectPaths(schema)
      if (open.length > 0) throw new Error(`${where}: ${part} schema has open objects at ${open.join(', ')}; use Strict(...)`)
    }
    if (route.body !== undefined && (route.method === 'get' || route.method === 'delete')) throw new Error(`${where}: a ${route.method} route takes no body`)
    const statuses = Object.keys(route.responses).map(Number)
    if (!statuses.some((status) => status >= 200 && status < 300)) throw new Error(`${where}: no success response documented`)
    if (route.auth === 'session' && options.authenticate === undefined) throw new Error(`${where}: auth 'session' needs the authenticate option`)
    const responses = new Map<number, CompiledSchema | undefined>()
    for (const status of statuses) {
      const schema = route.responses[status]?.schema
      responses.set(status, options.validateResponses === true && schema !== undefined ? compileSchema(schema) : undefined)
    }
    return {
      route,
      paramNames,
      params: route.params === undefined ? undefined : compileSchema(route.params),
      query: route.query === undefined ? undefined : compileSchema(route.query),
      body: route.body === undefined ? undefined : compileSchema(route.body),
      responses,
      headerNames: (route.headers ?? []).map((name) => name.toLowerCase()),
    }
  })
}

function parseQuery(raw: string): { values: Record<string, string>; issues: ValidationIssue[] } {
  const values: Record<string, string> = {}
  const issues: ValidationIssue[] = []
  if (raw === '') return { values, issues }
  for (const [name, value] of new URLSearchParams(raw)) {
    if (Object.hasOwn(values, name)) issues.push({ path: `/query/${name}`, message: 'repeated parameter' })
    values[name] = value
  }
  return { values, issues }
}

function decodeParams(names: string[], raw: string[]): { values: Record<string, string>; issues: ValidationIssue[] } {
  const values: Record<string, string> = {}
  const issues: ValidationIssue[] = []
  names.forEach((name, index) => {
    try {
      values[name] = decodeURIComponent(raw[index] ?? '')
    } catch {
      issues.push({ path: `/params/${name}`, message: 'malformed percent-encoding' })
    }
  })
  return { values, issues }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Starts listening; resolves once the socket is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log ?? stdoutLogger
  const host = options.host ?? '127.0.0.1'
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES
  if (!(Number.isInteger(bodyLimitBytes) && bodyLimitBytes > 0)) throw new RangeError('bodyLimitBytes must be a positive integer')
  const nowMs = options.nowMs ?? Date.now
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT)
  const compiled = compileRoutes(options.routes, options)
  const matchers = compiled.map((c) => ({ method: c.route.method, regexp: templateRegExp(c.route.path) }))
  const inFlight = new Map<RequestState, Promise<void>>()
  let closing = false
  let closePromise: Promise<CloseResult> | undefined

  const send = (state: RequestState, reply: Reply): void => {
    if (state.aborted || state.responded) return
    state.responded = true
    // During shutdown every answer closes its connection, so keep-alive clients go away with it.
    const closeConnection = reply.closeConnection === true || closing
    state.res.cork(() => {
      state.res.writeStatus(statusLine(reply.status))
      for (const [name, value] of reply.headers) state.res.writeHeader(name, value)
      if (reply.body === undefined) state.res.endWithoutBody(undefined, closeConnection)
      else state.res.end(reply.body, closeConnection)
    })
    log({ level: 'info', msg: 'request', method: state.method, path: state.path, status: reply.status, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
  }

  const fail = (state: RequestState, error: unknown): void => {
    if (error instanceof HttpProblem) {
      send(state, problemReply(error))
      return
    }
    log({ level: 'error', msg: 'handler_failed', method: state.method, path: state.path, ...errorFields(error) })
    send(state, problemReply(internalError()))
  }

  /** Shared entry: abort hook, bookkeeping, shutdown and rate limit. Returns undefined when already answered. */
  const begin = (res: HttpResponse, req: HttpRequest): RequestState | undefined => {
    const state: RequestState = {
      res,
      method: req.getCaseSensitiveMethod(),
      path: req.getUrl(),
      startNs: process.hrtime.bigint(),
      aborted: false,
      responded: false,
      controller: new AbortController(),
    }
    // uWS requires the abort handler before any asynchronous step; after it fires `res` must not be touched.
    res.onAborted(() => {
      state.aborted = true
      state.controller.abort()
      if (!state.responded) log({ level: 'info', msg: 'request', method: state.method, path: state.path, status: null, aborted: true, micros: Number((process.hrtime.bigint() - state.startNs) / 1000n) })
    })
    if (closing) {
      send(state, problemReply(new HttpProblem(503, 'shutting_down', 'The service is shutting down; retry on another instance or later.'), true))
      return undefined
    }
    if (limiter !== undefined) {
      const client = Buffer.from(res.getRemoteAddressAsText()).toString('utf8')
      const decision = limiter.take(client, nowMs())
      if (!decision.allowed) {
        send(state, problemReply(new HttpProblem(429, 'rate_limited', `Too many requests from this address; retry in ${decision.retryAfterSeconds} s.`, { headers: { 'retry-after': String(decision.retryAfterSeconds) } })))
        return undefined
      }
    }
    return state
  }

  const fallback = (res: HttpResponse, req: HttpRequest): void => {
    try {
      const state = begin(res, req)
      if (state === undefined) return
      const allowed = [...new Set(matchers.filter((m) => m.regexp.test(state.path)).map((m) => m.method.toUpperCase()))]
      if (allowed.length === 0) {
        send(state, problemReply(new HttpProblem(404, 'not_found', `No route ${state.path}.`)))
      } else {
        send(state, problemReply(new HttpProblem(405, 'method_not_allowed', `${state.method} is not allowed on ${state.path}; allowed: ${allowed.join(', ')}.`, { headers: { allow: allowed.join(', ') } })))
      }
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  const readBody = (state: RequestState): Promise<Buffer | 'too_large' | 'aborted'> =>
    new Promise((resolve) => {
      const chunks: Buffer[] = []
      let total = 0
      let finished = false
      state.controller.signal.addEventListener('abort', () => {
        finished = true
        resolve('aborted')
      }, { once: true })
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
    authorization: string
    headers: Record<string, string>
    clientIp: string
    body: Promise<Buffer | 'too_large' | 'aborted'> | undefined
  }): Promise<void> => {
    try {
      let bodyBytes: Buffer | undefined
      if (input.body !== undefined) {
        const read = await input.body
        if (read === 'aborted') return
        if (read === 'too_large') {
          // The client may still be sending: close the connection rather than read the rest.
          send(state, problemReply(tooLarge(), true))
          return
        }
        bodyBytes = read
      }
      let session: Session | undefined
      if (c.route.auth === 'session') {
        const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(input.authorization)
        if (match === null) throw new HttpProblem(401, 'unauthorized', 'This route needs an Authorization: Bearer <token> header from POST /auth/session.', { headers: { 'www-authenticate': 'Bearer' } })
        session = await options.authenticate!(match[1] as string)
        if (session === undefined) throw new HttpProblem(401, 'unauthorized', 'The bearer token is unknown or expired; sign in again.', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
        if (state.aborted) return
      }
      let body: unknown
      if (bodyBytes !== undefined) {
        try {
          body = JSON.parse(utf8.decode(bodyBytes))
        } catch {
          throw new HttpProblem(400, 'malformed_json', 'The request body is not valid UTF-8 JSON.')
        }
      }
      const params = decodeParams(c.paramNames, input.rawParams)
      const query = parseQuery(input.rawQuery)
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
        clientIp: input.clientIp,
        signal: state.controller.signal,
      })
      if (state.aborted) return
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

  const serialize = (state: RequestState, c: CompiledRoute, result: { status: number; body: unknown; headers?: Record<string, string> }): Reply => {
    const spec = c.route.responses[result.status]
    if (spec === undefined) {
      log({ level: 'error', msg: 'undeclared_status', method: state.method, path: state.path, status: result.status })
      return problemReply(internalError())
    }
    const validator = c.responses.get(result.status)
    if (validator !== undefined && !validator.check(result.body)) {
      log({ level: 'error', msg: 'response_invalid', method: state.method, path: state.path, status: result.status, errors: validator.issues(result.body, '/response') })
      return problemReply(internalError())
    }
    const contentType = spec.contentType ?? (result.status >= 400 ? PROBLEM_CONTENT_TYPE : JSON_TYPE)
    const headers: Array<[string, string]> = []
    let body: string | undefined
    if (result.body !== undefined) {
      headers.push(['content-type', contentType])
      if (isJsonType(contentType)) body = JSON.stringify(result.body)
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
      const rawParams = c.paramNames.map((_, index) => req.getParameter(index))
      const rawQuery = req.getQuery() ?? ''
      const authorization = c.route.auth === 'session' ? req.getHeader('authorization') : ''
      const headers: Record<string, string> = {}
      for (const name of c.headerNames) {
        const value = req.getHeader(name)
        if (value !== '') headers[name] = value
      }
      const clientIp = Buffer.from(res.getRemoteAddressAsText()).toString('utf8')
      let body: Promise<Buffer | 'too_large' | 'aborted'> | undefined
      if (c.body !== undefined) {
        const contentType = req.getHeader('content-type')
        if (contentType.split(';', 1)[0]?.trim().toLowerCase() !== JSON_TYPE) {
          send(state, problemReply(new HttpProblem(415, 'unsupported_media_type', `This route takes a JSON body: send content-type: ${JSON_TYPE}.`)))
          return
        }
        const declaredLength = req.getHeader('content-length')
        if (declaredLength !== '' && Number(declaredLength) > bodyLimitBytes) {
          send(state, problemReply(tooLarge(), true))
          return
        }
        // onData must be attached before this callback returns, or uWS drops the body.
        body = readBody(state)
      }
      const work = handleRequest(state, c, { rawParams, rawQuery, authorization, headers, clientIp, body })
        .finally(() => inFlight.delete(state))
      inFlight.set(state, work)
    } catch (error) {
      log({ level: 'error', msg: 'transport_failed', ...errorFields(error) })
    }
  }

  const app: TemplatedApp = uWS.App()
  const register: Record<HttpMethod, (pattern: string, handler: (res: HttpResponse, req: HttpRequest) => void) => TemplatedApp> = {
    get: (p, h) => app.get(p, h),
    post: (p, h) => app.post(p, h),
    put: (p, h) => app.put(p, h),
    patch: (p, h) => app.patch(p, h),
    delete: (p, h) => app.del(p, h),
  }
  const patterns = new Set<string>()
  for (const c of compiled) {
    const pattern = toUwsPattern(c.route.path)
    register[c.route.method](pattern, handlerFor(c))
    patterns.add(pattern)
  }
  // Every known pattern answers other methods with 405; everything else is a 404.
  for (const pattern of patterns) app.any(pattern, fallback)
  app.any('/*', fallback)

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(host, options.port ?? 0, (socket) => {
      if (socket === false) reject(new Error(`cannot listen on ${host}:${options.port ?? 0}`))
      else resolve(socket)
    })
  })
  const port = uWS.us_socket_local_port(listenSocket as unknown as us_socket)
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  log({ level: 'info', msg: 'listening', host, port, routes: compiled.length })

  const close = async (timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS): Promise<CloseResult> => {
    closing = true
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
