// review23's findings on fix23 (an adversarial review of the scan marks' log, the past-due second, funded books and
// the borrower's weighed reward).
import t from 'tap'
import { compareEntries, reposition, type BookEntry } from '../../src/engine/book.ts'
import { bookKey } from '../../src/engine/keys.ts'
import { eligibleFee, feeAtomic, leaseAllowance } from '../../src/engine/rules.ts'
import type { EngineState } from '../../src/engine/state.ts'
import type { LeaseView } from '../../src/engine/types.ts'
import { walletFreeAtomic } from '../../src/engine/views.ts'
import { BORROWER, NET, ASSET, T0, dispatchAt, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, repaidFact, unwrap } from './fixtures/world.ts'

t.test('a lender refused at the mark itself and back at the same key is seen by the resumed walk', async (t) => {
  const { engine, wallets } = newEngine({ lendersScannedPerMatchMax: 3, lenderLeaseAllowanceInitial: 1, advanceMinAtomic: { [NET]: { [ASSET]: 10n } } })
  registerBacking(engine)
  for (const n of [1, 2]) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 0 }), T0))
  // Less liquidity than the two others once they lent 1000: last of the three cheap ones, where the walk stops.
  const atMark = lenderInput(3, { minFeeBps: 0, availableLiquidityAtomic: 500_000n })
  unwrap(engine.registerLender(atMark, T0))
  unwrap(engine.registerLender(lenderInput(9, { minFeeBps: 100 }), T0))
  for (let i = 0; i < 2; i++) t.ok(matchedLender(engine, offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })), 'a cheap lender leased (then busy)')
  wallets.set(atMark.sessionAddress, 5n)
  const waiting = offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })
  const first = unwrap(engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0))
  t.equal(first.lease, null, 'two busy lenders and one refused fill the bound: marked at the refused one')
  t.equal(first.refusedLeases[0]?.lender, atMark.address)
  // Its wallet refilled: back in the book at the very key the mark holds (a new entry).
  wallets.set(atMark.sessionAddress, 10_000n)
  engine.walletChanged(atMark.sessionAddress)
  t.equal(matchedLender(engine, waiting, T0 + 1), atMark.address, 'the cheapest eligible lender (0 bps) wins, not the dear one after the mark')
  engine.checkInvariants()
})

t.test('a resumed walk sees a lender ahead of its mark whose liquidity came back without changing its place', async (t) => {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 2, lenderReliabilityMissPenaltyBps: 0, lenderReputationMissPenaltyBps: 0 })
  registerBacking(engine)
  const cheap = lenderInput(1, { minFeeBps: 0, availableLiquidityAtomic: 5000n })
  unwrap(engine.registerLender(cheap, T0))
  // Two lenders no offer of 3000 can use (maxDurationSeconds 1), then a dear one.
  for (const n of [2, 3]) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 50, maxDurationSeconds: 1 }), T0))
  unwrap(engine.registerLender(lenderInput(9, { minFeeBps: 100 }), T0))
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 3000n, maximumFeeAtomic: 150n })), cheap.address, 'the cheap lender leases 3000 of its 5000')
  const waiting = offerFor(engine, { amountAtomic: 3000n, maximumFeeAtomic: 150n })
  t.equal(matchedLender(engine, waiting), null, 'the cheap lender (2000 left) and one unusable lender fill the bound: marked')
  // The first lease ends unused: the cheap lender has 5000 again, still first in the book (its place unchanged).
  const later = T0 + engine.config.leaseTtlMs + 1000
  unwrap(engine.observeChain({ network: NET, toBlock: BigInt(later), toBlockHash: '0x', toBlockTimeMs: later, events: [] }, later))
  t.equal(matchedLender(engine, waiting, later), cheap.address, 'the cheapest eligible lender (0 bps) wins, not the dear one after the mark')
  engine.checkInvariants()
})

/** The walk's rule without its bound: the first lender in book order that could take the offer now. */
function firstEligible(s: EngineState, offerId: string, nowMs: number): BookEntry | null {
  const o = (s.offers.get(offerId) as NonNullable<ReturnType<typeof s.offers.get>>).getSnapshot().context
  for (const entry of s.books.get(bookKey(o.network, o.asset))?.entries ?? []) {
    if (feeAtomic(o.amountAtomic, entry.askBps) > o.maximumFeeAtomic) break
    const lender = entry.lender
    if (eligibleFee(lender, o, s.config, nowMs) === null || o.excludedLenders.includes(lender.address)) continue
    if ((s.liveLeasesByLender.get(lender.address)?.size ?? 0) >= Math.max(1, leaseAllowance(lender, s.config))) continue
    if (walletFreeAtomic(s, lender, o.network, o.asset) >= o.amountAtomic) return entry
  }
  return null
}

