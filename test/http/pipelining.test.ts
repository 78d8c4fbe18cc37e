// Pipelined HTTP/1.1 requests through the front: answered in order, each whole, however slow the one before them.
// The pinned uWebSockets.js build drops the connection, with nothing written, when a request is parsed while the answer
// before it is still pending; the front's gate (src/http/front-gate.ts) holds each request until the answer before it
// has gone. The last test pins the build's behaviour without the front, so these tests fail if the gate goes.
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import t from 'tap'
import { FAULT_BODY_TOO_LARGE, FAULT_CONTENT_LENGTH, FAULT_CONTROL, FAULT_FIELD_LINE, FAULT_LINE_END, FAULT_OBS_TEXT, framingAt, gateConnection, NO_LENGTH, UNFRAMED } from '../../src/http/front-gate.ts'
import { rawExchange, rawUntil, responsesEnded } from './fixtures/raw.ts'
import { startTestServer, testTransport } from './fixtures/routes.ts'

const owner = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'
const body = JSON.stringify({ amountAtomic: '1000000', feeBps: 250, owner })
const post = (id: string) => `POST /echo/${id} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
const get = (path: string, method = 'GET') => `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`

const { server } = await startTestServer()
t.teardown(() => server.close(1000))

/** The status lines and bodies of the answers in `text`, read by their Content-Length (none after a HEAD). */
function answers(text: string, methods: string[]): Array<{ status: number; body: string }> {
  const out: Array<{ status: number; body: string }> = []
  let at = 0
  for (const method of methods) {
    const end = text.indexOf('\r\n\r\n', at)
    if (end < 0) break
    const head = text.slice(at, end)
    const length = method === 'HEAD' ? 0 : Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)
    out.push({ status: Number(head.slice(9, 12)), body: text.slice(end + 4, end + 4 + length) })
    at = end + 4 + length
  }
  if (at !== text.length) out.push({ status: 0, body: text.slice(at) })
  return out
}

/** What came ends with the answer to /items/end: a last request pipelined behind the others, so that whatever they were answered comes before it (no fixed wait). */
const lastAnswered = (text: string) => text.includes('{"itemId":"end"')

t.test('requests pipelined behind a slow answer are each answered, whole and in order', async (t) => {
  const methods = ['GET', 'GET', 'HEAD', 'POST', 'GET', 'GET']
  const { text } = await rawUntil(server.port, [get('/slow?ms=150') + get('/text') + get('/text', 'HEAD') + post('pa') + get('/items/z9') + get('/items/end')], lastAnswered)
  const got = answers(text, methods)
  t.same(got.map((a) => a.status), [200, 200, 200, 201, 200, 200], 'five answers and the last one\'s, nothing else on the wire')
  t.same(JSON.parse(got[0]!.body), { waitedMs: 150, sawAbort: false }, 'the slow answer first')
  t.equal(got[1]!.body, 'hello\n')
  t.equal(got[2]!.body, '', 'the HEAD answer has no body, and the next answer is read right after its head')
  t.match(JSON.parse(got[3]!.body), { name: 'pa' }, 'the POST body reached its handler whole')
  t.same(JSON.parse(got[4]!.body), { itemId: 'z9', verbose: false })
})

t.test('a pipelined request split across writes, its body arriving while the one before is pending', async (t) => {
  const second = post('pb')
  const cut = second.indexOf('\r\n\r\n') + 10
  const { text } = await rawUntil(server.port, [get('/slow?ms=100') + second.slice(0, 20), second.slice(20, cut), second.slice(cut)], responsesEnded(2))
  const got = answers(text, ['GET', 'POST'])
  t.same(got.map((a) => a.status), [200, 201])
  t.match(JSON.parse(got[1]!.body), { name: 'pb' })
})

// uWS and its front only: node:http refuses a request it cannot parse by closing the connection (transport.test.ts).
if (testTransport === 'uws') {
  t.test('the gate frames only what it can: an ambiguous length or an upgrade lets go', async (t) => {
    t.equal(framingOf('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12'), 12)
    t.equal(framingOf('GET / HTTP/1.1\r\nHost: x'), NO_LENGTH)
    t.equal(framingOf('POST / HTTP/1.1\r\ncontent-length: 1\r\nContent-Length: 1'), UNFRAMED, 'two lengths')
    t.equal(framingOf('POST / HTTP/1.1\r\nTransfer-Encoding: chunked'), UNFRAMED, 'chunked')
    t.equal(framingOf('POST / HTTP/1.1\r\nContent-Length: -1'), FAULT_CONTENT_LENGTH, 'not a decimal: refused (uWS closes on it)')
    t.equal(framingOf('POST / HTTP/1.1\r\nContent-Length: 1000000000'), FAULT_BODY_TOO_LARGE, '10 digits: refused (uWS closes on it)')
    t.equal(framingOf('POST / HTTP/1.1\r\nContent-Length: 999999999'), 999999999, '9 digits')
    t.equal(framingOf('GET /stream HTTP/1.1\r\nUpgrade: websocket'), UNFRAMED, 'an upgrade')
    // Through the server: a request with two lengths behind a pending answer still gets uWS's own refusal.
    const { text } = await rawExchange(server.port, [get('/slow?ms=50') + 'POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}'], 2000)
    t.match(text, /^HTTP\/1\.1 200 /, 'the pending answer is not lost')
  })
}

/** framingAt over a whole head's text (up to, not including, its CRLFCRLF), after `lead` bytes it must skip. */
const framingOf = (head: string, lead = ''): number => framingAt(Buffer.from(`${lead}${head}\r\n\r\n`, 'latin1'), lead.length, lead.length + head.length)

/**
 * The framing rule as the gate read it with a regular expression before it read bytes (issue 11), after the head's
 * rules (outsider17: the first line and each field value printable ASCII, space or tab; every later line `name:value`;
 * the first fault, line by line, says which): the reference.
 */
function framingByExpression(head: string): number {
  for (const [i, line] of head.split('\r\n').entries()) {
    const value = i === 0 ? line : /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:(.*)$/s.exec(line)?.[1]
    if (value === undefined) return FAULT_FIELD_LINE
    const bad = /[^\t\x20-\x7e]/.exec(value)?.[0]
    if (bad !== undefined) return bad === '\r' || bad === '\n' ? FAULT_LINE_END : bad >= '\x80' ? FAULT_OBS_TEXT : FAULT_CONTROL
  }
  // Then the first Content-Length that is not 1 to 9 digits (outsider18), then two lengths, Transfer-Encoding, Upgrade.
  let length: number | undefined
  let fault = 0
  let unframed = false
  for (const [, name = '', value = ''] of head.matchAll(/\r\n(content-length|transfer-encoding|upgrade)[ \t]*:[ \t]*([^\r]*)/gi)) {
    const text = value.trim()
    if (name.toLowerCase() !== 'content-length') unframed = true
    else if (!/^[0-9]+$/.test(text)) fault ||= FAULT_CONTENT_LENGTH
    else if (text.length > 9) fault ||= FAULT_BODY_TOO_LARGE
    else if (length !== undefined) unframed = true
    else length = Number(text)
  }
  return fault !== 0 ? fault : unframed ? UNFRAMED : length ?? NO_LENGTH
}

if (testTransport === 'uws') {
  t.test('the gate reads a head\'s framing from its bytes as the regular expression read its text', async (t) => {
    // Heads built from pieces that sit at the rule's edges: names in any case, near-names, white space (the trim's
    // latin1 set included), signs, 9, 10, 15 and 16 digits, bare CR or LF, bytes past ASCII, fields at the head's end; and the
    // head's rules (white space before a colon, no colon, control bytes, bytes past 0x7f: which fault comes first).
    const names = ['Content-Length', 'content-length', 'CONTENT-LENGTH', 'Content-Lengths', 'Content-Lengt', 'Transfer-Encoding', 'transfer-encodinG', 'Upgrade', 'upgrade ', 'Upgrades', 'X-Content-Length', 'Host', 'cOnTeNt-LeNgTh\t']
    const values = ['12', ' 12', '12 ', '\t12\t', '0', '007', '', '-1', '+1', '1 2', '1e3', '0x10', '123456789', '1234567890', '123456789012345', '1234567890123456', '12\u00a0', '\u00a012', '12\v', '12\n', 'chunked', '\u00e9', '1\r2']
    let seed = 17
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    let compared = 0
    for (let i = 0; i < 3000; i++) {
      const fields: string[] = []
      for (let count = random(5); count > 0; count--) {
        const name = names[random(names.length)] as string
        fields.push(`${name}${[':', ' :', '\t:', ''][random(4)]}${['', ' ', '\t', '  '][random(4)]}${values[random(values.length)]}`)
      }
      const head = [random(2) === 0 ? 'POST / HTTP/1.1' : 'HTTP/1.1 200 OK', ...fields].join('\r\n')
      t.equal(framingOf(head), framingByExpression(head), JSON.stringify(head))
      t.equal(framingOf(head, '\r\n\r\n'), framingByExpression(head), 'after empty lines')
      compared++
    }
    t.equal(compared, 3000)
  })
}

/** A socket's side the gate sees, recording what is written to it. */
class FakeSocket extends EventEmitter {
  readonly writes: string[] = []
  readonly writableNeedDrain = false
  write(bytes: Buffer): boolean {
    this.writes.push(bytes.toString('latin1'))
    return true
  }
  pause(): this { return this }
  resume(): this { return this }
  end(): this { return this }
}

if (testTransport === 'uws') {
  t.test('the gate forwards a request\'s head and the body that came with it in one write (one system call, issue 11)', async (t) => {
    const client = new FakeSocket()
    const up = new FakeSocket()
    const { fromClient, fromUpstream } = gateConnection(client as unknown as Socket, up as unknown as Socket, Buffer.from(post('one') + post('two')), 4096, () => Buffer.from('refused'))
    t.same(up.writes, [post('one')], 'the first request whole, in one write; the second held behind its answer')
    const answer = 'HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}'
    fromUpstream(Buffer.from(answer))
    t.same(client.writes, [answer], 'the answer passes to the client')
    t.same(up.writes, [post('one'), post('two')], 'then the second request, whole, in one write')
    // A body that arrives after its head goes on as it comes.
    fromUpstream(Buffer.from(answer))
    const third = post('three')
    const cut = third.indexOf('\r\n\r\n') + 10
    fromClient(Buffer.from(third.slice(0, cut)))
    fromClient(Buffer.from(third.slice(cut)))
    t.same(up.writes.slice(2), [third.slice(0, cut), third.slice(cut)], 'the head with the start of its body, then the rest')
  })
}

t.test('a HEAD answer keeps its connection open for the next request, with or without the front', async (t) => {
  // uWS takes a length passed to endWithoutBody for body still to come and drops the connection at the next request;
  // the server writes the length as a header instead.
  const { server: bare } = await startTestServer({ legacyClients: false })
  t.teardown(() => bare.close(1000))
  for (const port of [server.port, bare.port]) {
    // A third request after the GET's answer: answered, the connection stayed open (no time waited for a close).
    const { text, closedByServer } = await rawUntil(port, [get('/text', 'HEAD'), get('/text'), get('/items/end')], lastAnswered)
    const got = answers(text, ['HEAD', 'GET', 'GET'])
    t.same(got.map((a) => a.status), [200, 200, 200], 'all three answered on one connection')
    t.match(text, /^HTTP\/1\.1 200 [^]*content-length: 6\r\n/i, 'the HEAD answer names the GET body\'s length')
    t.equal(got[1]!.body, 'hello\n')
    t.notOk(closedByServer, 'the connection stays open')
  }
})

// uWS and its front only: node:http refuses a request it cannot parse by closing the connection (transport.test.ts).
if (testTransport === 'uws') {
  t.test('without the front, the pinned uWS drops a connection that pipelines behind a pending answer', async (t) => {
    const { server: bare } = await startTestServer({ legacyClients: false })
    t.teardown(() => bare.close(1000))
    const { text, closedByServer } = await rawExchange(bare.port, [get('/slow?ms=100') + get('/text')], 1500)
    t.equal(text, '', 'not even the first answer is written')
    t.ok(closedByServer, 'the connection is closed')
  })
}
