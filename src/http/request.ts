// The request side of the transport, free of uWS state: route compilation (schemas, parameters, responses), query
// and path parameter decoding, content types, bearer tokens, ambiguous lengths, problem replies and ETag matching.
import type { HttpRequest } from 'uWebSockets.js'
import { openObjectPaths } from '../api/common.ts'
import type { DocumentVariants } from './document-cache.ts'
import { HttpProblem, PROBLEM_CONTENT_TYPE, type ValidationIssue } from './problem.ts'
import { pathParamNames, type AnyRoute } from './route.ts'
import type { ServerOptions } from './server.ts'
import { compileSchema, type CompiledSchema } from './validate.ts'

export interface CompiledRoute {
  route: AnyRoute
  paramNames: string[]
  params: CompiledSchema | undefined
  query: CompiledSchema | undefined
  /** Query parameters declared integer: their string values are converted before validation. */
  integerQuery: ReadonlySet<string>
  body: CompiledSchema | undefined
  /** The body schema accepts `{}`: an empty POST (no body, or an empty JSON body) means `{}`. */
  bodyOptional: boolean
  responses: Map<number, CompiledSchema | undefined>
  headerNames: readonly string[]
  /** Built on the first request of an immutable route (again when its documentRevision changed). */
  document: Promise<DocumentVariants> | undefined
  /** The route's documentRevision() the document was built at. */
  documentRevision: number
}

export type Reply = { status: number; headers: Array<[string, string]>; body: string | Buffer | undefined; closeConnection?: boolean }

export const JSON_TYPE = 'application/json'

/**
 * A response body already written as JSON (a route that serialized its answer in one pass, api/wire.ts wireJson):
 * sent as it is, and parsed only when responses are validated, so the check sees exactly the bytes on the wire.
 */
export class JsonText {
  constructor(readonly json: string) {}
}

/** The body a validator checks: a JsonText as the value its bytes denote. */
export const checkedBody = (body: unknown): unknown => (body instanceof JsonText ? JSON.parse(body.json) : body)

/** The text of a JSON body. */
export const jsonText = (body: unknown): string => (body instanceof JsonText ? body.json : JSON.stringify(body))

export function isJsonType(contentType: string): boolean {
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? ''
  return mediaType === JSON_TYPE || mediaType.endsWith('+json')
}

export function problemReply(problem: HttpProblem, closeConnection = false): Reply {
  const headers: Array<[string, string]> = [['content-type', PROBLEM_CONTENT_TYPE]]
  for (const [name, value] of Object.entries(problem.headers ?? {})) headers.push([name, value])
  return { status: problem.status, headers, body: JSON.stringify(problem.toBody()), closeConnection }
}

export function validationProblem(issues: ValidationIssue[]): HttpProblem {
  return new HttpProblem(400, 'validation_failed', 'The request does not match the documented schema.', { errors: issues })
}

export const internalError = () => new HttpProblem(500, 'internal_error', 'The service failed to handle the request; it has been logged.')

export function compileRoutes(routes: readonly AnyRoute[], options: Pick<ServerOptions, 'authenticate' | 'validateResponses'>): CompiledRoute[] {
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
    if (route.immutable === true && (route.method !== 'get' || route.auth !== 'none' || route.params !== undefined || route.query !== undefined)) {
      throw new Error(`${where}: an immutable route is a public GET without parameters`)
    }
    if ((route.headers?.length ?? 0) > ROUTE_HEADERS_MAX) throw new Error(`${where}: more than ${ROUTE_HEADERS_MAX} request headers`)
    const responses = new Map<number, CompiledSchema | undefined>()
    for (const status of statuses) {
      const schema = route.responses[status]?.schema
      responses.set(status, options.validateResponses === true && schema !== undefined ? compileSchema(schema) : undefined)
    }
    const body = route.body === undefined ? undefined : compileSchema(route.body)
    return {
      route,
      paramNames,
      params: route.params === undefined ? undefined : compileSchema(route.params),
      query: route.query === undefined ? undefined : compileSchema(route.query),
      integerQuery: integerProperties(route.query),
      body,
      bodyOptional: body !== undefined && body.check({}),
      responses,
      headerNames: (route.headers ?? []).map((name) => name.toLowerCase()),
      document: undefined,
      documentRevision: 0,
    }
  })
}

/** Integer query values as numbers: plain decimal only, so that `01`, `1e3`, `0x10` and ` 1` stay strings and fail. */
export const INTEGER_TEXT = /^-?(0|[1-9][0-9]{0,15})$/

/** The query's values; a repeated parameter is added to `issues`. */
export function parseQuery(raw: string, integers: ReadonlySet<string>, issues: ValidationIssue[]): Record<string, string | number> {
  const values: Record<string, string | number> = {}
  if (raw === '') return values
  for (const [name, value] of new URLSearchParams(raw)) {
    if (Object.hasOwn(values, name)) issues.push({ path: `/query/${name}`, message: 'repeated parameter' })
    values[name] = integers.has(name) && INTEGER_TEXT.test(value) ? Number(value) : value
  }
  return values
}

