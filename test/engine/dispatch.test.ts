// Dispatch on schedules: it expires exactly what is due, in the order and with the outcomes of a full scan, and the
// schedules follow the live leases and waiting offers through payment, cancellation, funding, decline and restore.
import fc from 'fast-check'
import t from 'tap'
import { Engine, type EngineConfig } from '../../src/engine/index.ts'
import type { DispatchOutcome, DispatchTally, EngineResult } from '../../src/engine/index.ts'
import { drain } from '../../src/engine/changes.ts'
import type { ChainObservation, ChainObservationOutcome } from '../../src/engine/engine.ts'
import { isPastDeadline, leaseOverAtChainMs } from '../../machines/index.ts'
import { timeOutLease } from '../../src/engine/leases.ts'
import { expireOffer, leaseToBestLender } from '../../src/engine/matching.ts'
import type { EngineState, LeaseActor } from '../../src/engine/state.ts'
import { repositionLender } from '../../src/engine/ledger.ts'
import type { LeaseView, LenderRecord, OfferView } from '../../src/engine/types.ts'
import { leaseView, offerView } from '../../src/engine/views.ts'
import {
  ASSET, BORROWER, CLIENT, FakeWallets, NET, SUPPLIER, T0, canonical, createJob, dispatchAt, hash, lenderInput, newEngine, offerFor,
  matchedLender, registerBacking, seedSuppliers, unwrap,
} from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

const seq = (id: string): number => Number(id.slice(id.indexOf('_') + 1))

/** Live leases of `network` past their deadline on chain time, by a scan of every live lease, in expiry order. */
function scanDueLeases(state: EngineState, network: string) {
  const chainTimeMs = state.meta.chainTimeMs?.[network]
  if (chainTimeMs === undefined) return []
  const stale = [...state.leases.values()].filter((l) => l.getSnapshot().context.network === network && isPastDeadline(l.getSnapshot().context.expiresAtMs, chainTimeMs))
  stale.sort((a, b) => {
    const ca = a.getSnapshot().context
    const cb = b.getSnapshot().context
    return leaseOverAtChainMs(ca.expiresAtMs) - leaseOverAtChainMs(cb.expiresAtMs) || seq(ca.leaseId) - seq(cb.leaseId)
  })
  return stale.map((lease) => ({ lease, chainTimeMs }))
}

/**
 * One lease timed out with its lender's book entry moved at once, as before dispatch moved each lender once per pass;
 * its offer's view joins `expiredOffers` when it expired with the lease.
 */
function timeOutAlone(state: EngineState, lease: LeaseActor, chainTimeMs: number, nowMs: number, expiredOffers: OfferView[]): LeaseView {
  const moved = new Set<LenderRecord>()
  const offer = timeOutLease(state, lease, chainTimeMs, nowMs, moved)
  for (const lender of moved) repositionLender(state, lender)
  if (offer !== undefined) expiredOffers.push(offerView(offer.getSnapshot()))
  return leaseView(lease.getSnapshot())
}

/** The engine with lease expiry and dispatch as they were before the schedules: a scan of every live lease and offer. */
class ScanningEngine extends Engine {
  override observeChain(batch: ChainObservation, nowMs: number): EngineResult<ChainObservationOutcome> {
    const state = (this as unknown as { state: EngineState }).state
    const before = state.meta.chainTimeMs?.[batch.network]
    if (before === undefined || batch.toBlockTimeMs > before) {
      state.meta.chainTimeMs = { ...state.meta.chainTimeMs, [batch.network]: batch.toBlockTimeMs }
    }
    const expiredOffers: OfferView[] = []
    const expiredLeases = scanDueLeases(state, batch.network).map(({ lease, chainTimeMs }) => timeOutAlone(state, lease, chainTimeMs, nowMs, expiredOffers))
    return drain(state, { network: batch.network, toBlock: batch.toBlock, chainTimeMs: state.meta.chainTimeMs?.[batch.network] as number, advances: [], appliedProofKeys: [], repayments: [], collateral: [], reclaimed: [], heldPayments: [], ignored: [], expiredLeases, expiredOffers })
  }

