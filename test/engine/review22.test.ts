// review22's findings on the engine's rules (an adversarial review of matchfair21 and what it merged with).
import t from 'tap'
import { ASSET, BORROWER, NET, T0, dispatchAt, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

t.test('a lender whose wallet holds the least advance, promised to its own live lease, is passed over, not parked', async (t) => {
  const { engine, wallets } = newEngine({ advanceMinAtomic: { [NET]: { [ASSET]: 10n } }, lenderLeaseAllowanceInitial: 5 })
  registerBacking(engine)
  const lender = lenderInput(1, { minFeeBps: 50 })
  wallets.set(lender.sessionAddress, 15n)
  unwrap(engine.registerLender(lender, T0))
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 1n })), lender.address, 'its first lease takes 10 of 15')
  const second = offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 1n })
  const busy = unwrap(engine.matchOffer({ offerId: second, caller: BORROWER }, T0))
  t.same(busy.refusedLeases, [], 'no lease refused: the wallet holds the least advance, only promised')
  t.notOk(engine.isParked(lender.address), 'it stays in its book (parked, nothing brought it back: the wallet does not change when a lease ends unused)')
  // The first lease ends unused; the waiting offer's next walk finds the lender free.
  const later = T0 + engine.config.leaseTtlMs + 60_000
  const dispatched = unwrap(dispatchAt(engine, later))
  t.equal(dispatched.matches[0]?.lease?.lender, lender.address, 'the waiting offer is leased to it once its lease ended')
  engine.checkInvariants()
})
