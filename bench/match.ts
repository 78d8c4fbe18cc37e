// Matching bench: 10,000 lenders on one (network, asset) book. Measures the engine's matchOffer (lease actor
// created, offer actor updated, changes built) against a bare baseline that runs the same book and the same
// eligibility rules without actors, in the same run, and reports the ratio. Writes bench/results/match-latest.json.
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, platform, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as hdr from 'hdr-histogram-js'
import { Engine, type WalletView } from '../src/engine/index.ts'
import { entryFor, MatchingBook, reposition, type BookEntry } from '../src/engine/book.ts'
import { defaultEngineConfig } from '../src/engine/config.ts'
import { eligibleFee, feeAtomic } from '../src/engine/rules.ts'
import type { Address, LenderRecord, RiskBand } from '../src/engine/types.ts'

const LENDERS = Number(process.env.BENCH_LENDERS ?? 10_000)
const MATCHES = Number(process.env.BENCH_MATCHES ?? 20_000)
const WARMUP = Math.min(2000, Math.floor(MATCHES / 10))
const NET = 'bench-net'
const ASSET = 'USDC'
const T0 = 1_700_000_000_000
const BORROWER = addr(0xb0)
const SUPPLIER = addr(0x50)

function addr(n: number): Address {
  return `0x${n.toString(16).padStart(40, '0')}` as Address
}

function txHash(n: number): `0x${string}` {
  return `0x${n.toString(16).padStart(64, '0')}`
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
  const src = engine.registerSource({ sourceId: 'bench-src', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10n ** 15n, liquidationValueAtomic: 10n ** 15n, advanceRateBps: 5000, evidenceId: 'bench' }, T0)
  if (!src.ok) throw new Error(src.error.message)

  const h = histogram()
  let totalNs = 0n
  let matched = 0
  let refused = 0
  process.stdout.write(`engine: ${WARMUP} warm-up + ${MATCHES} matches (each then paid and repaid, untimed)\n`)
  for (let i = 0; i < amounts.length; i++) {
    const amountAtomic = amounts[i] as bigint
    const nowMs = T0 + i
    const d = engine.requestCredit({
      agent: BORROWER, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic, purpose: 'bench',
      supplier: 'bench', supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: 'bench-src',
      maximumFeeAtomic: amountAtomic / 20n, // 5%: asks above 500 bps are priced out
    }, nowMs)
    if (!d.ok || !d.value.offer) throw new Error('bench request declined')
    const offerId = d.value.offer.offerId
    const t0 = process.hrtime.bigint()
    const m = engine.matchOffer({ offerId }, nowMs)
    const dt = process.hrtime.bigint() - t0
    if (!m.ok || !m.value.lease) throw new Error('bench offer not matched')
    if (i >= WARMUP) {
      h.recordValue(Number(dt))
      totalNs += dt
      matched += 1
      refused += m.value.refusedLeases.length
      progress('match', matched, MATCHES)
    }
    const lease = m.value.lease
    const paid = engine.recordSupplierPayment({ network: NET, txHash: txHash(i), logIndex: 0, offerId, payer: lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic }, nowMs)
    if (!paid.ok) throw new Error(paid.error.message)
    const plan = engine.planRepayment(paid.value.advanceId)
    if (!plan.ok) throw new Error(plan.error.message)
    const repaid = engine.repayAdvance({ network: NET, txHash: txHash(10 ** 9 + i), logIndex: 0, advanceId: paid.value.advanceId, lender: lease.lender, payer: BORROWER, amountAtomic: plan.value.amountAtomic, reserveAmountAtomic: plan.value.reserveAmountAtomic }, nowMs)
    if (!repaid.ok) throw new Error(repaid.error.message)
  }
  engine.checkInvariants()
  return { registerMicrosPerLender: Math.round((registerMicros / specs.length) * 100) / 100, refusedLeases: refused, ...summary(h, totalNs, matched) }
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
      feesEarnedAtomic: 0n, lossesAtomic: 0n, reputationBps: s.reputationBps, reliabilityBps: 5000,
      registrationSeq: i + 1, registeredAtMs: T0, leasesGranted: 0, leasesPaid: 0, leasesExpired: 0, advancesRepaid: 0, advancesDefaulted: 0,
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
      const fee = eligibleFee(entry.lender, terms, defaultEngineConfig.lenderReliabilityMinBps)
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

const specs = lenderSpecs()
const amounts = offerAmounts()
process.stdout.write(`match bench: ${LENDERS} lenders, ${MATCHES} timed matches, node ${process.version}\n`)
const baseline = runBaseline(specs, amounts)
const engine = runEngine(specs, amounts)
const cpu = cpus()[0]
const result = {
  date: new Date().toISOString(),
  machine: { cpu: cpu?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), platform: platform(), node: process.version },
  lenders: LENDERS,
  matches: MATCHES,
  engine,
  baseline,
  engineToBaselineThroughputRatio: Math.round((engine.matchesPerSecond / baseline.matchesPerSecond) * 1000) / 1000,
}
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'match-latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
process.stdout.write(`\nengine:   ${engine.matchesPerSecond} matches/s, p50 ${engine.latencyMicros.p50} us, p99 ${engine.latencyMicros.p99} us, p99.9 ${engine.latencyMicros.p999} us (refused leases on the way: ${engine.refusedLeases})\n`)
process.stdout.write(`baseline: ${baseline.matchesPerSecond} matches/s, p50 ${baseline.latencyMicros.p50} us, p99 ${baseline.latencyMicros.p99} us\n`)
process.stdout.write(`ratio engine/baseline throughput: ${result.engineToBaselineThroughputRatio}\nwrote ${out}\n`)
