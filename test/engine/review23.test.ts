// review23's findings on fix23 (an adversarial review of the scan marks' log, the past-due second, funded books and
// the borrower's weighed reward).
import t from 'tap'
import { BORROWER, NET, ASSET, T0, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

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
