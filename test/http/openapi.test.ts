// The generated OpenAPI document is valid OpenAPI 3.1, complete, and true to what the server answers.
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import Type from 'typebox'
import { Atomic, StrictObject } from '../../src/api/common.ts'
import { defineRoute } from '../../src/http/route.ts'
import { buildOpenApi, openApiRoute, type OpenApiDocument } from '../../src/api/openapi.ts'
import { authRoutes } from '../../src/auth/routes.ts'
import { startServer } from '../../src/http/server.ts'
import { silentLogger } from '../../src/http/log.ts'
import { checkResponse } from './fixtures/openapi-check.ts'
import { testRoutes } from './fixtures/routes.ts'

const fakeAuth = { issueNonce: async () => { throw new Error('unused') }, createSession: async () => { throw new Error('unused') }, refresh: async () => { throw new Error('unused') }, revoke: async () => { throw new Error('unused') } }
const routes = [...testRoutes, ...authRoutes(fakeAuth)]
let document: OpenApiDocument
routes.push(openApiRoute(() => document))
document = buildOpenApi(routes, { info: { title: 'agent-credit test', description: 'test routes' }, bodyLimitBytes: 1024 })

t.test('the document passes an independent OpenAPI 3.1 validator', async (t) => {
  const validator = new Validator()
  const result = await validator.validate(document)
  t.same(result.errors, undefined, 'no errors')
  t.equal(result.valid, true)
  t.equal(validator.version, '3.1')
  t.equal(document.openapi, '3.1.0')
  t.equal((document['info'] as { version: string }).version, '0.1.0')
})

t.test('the validator is not a rubber stamp', async (t) => {
  const broken = JSON.parse(JSON.stringify(document)) as OpenApiDocument
  ;((broken.paths['/items/{itemId}']?.['get'] as { parameters: Array<{ in: string }> }).parameters[0] as { in: string }).in = 'body'
  t.equal((await new Validator().validate(broken)).valid, false, 'a parameter in: body is refused')
  const noTitle = JSON.parse(JSON.stringify(document)) as OpenApiDocument
  delete (noTitle['info'] as Record<string, unknown>)['title']
  t.equal((await new Validator().validate(noTitle)).valid, false, 'an info without title is refused')
})

t.test('every route appears with its parameters, body, responses and security', async (t) => {
  for (const route of routes) {
    const op = document.paths[route.path]?.[route.method]
    t.ok(op, `${route.method.toUpperCase()} ${route.path}`)
    t.equal(op?.['operationId'], route.operationId)
  }
  const echo = document.paths['/echo/{name}']?.['post'] as Record<string, any>
  t.same(echo['parameters'].slice(0, 1).map((p: { name: string; in: string; required: boolean }) => [p.name, p.in, p.required]), [['name', 'path', true]])
  t.same(echo['parameters'][1], { $ref: '#/components/parameters/IdempotencyKey' }, 'a route reading Idempotency-Key declares it')
  t.match((document['components'] as Record<string, any>)['parameters'].IdempotencyKey, { name: 'Idempotency-Key', in: 'header', required: false })
  t.same(Object.keys(echo['responses']['201'].headers), ['X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'Idempotent-Replayed'], 'every answer has a request id and the RateLimit fields; a mutation its replay marker')
  t.same(Object.keys(echo['responses']['429'].headers), ['X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'Retry-After'])
  t.equal(echo['requestBody'].content['application/json'].schema.additionalProperties, false)
  t.equal(echo['requestBody'].content['application/json'].schema.properties.amountAtomic.pattern, '^(0|[1-9][0-9]{0,77})$')
  t.same(Object.keys(echo['responses']).sort(), ['201', '400', '409', '413', '415', '429', '500', '503'], 'the transport\'s own answers: 503 while the service stops')
  t.same(echo['responses']['409'].content['application/problem+json'].schema, { $ref: '#/components/schemas/Problem' })
  t.same(echo['security'], [], 'a public route says so: security []')
  const item = document.paths['/items/{itemId}']?.['get'] as Record<string, any>
  t.same(item['parameters'].map((p: { name: string; in: string; required: boolean }) => [p.name, p.in, p.required]), [['itemId', 'path', true], ['verbose', 'query', false]])
  const session = document.paths['/auth/session']?.['post'] as Record<string, any>
  t.ok(session, 'POST /auth/session is documented')
  t.ok(document.paths['/auth/nonce']?.['get'], 'GET /auth/nonce is documented')
  const components = document['components'] as Record<string, any>
  t.same(components['securitySchemes'].bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'opaque', description: components['securitySchemes'].bearerAuth.description })
  t.equal(components['schemas'].Problem.properties.code.pattern, '^[a-z][a-z0-9_]*$')
})

t.test('responses seen over HTTP validate against their documented schemas', async (t) => {
  const server = await startServer({ routes, log: silentLogger, bodyLimitBytes: 1024, rateLimit: false, authenticate: async () => undefined })
  t.teardown(() => server.close(1000))
  const seen: Array<[string, string, string, RequestInit?]> = [
    ['post', '/echo/{name}', '/echo/abc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountAtomic: '5', feeBps: 1, owner: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' }) }],
    ['post', '/echo/{name}', '/echo/abc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":1}' }],
    ['post', '/echo/{name}', '/echo/abc', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }],
    ['get', '/items/{itemId}', '/items/abc?verbose=true'],
    ['post', '/boom', '/boom', { method: 'POST' }],
    ['get', '/openapi.json', '/openapi.json'],
  ]
  for (const [method, template, url, init] of seen) {
    const response = await fetch(`${server.url}${url}`, init)
    const body = await response.json()
    const check = checkResponse(document, method, template, response.status, body, response.headers.get('content-type') ?? undefined)
    t.same(check, { valid: true, errors: [] }, `${method.toUpperCase()} ${url} -> ${response.status}`)
  }
  const served = await (await fetch(`${server.url}/openapi.json`)).json()
  t.same(served, document, 'GET /openapi.json serves the same document')
})