  override dispatch(nowMs: number): EngineResult<DispatchOutcome> {
    // The engine's memory and its steps (src/engine/state.ts and the modules beside it), driven by the old scan.
    const state = (this as unknown as { state: EngineState }).state
    const outcome: DispatchOutcome = { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] }
    for (const { lease, chainTimeMs } of scanDueLeases(state, NET)) outcome.expiredLeases.push(timeOutAlone(state, lease, chainTimeMs, nowMs, outcome.expiredOffers))
    let attempts = 0
    for (const offer of [...state.offers.values()]) {
      const snap = offer.getSnapshot()
      if (!snap.matches('offered')) continue
      if (nowMs >= snap.context.expiresAtMs) {
        expireOffer(state, offer, 'stale', nowMs)
        outcome.expiredOffers.push(offerView(offer.getSnapshot()))
        continue
      }
      if (attempts >= state.config.offersDispatchedPerCallMax) continue
      attempts += 1
      const match = leaseToBestLender(state, offer, nowMs) as DispatchOutcome['matches'][number]
      if (match.offerExpired) outcome.expiredOffers.push(match.offer)
      if (match.lease || match.refusedLeases.length > 0) outcome.matches.push(match)
    }
    return drain(state, outcome)
  }
}

type Cmd =
  | { c: 'lender'; i: number; ask: number; liq: number }
  | { c: 'job'; i: number; dueS: number }
  | { c: 'request'; job: boolean; i: number; amount: number }
  | { c: 'match'; i: number }
  | { c: 'dispatch' }
  | { c: 'pay'; i: number }
  | { c: 'fail'; i: number }
  | { c: 'wallet'; i: number; amount: number }
type Step = { dtMs: number; cmd: Cmd }

const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary })
const idx = fc.integer({ min: 1, max: 5 })
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  w(2, fc.record({ c: fc.constant('lender' as const), i: idx, ask: fc.integer({ min: 0, max: 500 }), liq: fc.integer({ min: 0, max: 20_000 }) })),
  w(1, fc.record({ c: fc.constant('job' as const), i: idx, dueS: fc.integer({ min: 1, max: 3600 }) })),
  w(6, fc.record({ c: fc.constant('request' as const), job: fc.boolean(), i: idx, amount: fc.integer({ min: 1, max: 4000 }) })),
  w(3, fc.record({ c: fc.constant('match' as const), i: fc.integer({ min: 0, max: 20 }) })),
  w(5, fc.record({ c: fc.constant('dispatch' as const) })),
  w(3, fc.record({ c: fc.constant('pay' as const), i: fc.integer({ min: 0, max: 20 }) })),
  w(1, fc.record({ c: fc.constant('fail' as const), i: idx })),
  w(1, fc.record({ c: fc.constant('wallet' as const), i: idx, amount: fc.integer({ min: 0, max: 10_000 }) })),
)
// Time mostly moves forward, sometimes by more than a TTL, sometimes back: expiry order then differs from creation order.
const dtArb = fc.oneof(w(3, fc.constant(0)), w(4, fc.integer({ min: 1, max: 40_000 })), w(1, fc.integer({ min: 40_000, max: 300_000 })), w(1, fc.integer({ min: -60_000, max: -1 })))
const configArb = fc.record({
  leaseTtlMs: fc.integer({ min: 1000, max: 60_000 }),
  leaseReportGraceMs: fc.constantFrom(0, 5000),
  offerTtlMs: fc.integer({ min: 1000, max: 200_000 }),
  offersDispatchedPerCallMax: fc.integer({ min: 1, max: 3 }),
  leasesPerOfferMax: fc.integer({ min: 1, max: 4 }),
  backingDurationSecondsDefault: fc.constant(3600),
})
const prelude: Step[] = [
  { dtMs: 0, cmd: { c: 'lender', i: 1, ask: 100, liq: 20_000 } },
  { dtMs: 0, cmd: { c: 'lender', i: 2, ask: 200, liq: 20_000 } },
  { dtMs: 0, cmd: { c: 'job', i: 1, dueS: 7200 } },
]
const logArb = fc.array(fc.record({ dtMs: dtArb, cmd: cmdArb }), { minLength: 1, maxLength: 100 }).map((steps) => [...prelude, ...steps])

function liveIds(engine: Engine, kind: 'offer' | 'lease'): string[] {
  return engine.snapshots().filter((c) => c.kind === kind).map((c) => c.id)
}

