// The request pipeline's own JavaScript (src/http/pipeline.ts) per request, two checkouts in one process (issue 11):
// bench/pipeline.ts measures a request through uWS and the front, whose send and kernel work (about 10 of its 11 µs on
// the service thread) hide a change of a few hundred nanoseconds; here each checkout's `createPipeline` serves the
// credit request's and the match's routes (their schemas, a bearer session, the Idempotency-Key header, as
// bench/fixtures/pipeline-serve.ts declares them) through a transport that only records, with requests and matches
// alternated as bench/loadmix.ts sends them, and the handler waiting for a durability promise shared by the requests
// of one event-loop turn. Rounds of the two checkouts alternate; CPU per request of each round, best and median.
// Usage: node --expose-gc --import tsx bench/pipeline-js.ts --against <other checkout> [--rounds 15] [--requests 20000]
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'

const { values: args } = parseArgs({ options: { against: { type: 'string' }, rounds: { type: 'string', default: '15' }, requests: { type: 'string', default: '20000' } } })
if (args.against === undefined) throw new Error('usage: bench/pipeline-js.ts --against <other checkout> [--rounds 15] [--requests 20000]')
const ROUNDS = Number(args.rounds)
const REQUESTS = Number(args.requests)
/** Requests in flight per event-loop turn (bench/pipeline.ts's wrk keeps 64 connections busy). */
const PER_TURN = 64
const BORROWERS = 256

interface FakeRes {
  aborted: (() => void) | undefined
  data: ((chunk: ArrayBuffer | Buffer, isLast: boolean) => void) | undefined
  status: number
  bytes: number
}
interface FakeReq {
  method: string
  url: string
  raw: string[]
}

