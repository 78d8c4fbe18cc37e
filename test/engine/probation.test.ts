// A way back for an inactive lender (README "Reputation and reliability"): below lenderReliabilityMinBps a lender gets
// no lease until lenderProbationSeconds have passed since it fell (or since its last miss), then exactly one, at the
// minimum reliability; paid, it is active again; missed, it falls below again and waits again. The clock is the
// commands' nowMs and is part of the stored lender record, so a restart keeps it.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import { isEligibleLender } from '../../src/engine/rules.ts'
import type { LenderRecord } from '../../src/engine/types.ts'
import { BORROWER, CLIENT, FakeWallets, T0, addr, createJob, dispatchAt, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

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

t.test('a probation lease cancelled (its offer withdrawn: not the lender\'s doing) is given back: eligible again at once', async (t) => {
  const engine = inactiveLender()
  const due = MISSED_AT + HOUR
  createJob(engine, 'job_p', 100_000n)
  const lease = unwrap(engine.matchOffer({ offerId: offerFor(engine, { repaymentSource: 'job_p', amountAtomic: 1000n }, due), caller: BORROWER }, due)).lease
  t.equal(lease?.lender, L1, 'the probation lease')
  // The job fails under the lease: its offer is closing, and the lease ends cancelled once the chain passes its deadline.
  unwrap(engine.failJob({ jobId: 'job_p', reason: 'client gone', caller: CLIENT }, due + 1))
  const over = lease!.expiresAtMs + 1000
  t.match(unwrap(dispatchAt(engine, over)).expiredLeases, [{ leaseId: lease!.leaseId, endReason: 'offer_closed' }], 'cancelled, no penalty')
  t.match(engine.getLender(L1), { reliabilityBps: 1000, leasesExpired: 1 }, 'no outcome counted')
  // Another borrower (the failed job suspended the first): the lender is matched at once, not a whole probation later.
  const other = addr(0xb1)
  registerBacking(engine, 'src_other', 10_000_000n, other)
  const leaseOf = (nowMs: number) => unwrap(engine.matchOffer({ offerId: offerFor(engine, { agent: other, repaymentSource: 'src_other' }, nowMs), caller: other }, nowMs)).lease
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
