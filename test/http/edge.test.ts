// HTTP as clients, browsers, caches and proxies expect it: HEAD, OPTIONS and CORS, request ids, cached discovery
// documents (ETag, 304, gzip/br), integer query parameters, empty action bodies, refused ambiguous framing and
// duplicate JSON keys, rate limits per wallet and per client with their RateLimit fields, and what this uWS build
// does with HTTP/1.0 and a missing Host (the node:net front).
import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import type { LogLine } from '../../src/http/log.ts'
import { defineRoute, type AnyRoute } from '../../src/http/route.ts'
import { startServer, type RunningServer, type ServerOptions } from '../../src/http/server.ts'
import { headEnded, parseResponse, RawConnection, rawUntil, responsesEnded, serverClosed, wholeResponses } from './fixtures/raw.ts'
import { testRoutes, testTransport } from './fixtures/routes.ts'

const WALLET_A = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const WALLET_B = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'

const listRoute = defineRoute({
  method: 'get',
  path: '/things',
  operationId: 'listThings',
  callers: 'any caller (a test route)',
  summary: 'A paged list',
  auth: 'none',
  query: StrictObject({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    after: Type.Optional(Type.Integer({ minimum: 0 })),
  }),
  cost: (body) => (body as unknown[]).length,
  responses: { 200: { description: 'Things', schema: Type.Array(StrictObject({ n: Type.Integer() })) } },
  handler: ({ query }) => {
    // The handler sees numbers: limit + 1 would concatenate if it were a string.
    const limit: number = query.limit ?? 10
    const after: number = query.after ?? 0
    return { status: 200, body: Array.from({ length: limit }, (_, i) => ({ n: after + i + 1 })), headers: { 'next-after': String(after + limit) } }
  },
})

const actionCalls: unknown[] = []
const actionRoute = defineRoute({
  method: 'post',
  path: '/actions/{id}/go',
  operationId: 'go',
  callers: 'any caller (a test route)',
  summary: 'An action whose body is optional',
  auth: 'none',
  params: StrictObject({ id: Type.String() }),
  body: StrictObject({ note: Type.Optional(Type.String()) }),
  responses: { 200: { description: 'Done', schema: StrictObject({ id: Type.String(), note: Type.Union([Type.String(), Type.Null()]) }) } },
  handler: ({ params, body }) => {
    actionCalls.push(body)
    return { status: 200, body: { id: params.id, note: body.note ?? null } }
  },
})

let documentBuilds = 0
const DOCUMENT = `# a discovery document\n${'every line of it is the same, so it compresses well\n'.repeat(300)}`
const documentRoute = defineRoute({
  method: 'get',
  path: '/doc.txt',
  operationId: 'doc',
  callers: 'any caller (a test route)',
  summary: 'An immutable document',
  auth: 'none',
  immutable: true,
  responses: { 200: { description: 'Text', schema: Type.String(), contentType: 'text/plain; charset=utf-8' } },
  handler: () => {
    documentBuilds += 1
    return { status: 200, body: DOCUMENT }
  },
})

const mineRoute = defineRoute({
  method: 'post',
  path: '/mine',
  operationId: 'mine',
  callers: 'any caller (a test route)',
  summary: 'A mutation of the signed-in wallet',
  auth: 'session',
  body: StrictObject({}),
  responses: { 200: { description: 'Who', schema: StrictObject({ address: Type.String() }) } },
  handler: ({ session }) => ({ status: 200, body: { address: session.address } }),
})

/** The client a handler is given: the pipeline's, the key the limiter counts an anonymous request on. */
const clientRoute = defineRoute({
  method: 'get',
  path: '/client',
  operationId: 'client',
  callers: 'any caller (a test route)',
  summary: 'The caller\'s client key',
  auth: 'none',
  responses: { 200: { description: 'Its client key', schema: StrictObject({ clientKey: Type.String() }) } },
  handler: ({ clientKey }) => ({ status: 200, body: { clientKey } }),
})

const routes: AnyRoute[] = [...testRoutes, listRoute, actionRoute, documentRoute, mineRoute, clientRoute]

