// The OpenAPI 3.1.0 document, built from the route table. TypeBox schemas are JSON Schema 2020-12, the dialect of
// OpenAPI 3.1, so they go in as they are; only TypeBox's non-JSON markers (refinement functions) are dropped. A
// schema object registered as a component is written once under components.schemas and referred to by $ref
// wherever the route table uses that same object.
//
// Written here rather than taken from a library: the generators that fit TypeBox (e.g. @fastify/swagger) are tied
// to a framework's route registry, not to a uWebSockets.js table; what this one does beyond walking the table is
// the component references and the transport's own answers (400/401/413/415/429/500, headers), which only the
// transport knows.
import Type, { type TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { defineRoute, pathParamNames, RESPONSE_HEADERS, type AnyRoute, type ResponseHeaderName } from '../http/route.ts'
import { PROBLEM_CONTENT_TYPE } from '../http/problem.ts'
import { Problem } from './common.ts'
import { noRetryAfterCodeList, retryAfterCodeList } from './retry-after.ts'

export const OPENAPI_VERSION = '3.1.0'
export const API_VERSION = '0.1.0'

export interface OpenApiInfo {
  title: string
  version?: string
  description?: string
  contact?: { name?: string; url?: string; email?: string }
  license?: { name: string; identifier?: string; url?: string }
}

export interface OpenApiOptions {
  info: OpenApiInfo
  servers?: Array<{ url: string; description?: string }>
  /** Documents the body limit in the 413 responses. */
  bodyLimitBytes?: number
  /** Schemas written once under components.schemas, by name; every use of the same object becomes a $ref. */
  components?: Readonly<Record<string, TSchema>>
  /** The tags the operations use, with what each groups. */
  tags?: ReadonlyArray<{ name: string; description: string }>
  /** Whether the rate limiter is on: then every answer documents RateLimit-Policy and RateLimit, and 429. */
  rateLimited?: boolean
}

export type OpenApiDocument = Record<string, unknown> & { openapi: string; paths: Record<string, Record<string, Record<string, unknown>>> }

type Json = Record<string, unknown>

/** Component names of the response headers (components.headers), in the letter case of the registries. */
const HEADER_COMPONENTS: Readonly<Record<ResponseHeaderName, string>> = {
  'x-request-id': 'X-Request-Id',
  'ratelimit-policy': 'RateLimit-Policy',
  ratelimit: 'RateLimit',
  'retry-after': 'Retry-After',
  'www-authenticate': 'WWW-Authenticate',
  link: 'Link',
  'next-after': 'Next-After',
  'idempotent-replayed': 'Idempotent-Replayed',
  etag: 'ETag',
  'cache-control': 'Cache-Control',
}

const HEADER_SCHEMAS: Readonly<Record<ResponseHeaderName, Json>> = {
  'x-request-id': { type: 'string', maxLength: 128 },
  'ratelimit-policy': { type: 'string', examples: ['"client";q=4000;w=2'] },
  ratelimit: { type: 'string', examples: ['"client";r=3999;t=1'] },
  'retry-after': { type: 'integer', minimum: 0 },
  'www-authenticate': { type: 'string', examples: ['Bearer error="invalid_token"'] },
  link: { type: 'string', examples: ['</lenders?limit=100&after=100>; rel="next"'] },
  'next-after': { type: 'string', pattern: '^[0-9]+$' },
  'idempotent-replayed': { type: 'string', const: 'true' },
  etag: { type: 'string' },
  'cache-control': { type: 'string', examples: ['public, max-age=300'] },
}

/** Descriptions of the header components: the transport's, and for Retry-After which codes carry it. */
const HEADER_DESCRIPTIONS: Readonly<Record<ResponseHeaderName, string>> = {
  ...RESPONSE_HEADERS,
  'retry-after':
    'Seconds to wait before sending the same request again (a POST with the same Idempotency-Key and body): the answer recorded nothing. ' +
    `Sent with ${retryAfterCodeList()}. A 429 or 503 without it names no time: ${noRetryAfterCodeList()}.`,
}

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first request with a key runs and its answer is stored with its changes; a retry with the same key and body gets that answer back ' +
    '(header Idempotent-Replayed: true) and changes nothing; the same key with another body is refused (422 idempotency_key_reused). ' +
    'A request that changed nothing (a dispatch with nothing due, a declined credit request) stores no answer: a retry with its key, whatever its body, runs again. ' +
    'Scoped to the caller and the path; answers are kept for the retention the catalog names (limits.idempotencyRetentionSeconds). ' +
    'On an operation with x-keyed-requests-charged: true, the first request with a key (not a replay) is charged to the wallet\'s, the client address\'s and all callers\' budgets of keyed requests ' +
    '(catalog limits.keyedRequestsPerWalletPerHour, keyedRequestsPerClientPerHour, keyedRequestsPerHour): past one, 429 idempotency_keys_limited or 503 idempotency_keys_exhausted with Retry-After, and nothing ran.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
}

