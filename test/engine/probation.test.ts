// A way back for an inactive lender (README "Reputation and reliability"): below lenderReliabilityMinBps a lender gets
// no lease until lenderProbationSeconds have passed since it fell (or since its last miss), then exactly one, at the
// minimum reliability; paid, it is active again; missed, it falls below again and waits again. The clock is the
// commands' nowMs and is part of the stored lender record, so a restart keeps it.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import { isEligibleLender } from '../../src/engine/rules.ts'
import type { LenderRecord } from '../../src/engine/types.ts'
import { BORROWER, FakeWallets, T0, dispatchAt, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const L1 = lenderInput(1).address
const HOUR = 3_600_000
const MISSED_AT = T0 + 31_000

/** L1 at 1400 bps misses one lease (-500): inactive at 900 since MISSED_AT, the chain observed then. */
function inactiveLender(wallets = new FakeWallets()): Engine {
  const { engine } = newEngine({}, wallets)
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

t.test('missed, the probation lease puts the lender below again and it waits a whole probation again', async (t) => {
  const engine = inactiveLender()
  const due = MISSED_AT + HOUR
  t.equal(matchedLender(engine, offerFor(engine, {}, due), due), L1)
  const missedAgain = due + 31_000
  unwrap(dispatchAt(engine, missedAgain))
  t.match(engine.getLender(L1), { reliabilityBps: 500, leasesExpired: 2 })
  t.equal(matchedLender(engine, offerFor(engine, {}, missedAgain + HOUR - 1), missedAgain + HOUR - 1), null, 'the wait runs from the second miss')
  t.equal(matchedLender(engine, offerFor(engine, {}, missedAgain + HOUR), missedAgain + HOUR), L1, 'then one lease again')
  t.equal(engine.getLender(L1)?.reliabilityBps, 1000)
  engine.checkInvariants()
})

t.test('the probation clock survives a restart', async (t) => {
  const wallets = new FakeWallets()
  const engine = inactiveLender(wallets)
  const restored = new Engine({}, wallets, engine.snapshots())
  restored.checkInvariants()
  t.equal(matchedLender(restored, offerFor(restored, {}, MISSED_AT + HOUR - 1), MISSED_AT + HOUR - 1), null, 'still waiting after the restore')
  t.equal(matchedLender(restored, offerFor(restored, {}, MISSED_AT + HOUR), MISSED_AT + HOUR), L1, 'due at the same time as before it')
})

t.test('the probation clock is the engine\'s: lender views do not show it', async (t) => {
  const engine = inactiveLender()
  t.notOk('inactiveSinceMs' in (engine.getLender(L1) as object))
})

t.test('a lender stored before probation (version 3) opens as version 4; below the minimum it waits from its registration', async (t) => {
  t.equal(SNAPSHOT_VERSIONS.lender, 4)
  const migration = snapshotMigrations().find((m) => m.from.kind === 'lender' && m.from.version === 3)
  t.same(migration?.to, { kind: 'lender', version: 4 })
  const { engine } = newEngine()
  const { recentLeaseOutcomes: _r, uptimeBps: _u, policyAvailableAtomic: _a, ...shown } = unwrap(engine.registerLender(lenderInput(1), T0))
  const v3 = { ...shown, recentLeaseOutcomes: '' }
  t.match(migration!.migrate(v3), { inactiveSinceMs: null, reliabilityBps: 5000 }, 'active: no clock')
  const below = migration!.migrate({ ...v3, reliabilityBps: 900 }) as LenderRecord
  t.equal(below.inactiveSinceMs, T0, 'inactive: since its registration')
  t.notOk(isEligibleLender(below, { lenderReliabilityMinBps: 1000, lenderProbationSeconds: 3600 }, T0 + HOUR - 1))
  t.ok(isEligibleLender(below, { lenderReliabilityMinBps: 1000, lenderProbationSeconds: 3600 }, T0 + HOUR))
})