/** Tokens are `token-<address>`: enough to tell wallets apart without a chain. */
const authenticate = async (token: string) => (token.startsWith('token-0x') ? { address: token.slice(6) as `0x${string}` } : undefined)

async function start(overrides: Partial<ServerOptions> = {}): Promise<{ server: RunningServer; logs: LogLine[] }> {
  const logs: LogLine[] = []
  const server = await startServer({ transport: testTransport, routes, port: 0, bodyLimitBytes: 4096, rateLimit: false, validateResponses: true, authenticate, log: (line) => { logs.push(line) }, ...overrides })
  t.teardown(() => server.close(500))
  return { server, logs }
}

/** One request on a new connection, its answer read as soon as it is whole (`done`: a HEAD's once its head is). */
const raw = async (port: number, text: string, done = responsesEnded(1)) => parseResponse((await rawUntil(port, [text], done)).text)

t.test('HEAD on a GET route: the GET\'s status and headers, content-length included, and no body', async (t) => {
  const { server } = await start()
  const get = await raw(server.port, 'GET /items/abc HTTP/1.1\r\nHost: x\r\n\r\n')
  // A GET pipelined behind the HEAD: its answer follows the HEAD's head at once if the HEAD sent no body bytes.
  const afterHead = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4)
  const { text } = await rawUntil(server.port, ['HEAD /items/abc HTTP/1.1\r\nHost: x\r\n\r\nGET /items/abc HTTP/1.1\r\nHost: x\r\n\r\n'], (text) => headEnded(text) && responsesEnded(1)(afterHead(text)))
  const head = parseResponse(text)
  t.equal(head.status, 200)
  t.equal(head.headers['content-type'], 'application/json')
  t.equal(head.headers['content-length'], get.headers['content-length'], 'the length of the GET answer')
  t.match(afterHead(text), /^HTTP\/1\.1 200 /, 'no body bytes: the next answer follows the head')
  // Node's HTTP client parses the answer (a 405 with a body broke it with HPE_INVALID_CONSTANT).
  const response = await fetch(`${server.url}/items/abc`, { method: 'HEAD' })
  t.equal(response.status, 200)
  t.equal(await response.text(), '')
  const missing = await fetch(`${server.url}/nope`, { method: 'HEAD' })
  t.equal(missing.status, 404, 'an unknown path is a 404 to HEAD too')
  t.equal(await missing.text(), '')
  const notGet = await fetch(`${server.url}/echo/a`, { method: 'HEAD' })
  t.equal(notGet.status, 405, 'HEAD on a POST-only path')
  t.equal(notGet.headers.get('allow'), 'POST, OPTIONS')
})

