// Matching bench: 10,000 lenders on one (network, asset) book. Measures the engine's matchOffer (lease actor
// created, offer actor updated, changes built) against a bare baseline that runs the same book and the same
// eligibility rules without actors, in the same run, and reports the ratio. Then measures dispatch (the expiry
// ticker) with DISPATCH_LEASES live leases, once with none due and once with 1% due per call.
// Writes bench/results/match-latest.json.
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, platform, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as hdr from 'hdr-histogram-js'
import { Engine, type WalletView } from '../src/engine/index.ts'
import { entryFor, MatchingBook, reposition, type BookEntry } from '../src/engine/book.ts'
import { defaultEngineConfig } from '../src/engine/config.ts'
import { ESTABLISHED_ALLOWANCE, payAndRepay } from './fixtures/book.ts'
import { eligibleFee, feeAtomic } from '../src/engine/rules.ts'
import type { Address, LenderRecord, RiskBand } from '../src/engine/types.ts'

const LENDERS = Number(process.env.BENCH_LENDERS ?? 10_000)
const MATCHES = Number(process.env.BENCH_MATCHES ?? 20_000)
const WARMUP = Math.min(2000, Math.floor(MATCHES / 10))
const DISPATCH_LEASES = Number(process.env.BENCH_DISPATCH_LEASES ?? 10_000)
const DISPATCH_IDLE_CALLS = Number(process.env.BENCH_DISPATCH_IDLE_CALLS ?? 1000)
const DISPATCH_DUE_CALLS = 50
const DISPATCH_DUE_WARMUP = 5
const NET = 'bench-net'
const ASSET = 'USDC'
const T0 = 1_700_000_000_000
const BORROWER = addr(0xb0)
const SUPPLIER = addr(0x50)
/** The directory entry the bench's requests name (credit goes only to a supplier in the directory). */
const BENCH_SUPPLIER = { domain: 'bench.example', name: 'bench', addresses: { [NET]: [SUPPLIER] } }

function addr(n: number): Address {
  return `0x${n.toString(16).padStart(40, '0')}` as Address
}

/** Deterministic pseudo-random numbers (LCG), so both sides and every run see the same book and offers. */
function lcg(seed: number): () => number {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32)
}

interface LenderSpec {
  address: Address
  session: Address
  askBps: number
  reputationBps: number
  liquidityAtomic: bigint
  bands: RiskBand[]
  maxDurationSeconds: number
  walletAtomic: bigint
}

function lenderSpecs(): LenderSpec[] {
  const rnd = lcg(7)
  const specs: LenderSpec[] = []
  for (let i = 0; i < LENDERS; i++) {
    specs.push({
      address: addr(0x10_0000 + i),
      session: addr(0x20_0000 + i),
      askBps: 50 + Math.floor(rnd() * 950), // many share an ask: ties are common
      reputationBps: 1000 * Math.floor(rnd() * 10),
      liquidityAtomic: BigInt(10_000 + Math.floor(rnd() * 1_000_000)),
      bands: rnd() < 0.2 ? ['B', 'C'] : ['A', 'B'],
      maxDurationSeconds: rnd() < 0.1 ? 24 * 3600 : 90 * 24 * 3600,
      walletAtomic: rnd() < 0.02 ? 0n : 10n ** 12n, // 2% of wallets cannot pay: refused leases on the hot path
    })
  }
  return specs
}

function offerAmounts(): bigint[] {
  const rnd = lcg(11)
  return Array.from({ length: MATCHES + WARMUP }, () => BigInt(100 + Math.floor(rnd() * 9900)))
}

function histogram() {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: 3 })
}

function summary(h: ReturnType<typeof histogram>, totalNs: bigint, matched: number) {
  const micros = (ns: number) => Math.round(ns / 10) / 100
  return {
    matchesPerSecond: Math.round((matched * 1e9) / Number(totalNs)),
    latencyMicros: {
      p50: micros(h.getValueAtPercentile(50)),
      p90: micros(h.getValueAtPercentile(90)),
      p99: micros(h.getValueAtPercentile(99)),
      p999: micros(h.getValueAtPercentile(99.9)),
      max: micros(h.maxValue),
      mean: micros(h.mean),
    },
  }
}

