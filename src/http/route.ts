// The route table: each route is a declarative definition from which the server builds its validators and the
// OpenAPI builder builds the document. Handler parameter and result types are inferred from the TypeBox schemas.
import type { Static, TSchema } from 'typebox'
import type { Address } from 'viem'

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'
export type AuthMode = 'none' | 'session'

export interface ResponseSpec {
  description: string
  /** Body schema. For an error status without a schema, the Problem schema is documented. */
  schema?: TSchema
  /** Defaults to application/json (application/problem+json for an error status). */
  contentType?: string
  /** Response headers this answer carries besides the ones every answer has (names of `RESPONSE_HEADERS`). */
  headers?: readonly ResponseHeaderName[]
}

/**
 * The response headers the document declares. Every answer carries x-request-id, and ratelimit-policy and ratelimit
 * when the limiter is on; the others where a route or the transport says so.
 */
export const RESPONSE_HEADERS = {
  'x-request-id': 'Identifies this request in the service\'s logs: the caller\'s own X-Request-Id when it sent a sane one (1 to 128 of A-Z a-z 0-9 . _ ~ : @ + / = -), otherwise one minted by the service.',
  'ratelimit-policy': 'The quota policy this request was counted on (draft-ietf-httpapi-ratelimit-headers): "wallet" (a signed-in wallet) or "client" (a client address), q tokens refilled over w seconds.',
  ratelimit: 'What is left of that quota: r tokens remain, the bucket is full again in t seconds (draft-ietf-httpapi-ratelimit-headers). A list page costs its item count.',
  'retry-after': 'Seconds to wait before retrying.',
  'www-authenticate': 'The authentication scheme (Bearer) and, for a rejected token, error="invalid_token".',
  link: 'RFC 8288 link to the next page: <path?limit=...&after=...>; rel="next". Absent on the last page.',
  'next-after': 'registrationSeq to pass as ?after= for the next page. Absent on the last page.',
  'idempotent-replayed': 'true when this is the stored answer of an earlier request with the same Idempotency-Key.',
  etag: 'Strong validator of this representation; send it back in If-None-Match to get a 304.',
  'cache-control': 'How long the representation may be reused.',
} as const
export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS

export type ResponsesSpec = { readonly [status: number]: ResponseSpec }

/** The authenticated caller of an `auth: 'session'` route. */
export interface Session {
  /** The wallet that signed in, EIP-55 checksummed. */
  address: Address
  /** SHA-256 of the bearer token (hex): names the session to revoke. */
  tokenHash?: string
}

type StaticOr<S, Fallback> = S extends TSchema ? Static<S> : Fallback

export interface RouteContext<P, Q, B, A extends AuthMode> {
  params: P
  query: Q
  body: B
  /** Present exactly on `auth: 'session'` routes. */
  session: A extends 'session' ? Session : undefined
  /** The request headers listed in the route's `headers`, lower-case names, copied before any await. */
  headers: Readonly<Record<string, string>>
  /**
   * The client, as the service counts clients (clientKeyOf: an address, an IPv6 /64) of the address the request came
   * from: the socket's peer, the front's PROXY header, or what a trusted proxy forwarded. The rate limiter's key of an
   * anonymous request; '' once the client went away.
   */
  clientKey: string
  /** Aborted when the client goes away; the server never writes to an aborted response. */
  signal: AbortSignal
  /** The route answering the request, as declared: its path template, its flags. */
  route: AnyRoute
}

type BodyOf<Spec> = Spec extends { schema: infer S extends TSchema } ? Static<S> : undefined

/** One of the documented responses: the status picks the body type. */
export type RouteResult<R extends ResponsesSpec> = {
  [S in keyof R & number]: { status: S; body: BodyOf<R[S]>; headers?: Record<string, string> }
}[keyof R & number]

export interface RouteSpec<
  P extends TSchema | undefined = TSchema | undefined,
  Q extends TSchema | undefined = TSchema | undefined,
  B extends TSchema | undefined = TSchema | undefined,
  R extends ResponsesSpec = ResponsesSpec,
  A extends AuthMode = AuthMode,