t.test('OPTIONS answers 204 with Allow; 405 keeps Allow', async (t) => {
  const { server } = await start()
  const options = await fetch(`${server.url}/items/abc`, { method: 'OPTIONS' })
  t.equal(options.status, 204)
  t.equal(options.headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS')
  t.equal((await fetch(`${server.url}/echo/a`, { method: 'OPTIONS' })).headers.get('allow'), 'POST, OPTIONS')
  t.equal((await fetch(`${server.url}/nope`, { method: 'OPTIONS' })).status, 404)
  const put = await fetch(`${server.url}/items/abc`, { method: 'PUT' })
  t.equal(put.status, 405)
  t.equal(put.headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS')
})

t.test('CORS: by default any origin, preflight and simple requests; exposed headers', async (t) => {
  const { server } = await start()
  const preflight = await fetch(`${server.url}/echo/a`, {
    method: 'OPTIONS',
    headers: { origin: 'https://dashboard.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), '*')
  t.equal(preflight.headers.get('access-control-allow-methods'), 'POST, OPTIONS')
  for (const header of ['authorization', 'content-type', 'idempotency-key']) t.match(preflight.headers.get('access-control-allow-headers'), header)
  t.equal(preflight.headers.get('access-control-max-age'), '600')
  const simple = await fetch(`${server.url}/items/abc`, { headers: { origin: 'https://dashboard.example' } })
  t.equal(simple.headers.get('access-control-allow-origin'), '*')
  for (const header of ['link', 'next-after', 'retry-after', 'ratelimit', 'x-request-id', 'idempotent-replayed']) t.match(simple.headers.get('access-control-expose-headers'), header)
  t.equal((await fetch(`${server.url}/items/abc`)).headers.get('access-control-allow-origin'), null, 'no Origin, no CORS fields')
})

t.test('CORS with a configured origin list: only those origins, and Vary: Origin', async (t) => {
  const { server } = await start({ corsOrigins: ['https://dashboard.example'] })
  const allowed = await fetch(`${server.url}/items/abc`, { headers: { origin: 'https://dashboard.example' } })
  t.equal(allowed.headers.get('access-control-allow-origin'), 'https://dashboard.example')
  t.equal(allowed.headers.get('vary'), 'Origin')
  const other = await fetch(`${server.url}/items/abc`, { headers: { origin: 'https://evil.example' } })
  t.equal(other.status, 200, 'the request itself is answered (CORS is enforced by the browser)')
  t.equal(other.headers.get('access-control-allow-origin'), null)
  const preflight = await fetch(`${server.url}/echo/a`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-methods'), null, 'no preflight grant for another origin')
  const none = await start({ corsOrigins: [] })
  t.equal((await fetch(`${none.server.url}/items/abc`, { headers: { origin: 'https://dashboard.example' } })).headers.get('access-control-allow-origin'), null, 'CORS off')
})

t.test('an answer\'s head: its status line, then each field once, whole, on a line of its own (uWS: in the order written)', async (t) => {
  // uWS gets the status line and the pipeline's fields in one call (server.ts uwsIo): the bytes must be those of one
  // writeHeader per field.
  const { server } = await start({ corsOrigins: ['https://dashboard.example'], rateLimit: { burst: 20, refillPerSecond: 10 } })
  const fieldsOf = (text: string) => text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1).filter((line) => !/^(date|connection|keep-alive|uwebsockets|content-length): /i.test(line))
  const origin = 'Origin: https://dashboard.example\r\nx-request-id: head-1\r\n'
  const expose = 'link, next-after, retry-after, ratelimit, ratelimit-policy, x-request-id, idempotent-replayed, www-authenticate, etag, allow, payment-required, payment-response'
  const cors = ['vary: Origin', 'access-control-allow-origin: https://dashboard.example', `access-control-expose-headers: ${expose}`]
  const cases: Array<[string, string, string[]]> = [
    [`GET /items/abc HTTP/1.1\r\nHost: x\r\n${origin}\r\n`, 'HTTP/1.1 200 OK', ['content-type: application/json', 'x-request-id: head-1', 'ratelimit-policy: "client";q=20;w=2', 'ratelimit: "client";r=19;t=1', ...cors]],
    [`HEAD /items/abc HTTP/1.1\r\nHost: x\r\n${origin}\r\n`, 'HTTP/1.1 200 OK', ['content-type: application/json', 'x-request-id: head-1', 'ratelimit-policy: "client";q=20;w=2', 'ratelimit: "client";r=18;t=1', ...cors]],
    [`DELETE /items/abc HTTP/1.1\r\nHost: x\r\n${origin}\r\n`, 'HTTP/1.1 204 No Content', ['x-request-id: head-1', 'ratelimit-policy: "client";q=20;w=2', 'ratelimit: "client";r=17;t=1', ...cors]],
  ]
  for (const [request, statusLine, fields] of cases) {
    const { text } = await rawUntil(server.port, [request], request.startsWith('HEAD') ? headEnded : responsesEnded(1))
    t.equal(text.slice(0, text.indexOf('\r\n')), statusLine, `${request.split(' ', 1)[0]}: the status line`)
    const got = fieldsOf(text)
    if (testTransport === 'uws') t.same(got, fields, `${request.split(' ', 1)[0]}: the fields, in order`)
    else t.same(got.map((line) => line.toLowerCase()).sort(), fields.map((line) => line.toLowerCase()).sort(), `${request.split(' ', 1)[0]}: the fields`)
    if (request.startsWith('HEAD')) t.match(text, /\r\ncontent-length: \d+\r\n/i, 'HEAD: the GET\'s length')
  }
})

t.test('every answer carries a request id: the caller\'s when sane, else a fresh one; the log line has it', async (t) => {
  const { server, logs } = await start()
  const echoed = await fetch(`${server.url}/items/abc`, { headers: { 'x-request-id': 'trace-42.a:b' } })
  t.equal(echoed.headers.get('x-request-id'), 'trace-42.a:b')
  t.ok(logs.some((l) => l.msg === 'request' && l['requestId'] === 'trace-42.a:b'), 'the log line names it')
  const minted = await fetch(`${server.url}/items/abc`, { headers: { 'x-request-id': 'no spaces or "quotes" allowed' } })
  const id = minted.headers.get('x-request-id') ?? ''
  t.match(id, /^[0-9a-f]{12}-[0-9a-z]+$/, 'an insane one is replaced')
  const another = (await fetch(`${server.url}/nope`)).headers.get('x-request-id')
  t.not(another, id, 'ids differ; 404s have one too')
  t.ok((await fetch(`${server.url}/boom`, { method: 'POST' })).headers.get('x-request-id'), 'and 500s')
  t.ok(logs.some((l) => l.msg === 'handler_failed' && typeof l['requestId'] === 'string'), 'the error log line names the request')
})

t.test('an immutable document: built once, strong ETag, Cache-Control, 304, gzip and br, query ignored', async (t) => {
  const { server } = await start()
  const before = documentBuilds
  const plain = await fetch(`${server.url}/doc.txt`, { headers: { 'accept-encoding': 'identity' } })
  t.equal(plain.status, 200)
  t.equal(await plain.text(), DOCUMENT)
  const etag = plain.headers.get('etag') ?? ''
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong ETag')
  t.equal(plain.headers.get('cache-control'), 'public, max-age=300')
  t.equal(plain.headers.get('vary'), 'Accept-Encoding')

  const notModified = await fetch(`${server.url}/doc.txt`, { headers: { 'accept-encoding': 'identity', 'if-none-match': etag } })
  t.equal(notModified.status, 304)
  t.equal(notModified.headers.get('etag'), etag)
  t.equal(await notModified.text(), '')
  t.equal((await fetch(`${server.url}/doc.txt`, { headers: { 'accept-encoding': 'identity', 'if-none-match': '"other", ' + etag } })).status, 304, 'any listed tag')
  t.equal((await fetch(`${server.url}/doc.txt`, { headers: { 'accept-encoding': 'identity', 'if-none-match': '"stale"' } })).status, 200)

  const gz = await raw(server.port, 'GET /doc.txt?v=1 HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n')
  t.equal(gz.status, 200, 'a cache-busting query parameter is ignored here')
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.not(gz.headers['etag'], etag, 'each coding has its own strong ETag')
  const { text: gzText } = await rawUntil(server.port, ['GET /doc.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n'], responsesEnded(1))
  const gzBody = Buffer.from(gzText.slice(gzText.indexOf('\r\n\r\n') + 4), 'latin1')
  t.equal(gunzipSync(gzBody).toString('utf8'), DOCUMENT, 'gzip decodes to the document')
  t.ok(gzBody.length < DOCUMENT.length / 4, `compressed ${gzBody.length} of ${DOCUMENT.length} bytes`)

  const { text: brText } = await rawUntil(server.port, ['GET /doc.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n'], responsesEnded(1))
  const br = parseResponse(brText)
  t.equal(br.headers['content-encoding'], 'br', 'br preferred when offered')
  t.equal(brotliDecompressSync(Buffer.from(brText.slice(brText.indexOf('\r\n\r\n') + 4), 'latin1')).toString('utf8'), DOCUMENT)
  t.equal((await raw(server.port, `GET /doc.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br;q=0, gzip\r\n\r\n`)).headers['content-encoding'], 'gzip', 'q=0 refuses a coding')

  const head = await raw(server.port, 'HEAD /doc.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n', headEnded)
  t.equal(head.headers['content-length'], br.headers['content-length'], 'HEAD reports the length of the representation')
  t.equal(head.headers['etag'], br.headers['etag'])
  t.equal(documentBuilds - before, 1, 'the handler ran once for all of these')
  t.equal((await fetch(`${server.url}/items/abc?v=1`)).status, 400, 'on other routes an unknown parameter stays refused')
})

t.test('integer query parameters are integers with their real bounds', async (t) => {
  const { server } = await start()
  const ten = await fetch(`${server.url}/things?limit=10&after=5`)
  t.equal(ten.status, 200)
  t.same((await ten.json() as Array<{ n: number }>).map((x) => x.n), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15], 'limit and after arrive as numbers')
  t.equal((await fetch(`${server.url}/things?limit=1000`)).status, 200)
  for (const bad of ['1001', '9999', '0', '-1', '01', '1e3', '10.0', '0x10', ' 10', 'ten', '99999999999999999999']) {
    const response = await fetch(`${server.url}/things?limit=${encodeURIComponent(bad)}`)
    t.equal(response.status, 400, `limit=${bad} is refused, not clamped`)
    t.same(((await response.json()) as { errors: Array<{ path: string }> }).errors.map((e) => e.path), ['/query/limit'])
  }
})

t.test('an action whose body is optional accepts an empty POST', async (t) => {
  const { server } = await start()
  actionCalls.length = 0
  const none = await fetch(`${server.url}/actions/a1/go`, { method: 'POST' })
  t.equal(none.status, 200, 'no body, no content-type')
  t.same(await none.json(), { id: 'a1', note: null })
  const emptyJson = await fetch(`${server.url}/actions/a2/go`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' })
  t.equal(emptyJson.status, 200, 'content-type JSON, empty body')
  const withBody = await fetch(`${server.url}/actions/a3/go`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"note":"x"}' })
  t.same(await withBody.json(), { id: 'a3', note: 'x' })
  t.same(actionCalls, [{}, {}, { note: 'x' }], 'the handler saw {} for the empty ones')
  t.equal((await fetch(`${server.url}/actions/a4/go`, { method: 'POST', body: 'note' })).status, 415, 'a body that is not JSON is still refused')
  t.equal((await fetch(`${server.url}/echo/a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' })).status, 400, 'a required body stays required')
})

t.test('ambiguous framing is refused: two Content-Length, or Content-Length with Transfer-Encoding', async (t) => {
  const { server } = await start()
  actionCalls.length = 0
  // Each waits for the server's close (or fails at the deadline): the answer, if any, comes before it.
  const { text, closedByServer } = await rawUntil(server.port, ['POST /actions/x/go HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 14\r\n\r\n{}{"note":"b"}'], serverClosed)
  const answer = parseResponse(text)
  t.equal(answer.status, 400)
  t.equal(JSON.parse(answer.body).code, 'ambiguous_content_length')
  t.ok(closedByServer, 'the connection is closed: the rest cannot be framed')
  const same = await raw(server.port, 'POST /actions/x/go HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}')
  t.equal(same.status, 400, 'even two equal values')
  const both = await rawUntil(server.port, ['POST /actions/x/go HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'], serverClosed)
  // uWS itself drops this one before any handler sees it: no answer, the connection closed.
  t.ok(both.closedByServer, 'Content-Length with Transfer-Encoding: closed')
  t.notMatch(both.text, /HTTP\/1.1 200/)
  t.same(actionCalls, [], 'no handler ran')
  t.equal((await fetch(`${server.url}/items/abc`)).status, 200, 'still serving')
})

t.test('duplicate JSON keys are refused with their path, at any depth and in any escaping', async (t) => {
  const { server } = await start()
  const post = (body: string) => fetch(`${server.url}/echo/a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const owner = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'
  const cases: Array<[string, string]> = [
    [`{"amountAtomic":"1","feeBps":1,"owner":"${owner}","amountAtomic":"1000000"}`, '/body/amountAtomic'],
    [`{"amountAtomic":"1","feeBps":1,"owner":"${owner}","nested":{"count":1,"count":2}}`, '/body/nested/count'],
    [`{"amountAtomic":"1","feeBps":1,"owner":"${owner}","\\u0066eeBps":2}`, '/body/feeBps'],
    [`[{"a":1},{"a":1,"b":{"c":[{"d":1,"d":2}]}}]`, '/body/1/b/c/0/d'],
  ]
  for (const [body, path] of cases) {
    const response = await post(body)
    t.equal(response.status, 400, path)
    const problem = (await response.json()) as { code: string; errors: Array<{ path: string }> }
    t.equal(problem.code, 'duplicate_json_key')
    t.same(problem.errors.map((e) => e.path), [path])
  }
  t.equal((await post(`{"amountAtomic":"1","feeBps":1,"owner":"${owner}","note":"a\\"amountAtomic\\":2"}`)).status, 201, 'a key inside a string value is not a key')
  t.equal((await post(`{"amountAtomic":"1","feeBps":1,"owner":"${owner}","nested":{"count":1}}`)).status, 201, 'equal keys in different objects are fine')
})

t.test('rate limits: RateLimit fields on every answer, a wallet counted apart from its address, list pages by their size', async (t) => {
  let now = 1_000_000
  const { server } = await start({ rateLimit: { burst: 20, refillPerSecond: 10 }, nowMs: () => now })
  const first = await fetch(`${server.url}/items/abc`)
  t.equal(first.headers.get('ratelimit-policy'), '"client";q=20;w=2')
  t.equal(first.headers.get('ratelimit'), '"client";r=19;t=1')
  // A page of 15 items costs 15 tokens: the RateLimit field of its answer says so.
  const page = await fetch(`${server.url}/things?limit=15`)
  t.equal(page.status, 200)
  t.equal(page.headers.get('ratelimit'), '"client";r=4;t=2')
  for (let i = 0; i < 4; i++) t.equal((await fetch(`${server.url}/items/abc`)).status, 200)
  const limited = await fetch(`${server.url}/items/abc`)
  t.equal(limited.status, 429, 'the anonymous client address is spent')
  t.equal(limited.headers.get('ratelimit'), '"client";r=0;t=2', 'the 429 carries the fields too')
  t.equal(limited.headers.get('retry-after'), '1')
  // Another client behind the same address, signed in: counted on its wallet, not refused.
  const mine = await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: `Bearer token-${WALLET_A}`, 'content-type': 'application/json' }, body: '{}' })
  t.equal(mine.status, 200, 'a signed-in wallet is not locked out by a flood from its address')
  t.equal(mine.headers.get('ratelimit-policy'), '"wallet";q=20;w=2')
  t.equal(mine.headers.get('ratelimit'), '"wallet";r=19;t=1')
  const read = await fetch(`${server.url}/items/abc`, { headers: { authorization: `Bearer token-${WALLET_A}` } })
  t.equal(read.status, 200, 'its reads count on its wallet too')
  t.equal(read.headers.get('ratelimit'), '"wallet";r=18;t=1')
  // A wallet that floods is refused, and only that wallet.
  for (let i = 0; i < 18; i++) await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: `Bearer token-${WALLET_A}`, 'content-type': 'application/json' }, body: '{}' })
  t.equal((await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: `Bearer token-${WALLET_A}`, 'content-type': 'application/json' }, body: '{}' })).status, 429)
  t.equal((await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: `Bearer token-${WALLET_B}`, 'content-type': 'application/json' }, body: '{}' })).status, 200, 'another wallet on the same address')
  // An unknown token is counted on the address (already spent): no way around the limit by inventing tokens.
  t.equal((await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: 'Bearer made-up', 'content-type': 'application/json' }, body: '{}' })).status, 429)
  now += 2_000
  t.equal((await fetch(`${server.url}/mine`, { method: 'POST', headers: { authorization: 'Bearer made-up', 'content-type': 'application/json' }, body: '{}' })).status, 401, 'after the refill the unknown token is a 401')
})

