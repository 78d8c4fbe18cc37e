// A/B of the engine of several checkouts in ONE process, for a machine the other engineers load: each checkout's
// engine (imported from its own bench/fixtures/book.ts) runs the same work in alternated blocks, so both sides see
// the same load, and each block is timed on process CPU. Two scenarios: bench/match-request.ts's rounds (requestCredit
// then matchOffer on 10,000 lenders, then paid and repaid, untimed) and bench/match.ts's time-outs (LEASES live
// leases one second apart; each call moves the chain so that 1% of them are over: each lease times out and its offer
// is matched again). Garbage collection lands in whichever block triggers it: read the means over many blocks.
// A third, the load mix's shape (--shape-blocks, 0 to skip): request + match on 500 lenders and 512 borrowers at 2,000
// pairs/s of engine time, leases never paid (TTLs of 3 s, so about 6,000 pairs live), a follower batch and the ticker
// every 25 ms; each block of 2,000 pairs is timed whole, its time-outs, expiries and GC included, as the service
// thread pays them (issue 11: the `perfengine17` round in bench/HISTORY.md). --blocks 0 runs it alone, with no other book
// in the heap (the two others' books, four with 10,000 lenders or leases each, move its figures by several us).
// Usage: node --import tsx bench/match-ab.ts <checkout> <checkout> ... [--blocks 20] [--rounds 500] [--leases 10000] [--shape-blocks 20]
import { parseArgs } from 'node:util'
import type * as Book from './fixtures/book.ts'

const { values: args, positionals: checkouts } = parseArgs({
  options: { blocks: { type: 'string' }, rounds: { type: 'string' }, leases: { type: 'string' }, 'shape-blocks': { type: 'string' } },
  allowPositionals: true,
})
const BLOCKS = Number(args.blocks ?? 20)
const ROUNDS_PER_BLOCK = Number(args.rounds ?? 500)
const WARMUP_ROUNDS = 2000
const LEASES = Number(args.leases ?? 10_000)
const DUE_PER_CALL = LEASES / 100
/** Every lease is over once, one call after another: the calls stop before the first rematched lease is due. */
const DUE_CALLS = Math.min(BLOCKS * 3, 90)
const BORROWERS = 16
const SHAPE_BLOCKS = Number(args['shape-blocks'] ?? 20)
const SHAPE_PAIRS_PER_BLOCK = 2000
const SHAPE_BORROWERS = 512
/** A follower batch and the ticker's calls every this many pairs (25 ms at 2,000 pairs/s). */
const SHAPE_TICK_PAIRS = 50

const cpuMicrosSince = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since)
  return used.user + used.system
}
const mean = (values: number[]): number => values.reduce((sum, v) => sum + v, 0) / values.length
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] as number

interface Side {
  checkout: string
  fixtures: typeof Book
  matching: Book.BenchBook
  round: number
  amounts: bigint[]
  requestMicros: number[]
  matchMicros: number[]
  timeOuts: Book.BenchBook
  firstDueMs: number
  dueCalls: number
  timeOutMicros: number[]
  shape: Book.BenchBook
  shapePair: number
  shapeMicros: number[]
}

async function sideOf(checkout: string): Promise<Side> {
  const fixtures = (await import(`${checkout}/bench/fixtures/book.ts`)) as typeof Book
  const spacingMs = 1000
  const leaseTtlMs = 10 * LEASES * spacingMs
  const leases = BLOCKS > 0 ? LEASES : 0
  const timeOuts = fixtures.buildBook(leases > 0 ? 2000 : 1, 1, { leaseTtlMs, offerTtlMs: 100 * leaseTtlMs, liveOffersPerBorrowerMax: LEASES, timeOutsPerCommandMax: DUE_PER_CALL })
  for (let i = 0; i < leases; i++) fixtures.matchOffer(timeOuts, fixtures.openOffer(timeOuts, i, 1000n, fixtures.T0 + i * spacingMs), fixtures.T0 + i * spacingMs)
  return {
    checkout, fixtures, matching: fixtures.buildBook(BLOCKS > 0 ? 10_000 : 1, BORROWERS), round: 0,
    amounts: fixtures.amountsOf(WARMUP_ROUNDS + BLOCKS * ROUNDS_PER_BLOCK), requestMicros: [], matchMicros: [],
    timeOuts, firstDueMs: fixtures.T0 + leaseTtlMs, dueCalls: 0, timeOutMicros: [],
    shape: fixtures.buildBook(500, SHAPE_BORROWERS, { leaseTtlMs: 3000, offerTtlMs: 3000, liveOffersPerBorrowerMax: 1000 }), shapePair: 0, shapeMicros: [],
  }
}

function requestAndMatch(side: Side, timed: boolean): void {
  const { fixtures, matching } = side
  const i = side.round++
  const amountAtomic = side.amounts[i] as bigint
  const nowMs = fixtures.T0 + i
  const c0 = process.cpuUsage()
  const { offerId, agent } = fixtures.openOffer(matching, i, amountAtomic, nowMs)
  const requestMicros = cpuMicrosSince(c0)
  const c1 = process.cpuUsage()
  const matched = matching.engine.matchOffer({ offerId, caller: agent }, nowMs)
  const matchMicros = cpuMicrosSince(c1)
  if (!matched.ok || !matched.value.lease) throw new Error(`${side.checkout}: offer not matched`)
  if (timed) {
    side.requestMicros.push(requestMicros)
    side.matchMicros.push(matchMicros)
  }
  fixtures.payAndRepay(matching.engine, { offerId, lease: matched.value.lease, borrower: agent, amountAtomic, round: i }, nowMs)
}

