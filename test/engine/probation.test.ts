// A way back for an inactive lender (README "Reputation and reliability"): below lenderReliabilityMinBps a lender gets
// no lease until lenderProbationSeconds have passed since it fell (or since its last miss), then exactly one, at the
// minimum reliability; paid, it is active again; missed, it falls below again and waits again, twice as long after
// each probation lease left unpaid in a row (up to lenderProbationMaxSeconds). The clock and the misses are the
// commands' nowMs and part of the stored lender record, so a restart keeps them.
import t, { type Test } from 'tap'
import { Engine, type EngineConfig } from '../../src/engine/index.ts'
import { defaultEngineConfig, resolveConfig } from '../../src/engine/config.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import { isEligibleLender } from '../../src/engine/rules.ts'
import type { LeaseView, LenderRecord } from '../../src/engine/types.ts'
import { BORROWER, CLIENT, FakeWallets, T0, addr, createJob, dispatchAt, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const L1 = lenderInput(1).address
const HOUR = 3_600_000
const MISSED_AT = T0 + 31_000

/** L1 at 1400 bps misses one lease (-500): inactive at 900 since MISSED_AT, the chain observed then. */
function inactiveLender(wallets = new FakeWallets(), config: Partial<EngineConfig> = {}): Engine {
  const { engine } = newEngine(config, wallets)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { reliabilityBps: 1400 }), T0))
  if (matchedLender(engine, offerFor(engine), T0) !== L1) throw new Error('L1 was not leased')
  unwrap(dispatchAt(engine, MISSED_AT))
  return engine
}

/** The lease of `offerId` granted now, paid by its lender at once. */
function payLeaseOf(engine: Engine, offerId: string, nowMs: number, n: number): void {
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs)).lease
  if (!lease) throw new Error('no lease')
  unwrap(engine.recordSupplierPayment({
    network: lease.network, txHash: hash(2000 + n), logIndex: 0, offerId, payer: lease.payer,
    supplier: lease.supplierAddress, asset: lease.asset, amountAtomic: lease.amountAtomic, caller: lease.lender,
  }, nowMs))
}

/**
 * L1's probation lease is due `waitHours` after its last miss (at `missedAtMs`), not a millisecond before, and L1
 * leaves it unpaid: answers when it expired (the lease's 30 s, the chain observed on the next second).
 */
function missProbationLease(t: Test, engine: Engine, missedAtMs: number, waitHours: number): number {
  const dueMs = missedAtMs + waitHours * HOUR
  t.equal(matchedLender(engine, offerFor(engine, {}, dueMs - 1), dueMs - 1), null, `no lease a millisecond before ${waitHours} h`)
  t.equal(matchedLender(engine, offerFor(engine, {}, dueMs), dueMs), L1, `its probation lease ${waitHours} h after its last miss`)
  unwrap(dispatchAt(engine, dueMs + 31_000))
  return dueMs + 31_000
}

t.test('an inactive lender gets no lease before its probation time and exactly one after it', async (t) => {
  const engine = inactiveLender()
  t.match(engine.getLender(L1), { reliabilityBps: 900, leasesExpired: 1 }, 'below the minimum after the miss')
  t.equal(matchedLender(engine, offerFor(engine, {}, MISSED_AT + 1), MISSED_AT + 1), null, 'inactive: none')
  t.equal(matchedLender(engine, offerFor(engine, {}, MISSED_AT + HOUR - 1), MISSED_AT + HOUR - 1), null, 'a millisecond early: none')
  const due = MISSED_AT + HOUR
  t.equal(matchedLender(engine, offerFor(engine, {}, due), due), L1, 'the probation lease')
  t.equal(engine.getLender(L1)?.reliabilityBps, 1000, 'granted at the minimum')
  t.equal(matchedLender(engine, offerFor(engine, {}, due + 1), due + 1), null, 'no second lease while the first is live')
  engine.checkInvariants()
})

t.test('paid, the probation lease makes the lender active again', async (t) => {
  const engine = inactiveLender()
  const due = MISSED_AT + HOUR
  payLeaseOf(engine, offerFor(engine, {}, due), due, 1)
  t.match(engine.getLender(L1), { reliabilityBps: 1100, leasesPaid: 1 }, 'the minimum + the paid reward')
  t.equal(matchedLender(engine, offerFor(engine, {}, due + 1), due + 1), L1, 'matched again at once, as any active lender')
  engine.checkInvariants()
})

