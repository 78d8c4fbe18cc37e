// An outsider's probes of the front (src/http/front.ts, front-gate.ts) with many connections at once: every passed
// connection's answers are read from uWS into the front thread's one shared 64 KiB buffer and handed on as a copy.
// Each answer must reach its own connection whole and in order, even when a client reads slowly (its answer then
// waits in Node's write queue while other connections, and its own later bytes, are read into the same buffer), and
// a request body past 64 KiB must reach its handler whole. The answers' bytes say which connection and which offset
// they belong to, so bytes of another connection, or of the same one from a later read, show.
import { createHash } from 'node:crypto'
import net from 'node:net'
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import { defineRoute } from '../../src/http/route.ts'
import { parseResponse } from './fixtures/raw.ts'
import { startTestServer, testRoutes } from './fixtures/routes.ts'

/** The text of `/pattern/{tag}`: `<tag><8-digit offset>;` blocks, so every 14-byte window says whose and where it is. */
const patternOf = (tag: string, blocks: number): string => {
  let text = ''
  for (let i = 0; i < blocks; i++) text += `${tag}${String(i).padStart(8, '0')};`
  return text
}
const patternRoute = defineRoute({
  method: 'get',
  path: '/pattern/{tag}',
  operationId: 'pattern',
  callers: 'any caller (a test route)',
  summary: 'A long text whose every block names its request and its offset',
  auth: 'none',
  params: StrictObject({ tag: Type.String({ pattern: '^[a-z]{5}$' }) }),
  query: StrictObject({ blocks: Type.Integer({ minimum: 1, maximum: 2_000_000 }) }),
  responses: { 200: { description: 'The pattern', schema: Type.String(), contentType: 'text/plain; charset=utf-8' } },
  handler: ({ params, query }) => ({ status: 200, body: patternOf(params.tag, query.blocks) }),
})
const digestRoute = defineRoute({
  method: 'post',
  path: '/digest',
  operationId: 'digest',
  callers: 'any caller (a test route)',
  summary: 'The length and SHA-256 of the JSON body it read',
  auth: 'none',
  body: StrictObject({ fill: Type.String() }),
  responses: { 200: { description: 'Digest', schema: StrictObject({ length: Type.Integer(), sha256: Type.String() }) } },
  handler: ({ body }) => ({ status: 200, body: { length: body.fill.length, sha256: createHash('sha256').update(body.fill).digest('hex') } }),
})

const { server, logs } = await startTestServer({ routes: [...testRoutes, patternRoute, digestRoute], bodyLimitBytes: 1024 * 1024 })
t.teardown(() => server.close(1000))

/**
 * Sends `request` on a new connection and reads until `count` whole answers came (by Content-Length). With `holdUntil`,
 * the client reads nothing until that promise settles (the front's writes to it queue up meanwhile).
 */
function exchange(request: string, count: number, holdUntil?: Promise<unknown>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1')
    let bytes = Buffer.alloc(64 * 1024)
    let total = 0
    // Where the next answer starts (or, once its head is read, where it ends), and how many ended before it.
    let at = 0
    let bodyEnd = -1
    let answered = 0
    socket.on('data', (chunk: Buffer) => {
      if (total + chunk.length > bytes.length) bytes = Buffer.concat([bytes.subarray(0, total)], Math.max(2 * bytes.length, total + chunk.length))
      chunk.copy(bytes, total)
      total += chunk.length
      while (answered < count) {
        if (bodyEnd < 0) {
          const end = bytes.subarray(0, total).indexOf('\r\n\r\n', at)
          if (end < 0) return
          bodyEnd = end + 4 + Number(parseResponse(bytes.toString('latin1', at, end + 4)).headers['content-length'] ?? 0)
        }
        if (total < bodyEnd) return
        answered++
        at = bodyEnd
        bodyEnd = -1
      }
      socket.destroy()
      resolve(bytes.subarray(0, total))
    })
    socket.on('error', reject)
    socket.on('close', () => reject(new Error(`closed after ${total} bytes`)))
    // A generous deadline (a loaded machine answers late, a broken front never): what is missing shows in the failure.
    const deadline = setTimeout(() => { socket.destroy(); reject(new Error(`${answered} of ${count} answers within 20 s; ${total} bytes came`)) }, 20_000)
    socket.once('close', () => clearTimeout(deadline))
    if (holdUntil !== undefined) {
      socket.pause()
      void holdUntil.finally(() => socket.resume())
    }
    socket.write(request)
  })
}

