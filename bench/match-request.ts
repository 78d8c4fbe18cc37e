// Request + match bench: what the engine spends of the service's thread on one HTTP request + match pair. Each
// round is requestCredit then matchOffer, as POST /credit/requests and POST /credit/offers/:id/match call them, on
// 10,000 lenders (bench/fixtures/book.ts); the lease is then paid and the advance repaid (untimed), so the live
// state stays the same size. Timed on process CPU (process.cpuUsage around each call: other processes on the machine
// do not count), with the wall-clock p50 beside it. The outcome digest hashes every value and change of both
// commands, so two builds of the engine can be compared for identical outcomes. Beside the CPU, the garbage
// collector's pauses from the first timed round on (PerformanceObserver 'gc': scavenges and the rest, wall time per
// pair and the longest; the untimed payments between the calls allocate too), which the CPU per call carries but
// does not name. A pause is wall time: on a loaded machine it grows with the time the GC's threads wait for a core.
// Writes bench/results/match-request-latest.json (or --out <file>).
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { PerformanceObserver, constants as perfConstants, performance } from 'node:perf_hooks'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { amountsOf, ASSET, buildBook, histogramMicros, NET, payAndRepay, SUPPLIER, T0 } from './fixtures/book.ts'

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    lenders: { type: 'string' },
    rounds: { type: 'string' },
    out: { type: 'string' },
  },
})
const LENDERS = Number(args.lenders ?? (args.quick ? 2000 : 10_000))
const ROUNDS = Number(args.rounds ?? (args.quick ? 2000 : 10_000))
const WARMUP = Math.min(2000, Math.floor(ROUNDS / 10))
const BORROWERS = 16

const cpuMicros = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since)
  return used.user + used.system
}
const json = (value: unknown): string => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))