t.test('with scan marks, a lease goes to the first eligible lender in book order, however the lender became eligible', async (t) => {
  // Random registrations, matches, leases ending unused, payments, repayments (partial or whole), wallets emptied below
  // the least advance (refused, parked) or to less than an amount (passed over), refilled (parked or not), and time
  // passing: besides the moves and re-insertions, lenders become eligible without moving (book26): a lease paid or
  // ended frees a lender at its lease allowance (1 or 2 in half the worlds) or whose wallet it held, a wallet topped up,
  // a probation over (misses penalised in half the worlds, a 5 s probation). A seeded generator (a linear
  // congruential one), 40 worlds of 150 steps.
  let violations = 0
  let resumed = 0
  let resumedEased = 0
  for (let seed = 1; seed <= 40; seed++) {
    let state = seed
    const r = () => (state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
    const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)] as T
    const penalised = seed % 2 === 0
    const { engine, wallets } = newEngine({
      lendersScannedPerMatchMax: 2 + Math.floor(r() * 2), lenderLeaseAllowanceInitial: pick([1, 2, 1000, 1000]), advanceMinAtomic: { [NET]: { [ASSET]: 10n } },
      leasesPerOfferMax: 1000, lenderProbationSeconds: 5,
      ...(penalised ? {} : { lenderReliabilityMissPenaltyBps: 0, lenderReputationMissPenaltyBps: 0 }),
    })
    const s = (engine as unknown as { state: EngineState }).state
    registerBacking(engine, 'src_1', 10n ** 12n)
    const lenders: ReturnType<typeof lenderInput>[] = []
    const addLender = (nowMs: number) => {
      const lender = lenderInput(lenders.length + 1, {
        minFeeBps: pick([0, 50, 100, 200]), availableLiquidityAtomic: pick([500n, 2000n, 5000n, 1_000_000n]), maxDurationSeconds: r() < 0.2 ? 1 : 90 * 86400,
      })
      lenders.push(lender)
      unwrap(engine.registerLender(lender, nowMs))
    }
    let nowMs = T0
    for (let i = 0; i < 8; i++) addLender(nowMs)
    const leases: LeaseView[] = []
    const advances: string[] = []
    let tx = 1
    const match = (offerId: string) => {
      const expected = firstEligible(s, offerId, nowMs)
      const mark = s.scanMarks.get(offerId)
      if (mark !== undefined) {
        resumed++
        // The first eligible lender sits before the mark (the walk passed it): it became eligible since.
        if (expected !== null && compareEntries(expected, mark) <= 0) resumedEased++
      }
      const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs)).lease
      if (lease === null) return
      leases.push(lease)
      if (expected !== null && lease.lender !== expected.lender.address) {
        violations++
        t.comment(`world ${seed}: ${offerId} leased to ${lease.lender}, ${expected.lender.address} (ask ${expected.askBps}) was first`)
      }
    }
    for (let step = 0; step < 150; step++) {
      const x = r()
      if (x < 0.1) addLender(nowMs)
      else if (x < 0.3) {
        if (s.waitingOffers.size < 8) {
          const amountAtomic = pick([1000n, 3000n])
          match(offerFor(engine, { amountAtomic, maximumFeeAtomic: amountAtomic / 20n }, nowMs))
        }
      } else if (x < 0.55) {
        const waiting = [...s.offers.keys()].filter((id) => s.waitingOffers.has(id))
        if (waiting.length > 0) match(pick(waiting))
      } else if (x < 0.65) {
        // Below the least advance (refused at the next walk, parked) or holding it but less than an offer's amount.
        const lender = pick(lenders)
        if (!engine.isParked(lender.address)) wallets.set(lender.sessionAddress, pick([5n, 500n, 1500n]))
      } else if (x < 0.75) {
        const lender = pick(lenders)
        wallets.set(lender.sessionAddress, 10n ** 30n)
        engine.walletChanged(lender.sessionAddress)
      } else if (x < 0.85) {
        nowMs += s.config.leaseTtlMs + 1000
        unwrap(dispatchAt(engine, nowMs))
      } else if (x < 0.92) {
        const lease = leases.splice(Math.floor(r() * leases.length), 1)[0]
        if (lease !== undefined) {
          const paid = engine.recordSupplierPayment({
            network: lease.network, txHash: hash(tx++), logIndex: 0, offerId: lease.offerId, payer: lease.payer,
            supplier: lease.supplierAddress, asset: lease.asset, amountAtomic: lease.amountAtomic, caller: lease.lender,
          }, nowMs)
          if (paid.ok) advances.push(paid.value.advanceId)
        }
      } else if (x < 0.97) {
        const advance = advances.length > 0 ? engine.getAdvance(pick(advances)) : undefined
        if (advance?.state === 'active') {
          const owed = advance.lenderOwedAtomic + advance.reserveOwedAtomic
          unwrap(engine.repayAdvance(repaidFact(engine, advance.advanceId, hash(tx++), r() < 0.5 ? owed : owed / 3n), nowMs))
        }
      } else nowMs += 1000
      engine.checkInvariants()
    }
  }
  t.ok(resumed > 200, `${resumed} matches resumed after a mark`)
  t.ok(resumedEased > 20, `${resumedEased} of them with the first eligible lender behind the mark`)
  t.equal(violations, 0, 'no lease to a dearer lender while an eligible one sorted before it')
})

t.test('repeat notes of one entry between two walks count once: a resumed walk still resumes (the scan-mark log counts distinct entries)', async (t) => {
  const { engine } = newEngine()
  for (const n of [1, 2, 3, 4]) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 10 * n }), T0))
  const s = (engine as unknown as { state: EngineState }).state
  const book = s.books.get(bookKey(NET, ASSET)) as NonNullable<ReturnType<typeof s.books.get>>
  const entry = (s.bookEntries.get(lenderInput(2).address) as { entry: BookEntry }).entry
  const forward = () => {
    entry.lender.availableAtomic += 1n
    reposition(entry, [book])
  }
  book.markAdded(2)
  const seen = book.markSeen()
  // Five forward moves of the same lender (each a repayment on chain), more than the two a mark looks back.
  for (let i = 0; i < 5; i++) forward()
  t.same(book.enteredSince(seen), [entry], 'noted once: the walk resumes after its mark, looking first at that lender')
  const later = book.markSeen()
  forward()
  t.same(book.enteredSince(later), [entry], 'a mark set after the note sees the next move')
  t.same(book.enteredSince(seen), [entry, entry])
  // The last mark gone, the log empties; a note from before does not hide one made for a new mark.
  book.markDropped()
  book.markAdded(2)
  const fresh = book.markSeen()
  forward()
  t.same(book.enteredSince(fresh), [entry], 'a new run of marks sees the move')
})