/** The chain follower's batch moves the chain past 1% of the leases (they time out), then dispatch rematches their offers. */
function timeOutCall(side: Side): void {
  const { engine } = side.timeOuts
  const nowMs = side.firstDueMs + ++side.dueCalls * DUE_PER_CALL * 1000
  const c0 = process.cpuUsage()
  const observed = engine.observeChain({ network: side.fixtures.NET, toBlock: BigInt(nowMs), toBlockHash: '0x', toBlockTimeMs: nowMs, events: [] }, nowMs)
  const dispatched = engine.dispatch(nowMs)
  const micros = cpuMicrosSince(c0)
  if (!observed.ok || !dispatched.ok || observed.value.expiredLeases.length !== DUE_PER_CALL || dispatched.value.matches.length !== DUE_PER_CALL) {
    throw new Error(`${side.checkout}: a call did not time out and rematch ${DUE_PER_CALL} leases`)
  }
  side.timeOutMicros.push(micros / DUE_PER_CALL)
}

/** `pairs` pairs of the load mix's shape: request + match, and every SHAPE_TICK_PAIRS the follower's batch and the ticker. */
function shapePairs(side: Side, pairs: number, timed: boolean): void {
  const { fixtures, shape } = side
  const { engine } = shape
  const c0 = process.cpuUsage()
  for (let k = 0; k < pairs; k++) {
    const i = side.shapePair++
    const nowMs = fixtures.T0 + (i >> 1)
    const { offerId, agent } = fixtures.openOffer(shape, i, side.amounts[i % side.amounts.length] as bigint, nowMs)
    fixtures.matchOffer(shape, { offerId, agent }, nowMs)
    if (i % SHAPE_TICK_PAIRS !== SHAPE_TICK_PAIRS - 1) continue
    const observed = engine.observeChain({ network: fixtures.NET, toBlock: BigInt(nowMs), toBlockHash: '0x', toBlockTimeMs: nowMs, events: [] }, nowMs)
    if (!observed.ok) throw new Error(`${side.checkout}: ${observed.error.message}`)
    while (engine.dispatchDue(nowMs)) {
      const ticked = engine.tick(nowMs)
      if (!ticked.ok) throw new Error(`${side.checkout}: ${ticked.error.message}`)
    }
  }
  if (timed) side.shapeMicros.push(cpuMicrosSince(c0) / pairs)
}

const sides: Side[] = []
for (const checkout of checkouts) sides.push(await sideOf(checkout))
for (const side of sides) for (let i = 0; BLOCKS > 0 && i < WARMUP_ROUNDS; i++) requestAndMatch(side, false)
for (let block = 0; block < BLOCKS; block++) {
  // The order alternates, so neither side always runs right after the other's garbage.
  for (const side of block % 2 === 0 ? sides : [...sides].reverse()) {
    for (let i = 0; i < ROUNDS_PER_BLOCK; i++) requestAndMatch(side, true)
  }
}
for (let call = 0; call < DUE_CALLS; call++) {
  for (const side of call % 2 === 0 ? sides : [...sides].reverse()) timeOutCall(side)
}
// Past the first leases' TTL before timing: the live set has reached its size.
for (let warm = 0; SHAPE_BLOCKS > 0 && warm < 10; warm++) for (const side of sides) shapePairs(side, SHAPE_PAIRS_PER_BLOCK, false)
for (let block = 0; block < SHAPE_BLOCKS; block++) {
  for (const side of block % 2 === 0 ? sides : [...sides].reverse()) shapePairs(side, SHAPE_PAIRS_PER_BLOCK, true)
}
for (const side of sides) {
  process.stdout.write(`${side.checkout}\n`)
  if (BLOCKS > 0) {
    const pairs = side.requestMicros.map((micros, i) => micros + (side.matchMicros[i] as number))
    process.stdout.write(`  request + match CPU per pair: mean ${mean(pairs).toFixed(1)} us (request p50 ${median(side.requestMicros)}, match p50 ${median(side.matchMicros)})\n`)
    process.stdout.write(`  a time-out and its rematch, CPU: mean ${mean(side.timeOutMicros.slice(5)).toFixed(1)} us, p50 of calls ${median(side.timeOutMicros.slice(5)).toFixed(1)} us\n`)
  }
  if (side.shapeMicros.length > 0) {
    process.stdout.write(`  the load mix's shape, CPU per pair (its time-out and expiry included): median of blocks ${median(side.shapeMicros).toFixed(1)} us, mean ${mean(side.shapeMicros).toFixed(1)} us\n`)
  }
}
if (sides.length === 2 && SHAPE_BLOCKS > 0) {
  // Block k of one side ran next to block k of the other, under the same load: compared in pairs.
  const [a, b] = sides as [Side, Side]
  const cheaper = b.shapeMicros.filter((micros, k) => micros < (a.shapeMicros[k] as number)).length
  process.stdout.write(`the load mix's shape: the second checkout cost less in ${cheaper} of ${SHAPE_BLOCKS} paired blocks\n`)
}