t.test('missed, the probation lease puts the lender below again and it waits twice the probation', async (t) => {
  const engine = inactiveLender()
  const due = MISSED_AT + HOUR
  t.equal(matchedLender(engine, offerFor(engine, {}, due), due), L1)
  const missedAgain = due + 31_000
  unwrap(dispatchAt(engine, missedAgain))
  t.match(engine.getLender(L1), { reliabilityBps: 500, leasesExpired: 2 })
  t.equal(matchedLender(engine, offerFor(engine, {}, missedAgain + 2 * HOUR - 1), missedAgain + 2 * HOUR - 1), null, 'the wait runs from the second miss')
  t.equal(matchedLender(engine, offerFor(engine, {}, missedAgain + 2 * HOUR), missedAgain + 2 * HOUR), L1, 'then one lease again')
  t.equal(engine.getLender(L1)?.reliabilityBps, 1000)
  engine.checkInvariants()
})

/**
 * L1's probation lease, granted at `dueMs` on a job whose client then fails it: the job's offer is closing, and the
 * lease ends cancelled once the chain passes its deadline (`over`). `leaseOf` then matches another borrower's offer
 * (the failed job suspended the first).
 */
function cancelProbationLease(t: Test, engine: Engine, dueMs: number): { over: number; leaseOf: (nowMs: number) => LeaseView | null } {
  createJob(engine, 'job_p', 100_000n)
  const lease = unwrap(engine.matchOffer({ offerId: offerFor(engine, { repaymentSource: 'job_p', amountAtomic: 1000n }, dueMs), caller: BORROWER }, dueMs)).lease
  t.equal(lease?.lender, L1, 'the probation lease')
  unwrap(engine.failJob({ jobId: 'job_p', reason: 'not_delivered', caller: CLIENT }, dueMs + 1))
  const over = lease!.expiresAtMs + 1000
  t.match(unwrap(dispatchAt(engine, over)).expiredLeases, [{ leaseId: lease!.leaseId, endReason: 'offer_closed' }], 'cancelled, no penalty')
  const other = addr(0xb1)
  registerBacking(engine, 'src_other', 10_000_000n, other)
  return { over, leaseOf: (nowMs) => unwrap(engine.matchOffer({ offerId: offerFor(engine, { agent: other, repaymentSource: 'src_other' }, nowMs), caller: other }, nowMs)).lease }
}

t.test('a probation lease cancelled (its offer withdrawn: not the lender\'s doing) is given back: eligible again at once', async (t) => {
  const engine = inactiveLender()
  const { over, leaseOf } = cancelProbationLease(t, engine, MISSED_AT + HOUR)
  t.match(engine.getLender(L1), { reliabilityBps: 1000, leasesExpired: 1 }, 'no outcome counted')
  // The lender is matched at once, not a whole probation later.
  t.equal(leaseOf(over + 1)?.lender, L1, 'its probation lease again')
  t.equal(leaseOf(over + 2), null, 'and only one at a time')
  engine.checkInvariants()
})

t.test("an uptime observation while the probation lease is live moves the reliability, not the probation: no second lease", async (t) => {
  const engine = inactiveLender()
  const due = MISSED_AT + HOUR
  t.equal(matchedLender(engine, offerFor(engine, {}, due), due), L1, 'the probation lease')
  unwrap(engine.recordLenderUptime({ lender: L1, uptimeBps: 10_000 }, due + 1))
  t.equal(engine.getLender(L1)?.reliabilityBps, 1900, 'moved 10% towards the uptime, above the minimum')
  t.equal(matchedLender(engine, offerFor(engine, {}, due + 2), due + 2), null, 'still on probation while its lease is live')
  engine.checkInvariants()
})

t.test('an uptime observation of an inactive lender without its probation lease lifts it as before', async (t) => {
  const engine = inactiveLender()
  unwrap(engine.recordLenderUptime({ lender: L1, uptimeBps: 10_000 }, MISSED_AT + 1))
  t.equal(engine.getLender(L1)?.reliabilityBps, 1810)
  t.equal(matchedLender(engine, offerFor(engine, {}, MISSED_AT + 2), MISSED_AT + 2), L1, 'active at once')
})