const takesIdempotencyKey = (route: AnyRoute): boolean => route.headers?.includes('idempotency-key') === true

const ref = (kind: 'schemas' | 'headers' | 'parameters', name: string) => ({ $ref: `#/components/${kind}/${name}` })

class SchemaWriter {
  readonly #names = new Map<object, string>()
  readonly #used = new Set<string>()

  constructor(components: Readonly<Record<string, TSchema>>) {
    for (const [name, schema] of Object.entries(components)) {
      if (this.#names.has(schema)) throw new Error(`component ${name} registers a schema already named ${this.#names.get(schema)}`)
      this.#names.set(schema, name)
    }
  }

  /** JSON copy of a schema without TypeBox's markers, with registered sub-schemas as $ref. */
  write(schema: unknown, isDefinition = false): Json {
    return this.#walk(schema, isDefinition) as Json
  }

  /** Definitions of the components used (and of the components they use), by name. */
  definitions(components: Readonly<Record<string, TSchema>>): Record<string, Json> {
    const written: Record<string, Json> = {}
    // Writing a definition can use further components: repeat until nothing new is used.
    for (let fresh = [...this.#used]; fresh.length > 0; fresh = [...this.#used].filter((name) => written[name] === undefined)) {
      for (const name of fresh) written[name] = this.write(components[name], true)
    }
    return Object.fromEntries(Object.keys(components).filter((name) => written[name] !== undefined).map((name) => [name, written[name] as Json]))
  }

  #walk(node: unknown, isDefinition: boolean): unknown {
    if (Array.isArray(node)) return node.map((item) => this.#walk(item, false))
    if (typeof node !== 'object' || node === null) return node
    const name = this.#names.get(node)
    if (name !== undefined && !isDefinition) {
      this.#used.add(name)
      return ref('schemas', name)
    }
    // JSON.stringify's view: own enumerable keys, functions and undefined dropped (TypeBox markers are symbols).
    const out: Json = {}
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'function' || value === undefined) continue
      out[key] = this.#walk(value, false)
    }
    return out
  }

  /** Marks a component used without writing a reference (Problem is referred to by the builder itself). */
  use(name: string): void {
    this.#used.add(name)
  }
}

function headerRefs(names: readonly ResponseHeaderName[]): Json {
  return Object.fromEntries(names.map((name) => [HEADER_COMPONENTS[name], ref('headers', HEADER_COMPONENTS[name])]))
}

/** The error responses the transport itself may give on a route, besides those the route documents. */
function transportErrors(route: AnyRoute, options: OpenApiOptions): Record<string, string> {
  const errors: Record<string, string> = {}
  if (route.immutable === true) errors['400'] = 'Ambiguous Content-Length (code ambiguous_content_length).'
  else if (route.params !== undefined || route.query !== undefined || route.body !== undefined) {
    errors['400'] = 'Validation failed (code validation_failed), malformed JSON (malformed_json), a key given twice (duplicate_json_key) or an ambiguous Content-Length (ambiguous_content_length).'
  } else errors['400'] = 'Unknown query parameter (code validation_failed) or an ambiguous Content-Length (ambiguous_content_length).'
  if (route.auth === 'session') errors['401'] = 'Missing, unknown or expired bearer token (code unauthorized).'
  if (route.body !== undefined) {
    errors['413'] = `Body larger than ${options.bodyLimitBytes === undefined ? 'the configured limit' : `${options.bodyLimitBytes} bytes`} (code payload_too_large).`
    errors['415'] = 'Content-Type is not application/json (code unsupported_media_type).'
  }
  if (options.rateLimited !== false) errors['429'] = 'Rate limit reached (code rate_limited): wait Retry-After seconds; RateLimit says what is left.'
  errors['500'] = 'Unexpected failure (code internal_error).'
  errors['503'] = SHUTTING_DOWN
  return errors
}

