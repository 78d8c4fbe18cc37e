// book26: a lender behind a waiting offer's scan mark that becomes eligible without moving in the book (its lease
// paid or ended, its wallet topped up, its probation over) is seen by the offer's resumed walk, which leases it
// rather than a dearer lender after the mark.
import t, { type Test } from 'tap'
import type { LeaseView } from '../../src/engine/types.ts'
import { BORROWER, NET, T0, dispatchAt, hash, matchedLender, newEngine, offerFor, unwrap } from './fixtures/world.ts'
import { CHEAP, DEAR, markWorld } from './fixtures/mark-world.ts'

const world = markWorld

function lease(engine: ReturnType<typeof newEngine>['engine'], offerId: string, nowMs = T0): LeaseView {
  const leased = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs)).lease
  if (leased === null) throw new Error(`no lease for ${offerId}`)
  return leased
}

/** The waiting offer's walk passes over the cheap lender and stops with a mark; no lease. */
function waitingWithMark(t: Test, w: ReturnType<typeof world>, nowMs = T0): string {
  const waiting = offerFor(w.engine, {}, nowMs)
  t.equal(matchedLender(w.engine, waiting, nowMs), null, 'the cheap lender passed over, one unusable lender: the bound, no lease')
  t.ok(w.s.scanMarks.has(waiting), 'the offer waits with a scan mark after the cheap lender')
  return waiting
}

t.test('busy -> free: the cheap lender pays its lease (allowance 1) and the resumed walk leases it', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1 })
  const first = lease(w.engine, offerFor(w.engine))
  t.equal(first.lender, CHEAP.address)
  const waiting = waitingWithMark(t, w)
  unwrap(w.engine.recordSupplierPayment({
    network: first.network, txHash: hash(1), logIndex: 0, offerId: first.offerId, payer: first.payer,
    supplier: first.supplierAddress, asset: first.asset, amountAtomic: first.amountAtomic, caller: first.lender,
  }, T0 + 1000))
  t.equal(matchedLender(w.engine, waiting, T0 + 2000), CHEAP.address, 'the cheapest eligible lender, not the dear one after the mark')
  w.engine.checkInvariants()
})

t.test('busy -> free: the cheap lender\'s lease ends unused while its reputation falls (no forward move)', async (t) => {
  // Its wallet pays one lease of 1000 at a time: with one live lease it is busy for a second.
  const w = world({})
  w.wallets.set(CHEAP.sessionAddress, 1500n)
  const first = lease(w.engine, offerFor(w.engine))
  t.equal(first.lender, CHEAP.address)
  const later = T0 + w.engine.config.leaseTtlMs + 1000
  // The first offer is leased again at its expiry pass (to a dear lender); the waiting one is made afterwards.
  const entry = () => w.s.bookEntries.get(CHEAP.address)?.entry
  const before = entry()?.reputationBps as number
  unwrap(w.engine.observeChain({ network: NET, toBlock: BigInt(later), toBlockHash: '0x', toBlockTimeMs: later, events: [] }, later))
  t.ok((entry()?.reputationBps as number) < before, 'the miss lowered its reputation: its entry did not move toward the front')
  // A second lease makes it busy again, then the waiting offer's walk passes it over.
  const second = lease(w.engine, offerFor(w.engine, {}, later), later)
  t.equal(second.lender, CHEAP.address)
  const waiting = waitingWithMark(t, w, later)
  const end = later + w.engine.config.leaseTtlMs + 1000
  unwrap(w.engine.observeChain({ network: NET, toBlock: BigInt(end), toBlockHash: '0x', toBlockTimeMs: end, events: [] }, end))
  t.equal(matchedLender(w.engine, waiting, end), CHEAP.address, 'the cheapest eligible lender, not the dear one after the mark')
  w.engine.checkInvariants()
})