t.test('behind a trusted proxy each forwarded client has its own bucket; a direct caller cannot pick one', async (t) => {
  const { server } = await start({ rateLimit: { burst: 2, refillPerSecond: 0.001 }, nowMs: () => 0, trustedProxies: ['127.0.0.1'] })
  const from = (client: string) => fetch(`${server.url}/items/abc`, { headers: { 'x-forwarded-for': client } })
  t.equal((await from('203.0.113.1')).status, 200)
  t.equal((await from('203.0.113.1')).status, 200)
  t.equal((await from('203.0.113.1')).status, 429, 'one flooding client behind the proxy')
  t.equal((await from('203.0.113.2')).status, 200, 'does not lock out the next one')
  // An IPv6 client is one /64 (a subscriber's or a rented server's whole prefix): 2^64 addresses, one bucket.
  t.equal((await from('2001:db8:1:2::1')).status, 200)
  t.equal((await from('2001:db8:1:2:ffff::9')).status, 200)
  t.equal((await from('2001:db8:1:2:abcd:1:2:3')).status, 429, 'another address of the same /64 shares its bucket')
  t.equal((await from('2001:db8:1:3::1')).status, 200, 'the next /64 is another client')
  const untrusted = await start({ rateLimit: { burst: 2, refillPerSecond: 0.001 }, nowMs: () => 0 })
  for (const client of ['198.51.100.1', '198.51.100.2']) t.equal((await fetch(`${untrusted.server.url}/items/abc`, { headers: { 'x-forwarded-for': client } })).status, 200)
  t.equal((await fetch(`${untrusted.server.url}/items/abc`, { headers: { 'x-forwarded-for': '198.51.100.3' } })).status, 429, 'without a trusted proxy the header changes nothing')
})

