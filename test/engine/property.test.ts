// Property tests: random command sequences keep every invariant, replay identically, and survive a rebuild.
import fc from 'fast-check'
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { Change } from '../../src/engine/index.ts'
import { entryFor, MatchingBook } from '../../src/engine/book.ts'
import { park } from '../../src/engine/matching.ts'
import type { EngineState } from '../../src/engine/state.ts'
import type { LenderRecord } from '../../src/engine/types.ts'
import { ASSET, BORROWER, CLIENT, FakeWallets, NET, T0, addr, applyChanges, asWritten, canonical, hash, lenderInput, repaidFact, seedSuppliers } from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

type Cmd =
  | { c: 'lender'; i: number; ask: number; liq: number; rep: number; bands: string[]; net2: boolean }
  | { c: 'source'; i: number; value: number; liq: number; rate: number; other: boolean }
  | { c: 'job'; i: number; receivable: number; dueS: number }
  | { c: 'collateral'; i: number; amount: number }
  | { c: 'request'; job: boolean; i: number; amount: number; maxFee: number; net2: boolean }
  | { c: 'match'; i: number }
  | { c: 'dispatch' }
  | { c: 'pay'; i: number; wrongPayer: boolean }
  | { c: 'repay'; i: number; short: boolean }
  | { c: 'complete'; i: number }
  | { c: 'fail'; i: number }
  | { c: 'liquidate'; i: number }
  | { c: 'uptime'; i: number; bps: number }
  | { c: 'wallet'; i: number; amount: number }

type Step = { dtMs: number; cmd: Cmd }

const idx = fc.integer({ min: 1, max: 4 })
const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary })
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  w(2, fc.record({ c: fc.constant('lender' as const), i: idx, ask: fc.integer({ min: 0, max: 2000 }), liq: fc.integer({ min: 0, max: 50_000 }), rep: fc.integer({ min: 0, max: 10_000 }), bands: fc.subarray(['A', 'B', 'C'], { minLength: 1 }), net2: fc.boolean() })),
  w(2, fc.record({ c: fc.constant('source' as const), i: idx, value: fc.integer({ min: 1, max: 40_000 }), liq: fc.integer({ min: 0, max: 40_000 }), rate: fc.integer({ min: 0, max: 10_000 }), other: fc.boolean() })),
  w(2, fc.record({ c: fc.constant('job' as const), i: idx, receivable: fc.integer({ min: 1, max: 40_000 }), dueS: fc.integer({ min: 1, max: 3 * 3600 }) })),
  w(1, fc.record({ c: fc.constant('collateral' as const), i: idx, amount: fc.integer({ min: 0, max: 5000 }) })),
  w(5, fc.record({ c: fc.constant('request' as const), job: fc.boolean(), i: idx, amount: fc.integer({ min: 0, max: 6000 }), maxFee: fc.integer({ min: 0, max: 600 }), net2: fc.boolean() })),
  w(5, fc.record({ c: fc.constant('match' as const), i: fc.integer({ min: 1, max: 12 }) })),
  w(2, fc.record({ c: fc.constant('dispatch' as const) })),
  w(5, fc.record({ c: fc.constant('pay' as const), i: fc.integer({ min: 1, max: 12 }), wrongPayer: fc.boolean() })),
  w(2, fc.record({ c: fc.constant('repay' as const), i: fc.integer({ min: 1, max: 8 }), short: fc.boolean() })),
  w(1, fc.record({ c: fc.constant('complete' as const), i: idx })),
  w(1, fc.record({ c: fc.constant('fail' as const), i: idx })),
  w(2, fc.record({ c: fc.constant('liquidate' as const), i: fc.integer({ min: 1, max: 8 }) })),
  w(1, fc.record({ c: fc.constant('uptime' as const), i: idx, bps: fc.integer({ min: 0, max: 10_000 }) })),
  w(1, fc.record({ c: fc.constant('wallet' as const), i: idx, amount: fc.integer({ min: 0, max: 30_000 }) })),
)
const dtArb = fc.oneof(w(3, fc.constant(0)), w(3, fc.integer({ min: 1, max: 40_000 })), w(1, fc.integer({ min: 0, max: 4 * 3600_000 })))
const stepArb: fc.Arbitrary<Step> = fc.record({ dtMs: dtArb, cmd: cmdArb })