function progress(label: string, done: number, total: number): void {
  if (done % Math.max(1, Math.floor(total / 10)) === 0 || done === total) {
    process.stdout.write(`  ${label}: ${done}/${total} (${Math.round((100 * done) / total)}%)\n`)
  }
}

class BenchWallets implements WalletView {
  constructor(private readonly bySession: Map<Address, bigint>) {}
  spendableAtomic(_network: string, _asset: string, holder: Address): bigint {
    return this.bySession.get(holder) ?? 0n
  }
}

function runEngine(specs: LenderSpec[], amounts: bigint[]) {
  const wallets = new BenchWallets(new Map(specs.map((s) => [s.session, s.walletAtomic])))
  const engine = new Engine({}, wallets)
  engine.seedSuppliers([BENCH_SUPPLIER], 0)
  process.stdout.write(`engine: registering ${specs.length} lenders\n`)
  const regStart = process.hrtime.bigint()
  specs.forEach((s, i) => {
    const r = engine.registerLender({
      address: s.address, sessionAddress: s.session, availableLiquidityAtomic: s.liquidityAtomic, asset: ASSET,
      networks: [NET], minFeeBps: s.askBps, maxDurationSeconds: s.maxDurationSeconds, acceptedRiskBands: s.bands,
      reputationBps: s.reputationBps,
    }, T0)
    if (!r.ok) throw new Error(r.error.message)
    progress('register', i + 1, specs.length)
  })
  const registerMicros = Number(process.hrtime.bigint() - regStart) / 1000
  const src = engine.registerSource({ sourceId: 'bench-src', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10n ** 15n, liquidationValueAtomic: 10n ** 15n, advanceRateBps: 5000, evidenceId: 'bench', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0)
  if (!src.ok) throw new Error(src.error.message)

  const h = histogram()
  let totalNs = 0n
  let matched = 0
  let refused = 0
  let cpuMicros = 0
  process.stdout.write(`engine: ${WARMUP} warm-up + ${MATCHES} matches (each then paid and repaid, untimed)\n`)
  for (let i = 0; i < amounts.length; i++) {
    const amountAtomic = amounts[i] as bigint
    const nowMs = T0 + i
    const d = engine.requestCredit({
      agent: BORROWER, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic, purpose: 'bench',
      supplier: 'bench', supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: 'bench-src',
      maximumFeeAtomic: amountAtomic / 20n, // 5%: asks above 500 bps are priced out
      caller: BORROWER,
    }, nowMs)
    if (!d.ok || !d.value.offer) throw new Error('bench request declined')
    const offerId = d.value.offer.offerId
    const cpu0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    const m = engine.matchOffer({ offerId, caller: BORROWER }, nowMs)
    const dt = process.hrtime.bigint() - t0
    const cpu = process.cpuUsage(cpu0)
    if (!m.ok || !m.value.lease) throw new Error('bench offer not matched')
    if (i >= WARMUP) {
      h.recordValue(Number(dt))
      totalNs += dt
      cpuMicros += cpu.user + cpu.system
      matched += 1
      refused += m.value.refusedLeases.length
      progress('match', matched, MATCHES)
    }
    payAndRepay(engine, { offerId, lease: m.value.lease, borrower: BORROWER, amountAtomic, round: i }, nowMs)
  }
  engine.checkInvariants()
  return {
    registerMicrosPerLender: Math.round((registerMicros / specs.length) * 100) / 100, refusedLeases: refused,
    // Process CPU time: what other processes on a loaded machine take does not count in it.
    cpuMicrosPerMatch: Math.round((cpuMicros / matched) * 100) / 100, ...summary(h, totalNs, matched),
  }
}

/** The same book and rules, no actors: pick the lender, reserve, reposition; then pay and repay by hand. */
function runBaseline(specs: LenderSpec[], amounts: bigint[]) {
  const book = new MatchingBook()
  const entries = new Map<Address, BookEntry>()
  const wallets = new Map(specs.map((s) => [s.session, s.walletAtomic]))
  specs.forEach((s, i) => {
    const lender: LenderRecord = {
      address: s.address, sessionAddress: s.session, asset: ASSET, assets: { [NET]: ASSET }, networks: [NET],
      askBps: s.askBps, maxDurationSeconds: s.maxDurationSeconds, acceptedRiskBands: s.bands,
      registeredAtomic: s.liquidityAtomic, availableAtomic: s.liquidityAtomic, reservedAtomic: 0n, deployedAtomic: 0n,
      feesEarnedAtomic: 0n, lossesAtomic: 0n, withdrawnAtomic: 0n, withdrawalPendingAtomic: 0n, reputationBps: s.reputationBps, reliabilityBps: 5000, inactiveSinceMs: null, probationMisses: 0,
      registrationSeq: i + 1, registeredAtMs: T0, leasesGranted: 0, leasesPaid: 0, leasesExpired: 0, advancesRepaid: 0, advancesDefaulted: 0, recentLeaseOutcomes: '',
    }
    const entry = entryFor(lender)
    book.insert(entry)
    entries.set(s.address, entry)
  })
  const h = histogram()
  let totalNs = 0n
  let matched = 0
  process.stdout.write(`baseline: ${WARMUP} warm-up + ${MATCHES} matches on the bare book\n`)
  const durationSeconds = defaultEngineConfig.backingDurationSecondsDefault
  for (let i = 0; i < amounts.length; i++) {
    const amountAtomic = amounts[i] as bigint
    const terms = { network: NET, asset: ASSET, amountAtomic, maximumFeeAtomic: amountAtomic / 20n, riskBand: 'A' as RiskBand, durationSeconds, supplierAddress: SUPPLIER }
    const excluded: Address[] = []
    const t0 = process.hrtime.bigint()
    let chosen: { entry: BookEntry; fee: bigint } | null = null
    let scanned = 0
    for (const entry of book.entries) {
      if (scanned++ >= defaultEngineConfig.lendersScannedPerMatchMax) break
      if (feeAtomic(amountAtomic, entry.askBps) > terms.maximumFeeAtomic) break
      const fee = eligibleFee(entry.lender, terms, defaultEngineConfig, 0)
      if (fee === null || excluded.includes(entry.lender.address)) continue
      if ((wallets.get(entry.lender.sessionAddress) ?? 0n) < amountAtomic) { excluded.push(entry.lender.address); continue }
      chosen = { entry, fee }
      break
    }
    if (!chosen) throw new Error('baseline offer not matched')
    const lender = chosen.entry.lender
    lender.availableAtomic -= amountAtomic
    lender.reservedAtomic += amountAtomic
    reposition(chosen.entry, [book])
    const dt = process.hrtime.bigint() - t0
    if (i >= WARMUP) {
      h.recordValue(Number(dt))
      totalNs += dt
      matched += 1
      progress('match', matched, MATCHES)
    }
    const lenderFee = chosen.fee - (chosen.fee * BigInt(defaultEngineConfig.insuranceShareBps)) / 10_000n
    lender.reservedAtomic -= amountAtomic
    lender.availableAtomic += amountAtomic + lenderFee
    lender.feesEarnedAtomic += lenderFee
    reposition(chosen.entry, [book])
  }
  void entries
  return summary(h, totalNs, matched)
}

/**
 * dispatch with DISPATCH_LEASES live leases. Lease i is granted at T0 + i * spacing, so the leases come due one
 * spacing apart; a call at a given time expires exactly the leases due by then and rematches their offers to other
 * lenders (new leases, due one TTL later, so the live count stays DISPATCH_LEASES). "idle": every call sees the same
 * state with nothing due. "1% due": each call moves the clock so that the next 1% of the leases are due. The digest
 * hashes every change the due calls handed back, so two builds of the engine can be compared for identical outcomes.
 */
function runDispatch(specs: LenderSpec[]) {
  // One second apart: leases expire on the chain's time, whose unit is the block second.
  const spacingMs = 1000
  const leaseTtlMs = 10 * DISPATCH_LEASES * spacingMs
  const lenders = specs.slice(0, 2000)
  const wallets = new BenchWallets(new Map(lenders.map((s) => [s.session, 10n ** 15n])))
  // One borrower holds every lease here: its matched offers stay live until funded, so the per-borrower cap must admit them all.
  // Its lenders are established (ESTABLISHED_ALLOWANCE): each holds several live leases and misses some.
  // The figure is the cost of one call with 1% of the leases due: the per-command bound on time-outs (32 by default,
  // the service's ticker runs more commands while work is due) must admit them in one call.
  const engine = new Engine({ leaseTtlMs, offerTtlMs: 100 * leaseTtlMs, liveOffersPerBorrowerMax: DISPATCH_LEASES, timeOutsPerCommandMax: Math.max(1, DISPATCH_LEASES / 100), lenderLeaseAllowanceInitial: ESTABLISHED_ALLOWANCE }, wallets)
  engine.seedSuppliers([BENCH_SUPPLIER], 0)
  for (const s of lenders) {
    const r = engine.registerLender({
      address: s.address, sessionAddress: s.session, availableLiquidityAtomic: 10n ** 12n, asset: ASSET,
      networks: [NET], minFeeBps: s.askBps, maxDurationSeconds: 90 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
      reputationBps: s.reputationBps,
    }, T0)
    if (!r.ok) throw new Error(r.error.message)
  }
  const src = engine.registerSource({ sourceId: 'bench-src', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10n ** 15n, liquidationValueAtomic: 10n ** 15n, advanceRateBps: 5000, evidenceId: 'bench', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0)
  if (!src.ok) throw new Error(src.error.message)
  process.stdout.write(`dispatch: granting ${DISPATCH_LEASES} live leases\n`)
  for (let i = 0; i < DISPATCH_LEASES; i++) {
    const nowMs = T0 + i * spacingMs
    const d = engine.requestCredit({
      agent: BORROWER, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic: 1000n, purpose: 'bench',
      supplier: 'bench', supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: 'bench-src',
      maximumFeeAtomic: 1000n, caller: BORROWER,
    }, nowMs)
    if (!d.ok || !d.value.offer) throw new Error('bench request declined')
    const m = engine.matchOffer({ offerId: d.value.offer.offerId, caller: BORROWER }, nowMs)
    if (!m.ok || !m.value.lease) throw new Error('bench offer not matched')
  }
  const firstDueMs = T0 + leaseTtlMs
  // What the service does as time passes: the chain follower's batch moves the observed chain time (it expires the
  // leases past their deadline), then dispatch rematches the offers. Both are timed together.
  const tick = (nowMs: number) => {
    const observed = engine.observeChain({ network: NET, toBlock: BigInt(nowMs), toBlockHash: '0x', toBlockTimeMs: nowMs, events: [] }, nowMs)
    if (!observed.ok) return observed
    const dispatched = engine.dispatch(nowMs)
    if (!dispatched.ok) return dispatched
    return { ok: true as const, value: { ...dispatched.value, expiredLeases: observed.value.expiredLeases }, changes: [...observed.changes, ...dispatched.changes] }
  }

  const idle = histogram()
  let idleNs = 0n
  process.stdout.write(`dispatch: ${DISPATCH_IDLE_CALLS} calls with none of ${DISPATCH_LEASES} leases due\n`)
  for (let c = 0; c < DISPATCH_IDLE_CALLS; c++) {
    const t0 = process.hrtime.bigint()
    const r = tick(firstDueMs - 1)
    const dt = process.hrtime.bigint() - t0
    if (!r.ok || r.value.expiredLeases.length > 0 || r.changes.length > 0) throw new Error('idle dispatch changed something')
    idle.recordValue(Number(dt))
    idleNs += dt
  }

  const duePerCall = DISPATCH_LEASES / 100
  const due = histogram()
  let dueNs = 0n
  let dueCpuMicros = 0
  const digest = createHash('sha256')
  process.stdout.write(`dispatch: ${DISPATCH_DUE_WARMUP} warm-up + ${DISPATCH_DUE_CALLS} calls with ${duePerCall} of ${DISPATCH_LEASES} leases due\n`)
  for (let c = 0; c < DISPATCH_DUE_WARMUP + DISPATCH_DUE_CALLS; c++) {
    // A lease is past its deadline once the chain's second is past its expiry's second.
    const nowMs = firstDueMs + (c + 1) * duePerCall * spacingMs
    const cpu0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    const r = tick(nowMs)
    const dt = process.hrtime.bigint() - t0
    const cpu = process.cpuUsage(cpu0)
    if (!r.ok) throw new Error(r.error.message)
    const rematched = r.value.matches.filter((m) => m.lease).length
    if (r.value.expiredLeases.length !== duePerCall || rematched !== duePerCall) {
      throw new Error(`dispatch expired ${r.value.expiredLeases.length} and rematched ${rematched}, expected ${duePerCall} each`)
    }
    digest.update(JSON.stringify([r.value, r.changes], (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))
    if (c >= DISPATCH_DUE_WARMUP) {
      due.recordValue(Number(dt))
      dueNs += dt
      dueCpuMicros += cpu.user + cpu.system
    }
  }
  engine.checkInvariants()
  const micros = (ns: number) => Math.round(ns / 10) / 100
  const figures = (h: ReturnType<typeof histogram>, totalNs: bigint, calls: number) => ({
    microsPerCall: micros(Number(totalNs) / calls),
    latencyMicros: { p50: micros(h.getValueAtPercentile(50)), p99: micros(h.getValueAtPercentile(99)), max: micros(h.maxValue) },
  })
  return {
    liveLeases: DISPATCH_LEASES,
    idle: { calls: DISPATCH_IDLE_CALLS, leasesDuePerCall: 0, ...figures(idle, idleNs, DISPATCH_IDLE_CALLS) },
    onePercentDue: {
      calls: DISPATCH_DUE_CALLS, leasesDuePerCall: duePerCall, ...figures(due, dueNs, DISPATCH_DUE_CALLS),
      cpuMicrosPerCall: Math.round((dueCpuMicros / DISPATCH_DUE_CALLS) * 100) / 100,
    },
    outcomeDigest: digest.digest('hex').slice(0, 16),
  }
}

const specs = lenderSpecs()
const amounts = offerAmounts()
process.stdout.write(`match bench: ${LENDERS} lenders, ${MATCHES} timed matches, node ${process.version}\n`)
const baseline = runBaseline(specs, amounts)
const engine = runEngine(specs, amounts)
const dispatch = runDispatch(specs)
const cpu = cpus()[0]
const result = {
  date: new Date().toISOString(),
  machine: { cpu: cpu?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), platform: platform(), node: process.version },
  lenders: LENDERS,
  matches: MATCHES,
  engine,
  baseline,
  engineToBaselineThroughputRatio: Math.round((engine.matchesPerSecond / baseline.matchesPerSecond) * 1000) / 1000,
  dispatch,
}
const out = join(process.env.BENCH_RESULTS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'results'), 'match-latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
process.stdout.write(`\nengine:   ${engine.matchesPerSecond} matches/s, p50 ${engine.latencyMicros.p50} us, p99 ${engine.latencyMicros.p99} us, p99.9 ${engine.latencyMicros.p999} us, CPU ${engine.cpuMicrosPerMatch} us per match (refused leases on the way: ${engine.refusedLeases})\n`)
process.stdout.write(`baseline: ${baseline.matchesPerSecond} matches/s, p50 ${baseline.latencyMicros.p50} us, p99 ${baseline.latencyMicros.p99} us\n`)
process.stdout.write(`ratio engine/baseline throughput: ${result.engineToBaselineThroughputRatio}\n`)
process.stdout.write(`\ndispatch with ${dispatch.liveLeases} live leases   us/call   p50 us   p99 us   max us\n`)
for (const [label, d] of [['none due', dispatch.idle], [`${dispatch.onePercentDue.leasesDuePerCall} due (1%)`, dispatch.onePercentDue]] as const) {
  const row = [d.microsPerCall, d.latencyMicros.p50, d.latencyMicros.p99, d.latencyMicros.max].map((v) => String(v).padStart(9)).join('')
  process.stdout.write(`  ${label.padEnd(31)}${row}\n`)
}
process.stdout.write(`  1% due: CPU ${dispatch.onePercentDue.cpuMicrosPerCall} us per call\n  outcome digest ${dispatch.outcomeDigest}\nwrote ${out}\n`)
