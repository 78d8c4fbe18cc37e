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