/** Every log starts from a small world (lenders, sources, jobs), so random commands mostly hit live things. */
const prelude: Step[] = [
  { dtMs: 0, cmd: { c: 'lender', i: 1, ask: 100, liq: 20_000, rep: 5000, bands: ['A', 'B', 'C'], net2: false } },
  { dtMs: 0, cmd: { c: 'lender', i: 2, ask: 100, liq: 30_000, rep: 5000, bands: ['A', 'B'], net2: true } },
  { dtMs: 0, cmd: { c: 'lender', i: 3, ask: 300, liq: 50_000, rep: 9000, bands: ['A', 'B', 'C'], net2: true } },
  { dtMs: 0, cmd: { c: 'source', i: 1, value: 30_000, liq: 20_000, rate: 8000, other: false } },
  { dtMs: 0, cmd: { c: 'source', i: 2, value: 8_000, liq: 6_000, rate: 9000, other: false } },
  { dtMs: 0, cmd: { c: 'job', i: 1, receivable: 20_000, dueS: 7200 } },
  { dtMs: 0, cmd: { c: 'job', i: 2, receivable: 5_000, dueS: 600 } },
]
const logArb = (minLength: number) => fc.array(stepArb, { minLength, maxLength: 80, size: 'medium' }).map((steps) => [...prelude, ...steps])

const OTHER = addr(0xee)
const config = { leaseTtlMs: 30_000, offerTtlMs: 120_000, backingDurationSecondsDefault: 3600, leasesPerOfferMax: 4 }

/** The i-th live actor of a kind (wrapping), or a made-up id when there is none: commands hit real actors often. */
function pick(engine: Engine, kind: 'offer' | 'advance', i: number, prefix: string): string {
  const ids = engine.snapshots().filter((c) => c.kind === kind).map((c) => c.id)
  return ids.length > 0 ? (ids[i % ids.length] as string) : `${prefix}_${i}`
}

/** Apply one command; arguments that depend on state are read from the engine, so a replay derives the same ones. */
function apply(engine: Engine, wallets: FakeWallets, cmd: Cmd, nowMs: number): unknown {
  switch (cmd.c) {
    case 'lender':
      return engine.registerLender(lenderInput(cmd.i, {
        minFeeBps: cmd.ask, availableLiquidityAtomic: BigInt(cmd.liq), reputationBps: cmd.rep, acceptedRiskBands: cmd.bands,
        networks: cmd.net2 ? [NET, 'net-b'] : [NET],
      }), nowMs)
    case 'source':
      return engine.registerSource({ sourceId: `src_${cmd.i}`, productType: 'asset-backed', agent: cmd.other ? OTHER : BORROWER, valueAtomic: BigInt(cmd.value), liquidationValueAtomic: BigInt(cmd.liq), advanceRateBps: cmd.rate, evidenceId: 'ev', validUntilMs: 8_000_000_000_000, caller: cmd.other ? OTHER : BORROWER }, nowMs)
    case 'job':
      return engine.createJob({ jobId: `job_${cmd.i}`, jobKey: legacyJobKey(`job_${cmd.i}`), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: BigInt(cmd.receivable), dueAtMs: nowMs + cmd.dueS * 1000, funding: { network: NET, txHash: hash(cmd.i), logIndex: 0 }, caller: CLIENT }, nowMs)
    case 'collateral':
      return engine.postCollateral({ jobId: `job_${cmd.i}`, borrower: BORROWER, amountAtomic: BigInt(cmd.amount), proof: { network: NET, txHash: hash(100 + cmd.i), logIndex: 1 }, caller: BORROWER }, nowMs)
    case 'request':
      return engine.requestCredit({ agent: BORROWER, network: cmd.net2 ? 'net-b' : NET, asset: ASSET, productType: 'x', amountAtomic: BigInt(cmd.amount), purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: addr(0x50), repaymentSource: cmd.job ? `job_${cmd.i}` : `src_${cmd.i}`, maximumFeeAtomic: BigInt(cmd.maxFee), caller: BORROWER }, nowMs)
    case 'match':
      return engine.matchOffer({ offerId: pick(engine, 'offer', cmd.i, 'off'), caller: BORROWER }, nowMs)
    case 'dispatch':
      return engine.dispatch(nowMs)
    case 'pay': {
      const offerId = pick(engine, 'offer', cmd.i, 'off')
      const offer = engine.getOffer(offerId)
      const lease = offer?.currentLeaseId ? engine.getLease(offer.currentLeaseId) : undefined
      const payer = cmd.wrongPayer || !lease ? lenderInput(1).sessionAddress : lease.payer
      const caller = cmd.wrongPayer || !lease ? lenderInput(1).address : lease.lender
      return engine.recordSupplierPayment({ network: offer?.network ?? NET, txHash: hash(200 + cmd.i), logIndex: 0, offerId, payer, supplier: addr(0x50), asset: ASSET, amountAtomic: offer?.amountAtomic ?? 1n, caller }, nowMs)
    }
    case 'repay': {
      const advanceId = pick(engine, 'advance', cmd.i, 'adv')
      const plan = engine.planRepayment(advanceId)
      if (!plan.ok) return plan
      // A short repayment (half of what is owed) is counted and leaves the rest owed.
      const owed = plan.value.amountAtomic + plan.value.reserveAmountAtomic
      return engine.repayAdvance(repaidFact(engine, advanceId, hash(300 + cmd.i), cmd.short ? owed / 2n : owed), nowMs)
    }
    case 'complete': {
      const plan = engine.planJobSettlement({ jobId: `job_${cmd.i}`, caller: CLIENT })
      if (!plan.ok) return plan
      return engine.completeJob({ jobId: `job_${cmd.i}`, caller: CLIENT, network: NET, txHash: hash(400 + cmd.i) }, nowMs)
    }
    case 'fail':
      return engine.failJob({ jobId: `job_${cmd.i}`, reason: 'not_delivered', caller: CLIENT }, nowMs)
    case 'liquidate': {
      const advanceId = pick(engine, 'advance', cmd.i, 'adv')
      const caller = engine.getAdvance(advanceId)?.lender ?? lenderInput(1).address
      const plan = engine.planLiquidation({ advanceId, caller }, nowMs)
      if (!plan.ok) return plan
      const sum = plan.value.steps.slice(0, 4).reduce((s, x) => s + x.amountAtomic, 0n)
      if (sum > plan.value.owedAtomic || sum !== plan.value.recoveredAtomic) throw new Error('recovery steps exceed what is owed')
      return engine.liquidate({ advanceId, caller, network: NET, txHash: hash(500 + cmd.i) }, nowMs)
    }
    case 'uptime':
      return engine.recordLenderUptime({ lender: lenderInput(cmd.i).address, uptimeBps: cmd.bps }, nowMs)
    case 'wallet':
      wallets.set(lenderInput(cmd.i).sessionAddress, BigInt(cmd.amount))
      return { ok: true, value: null, changes: [] }
  }
}