t.test('the probation clock survives a restart', async (t) => {
  const wallets = new FakeWallets()
  const engine = inactiveLender(wallets)
  const restored = new Engine({}, wallets, engine.snapshots())
  restored.checkInvariants()
  t.equal(matchedLender(restored, offerFor(restored, {}, MISSED_AT + HOUR - 1), MISSED_AT + HOUR - 1), null, 'still waiting after the restore')
  t.equal(matchedLender(restored, offerFor(restored, {}, MISSED_AT + HOUR), MISSED_AT + HOUR), L1, 'due at the same time as before it')
})

t.test('the probation clock and misses are the engine\'s: lender views do not show them', async (t) => {
  const engine = inactiveLender()
  t.notOk('inactiveSinceMs' in (engine.getLender(L1) as object))
  t.notOk('probationMisses' in (engine.getLender(L1) as object))
})

t.test('each probation lease left unpaid in a row doubles the wait before the next: 1 h, 2 h, 4 h, 8 h', async (t) => {
  const engine = inactiveLender()
  let missedAt = MISSED_AT
  for (const hours of [1, 2, 4, 8]) missedAt = missProbationLease(t, engine, missedAt, hours)
  t.match(engine.getLender(L1), { leasesGranted: 5, leasesExpired: 5, leasesPaid: 0, reliabilityBps: 500 })
  engine.checkInvariants()
})

/** The misses in L1's stored record (the views do not show them). */
const storedMisses = (engine: Engine): unknown => (engine.snapshots().find((c) => c.kind === 'lender' && c.id === L1)?.record as LenderRecord).probationMisses

t.test('the wait stops doubling at lenderProbationMaxSeconds, and the misses stop counting there', async (t) => {
  const engine = inactiveLender(new FakeWallets(), { lenderProbationMaxSeconds: 3 * 3600 })
  let missedAt = MISSED_AT
  for (const hours of [1, 2, 3, 3, 3]) missedAt = missProbationLease(t, engine, missedAt, hours)
  t.equal(storedMisses(engine), 2, 'counted while they lengthen the wait (1 h, 2 h), not at the cap: the record stays bounded')
  engine.checkInvariants()
})

t.test('with no probation (0 s) an inactive lender is due its probation lease at once after each miss, with no misses counted', async (t) => {
  const engine = inactiveLender(new FakeWallets(), { lenderProbationSeconds: 0 })
  let missedAt = MISSED_AT
  for (let i = 0; i < 3; i++) {
    t.equal(matchedLender(engine, offerFor(engine, {}, missedAt), missedAt), L1, 'its probation lease at once')
    missedAt += 31_000
    unwrap(dispatchAt(engine, missedAt))
  }
  t.equal(storedMisses(engine), 0, 'doubling no wait lengthens none')
  engine.checkInvariants()
})

t.test('a paid lease ends the run of misses: after the next fall the lender waits the base probation again', async (t) => {
  const engine = inactiveLender()
  let missedAt = MISSED_AT
  for (const hours of [1, 2]) missedAt = missProbationLease(t, engine, missedAt, hours)
  const due = missedAt + 4 * HOUR
  payLeaseOf(engine, offerFor(engine, {}, due), due, 1)
  t.match(engine.getLender(L1), { reliabilityBps: 1100, leasesPaid: 1 }, 'active again')
  // Active, it is leased and misses: below the minimum again (600), a whole base probation after this miss.
  t.equal(matchedLender(engine, offerFor(engine, {}, due + 1), due + 1), L1)
  const fellAt = due + 1 + 31_000
  unwrap(dispatchAt(engine, fellAt))
  t.equal(engine.getLender(L1)?.reliabilityBps, 600)
  missProbationLease(t, engine, fellAt, 1)
  engine.checkInvariants()
})

