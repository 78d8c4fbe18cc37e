// Request heads the front passed that the pinned uWS build answers nothing to (outsider18): a field name with a tchar
// other than a letter, digit or hyphen (`X_A`, `X.A`, `X!A`: RFC 9110 allows them, uWS holds the connection silent
// until its 10 s idle timeout), a request target that is not a path (`*`, an absolute URL, CONNECT's authority, a tab
// in the target), and on a later head of a connection, which the front judged by fewer rules than the first: a space
// in the target, HTTP/1.0, a lower-case version, no Host, two Hosts. Each is now answered 400 and the connection
// closes; valid heads (a browser's and curl's fields, a line end split between reads, a head of exactly 4,000 bytes)
// still pass. And a Content-Length uWS closes the connection on, with nothing written (10 digits or more, a sign, a
// list), is answered 413 or 400. Each case is sent as a connection's first head and after a valid request on it.
import t from 'tap'
import { answersTo } from './fixtures/raw.ts'
import { startTestServer, testTransport } from './fixtures/routes.ts'

const valid = 'GET /items/first HTTP/1.1\r\nHost: x\r\n\r\n'
const head = (line: string, fields = '', host = 'Host: x\r\n') => `${line}\r\n${host}${fields}\r\n`
const get = (fields: string) => head('GET /items/a HTTP/1.1', fields)
const length = (value: string) => head('POST /echo/k HTTP/1.1', `Content-Type: application/json\r\nContent-Length: ${value}\r\n`)

/** Sends `parts` (a pause between them; after a valid request when `later`): the answers, and whether the server closed. */
function exchange(port: number, parts: string[], later: boolean, close: boolean) {
  const [first = '', ...rest] = parts
  return answersTo(port, [later ? valid + first : first, ...rest], later ? 2 : 1, close)
}

if (testTransport === 'uws') {
  const { server } = await startTestServer()
  t.teardown(() => server.close(1000))

  const refused: Array<[string, string, boolean, string]> = [
    ...[...'_.!#$%&\'*+^`|~'].map((c): [string, string, boolean, string] => [`a field name with ${c}`, get(`X${c}A: 1\r\n`), true, 'bad_request_head']),
    ['a Content-Length of 10 digits', `${length('1000000000')}{`, true, 'payload_too_large'],
    ['a Content-Length with a sign', `${length('+2')}{}`, true, 'bad_request_head'],
    ['a Content-Length list', `${length('2, 2')}{}`, true, 'bad_request_head'],
    ['OPTIONS *', head('OPTIONS * HTTP/1.1'), true, 'malformed_request'],
    ['an absolute-form target', head('GET http://x/items/a HTTP/1.1'), true, 'malformed_request'],
    ['CONNECT to an authority', head('CONNECT x:443 HTTP/1.1'), true, 'malformed_request'],
    ['a tab in the target', head('GET /items/a\tb HTTP/1.1'), true, 'malformed_request'],
    ['a space in the target', head('GET /items/a b HTTP/1.1'), false, 'malformed_request'],
    ['two spaces after the method', head('GET  /items/a HTTP/1.1'), false, 'malformed_request'],
    ['http/1.1 in lower case', head('GET /items/a http/1.1'), false, 'malformed_request'],
    ['HTTP/1.0 on a later head', head('GET /items/a HTTP/1.0'), false, 'malformed_request'],
    ['no Host', head('GET /items/a HTTP/1.1', '', ''), false, 'missing_host'],
    ['two Hosts', get('Host: y\r\n'), false, 'bad_host'],
  ]

  t.test('a head uWS answers nothing to: 400 (413) with a code, then the connection closes', async (t) => {
    // `firstToo`: the case is checked as a connection's first head as well (the others are the first head's rules already).
    const cases = refused.flatMap(([name, bytes, firstToo, code]) => (firstToo ? [false, true] : [true]).map((later) => ({ name, bytes, code, later })))
    const results = await Promise.all(cases.map(async (c) => ({ ...c, ...(await exchange(server.port, [c.bytes], c.later, true)) })))
    for (const { name, code, later, answers, closed } of results) {
      const label = `${name} (${later ? 'a later head' : 'the first head'})`
      const last = answers[answers.length - 1]
      const status = code === 'payload_too_large' ? 413 : 400
      t.same(answers.map((a) => a.status), later ? [200, status] : [status], `${label}: answered`)
      t.equal(JSON.parse(last?.body ?? '{}').code, code, label)
      t.ok(closed, `${label}: closed`)
    }
  })

  const pad = (length: number): string => {
    const bare = get('X-Pad: \r\n')
    return get(`X-Pad: ${'a'.repeat(length - bare.length)}\r\n`)
  }
  const served: Array<[string, string[]]> = [
    ['curl\'s fields', [get('User-Agent: curl/8.5.0\r\nAccept: */*\r\n')]],
    ['a browser\'s fields (quoted strings, commas, `;`)', [get('Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\nSec-CH-UA: "Chromium";v="120", "Not?A_Brand";v="8"\r\nCookie: a="b c"; d=e\r\nIf-None-Match: W/"x", "y"\r\n')]],
    ['upper-case and digit names, a tab in a value', [get('USER-AGENT: Q\r\nX-9: 1\r\nX-A:\tb\t\r\n')]],
    ['CR and LF of a line end in different reads', ['GET /items/a HTTP/1.1\r', '\nHost: x\r', '\n\r', '\n']],
    ['a head of exactly 4,000 bytes', [pad(4000)]],
  ]

  t.test('valid heads still pass, and the connection stays open', async (t) => {
    t.equal(pad(4000).length, 4000)
    const cases = served.flatMap(([name, parts]) => [false, true].map((later) => ({ name, parts, later })))
    const results = await Promise.all(cases.map(async (c) => ({ ...c, ...(await exchange(server.port, c.parts, c.later, false)) })))
    for (const { name, later, answers } of results) t.same(answers.map((a) => a.status), later ? [200, 200] : [200], `${name} (${later ? 'a later head' : 'the first head'})`)
  })
}
