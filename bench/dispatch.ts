// Dispatch bench (issue 11): what the ticker's lease time-outs and offer expiries cost in process, the load mix's
// timer work (its leases are never paid: every request + match pair later costs one lease time-out and one offer
// expiry; since an offer whose TTL is over when its lease ends expires in that lease's time-out, the pair is one
// time-out). A book of lenders (fixtures/book.ts); each round opens OFFERS offers through the engine's commands and
// matches them (split: every other one, the rest wait), then moves the network's observed chain time past every
// deadline (lease and offer TTL 3 s, as the load mix) and measures the engine's process CPU (process.cpuUsage) in two
// shapes, alternating by round:
// - split: the follower's batches alone (observeChain, no events) until no lease is due: CPU per time-out, each with
//   its offer's expiry (`offersExpiredWithLease` counts them); then dispatch until nothing is due: each call expires
//   waiting offers only, CPU per expiry of an offer never leased;
// - service: one follower batch (it times out its share, timeOutsPerCommandMax), then dispatch as the ticker calls it
//   until nothing is due, each call timing out leases and expiring their offers: CPU per pair (one of each).
// The outcome digest hashes every command's changes (and the follower's values, the ticker's counts), so two builds
// can be compared for identical outcomes.
// Options (environment): BENCH_DISPATCH_LENDERS (500), BENCH_DISPATCH_OFFERS (2048 per round), BENCH_DISPATCH_ROUNDS
// (6, after one warm-up round of each shape); --quick: 100 lenders, 256 offers, 2 rounds. Writes
// bench/results/dispatch-latest.json.
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { amountsOf, buildBook, matchOffer, NET, openOffer, T0, type BenchBook } from './fixtures/book.ts'

const QUICK = process.argv.includes('--quick')
const LENDERS = Number(process.env.BENCH_DISPATCH_LENDERS ?? (QUICK ? 100 : 500))
const OFFERS = Number(process.env.BENCH_DISPATCH_OFFERS ?? (QUICK ? 256 : 2048))
const ROUNDS = Number(process.env.BENCH_DISPATCH_ROUNDS ?? (QUICK ? 2 : 6))
const BORROWERS = 64
const TTL_MS = 3000
/** Rounds are this far apart on the clock: every deadline of a round is over before the next starts. */
const ROUND_SPACING_MS = 1_000_000

type Shape = 'split' | 'service'
interface Cpu { micros: number; count: number }

const digest = createHash('sha256')
const bigints = (_key: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)
/** The commands' values and changes since the last digest: hashed outside the measured CPU. */
let outcomes: unknown[] = []
function digestOutcomes(): void {
  for (const outcome of outcomes) digest.update(JSON.stringify(outcome, bigints))
  outcomes = []
}
const cpuMicros = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since)
  return d.user + d.system
}

function observe(book: BenchBook, chainTimeMs: number, nowMs: number): { leases: number; offers: number } {
  const r = book.engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events: [] }, nowMs)
  if (!r.ok) throw new Error(r.error.message)
  outcomes.push([r.value, r.changes])
  return { leases: r.value.expiredLeases.length, offers: r.value.expiredOffers.length }
}

/** The ticker's call (Engine.tick: what dispatch does, counted rather than viewed). */
function dispatch(book: BenchBook, nowMs: number): { leases: number; offers: number } {
  const r = book.engine.tick(nowMs)
  if (!r.ok) throw new Error(r.error.message)
  const ended = { leases: r.value.expiredLeases, offers: r.value.expiredOffers }
  outcomes.push([ended, r.changes])
  return ended
}

/**
 * One round: OFFERS offers opened from `startMs` on and leased (split: the even ones), then every lease timed out and
 * every offer expired.
 */