t.test('the check catches a body that breaks the documented schema', async (t) => {
  const wrong = checkResponse(document, 'post', '/echo/{name}', 201, { name: 'a', amountAtomic: 'ten', feeBps: 1, owner: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' })
  t.equal(wrong.valid, false)
  t.match(wrong.errors.join('\n'), /amountAtomic/)
  t.equal(checkResponse(document, 'post', '/echo/{name}', 418, {}).valid, false, 'undocumented status')
  t.equal(checkResponse(document, 'get', '/echo/{name}', 200, {}).valid, false, 'undocumented operation')
  const problem = checkResponse(document, 'post', '/echo/{name}', 409, { type: 'x', title: 'x', status: 409, detail: 'x', code: 'Not-Snake' })
  t.equal(problem.valid, false, 'problem bodies are checked through the $ref')
})

t.test('each registered schema is written once under components and referred to everywhere else', async (t) => {
  const Thing = StrictObject({ id: Type.String(), amountAtomic: Atomic }, { description: 'A thing.' })
  const thingRoutes = [
    defineRoute({ method: 'get', path: '/things/{id}', operationId: 'getThing', summary: 'One', callers: 'any caller (a test route)', tags: ['test'], auth: 'none', params: StrictObject({ id: Type.String() }), responses: { 200: { description: 'One', schema: Thing } }, handler: () => ({ status: 200, body: { id: 'a', amountAtomic: '1' } }) }),
    defineRoute({ method: 'get', path: '/things', operationId: 'listThings', summary: 'All', callers: 'any caller (a test route)', tags: ['test'], auth: 'none', responses: { 200: { description: 'All', schema: Type.Array(Thing), headers: ['link', 'next-after'] } }, handler: () => ({ status: 200, body: [] }) }),
    defineRoute({ method: 'post', path: '/things/{id}/poke', operationId: 'poke', summary: 'Poke', callers: 'any caller (a test route)', tags: ['test'], auth: 'none', params: StrictObject({ id: Type.String() }), body: StrictObject({ note: Type.Optional(Type.String()) }), responses: { 200: { description: 'Poked', schema: StrictObject({ thing: Thing, other: Type.Union([Thing, Type.Null()]) }) } }, handler: () => ({ status: 200, body: { thing: { id: 'a', amountAtomic: '1' }, other: null } }) }),
  ]
  const doc = buildOpenApi(thingRoutes, { info: { title: 't' }, components: { Thing, Atomic }, tags: [{ name: 'test', description: 'Things.' }], rateLimited: false })
  const text = JSON.stringify(doc)
  t.equal(text.split('"description":"A thing."').length - 1, 1, 'Thing is written once')
  const schemas = (doc['components'] as Record<string, any>)['schemas']
  t.same(Object.keys(schemas).sort(), ['Atomic', 'Problem', 'Thing'], 'only the components used')
  t.same(schemas.Thing.properties.amountAtomic, { $ref: '#/components/schemas/Atomic' }, 'a component used inside another is a $ref too')
  t.same((doc.paths['/things/{id}']?.['get'] as any).responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Thing' })
  t.same((doc.paths['/things']?.['get'] as any).responses['200'].content['application/json'].schema, { type: 'array', items: { $ref: '#/components/schemas/Thing' } })
  t.same(Object.keys((doc.paths['/things']?.['get'] as any).responses['200'].headers), ['X-Request-Id', 'Link', 'Next-After'], 'list answers declare Link and next-after')
  t.match((doc['components'] as any).headers.Link, { description: /rel="next"/, schema: { type: 'string' } })
  t.equal((doc.paths['/things/{id}/poke']?.['post'] as any).requestBody.required, false, 'a body that may be {} is optional')
  t.same((doc.paths['/things/{id}/poke']?.['post'] as any).responses['200'].content['application/json'].schema.properties.other, { anyOf: [{ $ref: '#/components/schemas/Thing' }, { type: 'null' }] })
  t.same(doc['tags'], [{ name: 'test', description: 'Things.' }], 'tags are declared with their description')
  for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) t.type(op['description'], 'string', `${String(op['operationId'])} has a description`)
  t.equal((doc.paths['/things']?.['get'] as any).responses['429'], undefined, 'no 429 documented while the limiter is off')
  const validator = new Validator()
  t.same((await validator.validate(doc as never)).errors, undefined, 'the referencing document is valid OpenAPI 3.1')
})
