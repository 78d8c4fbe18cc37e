// The OpenAPI 3.1.0 document, built from the route table. TypeBox schemas are JSON Schema 2020-12, the dialect of
// OpenAPI 3.1, so they go in as they are; only TypeBox's non-JSON markers (refinement functions) are dropped.
import Type, { type TSchema } from 'typebox'
import { defineRoute, pathParamNames, type AnyRoute } from '../http/route.ts'
import { PROBLEM_CONTENT_TYPE } from '../http/problem.ts'
import { Problem } from './common.ts'

export const OPENAPI_VERSION = '3.1.0'
export const API_VERSION = '0.1.0'

export interface OpenApiInfo {
  title: string
  version?: string
  description?: string
}

export interface OpenApiOptions {
  info: OpenApiInfo
  servers?: Array<{ url: string; description?: string }>
  /** Documents the body limit in the 413 responses. */
  bodyLimitBytes?: number
}

export type OpenApiDocument = Record<string, unknown> & { openapi: string; paths: Record<string, Record<string, Record<string, unknown>>> }

/** JSON copy without TypeBox's non-enumerable markers and functions. */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' }

function problemResponse(description: string): Record<string, unknown> {
  return { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: PROBLEM_REF } } }
}

/** The error responses the transport itself may give on a route, besides those the route documents. */
function transportErrors(route: AnyRoute, bodyLimitBytes: number | undefined): Record<string, string> {
  const errors: Record<string, string> = {}
  if (route.params !== undefined || route.query !== undefined || route.body !== undefined) errors['400'] = 'Validation failed (code validation_failed) or malformed JSON (code malformed_json).'
  else errors['400'] = 'Unknown query parameter (code validation_failed).'
  if (route.auth === 'session') errors['401'] = 'Missing, unknown or expired bearer token (code unauthorized).'
  if (route.body !== undefined) {
    errors['413'] = `Body larger than ${bodyLimitBytes === undefined ? 'the configured limit' : `${bodyLimitBytes} bytes`} (code payload_too_large).`
    errors['415'] = 'Content-Type is not application/json (code unsupported_media_type).'
  }
  errors['429'] = 'Rate limit reached (code rate_limited); see the Retry-After header.'
  errors['500'] = 'Unexpected failure (code internal_error).'
  return errors
}

function parameters(route: AnyRoute): Array<Record<string, unknown>> {
  const result: Array<Record<string, unknown>> = []
  const params = route.params === undefined ? undefined : plain(route.params)
  const paramProperties = (params?.['properties'] ?? {}) as Record<string, Record<string, unknown>>
  for (const name of pathParamNames(route.path)) {
    const schema = paramProperties[name] ?? { type: 'string' }
    const { description, ...rest } = schema
    result.push({ name, in: 'path', required: true, ...(description === undefined ? {} : { description }), schema: rest })
  }
  if (route.query !== undefined) {
    const query = plain(route.query)
    const required = new Set((query['required'] ?? []) as string[])
    for (const [name, schema] of Object.entries((query['properties'] ?? {}) as Record<string, Record<string, unknown>>)) {
      const { description, ...rest } = schema
      result.push({ name, in: 'query', required: required.has(name), ...(description === undefined ? {} : { description }), schema: rest })
    }
  }
  return result
}

function operation(route: AnyRoute, options: OpenApiOptions): Record<string, unknown> {
  const op: Record<string, unknown> = { operationId: route.operationId, summary: route.summary }
  if (route.description !== undefined) op['description'] = route.description
  if (route.tags !== undefined && route.tags.length > 0) op['tags'] = [...route.tags]
  const params = parameters(route)
  if (params.length > 0) op['parameters'] = params
  if (route.body !== undefined) op['requestBody'] = { required: true, content: { 'application/json': { schema: plain(route.body) } } }
  const responses: Record<string, unknown> = {}
  for (const [status, spec] of Object.entries(route.responses)) {
    const isError = Number(status) >= 400
    const contentType = spec.contentType ?? (isError ? PROBLEM_CONTENT_TYPE : 'application/json')
    if (spec.schema !== undefined) responses[status] = { description: spec.description, content: { [contentType]: { schema: plain(spec.schema) } } }
    else if (isError) responses[status] = problemResponse(spec.description)
    else responses[status] = { description: spec.description }
  }
  for (const [status, description] of Object.entries(transportErrors(route, options.bodyLimitBytes))) {
    if (responses[status] === undefined) responses[status] = problemResponse(description)
  }
  op['responses'] = responses
  if (route.auth === 'session') op['security'] = [{ bearerAuth: [] }]
  return op
}

/** Builds the document; every route of the table appears, under its OpenAPI path template. */
export function buildOpenApi(routes: readonly AnyRoute[], options: OpenApiOptions): OpenApiDocument {
  const paths: Record<string, Record<string, Record<string, unknown>>> = {}
  for (const route of routes) {
    const item = (paths[route.path] ??= {})
    if (item[route.method] !== undefined) throw new Error(`${route.method.toUpperCase()} ${route.path} declared twice`)
    item[route.method] = operation(route, options)
  }
  const info: Record<string, unknown> = { title: options.info.title, version: options.info.version ?? API_VERSION }
  if (options.info.description !== undefined) info['description'] = options.info.description
  const document: OpenApiDocument = {
    openapi: OPENAPI_VERSION,
    info,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: { Problem: plain(Problem) },
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
  if (options.servers !== undefined) document['servers'] = options.servers
  return document
}

/** `GET /openapi.json`: the document of the final route table (including this route), built on first request. */
export function openApiRoute(getDocument: () => OpenApiDocument): AnyRoute {
  let cached: OpenApiDocument | undefined
  return defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'OpenAPI 3.1.0 description of this interface',
    tags: ['discovery'],
    auth: 'none',
    responses: {
      200: {
        description: 'The OpenAPI document',
        schema: Type.Object({ openapi: Type.Literal(OPENAPI_VERSION) }, { additionalProperties: true, description: 'An OpenAPI 3.1.0 document.' }),
      },
    },
    handler: () => ({ status: 200, body: (cached ??= getDocument()) as OpenApiDocument & { openapi: typeof OPENAPI_VERSION } }),
  })
}