function apply(engine: Engine, wallets: FakeWallets, cmd: Cmd, nowMs: number): unknown {
  switch (cmd.c) {
    case 'lender':
      return engine.registerLender(lenderInput(cmd.i, { minFeeBps: cmd.ask, availableLiquidityAtomic: BigInt(cmd.liq) }), nowMs)
    case 'job':
      return engine.createJob({ jobId: `job_${cmd.i}`, jobKey: legacyJobKey(`job_${cmd.i}`), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 100_000n, dueAtMs: nowMs + cmd.dueS * 1000, funding: { network: NET, txHash: hash(cmd.i), logIndex: 0 }, caller: CLIENT }, nowMs)
    case 'request':
      return engine.requestCredit({ agent: BORROWER, network: NET, asset: ASSET, productType: 'x', amountAtomic: BigInt(cmd.amount), purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: SUPPLIER, repaymentSource: cmd.job ? `job_${cmd.i}` : 'src_1', maximumFeeAtomic: 100n, caller: BORROWER }, nowMs)
    case 'match': {
      const ids = liveIds(engine, 'offer')
      return engine.matchOffer({ offerId: ids.length > 0 ? (ids[cmd.i % ids.length] as string) : 'off_0', caller: BORROWER }, nowMs)
    }
    case 'dispatch':
      // The chain observed at the same time, then dispatch: leases expire on the observation.
      return dispatchAt(engine, nowMs)
    case 'pay': {
      const ids = liveIds(engine, 'lease')
      const lease = ids.length > 0 ? engine.getLease(ids[cmd.i % ids.length] as string) : undefined
      if (!lease) return { ok: false }
      return engine.recordSupplierPayment({ network: NET, txHash: hash(100 + cmd.i), logIndex: 0, offerId: lease.offerId, payer: lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: lease.amountAtomic, caller: lease.lender }, nowMs)
    }
    case 'fail':
      return engine.failJob({ jobId: `job_${cmd.i}`, reason: 'not_delivered', caller: CLIENT }, nowMs)
    case 'wallet':
      wallets.set(lenderInput(cmd.i).sessionAddress, BigInt(cmd.amount))
      return { ok: true }
  }
}

/**
 * A fixed seed (FC_SEED overrides it): the path-coverage check below must not depend on the luck of one run, which
 * it did, failing about one run in ten for want of a dispatch that expired several leases at once.
 */
const DISPATCH_SEED = Number(process.env.FC_SEED ?? 20261121)

const paths = new Set<string>()
function notePaths(result: EngineResult<DispatchOutcome>, limit: number): void {
  if (!result.ok) return
  const out = result.value
  if (out.expiredLeases.length > 0) paths.add('lease expired')
  if (out.expiredLeases.length > 1) paths.add('several leases expired')
  if (out.expiredOffers.some((o) => o.endReason === 'stale')) paths.add('offer went stale')
  if (out.matches.some((m) => m.lease)) paths.add('matched')
  if (out.matches.length === limit) paths.add('limit reached')
  if (out.matches.length > 0 && out.expiredOffers.some((o) => o.endReason === 'stale')) paths.add('stale and matched in one call')
}

t.test('dispatch on schedules equals the full scan it replaced: same outcomes, changes and state at every step', async (t) => {
  fc.assert(fc.property(configArb, logArb, fc.nat(), (config, log, cutSeed) => {
    const made = (E: typeof Engine) => {
      const wallets = new FakeWallets(20_000n)
      const engine = new E(config, wallets)
      seedSuppliers(engine)
      registerBacking(engine)
      return { engine, wallets }
    }
    const scan = made(ScanningEngine)
    let heap = made(Engine)
    // The same engine dispatching as the ticker does (tick): the same changes and state, its outcome counted.
    const ticking = made(Engine)
    const cut = cutSeed % log.length
    let nowMs = T0
    for (let i = 0; i < log.length; i++) {
      // the engine on schedules is rebuilt from its snapshots once, mid-sequence: restore must rebuild the schedules
      if (i === cut) heap = { engine: new Engine(config, heap.wallets, heap.engine.snapshots()), wallets: heap.wallets }
      const { dtMs, cmd } = log[i] as Step
      nowMs += dtMs
      const result = apply(scan.engine, scan.wallets, cmd, nowMs)
      if (cmd.c === 'dispatch') notePaths(result as EngineResult<DispatchOutcome>, config.offersDispatchedPerCallMax)
      const expected = canonical(result)
      const actual = canonical(apply(heap.engine, heap.wallets, cmd, nowMs))
      if (actual !== expected) throw new Error(`step ${i} (${cmd.c}) differs:\n${actual}\n${expected}`)
      const ticked = cmd.c === 'dispatch' ? canonical(talliedAsViewed(tickAt(ticking.engine, nowMs), result as EngineResult<DispatchOutcome>)) : canonical(apply(ticking.engine, ticking.wallets, cmd, nowMs))
      if (ticked !== expected) throw new Error(`step ${i} (${cmd.c}) differs when ticked:\n${ticked}\n${expected}`)
      heap.engine.checkInvariants()
      if (canonical(heap.engine.snapshots()) !== canonical(scan.engine.snapshots())) throw new Error(`state differs after step ${i}`)
      if (canonical(ticking.engine.snapshots()) !== canonical(scan.engine.snapshots())) throw new Error(`ticked state differs after step ${i}`)
    }
    return true
  }), { numRuns: 200, seed: DISPATCH_SEED })
  t.pass(`200 random sequences against the scanning dispatch (seed ${DISPATCH_SEED})`)
  // guard against a generator that never reaches the paths the schedules change: the comparison would prove little
  for (const path of ['lease expired', 'several leases expired', 'offer went stale', 'matched', 'limit reached', 'stale and matched in one call']) {
    t.ok(paths.has(path), `some dispatch: ${path}`)
  }
})

