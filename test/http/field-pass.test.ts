// A route with a body reads the fields it needs in the one pass over the request's fields that also checks its
// framing (TransportIo.fields with values, issue 11), instead of one header call per name. What it reads must be what
// those calls read: the request id echoed, Origin's CORS, the bearer token, Content-Type (415), Content-Length (413,
// ambiguous 400), X-Forwarded-For from a trusted proxy, the route's own headers (an empty one is sent, not absent),
// and of a repeated field the first (uWS's getHeader answers the first), but X-Forwarded-For whole (fields18).
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import { ROUTE_HEADERS_MAX } from '../../src/http/request.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { parseResponse, rawUntil, responsesEnded } from './fixtures/raw.ts'
import { testTransport } from './fixtures/routes.ts'

const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const Echo = StrictObject({ headers: Type.Record(Type.String(), Type.String()), wallet: Type.String(), clientKey: Type.String() })
const echoRoute = (path: string, headers: string[]) => defineRoute({
  method: 'post', path, operationId: `echo${headers.length}`, callers: 'any caller (a test route)', summary: 'What the handler was given',
  auth: 'session', headers, body: StrictObject({ n: Type.Optional(Type.Integer()) }),
  responses: { 200: { description: 'Its input', schema: Echo } },
  handler: ({ headers, session, clientKey }) => ({ status: 200, body: { headers, wallet: session.address, clientKey } }),
})
// The most headers a route may list: the fields the pass reads for the pipeline come after them, past the bits.
const manyHeaders = Array.from({ length: ROUTE_HEADERS_MAX }, (_, i) => `x-h${i}`)
const whoami = defineRoute({
  method: 'get', path: '/whoami', operationId: 'whoami', callers: 'any caller (a test route)', summary: 'The client key', auth: 'none',
  responses: { 200: { description: 'Its client key', schema: StrictObject({ clientKey: Type.String() }) } },
  handler: ({ clientKey }) => ({ status: 200, body: { clientKey } }),
})
const routes = [echoRoute('/echo', ['Idempotency-Key']), echoRoute('/many', manyHeaders), whoami]
const authenticate = async (token: string) => (token.startsWith('token-0x') ? { address: token.slice(6) as `0x${string}`, tokenHash: token } : undefined)

const server = await startServer({
  transport: testTransport, routes, port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate,
  corsOrigins: ['https://dashboard.example'], trustedProxies: ['127.0.0.1', '::1'],
})
t.teardown(() => server.close(500))

const post = async (path: string, fields: string, body = '{}') => {
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\n${fields}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  return parseResponse((await rawUntil(server.port, [head + body], responsesEnded(1))).text)
}
const echoed = (answer: { status: number; body: string }) => (answer.status === 200 ? JSON.parse(answer.body) : answer)

t.test('the fields a body route reads, each as its own header read answers', async (t) => {
  const json = `Content-Type: application/json\r\nAuthorization: Bearer token-${WALLET}\r\n`
  const all = await post('/echo', `${json}X-Request-Id: trace-7\r\nOrigin: https://dashboard.example\r\nIdempotency-Key: k-1\r\nX-Forwarded-For: 203.0.113.9\r\n`)
  t.equal(all.status, 200)
  t.equal(all.headers['x-request-id'], 'trace-7', 'the request id echoed')
  t.equal(all.headers['access-control-allow-origin'], 'https://dashboard.example', 'CORS from Origin')
  t.same(echoed(all), { headers: { 'idempotency-key': 'k-1' }, wallet: WALLET, clientKey: '203.0.113.9' }, 'token, route header, forwarded client')
  const bare = await post('/echo', json)
  t.not(bare.headers['x-request-id'], undefined, 'a fresh id without one')
  t.equal(bare.headers['access-control-allow-origin'], undefined, 'no Origin, no CORS')
  t.same(echoed(bare), { headers: {}, wallet: WALLET, clientKey: '127.0.0.1' }, 'no key: absent, not empty')
  t.equal((await post('/echo', 'Content-Type: application/json\r\n')).status, 401, 'no Authorization, no token')
  t.same(echoed(await post('/echo', `${json}Idempotency-Key:\r\n`)).headers, { 'idempotency-key': '' }, 'an empty key is sent (and refused by the mutation), not absent')
  t.equal((await post('/echo', `Content-Type: text/plain\r\nAuthorization: Bearer token-${WALLET}\r\n`)).status, 415, 'Content-Type read')
  t.equal((await post('/echo', json, `{"n":${'1'.repeat(70)}}`)).status, 413, 'Content-Length read')
  const ambiguous = await post('/echo', `${json}Content-Length: 2\r\n`)
  t.equal(JSON.parse(ambiguous.body).code, 'ambiguous_content_length')
})

t.test('a repeated field: its first value, as a header read answers', async (t) => {
  const first = await post('/echo', `Content-Type: application/json\r\nContent-Type: text/plain\r\nAuthorization: Bearer token-${WALLET}\r\nAuthorization: Bearer nobody\r\n`)
  t.equal(first.status, 200, 'the first Content-Type')
  t.equal(echoed(first).wallet, WALLET, 'the first Authorization')
})

t.test('a route with the most headers: none of the pipeline\'s own fields counts as one of them', async (t) => {
  const answer = await post('/many', `X-Request-Id: r\r\nOrigin: https://dashboard.example\r\nAuthorization: Bearer token-${WALLET}\r\nContent-Type: application/json\r\nX-Forwarded-For: 203.0.113.9\r\n`)
  t.same(echoed(answer).headers, {}, 'no header of the route was sent')
  const last = await post('/many', `Content-Type: application/json\r\nAuthorization: Bearer token-${WALLET}\r\nx-h0: a\r\nx-h${ROUTE_HEADERS_MAX - 1}:\r\n`)
  t.same(echoed(last).headers, { 'x-h0': 'a', [`x-h${ROUTE_HEADERS_MAX - 1}`]: '' }, 'the first and the last, empty, as sent')
})

t.test('X-Forwarded-For sent as two fields is one list: its right-most hop counts, with a body and without', async (t) => {
  // A proxy may add its hop as a field of its own after the client's (HAProxy's option forwardfor): the first field
  // alone is whatever the client wrote (before fields18, uWS read it, so a client chose its own rate limit key).
  const fields = 'X-Forwarded-For: 198.51.100.7\r\nX-Forwarded-For: 203.0.113.9\r\n'
  t.equal(echoed(await post('/echo', `Content-Type: application/json\r\nAuthorization: Bearer token-${WALLET}\r\n${fields}`)).clientKey, '203.0.113.9', 'a route with a body')
  const get = parseResponse((await rawUntil(server.port, [`GET /whoami HTTP/1.1\r\nHost: x\r\n${fields}\r\n`], responsesEnded(1))).text)
  t.same(JSON.parse(get.body), { clientKey: '203.0.113.9' }, 'a route without one')
})