interface Run {
  results: string[]
  snapshots: string[]
  store: Map<string, Change>[]
  /** The books each lender is in after each step, by book key (in memory only, see the restore test). */
  books: Map<string, string[]>[]
}

/** Which books each lender is in (none: parked), by book key. */
function booksOf(s: EngineState): Map<string, string[]> {
  const keyOf = new Map<MatchingBook, string>()
  for (const [key, book] of s.books) keyOf.set(book, key)
  return new Map([...s.bookEntries].map(([address, placed]) => [address, placed.books.map((book) => keyOf.get(book) as string)]))
}

/** Puts every lender in exactly the books `books` names (out of all of them: parked), as the engine's unpark does. */
function placeAs(s: EngineState, books: Map<string, string[]>): void {
  for (const [address, keys] of books) {
    const lender = s.lenders.get(address as LenderRecord['address']) as LenderRecord
    const placed = s.bookEntries.get(lender.address)
    park(s, lender)
    if (placed === undefined || keys.length === 0) continue
    s.parked.delete(lender.address)
    placed.entry = entryFor(lender)
    for (const key of keys) {
      let book = s.books.get(key)
      if (!book) s.books.set(key, (book = new MatchingBook(s.config)))
      book.insert(placed.entry)
      placed.books.push(book)
    }
    if (keys.length < lender.networks.length) s.partlyParked.add(lender.address)
  }
}

function runLog(log: Step[], check: boolean): Run {
  const wallets = new FakeWallets(20_000n)
  const engine = new Engine(config, wallets)
  const store = new Map<string, Change>()
  applyChanges(store, seedSuppliers(engine))
  const run: Run = { results: [], snapshots: [], store: [], books: [] }
  let nowMs = T0
  for (const { dtMs, cmd } of log) {
    nowMs += dtMs
    const before = check ? canonical(engine.snapshots()) : ''
    const result = apply(engine, wallets, cmd, nowMs) as { ok: boolean; changes?: Change[] }
    if (check) {
      engine.checkInvariants()
      if (!result.ok && canonical(engine.snapshots()) !== before) throw new Error(`failed ${cmd.c} changed state`)
    }
    if (result.ok && result.changes) applyChanges(store, result.changes)
    run.results.push(canonical(result))
    run.snapshots.push(canonical(engine.snapshots()))
    run.store.push(new Map(store))
    run.books.push(booksOf((engine as unknown as { state: EngineState }).state))
  }
  return run
}