/** dispatchAt's chain observation, then the ticker's dispatch: its time-outs counted with the observation's. */
function tickAt(engine: Engine, nowMs: number): EngineResult<DispatchTally> {
  const observed = engine.observeChain({ network: NET, toBlock: BigInt(nowMs), toBlockHash: '0x', toBlockTimeMs: nowMs, events: [] }, nowMs)
  if (!observed.ok) return observed
  const ticked = engine.tick(nowMs)
  if (!ticked.ok) return ticked
  return {
    ok: true,
    value: {
      ...ticked.value,
      expiredLeases: observed.value.expiredLeases.length + ticked.value.expiredLeases,
      expiredOffers: observed.value.expiredOffers.length + ticked.value.expiredOffers,
    },
    changes: [...observed.changes, ...ticked.changes],
  }
}

/**
 * A tick's result in the form of dispatch's `viewed` one when each count equals the length of the list dispatch
 * answered (the views themselves are dispatch's); the tally as it is otherwise, so the comparison fails.
 */
function talliedAsViewed(ticked: EngineResult<DispatchTally>, viewed: EngineResult<DispatchOutcome>): unknown {
  if (!ticked.ok || !viewed.ok) return ticked
  const { expiredLeases, expiredOffers, matches, suspensionsLifted } = ticked.value
  const same = expiredLeases === viewed.value.expiredLeases.length && expiredOffers === viewed.value.expiredOffers.length &&
    matches === viewed.value.matches.length && canonical(suspensionsLifted) === canonical(viewed.value.suspensionsLifted)
  return same ? { ...ticked, value: viewed.value } : ticked
}

function world(config: Partial<EngineConfig> = {}) {
  const { engine, wallets } = newEngine(config)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  return { engine, wallets }
}

t.test('a paid lease is never expired, on any chain time', async (t) => {
  const { engine } = world()
  const offerId = offerFor(engine)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  unwrap(engine.recordSupplierPayment({ network: NET, txHash: hash(1), logIndex: 0, offerId, payer: lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: 1000n, caller: lease.lender }, T0 + 1))
  const before = engine.getLender(lease.lender)!
  const out = unwrap(dispatchAt(engine, lease.expiresAtMs + 60_000))
  t.same(out, { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] }, 'nothing due: the paid lease left the schedule')
  t.same(engine.getLender(lease.lender), before, 'no reliability penalty, no liquidity moved')
  engine.checkInvariants()
})

t.test('a withdrawn lease (its offer closing) ends with its deadline on chain time, without a penalty, and leaves the schedules', async (t) => {
  const { engine } = world()
  createJob(engine, 'job_1', 100_000n)
  const offerId = offerFor(engine, { repaymentSource: 'job_1' })
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const failed = unwrap(engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  t.same(failed.declinedOfferIds, [offerId])
  const { leasesExpired, reliabilityBps } = engine.getLender(lease.lender)!
  const out = unwrap(dispatchAt(engine, lease.expiresAtMs + 60_000))
  t.match(out, { expiredLeases: [{ leaseId: lease.leaseId, endReason: 'offer_closed' }], expiredOffers: [], matches: [] })
  t.match(engine.getLender(lease.lender), { leasesExpired, reliabilityBps, reservedAtomic: 0n })
  t.same(unwrap(dispatchAt(engine, lease.expiresAtMs + 120_000)), { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] }, 'nothing left scheduled')
  engine.checkInvariants()
})

t.test('dispatch expires every stale offer but matches at most offersDispatchedPerCallMax, in creation order', async (t) => {
  const { engine } = newEngine({ offersDispatchedPerCallMax: 2, offerTtlMs: 100_000 })
  registerBacking(engine)
  const early = [offerFor(engine, {}, T0), offerFor(engine, {}, T0)]
  const later = [offerFor(engine, {}, T0 + 50_000), offerFor(engine, {}, T0 + 50_000), offerFor(engine, {}, T0 + 50_000)]
  const stillEarly = offerFor(engine, {}, T0)
  unwrap(engine.registerLender(lenderInput(1), T0 + 60_000))
  const out = unwrap(engine.dispatch(T0 + 100_000))
  t.same(out.expiredOffers.map((o) => o.offerId), [...early, stillEarly], 'all stale offers expired, in creation order')
  t.same(out.matches.map((m) => m.offer.offerId), later.slice(0, 2), 'the first two waiting offers matched')
  t.equal(engine.getOffer(later[2] as string)?.state, 'offered', 'the third waits for the next call')
  engine.checkInvariants()
})

