// The transport over real HTTP: every error class, the happy path, corked headers and bodies, aborts.
import t, { type Test } from 'tap'
import { PROBLEM_CONTENT_TYPE } from '../../src/http/problem.ts'
import { abortedUpload, parseResponse, rawExchange } from './fixtures/raw.ts'
import { slowFinished, startTestServer } from './fixtures/routes.ts'

const owner = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'
const ownerChecksummed = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const validBody = { amountAtomic: '1000000', feeBps: 250, owner }

const { server, logs } = await startTestServer()
t.teardown(() => server.close(1000))

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })

async function expectProblem(t: Test, response: Response, status: number, code: string) {
  t.equal(response.status, status, `status ${status}`)
  t.equal(response.headers.get('content-type'), PROBLEM_CONTENT_TYPE, 'problem+json content type')
  const body = await response.json() as Record<string, unknown>
  t.equal(body['code'], code, `code ${code}`)
  t.equal(body['status'], status, 'status repeated in the body')
  t.equal(body['type'], `urn:agent-credit:problem:${code}`)
  t.type(body['title'], 'string')
  t.type(body['detail'], 'string')
  return body
}

/** Resolves once `condition` holds, polling every 5 ms. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

t.test('a valid request reaches the handler, typed and checksummed, with its headers', async (t) => {
  const response = await post('/echo/hello%20world', validBody, { 'idempotency-key': 'k1' })
  t.equal(response.status, 201)
  t.equal(response.headers.get('content-type'), 'application/json')
  t.equal(response.headers.get('x-echo'), 'yes')
  t.same(await response.json(), { name: 'hello world', amountAtomic: '1000000', feeBps: 250, owner: ownerChecksummed, idempotencyKey: 'k1' })
})

t.test('the largest uint256 is accepted, one more is refused', async (t) => {
  const max = ((1n << 256n) - 1n).toString()
  t.equal((await post('/echo/a', { ...validBody, amountAtomic: max })).status, 201)
  const body = await expectProblem(t, await post('/echo/a', { ...validBody, amountAtomic: ((1n << 256n)).toString() }), 400, 'validation_failed')
  t.same(body['errors'], [{ path: '/body/amountAtomic', message: 'must be at most 2^256-1' }])
})

t.test('404 on an unknown route', async (t) => {
  await expectProblem(t, await fetch(`${server.url}/nope`), 404, 'not_found')
  await expectProblem(t, await fetch(`${server.url}/items/a/b`), 404, 'not_found')
})

t.test('405 with Allow on a known path with the wrong method', async (t) => {
  const response = await fetch(`${server.url}/items/abc`, { method: 'PUT' })
  await expectProblem(t, response, 405, 'method_not_allowed')
  t.equal(response.headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS')
  const echo = await fetch(`${server.url}/echo/x`)
  await expectProblem(t, echo, 405, 'method_not_allowed')
  t.equal(echo.headers.get('allow'), 'POST, OPTIONS')
})

t.test('204 has no body and no content-length', async (t) => {
  const response = await fetch(`${server.url}/items/abc`, { method: 'DELETE' })
  t.equal(response.status, 204)
  t.equal(await response.text(), '')
  // RFC 9110 8.6: no Content-Length on a 204 (uWS wrote 9223372036854775808 when asked for none with `undefined`).
  const raw = parseResponse((await rawExchange(server.port, ['DELETE /items/abc HTTP/1.1\r\nHost: x\r\n\r\n'], 300)).text)
  t.equal(raw.status, 204)
  t.equal(raw.headers['content-length'], undefined)
})

t.test('413 when content-length announces more than the limit, before reading it', async (t) => {
  const head = `POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n`
  const { text, closedByServer } = await rawExchange(server.port, [head])
  const response = parseResponse(text)
  t.equal(response.status, 413)
  t.equal(response.headers['content-type'], PROBLEM_CONTENT_TYPE)
  t.equal(JSON.parse(response.body).code, 'payload_too_large')
  t.ok(closedByServer, 'the connection is closed instead of reading the rest')
})

t.test('413 when a chunked body grows past the limit while streaming', async (t) => {
  const head = `POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`
  const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`
  const parts = [head, chunk('{"note":"' + 'x'.repeat(600)), chunk('y'.repeat(600)), chunk('"}'), '0\r\n\r\n']
  const { text } = await rawExchange(server.port, parts)
  const response = parseResponse(text)
  t.equal(response.status, 413)
  t.equal(JSON.parse(response.body).code, 'payload_too_large')
})

t.test('a body of exactly the limit is read; one byte more is a 413', async (t) => {
  const filler = 'x'.repeat(1024 - JSON.stringify({ ...validBody, note: '' }).length)
  const exact = JSON.stringify({ ...validBody, note: filler })
  t.equal(Buffer.byteLength(exact), 1024)
  // It was read and parsed: the validation names the over-long note.
  const body = await expectProblem(t, await post('/echo/a', exact), 400, 'validation_failed')
  t.same((body['errors'] as Array<{ path: string }>).map((e) => e.path), ['/body/note'])
  await expectProblem(t, await post('/echo/a', exact + ' '), 413, 'payload_too_large')
})

t.test('415 when a body route is called without JSON', async (t) => {
  const response = await fetch(`${server.url}/echo/a`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(validBody) })
  await expectProblem(t, response, 415, 'unsupported_media_type')
  const none = await fetch(`${server.url}/echo/a`, { method: 'POST', body: new Uint8Array(Buffer.from(JSON.stringify(validBody))) })
  await expectProblem(t, none, 415, 'unsupported_media_type')
  t.equal((await post('/echo/a', validBody, { 'content-type': 'application/json; charset=utf-8' })).status, 201, 'a charset parameter is fine')
})

t.test('400 malformed JSON', async (t) => {
  await expectProblem(t, await post('/echo/a', '{"amountAtomic": '), 400, 'malformed_json')
  await expectProblem(t, await post('/echo/a', ''), 400, 'malformed_json')
  const invalidUtf8 = await fetch(`${server.url}/echo/a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array([0x22, 0xff, 0x22]) })
  await expectProblem(t, invalidUtf8, 400, 'malformed_json')
})

t.test('a body that arrives in pieces is decoded whole: a character split between two reads is one character', async (t) => {
  const text = JSON.stringify({ ...validBody, note: 'caf\u00e9' })
  const bytes = Buffer.from(text, 'utf8')
  const split = bytes.indexOf(0xc3) + 1
  t.ok(split > 0 && bytes[split] === 0xa9, 'the split falls inside the two bytes of the e-acute')
  const head = `POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`
  const { text: answer } = await rawExchange(server.port, [Buffer.concat([Buffer.from(head), bytes.subarray(0, split)]), bytes.subarray(split)])
  const response = parseResponse(answer)
  t.equal(response.status, 201, 'read and accepted, not malformed_json')
  t.same(JSON.parse(response.body), { name: 'a', amountAtomic: '1000000', feeBps: 250, owner: ownerChecksummed })
})

t.test('400 schema failure lists every offending path', async (t) => {
  const body = await expectProblem(t, await post('/echo/UPPER', { amountAtomic: '01', feeBps: 10001, nested: { count: -1 } }), 400, 'validation_failed')
  const paths = (body['errors'] as Array<{ path: string }>).map((e) => e.path).sort()
  t.same(paths, ['/body/amountAtomic', '/body/feeBps', '/body/nested/count', '/body/owner', '/params/name'])
  await expectProblem(t, await post('/echo/a', [1, 2]), 400, 'validation_failed')
  const query = await expectProblem(t, await fetch(`${server.url}/items/abc?verbose=maybe`), 400, 'validation_failed')
  t.same((query['errors'] as Array<{ path: string }>).map((e) => e.path), ['/query/verbose'])
  t.same(await (await fetch(`${server.url}/items/abc?verbose=true`)).json(), { itemId: 'abc', verbose: true })
})

t.test('unknown fields are refused, at any depth, in the body and the query', async (t) => {
  const body = await expectProblem(t, await post('/echo/a', { ...validBody, extra: 1, nested: { count: 1, sneaky: true } }), 400, 'validation_failed')
  t.same(body['errors'], [{ path: '/body/extra', message: 'unknown field' }, { path: '/body/nested/sneaky', message: 'unknown field' }])
  const proto = await expectProblem(t, await post('/echo/a', `{"amountAtomic":"1","feeBps":1,"owner":"${owner}","__proto__":{"admin":true}}`), 400, 'validation_failed')
  t.same(proto['errors'], [{ path: '/body/__proto__', message: 'unknown field' }])
  const query = await expectProblem(t, await fetch(`${server.url}/items/abc?debug=1`), 400, 'validation_failed')
  t.same(query['errors'], [{ path: '/query/debug', message: 'unknown field' }])
  const noQuerySchema = await expectProblem(t, await fetch(`${server.url}/text?x=1`), 400, 'validation_failed')
  t.same(noQuerySchema['errors'], [{ path: '/query/x', message: 'unknown field' }])
})

t.test('a problem thrown by a handler keeps its status and code', async (t) => {
  await expectProblem(t, await post('/echo/a', { ...validBody, note: 'conflict' }), 409, 'conflict')
})

t.test('500 problem on a throwing handler, logged, and the server keeps serving', async (t) => {
  const body = await expectProblem(t, await fetch(`${server.url}/boom`, { method: 'POST' }), 500, 'internal_error')
  t.notMatch(JSON.stringify(body), /kaboom/, 'the internal message does not leak')
  t.ok(logs.some((line) => line.msg === 'handler_failed' && String(line['errorMessage']).includes('kaboom')), 'the error is logged')
  t.equal((await fetch(`${server.url}/items/abc`)).status, 200, 'still serving')
})

t.test('a response that breaks its documented schema becomes a 500 when responses are validated', async (t) => {
  await expectProblem(t, await fetch(`${server.url}/bad-shape`), 500, 'internal_error')
  t.ok(logs.some((line) => line.msg === 'response_invalid'))
})

t.test('a JsonText body goes out as its text, and is validated as the value that text denotes', async (t) => {
  const good = await fetch(`${server.url}/json-text`)
  t.equal(good.status, 200)
  t.equal(good.headers.get('content-type'), 'application/json')
  t.equal(await good.text(), '{"ok":true}', 'the bytes as written, not re-serialized')
  const before = logs.filter((line) => line.msg === 'response_invalid').length
  await expectProblem(t, await fetch(`${server.url}/json-text?broken=1`), 500, 'internal_error')
  t.equal(logs.filter((line) => line.msg === 'response_invalid').length, before + 1, 'the text was parsed and checked')
})

t.test('text responses keep their content type; headers and body arrive intact over keep-alive', async (t) => {
  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${server.url}/text`)
    t.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8')
    t.equal(response.headers.get('content-length'), '6')
    t.equal(await response.text(), 'hello\n')
  }
  // Two pipelined requests on one connection: each answer is complete and in order.
  const { text } = await rawExchange(server.port, ['GET /text HTTP/1.1\r\nHost: x\r\n\r\nGET /items/zz HTTP/1.1\r\nHost: x\r\n\r\n'], 500)
  const first = parseResponse(text)
  t.equal(first.status, 200)
  t.equal(first.body, 'hello\n')
  const second = parseResponse(text.slice(text.indexOf('hello\n') + 6))
  t.equal(second.status, 200)
  t.same(JSON.parse(second.body), { itemId: 'zz', verbose: false })
})

t.test('an upload aborted half-way does not crash the server', async (t) => {
  const head = `POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n`
  await abortedUpload(server.port, head, '{"amountAtomic":"1"')
  // Polled, not slept: the server learns of the abort when the machine lets it (tap's timeout bounds the wait).
  await until(() => server.inFlight() === 0)
  t.equal(server.inFlight(), 0, 'the aborted request is no longer in flight')
  t.equal((await post('/echo/a', validBody)).status, 201, 'still serving')
})

t.test('a client that goes away during a slow handler: no write to the dead response, no crash', async (t) => {
  const before = { ...slowFinished }
  const controller = new AbortController()
  // The handler waits 1 s; the client goes away as soon as its request is in the handler, however loaded the machine.
  const pending = fetch(`${server.url}/slow?ms=1000`, { signal: controller.signal }).catch((error: Error) => error)
  await until(() => server.inFlight() > 0)
  controller.abort()
  t.type(await pending, Error, 'the client saw its own abort')
  await until(() => slowFinished.count > before.count && logs.some((line) => line.msg === 'request' && line['path'] === '/slow'))
  t.equal(slowFinished.count, before.count + 1, 'the handler ran to its end')
  t.equal(slowFinished.aborted, before.aborted + 1, 'and saw the abort signal')
  t.ok(logs.some((line) => line.msg === 'request' && line['path'] === '/slow' && line['aborted'] === true), 'the abort is logged')
  t.equal((await fetch(`${server.url}/items/abc`)).status, 200, 'still serving')
})

t.test('one JSON log line per request, without bodies', async (t) => {
  const line = logs.find((l) => l.msg === 'request' && l['path'] === '/echo/hello%20world')
  t.ok(line)
  t.same(Object.keys(line ?? {}).sort(), ['level', 'method', 'micros', 'msg', 'path', 'requestId', 'status'])
  t.equal(line?.['method'], 'POST')
  t.equal(line?.['status'], 201)
  t.type(line?.['micros'], 'number')
})