t.test('invariants hold after every step; failed commands change nothing; the store view equals the live state', async (t) => {
  fc.assert(fc.property(logArb(1), (log) => {
    const run = runLog(log, true)
    const last = run.store[run.store.length - 1] as Map<string, Change>
    const live = asWritten([...last.values()].filter((c) => !c.final))
    const wallets = new FakeWallets(20_000n)
    const rebuilt = new Engine(config, wallets, last.values())
    rebuilt.checkInvariants()
    // an engine that never changed anything has handed out no meta record yet
    const expected = rebuilt.snapshots().filter((c) => c.kind !== 'meta' || last.has('meta:engine'))
    if (canonical(live.sort()) !== canonical(asWritten(expected).sort())) throw new Error('store view differs from the live state')
    return true
  }), { numRuns: 150 })
  t.pass('150 random sequences')
})

t.test('replaying the same command log yields identical results and snapshots', async (t) => {
  fc.assert(fc.property(logArb(1), (log) => {
    const a = runLog(log, false)
    const b = runLog(log, false)
    return canonical(a.results) === canonical(b.results) && canonical(a.snapshots) === canonical(b.snapshots)
  }), { numRuns: 80 })
  t.pass('80 replays')
})

t.test('restoring from the snapshots mid-sequence changes nothing observable', async (t) => {
  fc.assert(fc.property(logArb(2), fc.nat(), (log, cutSeed) => {
    const cut = cutSeed % log.length
    const straight = runLog(log, false)
    // replay up to the cut, rebuild from the store as it was there, continue on the rebuilt engine
    const wallets = new FakeWallets(20_000n)
    let engine = new Engine(config, wallets)
    seedSuppliers(engine)
    let nowMs = T0
    for (let i = 0; i < log.length; i++) {
      if (i === cut) {
        // Which books a lender is in is kept in memory only (state.ts `parked`, `partlyParked`): a real restart puts
        // every lender whose wallet holds anything back in all its books (one parked after an insufficient-balance
        // refusal is tried once more, README "Matching cannot be jammed") and leaves out one whose wallet emptied
        // unseen (the straight run still tries it and refuses its lease). That one difference is carried over here,
        // in both directions, so the rest of the state is compared exactly.
        // Scan marks (state.ts `scanMarks`, in memory too) need no carrying over: 4 lenders never reach 4,096.
        engine = new Engine(config, wallets, (straight.store[i - 1] ?? new Map()).values())
        placeAs((engine as unknown as { state: EngineState }).state, straight.books[i - 1] ?? new Map())
        // Restored before the first step, the engine has no store yet: it is seeded as at a start.
        if (i === 0) seedSuppliers(engine)
      }
      const { dtMs, cmd } = log[i] as Step
      nowMs += dtMs
      const result = canonical(apply(engine, wallets, cmd, nowMs))
      if (result !== straight.results[i]) throw new Error(`step ${i} (${cmd.c}) differs after restore at ${cut}`)
      if (canonical(engine.snapshots()) !== straight.snapshots[i]) throw new Error(`snapshots differ at step ${i}`)
    }
    engine.checkInvariants()
    return true
  }), { numRuns: 80 })
  t.pass('80 restores')
})

t.test('the generator reaches the interesting paths', async (t) => {
  // guard against a generator that never funds or liquidates: the properties above would then prove little
  const seen = new Set<string>()
  const tried = new Map<string, string[]>()
  fc.assert(fc.property(logArb(40), (log) => {
    const run = runLog(log, false)
    run.results.forEach((r, i) => {
      const c = (log[i] as Step).cmd.c
      if (r.startsWith('{"changes"') && r.includes('"ok":true')) {
        seen.add(c)
        if (c === 'match' && r.includes('"lease":{')) seen.add('lease granted')
      }
      else {
        const code = /"code":"(\w+)"/.exec(r)?.[1] ?? r.slice(0, 40)
        const list = tried.get(c) ?? []
        if (!list.includes(code)) tried.set(c, [...list, code])
      }
    })
    return true
  }), { numRuns: 60, seed: 42 })
  for (const c of ['lender', 'request', 'match', 'lease granted', 'pay', 'repay', 'liquidate', 'fail', 'complete', 'dispatch']) t.ok(seen.has(c), `some ${c} succeeded`, { failures: tried.get(c) })
})