t.test('a handler is given the client the service counts (RouteContext.clientKey): an address, an IPv6 client\'s /64', async (t) => {
  const { server } = await start({ rateLimit: { burst: 100, refillPerSecond: 1 }, trustedProxies: ['127.0.0.1'] })
  const clientOf = async (headers: Record<string, string>) => ((await (await fetch(`${server.url}/client`, { headers })).json()) as { clientKey: string }).clientKey
  t.equal(await clientOf({ 'x-forwarded-for': '2001:db8:1:2:abcd:1:2:3' }), '2001:db8:1:2::/64', 'anonymous: the key its bucket is counted on')
  t.equal(await clientOf({ 'x-forwarded-for': '203.0.113.7', authorization: `Bearer token-${WALLET_A}` }), '203.0.113.7', 'signed in (counted on its wallet): read when the handler asks')
  t.equal(await clientOf({ 'x-forwarded-for': '::ffff:198.51.100.4' }), '198.51.100.4', 'an IPv4-mapped address is its IPv4 address')
})

t.test('HTTP/1.0 is served through the same routes and closes; HTTP/1.1 without Host is a 400 (the node:net front)', async (t) => {
  const { server, logs } = await start()
  const get10 = await rawUntil(server.port, ['GET /items/abc?verbose=true HTTP/1.0\r\n\r\n'], serverClosed)
  const get = parseResponse(get10.text)
  t.equal(get.status, 200, 'an HTTP/1.0 GET without Host is answered')
  t.match(get10.text, /^HTTP\/1\.1 200 OK\r\n/, 'with the server\'s own version in the status line (RFC 9110 section 2.5)')
  t.same(JSON.parse(get.body), { itemId: 'abc', verbose: true })
  t.equal(get.headers['content-length'], String(Buffer.byteLength(get.body)), 'Content-Length frames the body')
  t.equal(get.headers['connection'], 'close')
  t.ok(get10.closedByServer, 'and the connection closes after the answer')
  t.match(get.headers['x-request-id'], /.+/)

  const body = JSON.stringify({ amountAtomic: '12', feeBps: 30, owner: WALLET_A })
  const post10 = await rawUntil(server.port, [`POST /echo/abc HTTP/1.0\r\nHost: example.test\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`], serverClosed)
  const post = parseResponse(post10.text)
  t.equal(post.status, 201, 'an HTTP/1.0 POST with a body is served (its keep-alive is not offered)')
  t.equal(JSON.parse(post.body).amountAtomic, '12')
  t.equal(post.headers['content-length'], String(Buffer.byteLength(post.body)))
  t.equal(post.headers['connection'], 'close')
  t.ok(post10.closedByServer)

  const noHost = await rawUntil(server.port, ['GET /items/abc HTTP/1.1\r\n\r\n'], serverClosed)
  const refused = parseResponse(noHost.text)
  t.equal(refused.status, 400, 'HTTP/1.1 without Host is refused (RFC 9112 section 3.2)')
  t.equal(refused.headers['content-type'], 'application/problem+json')
  t.match(JSON.parse(refused.body), { status: 400, code: 'missing_host' })
  t.equal(refused.headers['connection'], 'close')
  t.ok(noHost.closedByServer)
  const twoHosts = parseResponse((await rawUntil(server.port, ['GET /items/abc HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'], serverClosed)).text)
  t.match(JSON.parse(twoHosts.body), { status: 400, code: 'bad_host' })
  const http2 = parseResponse((await rawUntil(server.port, ['GET / HTTP/2.0\r\nHost: a\r\n\r\n'], serverClosed)).text)
  t.equal(http2.status, 505)
  const garbage = parseResponse((await rawUntil(server.port, ['hello there\r\n\r\n'], serverClosed)).text)
  t.match(JSON.parse(garbage.body), { status: 400, code: 'malformed_request' })
  const chunked10 = parseResponse((await rawUntil(server.port, ['POST /echo/abc HTTP/1.0\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'], serverClosed)).text)
  t.match(JSON.parse(chunked10.body), { status: 400, code: 'malformed_request' }, 'no chunked framing in HTTP/1.0')
  // Behind the front, the front answers these itself; on node:http the pipeline does, through its request log.
  if (testTransport === 'uws') t.ok(logs.some((l) => l.msg === 'request' && l['status'] === 400 && l['front'] === true), 'the front logs what it answers itself')
  else t.ok(logs.some((l) => l.msg === 'request' && l['status'] === 400), 'the refusals are logged')
})

