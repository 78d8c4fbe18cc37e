// review26: book26's probation schedule and noLease after a resumed walk, read as an adversary.
// 1. Every re-entry of a lender on probation (its session key rotated: parked and back as a new entry) and every move
//    of its probation end left an item in its book's schedule until the end passed and a walk of the book came: the
//    schedule grew with the rotations, not with the book. Now it is compacted to the book's entries.
// 2. A resumed walk that found nothing after its mark answered `fee_above_maximum` ("raise your maximum") while the
//    cheaper lender before the mark takes the terms and is only busy: the reason now follows what the borrower can do.
// 3. A transfer into any lender's session wallet noted it: a stranger's dust to more lenders than a walk scans sent
//    every marked walk back to the front. Now only a lender a walk passed over for its wallet alone is noted.
import t from 'tap'
import { ASSET, BORROWER, NET, T0, addr, lenderInput, matchedLender, offerFor, unwrap } from './fixtures/world.ts'
import { CHEAP, DEAR, markWorld } from './fixtures/mark-world.ts'

const world = markWorld

t.test('the probation schedule stays bounded by its book when a lender on probation re-enters it again and again', async (t) => {
  // The cheap lender registers below the reliability minimum: on probation for a minute, in its book, scheduled.
  const w = world({ lenderProbationSeconds: 60 }, { ...CHEAP, reliabilityBps: 500 })
  t.equal(w.book.scheduled, 1, 'its probation end is scheduled')
  // Each rotation of its session key parks it and brings it back as a new entry (its new wallet funded): one more item.
  const rotations = 500
  for (let i = 0; i < rotations; i++) {
    unwrap(w.engine.replaceLenderSession({ lender: CHEAP.address, caller: CHEAP.address, sessionAddress: addr(0x10_000 + i), registeredAfterMs: T0 - 1 }))
  }
  // Then another lender on probation (dearer than all) rotates: the compactions it runs keep the cheap lender's item.
  const OTHER = lenderInput(20, { minFeeBps: 200, reliabilityBps: 500 })
  unwrap(w.engine.registerLender(OTHER, T0))
  for (let i = 0; i < rotations; i++) {
    unwrap(w.engine.replaceLenderSession({ lender: OTHER.address, caller: OTHER.address, sessionAddress: addr(0x20_000 + i), registeredAfterMs: T0 - 1 }))
  }
  t.equal(w.book.size, 6, 'still one entry per lender')
  t.ok(w.book.scheduled <= 2 * w.book.size + 64, `the schedule holds ${w.book.scheduled} items for ${w.book.size} entries after ${2 * rotations} rotations`)
  // The compaction kept the live item: a waiting offer's mark set while the lender waits sees its probation end.
  const waiting = offerFor(w.engine, {}, T0 + 1000)
  t.equal(matchedLender(w.engine, waiting, T0 + 1000), null, 'the cheap lender waits out its probation; one unusable lender: the bound')
  t.ok(w.s.scanMarks.has(waiting), 'a mark after the cheap lender')
  t.equal(matchedLender(w.engine, waiting, T0 + 61_000), CHEAP.address, 'its probation over: the cheapest eligible lender, not the dear one after the mark')
  // Seen through the schedule, not by a walk sent back to the front: the old entries' items (each rotation's) noted
  // nothing, where each counted toward the log's bound (twice the scan bound: 4 here) and sent the walk to the front.
  t.not(w.s.walkedFrom, null, 'the walk resumed after its mark')
  w.engine.checkInvariants()
})

t.test('noLease after a resumed walk: a busy cheaper lender before the mark makes the reason lenders_busy, not fee_above_maximum', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1 })
  t.equal(matchedLender(w.engine, offerFor(w.engine)), CHEAP.address, 'the cheap lender busy with its one lease')
  // A fee of at most 9 on 1000: the unusable lenders' 50 bps (5) fits, the dear ones' 100 bps (10) does not.
  const waiting = offerFor(w.engine, { maximumFeeAtomic: 9n })
  t.equal(unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0)).noLease?.reason, 'scan_bound_reached')
  const resumed = unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0 + 1000)).noLease
  t.same(resumed?.passedOver, { feeAboveMaximum: 1, riskBandNotAccepted: 0, durationNotOffered: 1, amountAboveLiquidity: 0, excluded: 0, busy: 0 }, 'the counts are the resumed walk\'s: after the mark')
  t.equal(resumed?.reason, 'lenders_busy', 'the cheaper lender before the mark takes the terms and is busy: the offer waits for it')
  t.match(resumed?.detail, /cheaper lender, one an earlier attempt of this offer looked at/, 'the detail says the busy lender is before those counted')
  t.notMatch(resumed?.detail, /higher maximum/, 'no advice to raise the maximum')
})

t.test('noLease after a resumed walk: a cheaper lender before the mark that refuses the terms leaves the reason to the counts', async (t) => {
  // The cheap lender accepts band C only: the offer (band A) is never its, busy or not.
  const w = world({ lenderLeaseAllowanceInitial: 1 }, { ...CHEAP, acceptedRiskBands: ['C'] })
  const waiting = offerFor(w.engine, { maximumFeeAtomic: 9n })
  t.equal(unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0)).noLease?.reason, 'scan_bound_reached')
  const resumed = unwrap(w.engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0 + 1000)).noLease
  t.same(resumed?.passedOver, { feeAboveMaximum: 1, riskBandNotAccepted: 0, durationNotOffered: 1, amountAboveLiquidity: 0, excluded: 0, busy: 0 })
  t.equal(resumed?.reason, 'fee_above_maximum', 'only dearer lenders could take it: a higher maximum is the advice')
})

t.test('dust sent to the session wallets of lenders passed over for their policy does not send a marked walk to the front', async (t) => {
  const w = world({ lenderLeaseAllowanceInitial: 1 })
  t.equal(matchedLender(w.engine, offerFor(w.engine)), CHEAP.address, 'the cheap lender busy with its one lease')
  const waiting = offerFor(w.engine)
  t.equal(matchedLender(w.engine, waiting), null, 'the busy cheap lender, one unusable lender: the bound, no lease')
  t.ok(w.s.scanMarks.has(waiting), 'a mark after them')
  // A stranger's transfer of 1 unit into four lenders' session wallets, more than one walk scans (2): none of them was
  // passed over for its wallet (the unusable lenders for their maxDurationSeconds, the dear ones not looked at yet).
  for (const n of [2, 3, 9, 10]) {
    const session = addr(0x2000 + n)
    w.wallets.set(session, w.wallets.spendableAtomic(NET, ASSET, session) + 1n)
    w.engine.walletChanged(session)
  }
  t.equal(matchedLender(w.engine, waiting, T0 + 1000), DEAR.address, 'resumed after its mark: the cheapest eligible lender (the cheap one is busy), not the front again')
  t.not(w.s.walkedFrom, null, 'the walk resumed after its mark')
  w.engine.checkInvariants()
})