export function integerProperties(schema: unknown): Set<string> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {}
  return new Set(Object.entries(properties).filter(([, p]) => p.type === 'integer').map(([name]) => name))
}

/** A caller's X-Request-Id is echoed only when it cannot break a header or a log line. */
export const REQUEST_ID = /^[A-Za-z0-9._~:@+/=-]{1,128}$/

const SPACE = 0x20
const BEARER = 'bearer'

/**
 * The token of `Bearer <token>`: the scheme in any case, one or more spaces, the token (no space in it), trailing
 * spaces and nothing else (what /^Bearer[ ]+([^ ]+)[ ]*$/i matched; a scan instead of the expression's match array,
 * on every signed-in request, issue 11). Undefined for anything else.
 */
export function bearerToken(authorization: string): string | undefined {
  const length = authorization.length
  if (length < BEARER.length + 2) return undefined
  // ASCII letters only: without the u flag an `i` expression never folds a non-ASCII character to an ASCII one.
  for (let i = 0; i < BEARER.length; i++) if ((authorization.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return undefined
  let at = BEARER.length
  if (authorization.charCodeAt(at) !== SPACE) return undefined
  while (at < length && authorization.charCodeAt(at) === SPACE) at++
  const start = at
  while (at < length && authorization.charCodeAt(at) !== SPACE) at++
  if (at === start) return undefined
  const end = at
  while (at < length && authorization.charCodeAt(at) === SPACE) at++
  return at === length ? authorization.slice(start, end) : undefined
}

/** `TransportIo.fields`' bit for two Content-Length fields, or one beside Transfer-Encoding (request smuggling). */
export const AMBIGUOUS_LENGTH = 1
/** The most header names a route may list (each is compared with every field of each of its requests, `TransportIo.fields`). */
export const ROUTE_HEADERS_MAX = 30

/**
 * `TransportIo.fields` from a request's raw fields (name, value, name, value... as sent; node's `rawHeaders`): one
 * scan, each name lower-cased, the same tallies and values as uwsFields.
 */
export function rawFields(raw: readonly string[], wanted: readonly string[], values?: Array<string | undefined>, own = 0): number {
  startTally(wanted, values, own)
  for (let i = 0; i + 1 < raw.length; i += 2) countField((raw[i] as string).toLowerCase(), raw[i + 1] as string)
  return endTally()
}

/**
 * uWS's request as `TransportIo.fields`: one `forEach` over its fields with one callback made once, its tallies in
 * module variables (forEach is synchronous): no array of names and no closure per request (issue 11). With `values`,
 * the same pass also keeps each wanted field's first value (uWS's getHeader answers the first), `undefined` when absent;
 * the first `own` names (the route's own fields) and X-Forwarded-For keep every value instead, joined by `, ` (RFC
 * 9110 section 5.3).
 */
export function uwsFields(req: HttpRequest, wanted: readonly string[], values?: Array<string | undefined>, own = 0): number {
  startTally(wanted, values, own)
  req.forEach(countField)
  return endTally()
}

const NO_NAMES: readonly string[] = []
let tallyWanted = NO_NAMES
let tallyValues: Array<string | undefined> | undefined
let tallyOwn = 0
let tallyLengths = 0
let tallyChunked = false
function startTally(wanted: readonly string[], values: Array<string | undefined> | undefined, own: number): void {
  tallyWanted = wanted
  tallyValues = values
  tallyOwn = own
  values?.fill(undefined)
  tallyLengths = 0
  tallyChunked = false
}
function countField(name: string, value: string): void {
  if (name === 'content-length') tallyLengths++
  else if (name === 'transfer-encoding') tallyChunked = true
  if (tallyValues === undefined) return
  const index = tallyWanted.indexOf(name)
  if (index < 0) return
  const held = tallyValues[index]
  if (held === undefined) tallyValues[index] = value
  // A route's own field sent twice reaches it as one list (`k-1, k-2`, as node:http joins it), never as its first
  // value alone: an Idempotency-Key is a single item, so two are refused (invalid_idempotency_key), not half used.
  // X-Forwarded-For is a list too: a trusted proxy may add its hop as a field of its own, after the client's.
  else if (index < tallyOwn || name === 'x-forwarded-for') tallyValues[index] = `${held}, ${value}`
}
function endTally(): number {
  tallyWanted = NO_NAMES
  tallyValues = undefined
  tallyOwn = 0
  return tallyLengths > 1 || (tallyLengths > 0 && tallyChunked) ? AMBIGUOUS_LENGTH : 0
}

/** The path parameters' values; a malformed percent-encoding is added to `issues`. */
export function decodeParams(names: string[], raw: string[], issues: ValidationIssue[]): Record<string, string> {
  const values: Record<string, string> = {}
  names.forEach((name, index) => {
    try {
      values[name] = decodeURIComponent(raw[index] ?? '')
    } catch {
      issues.push({ path: `/params/${name}`, message: 'malformed percent-encoding' })
    }
  })
  return values
}

export const utf8 = new TextDecoder('utf-8', { fatal: true })


/** If-None-Match against one strong ETag, by the weak comparison RFC 9110 prescribes for it (W/ ignored). */
export function matchesEtag(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === '') return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag)
}