t.test('an offer whose lease timed out is matched in its creation place, not at the end', async (t) => {
  const { engine } = newEngine({ offersDispatchedPerCallMax: 1 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  const first = offerFor(engine, {}, T0)
  unwrap(engine.matchOffer({ offerId: first, caller: BORROWER }, T0))
  const second = offerFor(engine, {}, T0 + 20_000)
  // The lease's deadline is T0 + 30 s; the chain is past it from the next second.
  const out = unwrap(dispatchAt(engine, T0 + 31_000))
  t.equal(out.expiredLeases.length, 1)
  t.same(out.matches.map((m) => m.offer.offerId), [first], 'off_1 goes before off_2 again')
  t.equal(out.matches[0]?.lease?.lender, lenderInput(2).address)
  t.equal(engine.getOffer(second)?.state, 'offered')
  engine.checkInvariants()
})

t.test('a lender with several leases timed out in one pass moves once, to where both misses sort it', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  // Same ask: reputation orders them. One miss (50 bps) leaves lender 1 ahead of lender 2, two put it behind.
  const first = lenderInput(1, { reputationBps: 5080, reliabilityBps: 10_000 })
  const second = lenderInput(2, { reputationBps: 5000, reliabilityBps: 10_000 })
  unwrap(engine.registerLender(first, T0))
  unwrap(engine.registerLender(second, T0))
  const offers = [offerFor(engine, {}, T0), offerFor(engine, {}, T0)]
  for (const offerId of offers) t.equal(matchedLender(engine, offerId, T0), first.address, 'lender 1 leads the book')
  // Both deadlines are T0 + 30 s: one follower batch past them times both out in one pass.
  const observed = unwrap(engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0 + 31_000, events: [] }, T0 + 31_000))
  t.same(observed.expiredLeases.map((l) => l.lender), [first.address, first.address])
  t.equal(engine.getLender(first.address)?.reputationBps, 4980, 'both misses counted')
  engine.checkInvariants()
  t.equal(matchedLender(engine, offerFor(engine, {}, T0 + 31_000), T0 + 31_000), second.address, 'lender 1 now sorts after lender 2')
})

t.test('checkInvariants catches schedules that disagree with the live actors', async (t) => {
  const { engine } = world()
  const leased = offerFor(engine)
  const lease = unwrap(engine.matchOffer({ offerId: leased, caller: BORROWER }, T0)).lease!
  offerFor(engine, { maximumFeeAtomic: 0n })
  engine.checkInvariants()
  // The schedules live in the engine's state (src/engine/state.ts).
  const internals = (engine as unknown as { state: { leaseExpiries: Map<string, { delete(id: string): boolean }>; waitingOffers: { delete(id: string): boolean } } }).state
  internals.leaseExpiries.get(NET)?.delete(lease.leaseId)
  t.throws(() => engine.checkInvariants(), /lease expiry schedule/, 'a live lease missing from its schedule')
  const other = world().engine
  const waiting = offerFor(other, { maximumFeeAtomic: 0n })
  ;(other as unknown as { state: typeof internals }).state.waitingOffers.delete(waiting)
  t.throws(() => other.checkInvariants(), new RegExp(`waiting offer ${waiting} is not scheduled`), 'a waiting offer missing from the waiting set')
})

t.test('dispatch matches no waiting offer of an unobserved network, and the other networks\' as before', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  // Both offers wait: no lender is registered when they are made.
  const onA = offerFor(engine, {}, T0)
  const onB = offerFor(engine, { network: 'net-b' }, T0)
  unwrap(engine.registerLender(lenderInput(1, { networks: [NET, 'net-b'] }), T0))
  unwrap(engine.dispatch(T0 + 1, new Set(['net-b'])))
  t.not(engine.getOffer(onA)?.currentLeaseId, null, 'the observed network: leased')
  t.equal(engine.getOffer(onB)?.currentLeaseId, null, 'the unobserved one: still waiting')
  unwrap(engine.dispatch(T0 + 2))
  t.not(engine.getOffer(onB)?.currentLeaseId, null, 'observed again: leased')
  engine.checkInvariants()
})