/** One checkout's pipeline with the two routes, and a function that sends one request through it. */
async function checkout(root: string) {
  const [{ createPipeline }, { defineRoute }, { rawFields }, { JsonText }, { silentLogger }, schemas, { mutationHeaders }] = await Promise.all([
    import(resolve(root, 'src/http/pipeline.ts')),
    import(resolve(root, 'src/http/route.ts')),
    import(resolve(root, 'src/http/request.ts')),
    import(resolve(root, 'src/http/request.ts')),
    import(resolve(root, 'src/http/log.ts')),
    import(resolve(root, 'src/api/schemas.ts')),
    import(resolve(root, 'src/api/routes/shared.ts')),
  ])
  const sessions = new Map<string, { address: string; tokenHash: string }>()
  const token = (i: number): string => `bench${String(i).padStart(3, '0')}`.padEnd(43, 'x')
  for (let i = 0; i < BORROWERS; i++) sessions.set(token(i), { address: `0x${i.toString(16).padStart(40, '0')}`, tokenHash: String(i) })
  const answer = new JsonText(JSON.stringify({ decision: 'approved', note: 'x'.repeat(900) }))
  let turn: Promise<void> | undefined
  const durable = () => (turn ??= new Promise<void>((done) => setImmediate(() => { turn = undefined; done() })))
  const route = (path: string, operationId: string, body: unknown, schema: unknown) =>
    defineRoute({
      method: 'post', path, operationId, callers: 'the bench', summary: operationId, auth: 'session', body, headers: mutationHeaders,
      responses: { 200: { description: 'The answer', schema } },
      handler: async () => {
        await durable()
        return { status: 200, body: answer }
      },
    })
  const routes = [route('/credit/request', 'requestCredit', schemas.CreditRequest, schemas.UnderwritingDecision), route('/credit/match', 'matchOffer', schemas.MatchRequest, schemas.MatchOutcome)]
  let answered = 0
  const io = {
    method: (req: FakeReq) => req.method,
    url: (req: FakeReq) => req.url,
    header: (req: FakeReq, name: string) => {
      for (let i = 0; i < req.raw.length; i += 2) if ((req.raw[i] as string).toLowerCase() === name) return req.raw[i + 1] as string
      return ''
    },
    parameter: () => '',
    query: () => undefined,
    fields: (req: FakeReq, names: readonly string[], values?: Array<string | undefined>, own?: number) => rawFields(req.raw, names, values, own),
    onAborted: (res: FakeRes, hook: () => void) => { res.aborted = hook },
    remoteAddress: () => '127.0.0.1',
    onData: (res: FakeRes, chunk: (bytes: ArrayBuffer | Buffer, isLast: boolean) => void) => { res.data = chunk },
    cork: (_res: FakeRes, write: () => void) => { write() },
    writeStatus: (res: FakeRes, status: number) => { res.status = status },
    writeHeader: () => {},
    endWithoutBody: () => { answered++ },
    endHead: () => { answered++ },
    end: (res: FakeRes, body: string | Buffer) => { res.bytes = body.length; answered++ },
    close: () => {},
  }
  const pipeline = createPipeline({ routes, rateLimit: false, log: silentLogger, authenticate: (t: string) => sessions.get(t) }, io)
  const [requestHandler, matchHandler] = pipeline.compiled.map((c: unknown) => pipeline.handlerFor(c))
  let n = 0
  /** One request: its head handed to the route's handler, then its body in one chunk (as uWS does after the call). */
  const send = (): void => {
    n++
    const b = n % BORROWERS
    const match = n % 2 === 0
    const body = match
      ? `{"offerId":"off_${n}"}`
      : `{"agent":"0x${b.toString(16).padStart(40, '0')}","network":"base-sepolia","asset":"USDC","productType":"asset-backed","amountAtomic":"${(n % 100) + 1}000000","purpose":"bench inference compute","supplier":"Bench Supplier","supplierDomain":"bench.example","repaymentSource":"bench-${b}","maximumFeeAtomic":"${((n % 100) + 1) * 50000}"}`
    const bytes = Buffer.from(body)
    const req: FakeReq = { method: 'POST', url: match ? '/credit/match' : '/credit/request', raw: ['Host', '127.0.0.1:8080', 'Content-Length', String(bytes.length), 'Content-Type', 'application/json', 'Authorization', `Bearer ${token(b)}`] }
    const res: FakeRes = { aborted: undefined, data: undefined, status: 0, bytes: 0 }
    ;(match ? matchHandler : requestHandler)(res, req)
    res.data?.(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length), true)
  }
  /** CPU microseconds per request of `count` requests, PER_TURN per event-loop turn, each answered. */
  const run = async (count: number): Promise<number> => {
    const before = answered
    const start = process.cpuUsage()
    for (let sent = 0; sent < count; sent += PER_TURN) {
      for (let i = 0; i < PER_TURN; i++) send()
      await durable()
      await new Promise<void>((done) => setImmediate(done))
    }
    const used = process.cpuUsage(start)
    if (answered - before < count) throw new Error(`${root}: ${answered - before} of ${count} requests answered`)
    return (used.user + used.system) / count
  }
  return { root, run }
}

const sides = [await checkout(resolve(args.against)), await checkout(resolve('.'))]
for (const side of sides) await side.run(REQUESTS) // warm-up
const micros = sides.map(() => [] as number[])
const load = loadavg()[0] as number
/** A full collection before each round (with --expose-gc), so no round pays for garbage the other side left. */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => {})
for (let round = 0; round < ROUNDS; round++) {
  // Which side goes first alternates by round.
  for (const s of round % 2 === 0 ? [0, 1] : [1, 0]) {
    collect()
    micros[s]?.push(await (sides[s] as (typeof sides)[number]).run(REQUESTS))
  }
}
for (const [s, side] of sides.entries()) {
  const sorted = (micros[s] as number[]).sort((a, b) => a - b)
  process.stdout.write(`${side.root}: best ${sorted[0]?.toFixed(3)} median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(3)} us of CPU per request\n`)
}
process.stdout.write(`load ${load.toFixed(2)} -> ${(loadavg()[0] as number).toFixed(2)}\n`)