t.test('a cancelled probation lease counts no miss: it is given back at once, and the next miss doubles the wait once', async (t) => {
  const engine = inactiveLender()
  const firstMiss = missProbationLease(t, engine, MISSED_AT, 1)
  // Granted after the doubled wait.
  const { over, leaseOf } = cancelProbationLease(t, engine, firstMiss + 2 * HOUR)
  t.equal(leaseOf(over + 1)?.lender, L1, 'given back: its probation lease again at once, not after another 2 h')
  const missedAt = over + 1 + 31_000
  unwrap(dispatchAt(engine, missedAt))
  t.equal(leaseOf(missedAt + 4 * HOUR - 1), null, 'two probation leases missed (the cancelled one not counted): 4 h')
  t.equal(leaseOf(missedAt + 4 * HOUR)?.lender, L1, 'not 8 h')
  engine.checkInvariants()
})

t.test('the misses survive a restart', async (t) => {
  const wallets = new FakeWallets()
  const engine = inactiveLender(wallets)
  const missedAt = missProbationLease(t, engine, MISSED_AT, 1)
  const restored = new Engine({}, wallets, engine.snapshots())
  restored.checkInvariants()
  t.equal(matchedLender(restored, offerFor(restored, {}, missedAt + 2 * HOUR - 1), missedAt + 2 * HOUR - 1), null, 'still the doubled wait')
  t.equal(matchedLender(restored, offerFor(restored, {}, missedAt + 2 * HOUR), missedAt + 2 * HOUR), L1)
})

t.test('lenderProbationMaxSeconds below lenderProbationSeconds is refused', async (t) => {
  t.equal(defaultEngineConfig.lenderProbationMaxSeconds, 30 * 24 * 3600)
  t.throws(() => resolveConfig({ lenderProbationSeconds: 3600, lenderProbationMaxSeconds: 3599 }), RangeError)
  t.equal(resolveConfig({ lenderProbationSeconds: 3600, lenderProbationMaxSeconds: 3600 }).lenderProbationMaxSeconds, 3600, 'equal: no doubling')
})

t.test('a lender stored before probation (version 3) opens as version 5; below the minimum it waits from its registration', async (t) => {
  t.equal(SNAPSHOT_VERSIONS.lender, 5)
  const migration = snapshotMigrations().find((m) => m.from.kind === 'lender' && m.from.version === 3)
  t.same(migration?.to, { kind: 'lender', version: 5 })
  const { engine } = newEngine()
  const { recentLeaseOutcomes: _r, uptimeBps: _u, policyAvailableAtomic: _a, ...shown } = unwrap(engine.registerLender(lenderInput(1), T0))
  const v3 = { ...shown, recentLeaseOutcomes: '' }
  t.match(migration!.migrate(v3), { inactiveSinceMs: null, reliabilityBps: 5000, probationMisses: 0 }, 'active: no clock')
  const below = migration!.migrate({ ...v3, reliabilityBps: 900 }) as LenderRecord
  t.equal(below.inactiveSinceMs, T0, 'inactive: since its registration')
  t.notOk(isEligibleLender(below, defaultEngineConfig, T0 + HOUR - 1))
  t.ok(isEligibleLender(below, defaultEngineConfig, T0 + HOUR))
})

t.test('a lender stored before its probation misses were counted (version 4) opens as version 5 with none', async (t) => {
  const migration = snapshotMigrations().find((m) => m.from.kind === 'lender' && m.from.version === 4)
  t.same(migration?.to, { kind: 'lender', version: 5 })
  const { engine } = newEngine()
  const { uptimeBps: _u, policyAvailableAtomic: _a, ...shown } = unwrap(engine.registerLender(lenderInput(1, { reliabilityBps: 900 }), T0))
  const v4 = { ...shown, inactiveSinceMs: T0 + HOUR }
  const migrated = migration!.migrate(v4) as LenderRecord
  t.same(migrated, { ...v4, probationMisses: 0 }, 'the record as stored, with no misses')
  t.same(Object.keys(migrated).slice(-2), ['inactiveSinceMs', 'probationMisses'], 'in the key order of a registration (one shared value structure)')
  t.notOk(isEligibleLender(migrated, defaultEngineConfig, T0 + 2 * HOUR - 1))
  t.ok(isEligibleLender(migrated, defaultEngineConfig, T0 + 2 * HOUR), 'the base wait')
})