/** The bodies of the answers in `bytes`, in order (each by its Content-Length). */
function bodies(bytes: Buffer): string[] {
  const out: string[] = []
  for (let at = 0; at < bytes.length;) {
    const end = bytes.indexOf('\r\n\r\n', at)
    const length = Number(parseResponse(bytes.subarray(at, end + 4).toString('latin1')).headers['content-length'])
    out.push(bytes.subarray(end + 4, end + 4 + length).toString('latin1'))
    at = end + 4 + length
  }
  return out
}

/** Resolves once `done()` holds, looking again every few milliseconds (no fixed wait). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5))
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
const tags = ['alpha', 'bravo', 'charl', 'delta', 'echoo', 'foxtr', 'golfx', 'hotel']

t.test('answers of many connections read through the one shared buffer each reach their own connection whole', async (t) => {
  // 7 MB per held answer, past what the loopback's socket buffers take of a client that does not read (its
  // receive window stays small while it reads nothing): the front's writes to the held clients queue in Node while
  // every other connection's answer is read into the same buffer.
  const blocks = 500_000
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  const slow = tags.slice(0, 2).map((tag) => exchange(get(`/pattern/${tag}?blocks=${blocks}`) + get(`/pattern/${tag}?blocks=3`), 2, held))
  // Once both held answers are sent (their request log lines), the others pipeline two answers each, in rounds.
  await until(() => logs.filter((line) => line.msg === 'request' && String(line.path).startsWith('/pattern/') && line.status === 200).length >= 2)
  let fastAnswers: Buffer[] = []
  for (let round = 0; round < 3; round++) fastAnswers = await Promise.all(tags.slice(2).map((tag) => exchange(get(`/pattern/${tag}?blocks=20000`) + get(`/items/${tag}`), 2)))
  release()
  const slowAnswers = await Promise.all(slow)
  for (const [i, bytes] of fastAnswers.entries()) {
    const tag = tags[i + 2] as string
    const [first, second] = bodies(bytes)
    t.ok(first === patternOf(tag, 20000), `${tag}: its own pattern, whole`)
    t.same(JSON.parse(second ?? ''), { itemId: tag, verbose: false }, `${tag}: then its second answer`)
  }
  for (const [i, bytes] of slowAnswers.entries()) {
    const tag = tags[i] as string
    const [first, second] = bodies(bytes)
    const expected = patternOf(tag, blocks)
    let firstWrong = -1
    if (first !== expected) for (let at = 0; at < expected.length && firstWrong < 0; at += 14) if (first?.slice(at, at + 14) !== expected.slice(at, at + 14)) firstWrong = at
    t.equal(firstWrong, -1, `${tag}: the held client's answer is its own, every block in place${firstWrong < 0 ? '' : `; at ${firstWrong}: ${first?.slice(firstWrong, firstWrong + 28)}`}`)
    t.equal(first?.length, expected.length)
    t.equal(second, patternOf(tag, 3), `${tag}: then its pipelined second answer`)
  }
})

t.test('a request body past 64 KiB, split across reads, reaches its handler whole, and the next request is answered', async (t) => {
  const fill = patternOf('bodyx', 20_000) // 280,000 characters
  const body = JSON.stringify({ fill })
  const request = `POST /digest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const answers = await Promise.all(tags.slice(0, 4).map(() => exchange(request + get('/text'), 2)))
  for (const bytes of answers) {
    const [digest, text] = bodies(bytes)
    t.same(JSON.parse(digest ?? ''), { length: fill.length, sha256: createHash('sha256').update(fill).digest('hex') })
    t.equal(text, 'hello\n')
  }
})