> {
  method: HttpMethod
  /** OpenAPI style template: `/credit/jobs/{jobId}/complete`. */
  path: string
  operationId: string
  /** Who may call it, in a few words ("public", "the offer's borrower"): the one declaration OpenAPI (a line of the description and x-callers), the catalog and the README's table say. */
  callers: string
  summary: string
  description?: string
  tags?: readonly string[]
  auth: A
  /** Object schema of the path parameters, one string property per `{name}` of the path. */
  params?: P
  /** Object schema of the query string; values arrive as strings. */
  query?: Q
  /** JSON body schema; a route with a body accepts only `application/json`. */
  body?: B
  /** Request headers (lower case) the handler needs, e.g. `idempotency-key`. */
  headers?: readonly string[]
  /**
   * The answer is the same for the whole life of the process (the discovery documents): it is built on the first
   * request, then served from memory with a strong ETag, Cache-Control, 304 on If-None-Match and gzip or br when
   * accepted; query parameters are ignored (cache busters such as ?v=1 are common on such documents).
   */
  immutable?: boolean
  /**
   * An immutable route whose document may change a few times in the process's life (the catalog once a value the start
   * could not read is read): the document is built again at the first request that finds this number changed (a new
   * ETag). Undefined: built once.
   */
  documentRevision?: () => number
  /** Tokens of the rate limit the answer costs (default 1): a list page costs its item count. */
  cost?: (body: unknown) => number
  /**
   * A GET whose handler waits for the store's durability itself, so the server's read barrier (readBarrier) is skipped:
   * GET /health, which must answer while the store's writes stall instead of waiting with every other read.
   */
  ownReadBarrier?: boolean
  /**
   * Whether a request's first run with a new Idempotency-Key is charged to the keyed-request store budget (its answer
   * is kept idempotencyRetentionSeconds; src/api/routes/shared.ts mutate): true unless declared false, which a route
   * may be only when each of its runs needs what costs money or is bounded elsewhere. The OpenAPI document says which
   * (x-keyed-requests-charged).
   */
  keyedRequestsCharged?: boolean
  responses: R
  handler: (ctx: RouteContext<StaticOr<P, Record<string, never>>, StaticOr<Q, Record<string, never>>, StaticOr<B, undefined>, A>) => RouteResult<NoInfer<R>> | Promise<RouteResult<NoInfer<R>>>
}

/** A route with its types erased, as stored in the table. */
export interface AnyRoute {
  method: HttpMethod
  path: string
  operationId: string
  /** Who may call it, in a few words ("public", "the offer's borrower"): the one declaration OpenAPI (a line of the description and x-callers), the catalog and the README's table say. */
  callers: string
  summary: string
  description?: string
  tags?: readonly string[]
  auth: AuthMode
  params?: TSchema
  query?: TSchema
  body?: TSchema
  headers?: readonly string[]
  immutable?: boolean
  documentRevision?: () => number
  ownReadBarrier?: boolean
  cost?: (body: unknown) => number
  keyedRequestsCharged?: boolean
  responses: ResponsesSpec
  handler: (ctx: RouteContext<any, any, any, any>) => { status: number; body: unknown; headers?: Record<string, string> } | Promise<{ status: number; body: unknown; headers?: Record<string, string> }>
}

/** Identity at run time; at compile time it infers the handler's types from the schemas. */
export function defineRoute<
  const P extends TSchema | undefined = undefined,
  const Q extends TSchema | undefined = undefined,
  const B extends TSchema | undefined = undefined,
  const R extends ResponsesSpec = ResponsesSpec,
  const A extends AuthMode = AuthMode,
>(spec: RouteSpec<P, Q, B, R, A>): AnyRoute {
  return spec as unknown as AnyRoute
}

/** `{name}` segments of a path template, in order. */
export function pathParamNames(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1] as string)
}

/** `/a/{id}/b` -> `/a/:id/b`, the uWebSockets.js pattern syntax. */
export function toUwsPattern(template: string): string {
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1')
}

/** A matcher for a template, used to compute `Allow` for a path known under other methods. */
export function templateRegExp(template: string): RegExp {
  const source = template
    .split(/(\{[A-Za-z_][A-Za-z0-9_]*\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('')
  return new RegExp(`^${source}$`)
}

/** Status line reason phrases of the statuses this service uses. */
export const REASONS: Readonly<Record<number, string>> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 304: 'Not Modified',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 409: 'Conflict', 413: 'Content Too Large', 415: 'Unsupported Media Type',
  422: 'Unprocessable Content', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
  501: 'Not Implemented', 503: 'Service Unavailable', 504: 'Gateway Timeout', 505: 'HTTP Version Not Supported',
}

/** The status lines of REASONS, built once: uWS writes one per answer. */
const STATUS_LINES: ReadonlyMap<number, string> = new Map(Object.entries(REASONS).map(([status, reason]) => [Number(status), `${status} ${reason}`]))

export function statusLine(status: number): string {
  return STATUS_LINES.get(status) ?? `${status} Status`
}