t.test('short wallet -> topped up: a wallet that held the least advance but not the amount, refilled, is leased', async (t) => {
  const w = world({})
  w.wallets.set(CHEAP.sessionAddress, 500n)
  const waiting = waitingWithMark(t, w)
  t.notOk(w.engine.isParked(CHEAP.address), 'passed over, not refused: it stays in the book')
  w.wallets.set(CHEAP.sessionAddress, 10n ** 9n)
  w.engine.walletChanged(CHEAP.sessionAddress)
  t.equal(matchedLender(w.engine, waiting, T0 + 1000), CHEAP.address, 'the cheapest eligible lender, not the dear one after the mark')
  w.engine.checkInvariants()
})

t.test('probation over by time: the cheap lender, inactive after a miss, is leased once its wait has passed', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1, lenderProbationSeconds: 60 })
  const first = lease(w.engine, offerFor(w.engine))
  t.equal(first.lender, CHEAP.address)
  const missed = T0 + w.engine.config.leaseTtlMs + 1000
  unwrap(dispatchAt(w.engine, missed))
  const cheap = w.engine.getLender(CHEAP.address)
  t.ok(cheap !== undefined && cheap.reliabilityBps < w.engine.config.lenderReliabilityMinBps, 'its miss used its allowance: inactive, on probation')
  const waiting = waitingWithMark(t, w, missed + 1000)
  // Nothing happens to the lender: only time passes.
  const over = missed + 61_000
  t.equal(matchedLender(w.engine, waiting, over), CHEAP.address, 'its probation lease, not the dear lender after the mark')
  w.engine.checkInvariants()
})

t.test('active again by an uptime observation: the cheap lender on a long probation is leased at once', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1, lenderProbationSeconds: 3600 })
  t.equal(lease(w.engine, offerFor(w.engine)).lender, CHEAP.address)
  const missed = T0 + w.engine.config.leaseTtlMs + 1000
  unwrap(dispatchAt(w.engine, missed))
  const waiting = waitingWithMark(t, w, missed + 1000)
  for (let i = 0; i < 20 && (w.engine.getLender(CHEAP.address)?.reliabilityBps ?? 0) < w.engine.config.lenderReliabilityMinBps; i++) {
    unwrap(w.engine.recordLenderUptime({ lender: CHEAP.address, uptimeBps: 10_000 }, missed + 2000))
  }
  t.ok((w.engine.getLender(CHEAP.address)?.reliabilityBps ?? 0) >= w.engine.config.lenderReliabilityMinBps, 'reliable again: active')
  t.equal(matchedLender(w.engine, waiting, missed + 3000), CHEAP.address, 'the cheapest eligible lender, not the dear one after the mark')
  w.engine.checkInvariants()
})

t.test('noLease counts the lenders the refusing walk looked at: after its mark for a resumed walk, not the book\'s front', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1 })
  t.equal(lease(w.engine, offerFor(w.engine)).lender, CHEAP.address, 'the cheap lender busy with its one lease')
  // A fee of at most 9 on 1000: the unusable lenders' 50 bps (5) fits, the dear ones' 100 bps (10) does not.
  const waiting = offerFor(w.engine, { maximumFeeAtomic: 9n })
  const first = unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0))
  t.equal(first.noLease?.reason, 'scan_bound_reached')
  t.same(first.noLease?.passedOver, { feeAboveMaximum: 0, riskBandNotAccepted: 0, durationNotOffered: 1, amountAboveLiquidity: 0, excluded: 0, busy: 1 }, 'from the front: the busy cheap lender, one unusable')
  const resumed = unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0 + 1000))
  t.equal(resumed.lease, null)
  t.equal(resumed.noLease?.lendersScanned, 2)
  t.same(resumed.noLease?.passedOver, { feeAboveMaximum: 1, riskBandNotAccepted: 0, durationNotOffered: 1, amountAboveLiquidity: 0, excluded: 0, busy: 0 }, 'after the mark: the other unusable lender, then the fee break')
  t.equal(resumed.noLease?.reason, 'lenders_busy', 'the cheap lender before the mark is busy: waiting helps, not a higher maximum (review26)')
  t.notOk(w.s.scanMarks.has(waiting), 'the fee break ended the walk: the next starts at the front')
  const again = unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0 + 2000))
  t.same(again.noLease?.passedOver, first.noLease?.passedOver, 'from the front again: the same lenders as the first walk')
})