/** What a charged operation (x-keyed-requests-charged) answers when its first request with a new key is over a budget. */
const KEYED_REQUEST_REFUSALS: Readonly<Record<string, string>> = {
  429: 'A new Idempotency-Key past the wallet\'s or the client address\'s budget of keyed requests (code idempotency_keys_limited, with Retry-After; catalog limits.keyedRequestsPerWalletPerHour, keyedRequestsPerClientPerHour): nothing ran; send the same request then, or without a key.',
  503: 'A new Idempotency-Key past all callers\' budget of keyed requests (code idempotency_keys_exhausted, with Retry-After; catalog limits.keyedRequestsPerHour; a wallet with standing, a lender that has paid a lease or a borrower that repaid, is held to its own bounds only): nothing ran; send the same request then, or without a key.',
}

/** The transport answers every route so while the service stops (src/http/pipeline.ts), whatever else its 503 means. */
const SHUTTING_DOWN = 'The service is stopping (code shutting_down): retry later or on another instance.'

/** Headers of one answer: every answer's, then those its status and its route add. */
function responseHeaders(route: AnyRoute, status: number, declared: readonly ResponseHeaderName[], options: OpenApiOptions): Json {
  const names: ResponseHeaderName[] = ['x-request-id']
  if (options.rateLimited !== false) names.push('ratelimit-policy', 'ratelimit')
  if (status === 429 || status === 503) names.push('retry-after')
  if (status === 401) names.push('www-authenticate')
  if (status >= 200 && status < 300 && takesIdempotencyKey(route)) names.push('idempotent-replayed')
  if (route.immutable === true && (status === 200 || status === 304)) names.push('etag', 'cache-control')
  for (const name of declared) if (!names.includes(name)) names.push(name)
  return headerRefs(names)
}

function parameters(route: AnyRoute, writer: SchemaWriter): Json[] {
  const result: Json[] = []
  const paramProperties = ((route.params as Json | undefined)?.['properties'] ?? {}) as Record<string, unknown>
  for (const name of pathParamNames(route.path)) {
    const { description, ...rest } = writer.write(paramProperties[name] ?? { type: 'string' })
    result.push({ name, in: 'path', required: true, description: description ?? `The ${name} of the resource.`, schema: rest })
  }
  if (route.query !== undefined) {
    const required = new Set(((route.query as Json)['required'] ?? []) as string[])
    for (const [name, schema] of Object.entries(((route.query as Json)['properties'] ?? {}) as Record<string, unknown>)) {
      const { description, ...rest } = writer.write(schema)
      result.push({ name, in: 'query', required: required.has(name), ...(description === undefined ? {} : { description }), schema: rest })
    }
  }
  if (takesIdempotencyKey(route)) result.push(ref('parameters', 'IdempotencyKey'))
  return result
}

/** The line of each operation's description that says who may call it (the same words as its x-callers). */
export const callersLine = (callers: string): string => `Who may call: ${callers}.`

function operation(route: AnyRoute, options: OpenApiOptions, writer: SchemaWriter): Json {
  const op: Json = {
    operationId: route.operationId,
    summary: route.summary,
    description: `${route.description ?? route.summary}\n\n${callersLine(route.callers)}`,
    'x-callers': route.callers,
  }
  if (route.tags !== undefined && route.tags.length > 0) op['tags'] = [...route.tags]
  const charged = takesIdempotencyKey(route) && route.keyedRequestsCharged !== false
  if (takesIdempotencyKey(route)) op['x-keyed-requests-charged'] = charged
  const params = parameters(route, writer)
  if (params.length > 0) op['parameters'] = params
  if (route.body !== undefined) {
    // A body that may be {} may be left out altogether (the transport reads an empty POST as {}).
    const optional = Compile(route.body).Check({})
    op['requestBody'] = { required: !optional, content: { 'application/json': { schema: writer.write(route.body) } } }
  }
  const responses: Json = {}
  const problem = (description: string, status: number) => {
    writer.use('Problem')
    return { description, headers: responseHeaders(route, status, [], options), content: { [PROBLEM_CONTENT_TYPE]: { schema: ref('schemas', 'Problem') } } }
  }
  for (const [statusText, spec] of Object.entries(route.responses)) {
    const status = Number(statusText)
    const isError = status >= 400
    const contentType = spec.contentType ?? (isError ? PROBLEM_CONTENT_TYPE : 'application/json')
    if (spec.schema === undefined && isError) {
      responses[statusText] = problem(spec.description, status)
      continue
    }
    const response: Json = { description: spec.description, headers: responseHeaders(route, status, spec.headers ?? [], options) }
    if (spec.schema !== undefined) response['content'] = { [contentType]: { schema: writer.write(spec.schema) } }
    responses[statusText] = response
  }
  if (route.immutable === true) {
    responses['304'] = { description: 'Not modified: If-None-Match named the current ETag of the representation.', headers: responseHeaders(route, 304, [], options) }
  }
  for (const [status, description] of Object.entries(transportErrors(route, options))) {
    if (responses[status] === undefined) responses[status] = problem(description, Number(status))
    else if (description === SHUTTING_DOWN) (responses[status] as { description: string }).description += ` Or: ${SHUTTING_DOWN}`
  }
  if (charged) {
    for (const [status, description] of Object.entries(KEYED_REQUEST_REFUSALS)) {
      const response = responses[status] as { description: string } | undefined
      if (response === undefined) responses[status] = problem(description, Number(status))
      else response.description += ` Or: ${description}`
    }
  }
  op['responses'] = responses
  op['security'] = route.auth === 'session' ? [{ bearerAuth: [] }] : []
  return op
}

