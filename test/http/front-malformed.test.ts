// Request heads uWS answers nothing to (outsider17): a control byte or a byte past 0x7f in a field value, white space
// before a colon, an obs-fold line, bare-LF line endings, a line with no colon, a method uWS does not know. Before, the
// client got silence until uWS's 10 s idle timeout, a connection closed with nothing written, or (bytes past 0x7f at
// the end of a value) a value read without them. The front answers them itself, as the first head of a connection
// (front.ts) or a later one (front-gate.ts): 400 `bad_request_head` (501 `method_not_implemented`), then closes. And
// an HTTP/1.0 request with another pipelined behind it gets its answer (the rest is dropped: the connection closes).
import t from 'tap'
import { answersTo } from './fixtures/raw.ts'
import { startTestServer, testTransport } from './fixtures/routes.ts'

const head = (fields: string, method = 'GET', path = '/items/a') => `${method} ${path} HTTP/1.1\r\nHost: x\r\n${fields}\r\n`
const valid = 'GET /items/first HTTP/1.1\r\nHost: x\r\n\r\n'
const echo = JSON.stringify({ amountAtomic: '1000000', feeBps: 250, owner: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' })

/** Sends `bytes` (in parts, a pause between them; after a valid request when `later`): the answers, and whether the server closed. */
function exchange(port: number, bytes: Buffer | Buffer[], later: boolean, count = later ? 2 : 1, close = true) {
  const [first = Buffer.alloc(0), ...rest] = Array.isArray(bytes) ? bytes : [bytes]
  return answersTo(port, [later ? Buffer.concat([Buffer.from(valid), first]) : first, ...rest], count, close)
}

if (testTransport === 'uws') {
  const { server } = await startTestServer({ corsOrigins: ['https://dash.example'] })
  t.teardown(() => server.close(1000))

  const bad: Array<[string, string | Buffer, string]> = [
    ['a 0x01 byte in a value', head('X-A: a\x01b\r\n'), 'control byte'],
    ['a NUL in a value', head('X-A: a\x00b\r\n'), 'control byte'],
    ['a VT in a value', head('X-A: a\x0bb\r\n'), 'control byte'],
    ['a DEL in a value', head('X-A: a\x7fb\r\n'), 'control byte'],
    ['a CR alone in a value', head('X-A: a\rb\r\n'), 'CR without LF'],
    ['an LF alone in a value', head('X-A: a\nb\r\n'), 'CR without LF'],
    ['bare-LF line endings', 'GET /items/a HTTP/1.1\nHost: x\nX-A: b\r\n\r\n', 'CR without LF'],
    ['white space before the colon', head('X-A : b\r\n'), 'not `name: value`'],
    ['an obs-fold continuation line', head('X-A: b\r\n  c\r\n'), 'not `name: value`'],
    ['a line with no colon', head('X-A b\r\n'), 'not `name: value`'],
    ['an empty field name', head(': b\r\n'), 'not `name: value`'],
    ['Origin ending in 0xe9', Buffer.from(head('Origin: https://dash.example\xe9\r\n'), 'latin1'), '0x80 or above'],
    ['X-Request-Id ending in 0xe9', Buffer.from(head('X-Request-Id: id\xe9\r\n'), 'latin1'), '0x80 or above'],
    ['Idempotency-Key ending in 0xe9', Buffer.from(`POST /echo/k HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\xe9\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`, 'latin1'), '0x80 or above'],
    ['a byte past 0x7f in the target', Buffer.from(head('', 'GET', '/items/\xe9'), 'latin1'), '0x80 or above'],
  ]
  const methods = ['get', 'Get', 'FOO', 'PROPFIND']

  t.test('a head uWS would answer nothing to: 400 bad_request_head naming the rule, then the connection closes', async (t) => {
    const cases = bad.flatMap(([name, bytes, rule]) => [false, true].map((later) => ({ name, bytes: Buffer.from(bytes as string, 'latin1'), rule, later })))
    const results = await Promise.all(cases.map(async (c) => ({ ...c, ...(await exchange(server.port, c.bytes, c.later)) })))
    for (const { name, rule, later, answers, closed } of results) {
      const label = `${name} (${later ? 'a later head' : 'the first head'})`
      const last = answers[answers.length - 1]
      t.same(answers.map((a) => a.status), later ? [200, 400] : [400], `${label}: answered`)
      t.equal(last?.headers['content-type'], 'application/problem+json', label)
      const problem = JSON.parse(last?.body ?? '{}')
      t.equal(problem.code, 'bad_request_head', label)
      t.match(problem.detail, rule, `${label}: says which rule`)
      t.equal(last?.headers.connection, 'close', label)
      t.ok(closed, `${label}: closed`)
    }
  })

  t.test('a method uWS does not know: 501 method_not_implemented, then the connection closes', async (t) => {
    const cases = methods.flatMap((method) => [false, true].map((later) => ({ method, later })))
    const results = await Promise.all(cases.map(async (c) => ({ ...c, ...(await exchange(server.port, Buffer.from(head('', c.method)), c.later)) })))
    for (const { method, later, answers, closed } of results) {
      const label = `${method} (${later ? 'a later head' : 'the first head'})`
      t.same(answers.map((a) => a.status), later ? [200, 501] : [501], label)
      t.equal(JSON.parse(answers[answers.length - 1]?.body ?? '{}').code, 'method_not_implemented', label)
      t.ok(closed, `${label}: closed`)
    }
  })

  t.test('what the rules allow still reaches the routes: a tab, odd case, a known method on the wrong route (405), CONNECT the last request', async (t) => {
    const fine: ReadonlyArray<readonly [string, number, boolean?]> = [
      [head('X-A:\tb c\t\r\nx-request-id:own-1\r\nACCEPT: */*\r\nOrigin: https://dash.example\r\n'), 200],
      [head('', 'PUT'), 405],
      [head('', 'TRACE'), 405],
      // CONNECT is its connection's last request, as on node:http: what follows it is dropped, and the connection closes
      // (front-gate.ts lastRequest; test/http/front-upstream-close.test.ts).
      [head('', 'CONNECT', '/nope'), 404, true],
      // A browser sends the host's every cookie, another application's UTF-8 ones too: no route reads them.
      [head('Cookie: theme=caf\xc3\xa9; other=1\r\n'), 200],
      [`POST /echo/fine HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\ncontent-length:  ${echo.length} \r\n\r\n${echo}`, 201],
    ]
    for (const later of [false, true]) {
      for (const [bytes, status, last = false] of fine) {
        const expected = [...(later ? [200] : []), status, ...(last ? [] : [200])]
        const label = `${bytes.split('\r\n')[0]} (${later ? 'later' : 'first'})`
        const { answers, closed } = await exchange(server.port, Buffer.from(`${bytes}${valid}`, 'latin1'), later, expected.length, last)
        t.same(answers.map((a) => a.status), expected, label)
        if (last) t.ok(closed, `${label}: closed`)
      }
    }
  })

  t.test('HTTP/1.0 with requests pipelined behind it: its answer comes, the rest is dropped, the connection closes', async (t) => {
    const post = `POST /echo/old HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${echo.length}\r\n\r\n`
    const after = 'GET /items/b HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=1 HTTP/1.0\r\n\r\n'
    const cases: Array<[string[], number]> = [
      [['GET /slow?ms=30 HTTP/1.0\r\n\r\nGET /items/b HTTP/1.1\r\nHost: x\r\n\r\n'], 200],
      [[`${post}${echo}${after}`], 201],
      // The body split across reads: its rest goes on, what follows it does not.
      [[`${post}${echo.slice(0, 10)}`, `${echo.slice(10)}${after}`], 201],
      [[post, echo.slice(0, 10), echo.slice(10), after], 201],
    ]
    for (const [parts, status] of cases) {
      const { answers, closed } = await exchange(server.port, parts.map((part) => Buffer.from(part)), false)
      t.same(answers.map((a) => a.status), [status], JSON.stringify(parts).slice(0, 80))
      t.ok(closed, 'closed after the one answer')
    }
  })
}