function round(book: BenchBook, r: number, shape: Shape, amounts: bigint[]): { timeOuts: Cpu; expiries: Cpu; pairs: Cpu; withLease: number } {
  const startMs = T0 + (r + 1) * ROUND_SPACING_MS
  observe(book, startMs, startMs)
  let leased = 0
  for (let i = 0; i < OFFERS; i++) {
    const nowMs = startMs + i
    const offer = openOffer(book, i, amounts[i] as bigint, nowMs)
    if (shape === 'split' && i % 2 === 1) continue
    matchOffer(book, offer, nowMs)
    leased += 1
  }
  digestOutcomes()
  // Past every lease's deadline second and every offer's TTL.
  const overMs = startMs + OFFERS + TTL_MS + 2000
  const timeOuts: Cpu = { micros: 0, count: 0 }
  const expiries: Cpu = { micros: 0, count: 0 }
  const pairs: Cpu = { micros: 0, count: 0 }
  let withLease = 0
  if (shape === 'split') {
    for (;;) {
      const cpu0 = process.cpuUsage()
      const expired = observe(book, overMs, overMs)
      timeOuts.micros += cpuMicros(cpu0)
      digestOutcomes()
      if (expired.leases === 0) break
      timeOuts.count += expired.leases
      withLease += expired.offers
    }
    while (book.engine.dispatchDue(overMs)) {
      const cpu0 = process.cpuUsage()
      const d = dispatch(book, overMs)
      expiries.micros += cpuMicros(cpu0)
      digestOutcomes()
      if (d.leases !== 0) throw new Error('split: dispatch timed out a lease the follower left')
      expiries.count += d.offers
    }
  } else {
    const cpu0 = process.cpuUsage()
    const observed = observe(book, overMs, overMs)
    let leases = observed.leases
    let offers = observed.offers
    while (book.engine.dispatchDue(overMs)) {
      const d = dispatch(book, overMs)
      leases += d.leases
      offers += d.offers
    }
    pairs.micros += cpuMicros(cpu0)
    digestOutcomes()
    if (leases !== OFFERS || offers !== OFFERS) throw new Error(`service: ${leases} time-outs and ${offers} expiries, expected ${OFFERS} each`)
    pairs.count += OFFERS
  }
  if (shape === 'split' && (timeOuts.count !== leased || withLease !== leased || expiries.count !== OFFERS - leased)) {
    throw new Error(`split: ${timeOuts.count} time-outs, ${withLease} offers expired with them and ${expiries.count} in dispatch, expected ${leased}, ${leased} and ${OFFERS - leased}`)
  }
  return { timeOuts, expiries, pairs, withLease }
}

const perItem = (c: Cpu) => (c.count === 0 ? 0 : Math.round((c.micros / c.count) * 100) / 100)

const loadBefore = loadavg()[0] ?? 0
process.stdout.write(`dispatch bench: ${LENDERS} lenders, ${OFFERS} offers per round, ${ROUNDS} rounds after 2 warm-up rounds, node ${process.version}\n`)
const book = buildBook(LENDERS, BORROWERS, { leaseTtlMs: TTL_MS, offerTtlMs: TTL_MS, liveOffersPerBorrowerMax: OFFERS })
const amounts = amountsOf(OFFERS)
const sum = { timeOuts: { micros: 0, count: 0 }, expiries: { micros: 0, count: 0 }, pairs: { micros: 0, count: 0 } }
let offersExpiredWithLease = 0
for (let r = 0; r < ROUNDS + 2; r++) {
  const shape: Shape = r % 2 === 0 ? 'split' : 'service'
  const got = round(book, r, shape, amounts)
  if (r < 2) continue
  offersExpiredWithLease += got.withLease
  for (const k of ['timeOuts', 'expiries', 'pairs'] as const) {
    sum[k].micros += got[k].micros
    sum[k].count += got[k].count
  }
  process.stdout.write(`  round ${r - 1}/${ROUNDS} (${shape}) done\n`)
}
book.engine.checkInvariants()
const result = {
  date: new Date().toISOString(),
  lenders: LENDERS,
  offersPerRound: OFFERS,
  rounds: ROUNDS,
  cpuMicrosPerTimeOut: perItem(sum.timeOuts),
  cpuMicrosPerExpiry: perItem(sum.expiries),
  cpuMicrosPerPair: perItem(sum.pairs),
  offersExpiredWithLease,
  loadAverage: { before: loadBefore, after: loadavg()[0] ?? 0 },
  outcomeDigest: digest.digest('hex').slice(0, 16),
}
const out = join(process.env.BENCH_RESULTS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'results'), 'dispatch-latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
process.stdout.write(`process CPU: ${result.cpuMicrosPerTimeOut} us per lease time-out (follower batches; ${offersExpiredWithLease} offers expired with their lease), ${result.cpuMicrosPerExpiry} us per offer expiry (dispatch), ` +
  `${result.cpuMicrosPerPair} us per time-out + expiry pair (follower batch, then the ticker's dispatch)\n` +
  `load average ${loadBefore.toFixed(2)} -> ${result.loadAverage.after.toFixed(2)}; outcome digest ${result.outcomeDigest}\nwrote ${out}\n`)