/** Builds the document; every route of the table appears, under its OpenAPI path template. */
export function buildOpenApi(routes: readonly AnyRoute[], options: OpenApiOptions): OpenApiDocument {
  const components = { Problem, ...options.components }
  const writer = new SchemaWriter(components)
  const paths: Record<string, Record<string, Json>> = {}
  for (const route of routes) {
    const item = (paths[route.path] ??= {})
    if (item[route.method] !== undefined) throw new Error(`${route.method.toUpperCase()} ${route.path} declared twice`)
    item[route.method] = operation(route, options, writer)
  }
  const info: Json = { title: options.info.title, version: options.info.version ?? API_VERSION }
  if (options.info.description !== undefined) info['description'] = options.info.description
  if (options.info.contact !== undefined) info['contact'] = options.info.contact
  if (options.info.license !== undefined) info['license'] = options.info.license
  const usedHeaders = new Set<string>()
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      for (const response of Object.values(op['responses'] as Record<string, Json>)) {
        for (const name of Object.keys((response['headers'] ?? {}) as Json)) usedHeaders.add(name)
      }
    }
  }
  const headers = Object.fromEntries(
    (Object.keys(HEADER_COMPONENTS) as ResponseHeaderName[])
      .filter((name) => usedHeaders.has(HEADER_COMPONENTS[name]))
      .map((name) => [HEADER_COMPONENTS[name], { description: HEADER_DESCRIPTIONS[name], schema: HEADER_SCHEMAS[name] }]),
  )
  const usesIdempotency = routes.some((route) => takesIdempotencyKey(route))
  const document: OpenApiDocument = {
    openapi: OPENAPI_VERSION,
    info,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    ...(options.servers === undefined ? {} : { servers: options.servers }),
    ...(options.tags === undefined ? {} : { tags: options.tags.map((tag) => ({ ...tag })) }),
    paths,
    components: {
      schemas: writer.definitions(components),
      ...(usesIdempotency ? { parameters: { IdempotencyKey: IDEMPOTENCY_PARAMETER } } : {}),
      headers,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'opaque',
          description: 'Session token from POST /auth/session (Sign-In with Ethereum, EIP-4361).',
        },
      },
    },
  }
  return document
}

/** `GET /openapi.json`: the document of the final route table (including this route); the server builds it once. */
export function openApiRoute(getDocument: () => OpenApiDocument): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    callers: 'public',
    summary: 'OpenAPI 3.1.0 description of this interface',
    description: 'This document. Served with a strong ETag, Cache-Control and gzip or br when accepted; revalidate with If-None-Match (304). Query parameters are ignored.',
    tags: ['discovery'],
    auth: 'none',
    immutable: true,
    responses: {
      200: {
        description: 'The OpenAPI document',
        schema: Type.Object({ openapi: Type.Literal(OPENAPI_VERSION) }, { additionalProperties: true, description: 'An OpenAPI 3.1.0 document.' }),
      },
    },
    handler: () => ({ status: 200, body: getDocument() as OpenApiDocument & { openapi: typeof OPENAPI_VERSION } }),
  })
}