process.stdout.write(`request + match bench: ${LENDERS} lenders, ${WARMUP} warm-up + ${ROUNDS} timed rounds, node ${process.version}\n`)
const book = buildBook(LENDERS, BORROWERS)
const engine = book.engine
const amounts = amountsOf(WARMUP + ROUNDS)
const requestWallNs = new Float64Array(ROUNDS)
const matchWallNs = new Float64Array(ROUNDS)
const requestCpu = new Float64Array(ROUNDS)
const matchCpu = new Float64Array(ROUNDS)
const digest = createHash('sha256')
const loadBefore = loadavg()[0] as number
/** GC pauses, told to the observer after the fact: those that started once the timed rounds had. */
const gcPauses: { startMs: number; ms: number; minor: boolean }[] = []
let timedFromMs = Infinity
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind
    gcPauses.push({ startMs: entry.startTime, ms: entry.duration, minor: kind === perfConstants.NODE_PERFORMANCE_GC_MINOR })
  }
})
gcObserver.observe({ entryTypes: ['gc'] })
for (let i = 0; i < amounts.length; i++) {
  const amountAtomic = amounts[i] as bigint
  const nowMs = T0 + i
  const b = i % BORROWERS
  const agent = book.borrowers[b] as (typeof book.borrowers)[number]
  const requestInput = {
    agent, network: NET, asset: ASSET, productType: 'asset-backed' as const, amountAtomic, purpose: 'bench',
    supplier: 'bench', supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: `bench-src-${b}`,
    maximumFeeAtomic: amountAtomic / 20n, caller: agent,
  }
  const c0 = process.cpuUsage()
  const w0 = process.hrtime.bigint()
  const requested = engine.requestCredit(requestInput, nowMs)
  const w1 = process.hrtime.bigint()
  const requestCpuCall = cpuMicros(c0)
  if (!requested.ok || !requested.value.offer) throw new Error('bench request declined')
  const offerId = requested.value.offer.offerId
  const c1 = process.cpuUsage()
  const w2 = process.hrtime.bigint()
  const matched = engine.matchOffer({ offerId, caller: agent }, nowMs)
  const w3 = process.hrtime.bigint()
  const matchCpuCall = cpuMicros(c1)
  if (!matched.ok || !matched.value.lease) throw new Error('bench offer not matched')
  digest.update(json([requested, matched]))
  const k = i - WARMUP
  if (k === 0) timedFromMs = performance.now()
  if (k >= 0) {
    requestWallNs[k] = Number(w1 - w0)
    matchWallNs[k] = Number(w3 - w2)
    requestCpu[k] = requestCpuCall
    matchCpu[k] = matchCpuCall
    if ((k + 1) % Math.max(1, Math.floor(ROUNDS / 5)) === 0) process.stdout.write(`  ${k + 1}/${ROUNDS}\n`)
  }
  payAndRepay(engine, { offerId, lease: matched.value.lease, borrower: agent, amountAtomic, round: i }, nowMs)
}
// The observer hears of the last pauses on a later turn of the event loop.
await new Promise((resolve) => setTimeout(resolve, 50))
gcObserver.disconnect()
const timedPauses = gcPauses.filter((pause) => pause.startMs >= timedFromMs)
const pauseMs = (minor: boolean) => timedPauses.reduce((total, pause) => total + (pause.minor === minor ? pause.ms : 0), 0)
const gc = {
  scavenges: timedPauses.filter((pause) => pause.minor).length,
  others: timedPauses.filter((pause) => !pause.minor).length,
  longestMs: timedPauses.reduce((longest, pause) => Math.max(longest, pause.ms), 0),
}
engine.checkInvariants()
const sum = (values: Float64Array) => values.reduce((total, value) => total + value, 0)
const perRound = (micros: number) => Math.round((micros / ROUNDS) * 10) / 10
// The median as well as the mean: a call that shares its core with another process's burst costs more CPU time
// (caches, the GC's helper threads), and the median is the figure such bursts move least.
const median = (values: Float64Array) => values.sort()[Math.floor(values.length / 2)] as number
const result = {
  date: new Date().toISOString(),
  lenders: LENDERS,
  rounds: ROUNDS,
  cpuMicros: { request: perRound(sum(requestCpu)), match: perRound(sum(matchCpu)), pair: perRound(sum(requestCpu) + sum(matchCpu)) },
  cpuMicrosP50: { request: median(requestCpu), match: median(matchCpu) },
  requestWallMicros: histogramMicros(requestWallNs.sort()),
  matchWallMicros: histogramMicros(matchWallNs.sort()),
  gc: {
    scavenges: gc.scavenges,
    scavengeMicrosPerPair: perRound(pauseMs(true) * 1000),
    others: gc.others,
    otherMicrosPerPair: perRound(pauseMs(false) * 1000),
    longestMillis: Math.round(gc.longestMs * 100) / 100,
  },
  loadAverage: { before: loadBefore, after: loadavg()[0] as number },
  outcomeDigest: digest.digest('hex').slice(0, 16),
}
const out = args.out ?? join(process.env.BENCH_RESULTS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'results'), 'match-request-latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
process.stdout.write(`\nCPU per call, mean: requestCredit ${result.cpuMicros.request} us, matchOffer ${result.cpuMicros.match} us, pair ${result.cpuMicros.pair} us\n`)
process.stdout.write(`CPU per call, p50: requestCredit ${result.cpuMicrosP50.request} us, matchOffer ${result.cpuMicrosP50.match} us\n`)
process.stdout.write(`GC: ${gc.scavenges} scavenges, ${result.gc.scavengeMicrosPerPair} us per pair; ${gc.others} other pauses, ${result.gc.otherMicrosPerPair} us per pair; longest ${result.gc.longestMillis} ms\n`)
process.stdout.write(`wall p50: requestCredit ${result.requestWallMicros.p50} us, matchOffer ${result.matchWallMicros.p50} us; load ${loadBefore.toFixed(1)} -> ${result.loadAverage.after.toFixed(1)}\n`)
process.stdout.write(`outcome digest ${result.outcomeDigest}\nwrote ${out}\n`)