t.test('a keep-alive HTTP/1.1 client is unaffected by the front: several requests, one connection, the client\'s address', async (t) => {
  const { server } = await start({ rateLimit: { burst: 3, refillPerSecond: 0.001 }, nowMs: () => 0 })
  const requests = ['GET /items/a HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /items/b HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /items/c HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /items/d HTTP/1.1\r\nHost: x\r\n\r\n']
  const exchange = new RawConnection(server.port)
  t.teardown(() => exchange.destroy())
  await exchange.write(...requests)
  await exchange.until(responsesEnded(4))
  const statuses = [...exchange.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
  t.same(statuses, [200, 200, 200, 429], 'four answers on one connection; the bucket of 127.0.0.1 (from the PROXY header) empties')
  t.notMatch(exchange.text, /connection: close/i)
  // Open still: a fifth request on it, sent after the four answers, is answered too.
  await exchange.write('GET /items/a HTTP/1.1\r\nHost: x\r\n\r\n')
  await exchange.until(responsesEnded(5))
  t.equal(wholeResponses(exchange.text), 5, 'the connection stays open')
  t.notOk(exchange.closedByServer)
  // Pipelined in one write: both answered, in order.
  const pipelined = await rawUntil(server.port, ['GET /items/e HTTP/1.1\r\nHost: x\r\n\r\nGET /items/f HTTP/1.1\r\nHost: x\r\n\r\n'], responsesEnded(2))
  t.same([...pipelined.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), [429, 429], 'on a new connection from the same address')
})

// uWS only: node:http answers HTTP/1.0 itself (transport.test.ts).
if (testTransport === 'uws') {
  t.test('legacyClients: false puts uWS on the port: HTTP/1.1 served, HTTP/1.0 left without an answer', async (t) => {
    const { server } = await start({ legacyClients: false })
    t.equal((await fetch(`${server.url}/items/abc`)).status, 200)
    // The client ends its side after the request: uWS closes then, after any answer it had for it.
    const http10 = await rawUntil(server.port, ['GET /items/abc HTTP/1.0\r\nHost: x\r\n\r\n'], serverClosed, { halfClose: true })
    t.ok(http10.closedByServer)
    t.equal(http10.text, '', 'what the README documents for this setting (proxy_http_version 1.1)')
    const http11 = await rawUntil(server.port, ['GET /items/abc HTTP/1.1\r\nHost: x\r\n\r\n'], serverClosed, { halfClose: true })
    t.match(http11.text, /^HTTP\/1\.1 200 /, 'while an HTTP/1.1 request so sent is answered before the close')
  })
}
