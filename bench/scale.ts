// Scale curves of the engine in process (no store: bench/match-durable.ts measures the commits): matches/s and heap
// per live actor at 1,000, 10,000 and 100,000 lenders (10,000 live offers each), and at 10,000 and 100,000 live offers
// (10,000 lenders). A point registers its lenders, then opens and matches its live offers one by one (each matched
// offer stays live with its live lease: two live actors per offer); the last `timed` matches are timed, and the heap
// (after a full GC) before the offers and after them, divided by the live actors, is the heap per live actor.
// Each point runs in its own child process, so no point inherits another's heap or JIT state (not with --quick).
// Writes bench/results/scale-latest.json (or --out).
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { amountsOf, buildBook, histogramMicros, matchOffer, openOffer } from './fixtures/book.ts'
import { TS_IMPORT } from './fixtures/ts-import.ts'

const { values: args } = parseArgs({ options: { point: { type: 'string' }, out: { type: 'string' }, quick: { type: 'boolean', default: false } }, strict: false })

interface Point { lenders: number; liveOffers: number; timed: number }

function measure(point: Point) {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const heapMiB = () => {
    gc()
    gc()
    return process.memoryUsage().heapUsed / 2 ** 20
  }
  const heapEmpty = heapMiB()
  const registerStarted = process.hrtime.bigint()
  const book = buildBook(point.lenders, Math.ceil(point.liveOffers / 1000) + 1)
  const registerNs = Number(process.hrtime.bigint() - registerStarted)
  book.setupChanges.length = 0
  const heapLenders = heapMiB()
  const amounts = amountsOf(point.liveOffers)
  const timedFrom = point.liveOffers - point.timed
  const ns = new Float64Array(point.timed)
  let totalNs = 0
  for (let i = 0; i < point.liveOffers; i++) {
    const offer = openOffer(book, i, amounts[i] as bigint)
    const t0 = process.hrtime.bigint()
    matchOffer(book, offer)
    const dt = Number(process.hrtime.bigint() - t0)
    if (i >= timedFrom) {
      ns[i - timedFrom] = dt
      totalNs += dt
    }
  }
  const { counts } = book.engine.creditState()
  const heapLive = heapMiB()
  const liveActors = counts.liveOffers + counts.liveLeases
  if (counts.liveOffers !== point.liveOffers || counts.liveLeases !== point.liveOffers) throw new Error(`expected ${point.liveOffers} live offers and leases, got ${JSON.stringify(counts)}`)
  return {
    ...point,
    liveActors,
    matchesPerSecond: Math.round((point.timed * 1e9) / totalNs),
    matchCallMicros: histogramMicros(ns.sort()),
    registerMicrosPerLender: Math.round(registerNs / point.lenders / 10) / 100,
    heapMiB: { empty: Math.round(heapEmpty), lenders: Math.round(heapLenders), live: Math.round(heapLive) },
    heapBytesPerLender: Math.round(((heapLenders - heapEmpty) * 2 ** 20) / point.lenders),
    heapBytesPerLiveActor: Math.round(((heapLive - heapLenders) * 2 ** 20) / liveActors),
  }
}

if (typeof args.point === 'string') {
  process.stdout.write(`${JSON.stringify(measure(JSON.parse(args.point) as Point))}\n`)
} else {
  const quick = args.quick === true
  // --quick: a hundredth of every size, each point in this process (a child's start-up would dominate).
  const k = quick ? 100 : 1
  const timed = quick ? 50 : 5000
  const lenderPoints = [1000, 10_000, 100_000].map((lenders) => ({ lenders: lenders / k, liveOffers: 10_000 / k, timed }))
  const offerPoints = [10_000, 100_000].map((liveOffers) => ({ lenders: 10_000 / k, liveOffers: liveOffers / k, timed }))
  const points = [...lenderPoints, ...offerPoints.filter((p) => !lenderPoints.some((q) => q.lenders === p.lenders && q.liveOffers === p.liveOffers))]
  const loadBefore = loadavg()[0] as number
  const measured = points.map((point, i) => {
    process.stdout.write(`  scale point ${i + 1}/${points.length}: ${point.lenders} lenders, ${point.liveOffers} live offers\n`)
    let figures: ReturnType<typeof measure>
    if (quick) figures = measure(point)
    else {
      const child = spawnSync(process.execPath, [...TS_IMPORT, fileURLToPath(import.meta.url), '--point', JSON.stringify(point)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 })
      if (child.status !== 0) throw new Error(`scale point ${JSON.stringify(point)} exited with ${child.status ?? child.signal}`)
      figures = JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as ReturnType<typeof measure>
    }
    process.stdout.write(`    ${figures.matchesPerSecond} matches/s, p99 ${figures.matchCallMicros.p99} us, ${figures.heapBytesPerLiveActor} heap bytes per live actor, ${figures.heapBytesPerLender} per lender\n`)
    return figures
  })
  const result = {
    byLenders: measured.filter((p) => p.liveOffers === 10_000 / k),
    byLiveOffers: measured.filter((p) => p.lenders === 10_000 / k),
    loadAverage: { before: loadBefore, after: loadavg()[0] },
  }
  if (typeof args.out === 'string') writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`)
}
