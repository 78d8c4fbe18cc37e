// An outsider against the HTTP edge: a request whose head is larger than usual (a long header, as proxies and
// tracing add) is answered every time, either served or refused with a status; never a connection closed with no
// answer, which a client cannot tell from a crash and may retry without end.
import { connect } from 'node:net'
import t from 'tap'
import { startHarness, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

/**
 * Sends `before` small requests, then one with a `bytes`-long header, on a new connection; the status lines of the
 * answers ('' for none).
 */
function statusLinesWithHeader(bytes: number, before = 0): Promise<string[]> {
  const url = new URL(h.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname)
    let answer = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      answer += chunk
    })
    socket.on('error', reject)
    // Answers follow one another without a line break (a body does not end with one): status lines are found anywhere.
    socket.on('close', () => resolve(answer.match(/HTTP\/1\.1 [0-9]{3} /g) ?? []))
    socket.write(`GET /health HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`.repeat(before))
    socket.write(`GET /health HTTP/1.1\r\nHost: ${url.host}\r\nx-padding: ${'a'.repeat(bytes)}\r\nConnection: close\r\n\r\n`)
  })
}

t.test('a request with a 4 KB to 16 KB header gets an answer, each of ten times', async (t) => {
  for (const bytes of [4_000, 8_000, 16_000]) {
    const lines: string[] = []
    for (let i = 0; i < 10; i++) lines.push(...(await statusLinesWithHeader(bytes)))
    t.equal(lines.length, 10, `${bytes} bytes: ten answers`)
    t.same(lines.filter((line) => !/^HTTP\/1\.1 (200|431) /.test(line)), [], `${bytes} bytes: every request answered 200 or 431`)
  }
})

t.test('a long head after short ones on the same connection is answered too', async (t) => {
  for (let i = 0; i < 5; i++) {
    const lines = await statusLinesWithHeader(8_000, 2)
    t.equal(lines.length, 3, 'three answers')
    t.match(lines, [/^HTTP\/1\.1 200 /, /^HTTP\/1\.1 200 /, /^HTTP\/1\.1 (200|431) /])
  }
})

t.test('a head up to 4 KB is served', async (t) => {
  for (let i = 0; i < 5; i++) t.match(await statusLinesWithHeader(3_500, 1), [/^HTTP\/1\.1 200 /, /^HTTP\/1\.1 200 /])
})
