// review22's findings on the engine's rules (an adversarial review of matchfair21 and what it merged with).
import t from 'tap'
import { ASSET, BORROWER, NET, T0, dispatchAt, fundAdvance, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, repaidFact, unwrap } from './fixtures/world.ts'

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

t.test('a resumed walk sees a cheaper lender that entered the book ahead of its mark since (was review22-scripts/mark-skips-cheaper)', async (t) => {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 3, lenderLeaseAllowanceInitial: 1 })
  registerBacking(engine)
  for (const n of [1, 2, 3]) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 0 }), T0))
  const dear = lenderInput(9, { minFeeBps: 100 })
  unwrap(engine.registerLender(dear, T0))
  for (let i = 0; i < 3; i++) t.ok(matchedLender(engine, offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })), 'a cheap lender leased (then busy)')
  const waiting = offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })
  t.equal(matchedLender(engine, waiting), null, 'three busy cheap lenders fill the bound: marked')
  const fresh = lenderInput(4, { minFeeBps: 0, availableLiquidityAtomic: 2_000_000n })
  unwrap(engine.registerLender(fresh, T0))
  const second = unwrap(engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0))
  t.equal(second.lease?.lender, fresh.address, 'the cheapest eligible lender (0 bps) wins, not the dear one behind the mark')
  t.equal(second.lease?.feeAtomic, 0n)
  engine.checkInvariants()
})

t.test('a resumed walk sees a lender that moved ahead of its mark since (its advance repaid)', async (t) => {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 3 })
  registerBacking(engine)
  const cheap = lenderInput(5, { minFeeBps: 0 })
  unwrap(engine.registerLender(cheap, T0))
  const dear = lenderInput(9, { minFeeBps: 100 })
  unwrap(engine.registerLender(dear, T0))
  const advanceId = fundAdvance(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })
  t.equal(engine.getAdvance(advanceId)?.lender, cheap.address, 'the cheap lender lent 1000: its liquidity left sorts it behind lenders of 1,000,000')
  // Four lenders no offer of 1000 can use (0 bps, maxDurationSeconds 1), ahead of it.
  for (let n = 1; n <= 4; n++) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 0, maxDurationSeconds: 1 }), T0))
  const waiting = offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })
  t.equal(matchedLender(engine, waiting), null, 'three of the four fill the bound: marked')
  // The advance is repaid: the cheap lender's liquidity comes back, and with it its place at the front.
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(77)), T0 + 1000))
  t.equal(matchedLender(engine, waiting, T0 + 2000), cheap.address, 'the waiting offer is leased to the cheap lender, not the dear one after the mark')
  engine.checkInvariants()
})

t.test('a lender enters only the books whose least advance its wallet holds, and a wallet change brings it into the others once funded', async (t) => {
  const least = { [ASSET]: 10n }
  const { engine, wallets } = newEngine({ advanceMinAtomic: { [NET]: least, 'net-b': least } })
  registerBacking(engine)
  const lender = lenderInput(1, { minFeeBps: 50, networks: [NET, 'net-b'] })
  wallets.set(lender.sessionAddress, 1000n, NET)
  wallets.set(lender.sessionAddress, 9n, 'net-b')
  unwrap(engine.registerLender(lender, T0))
  const onB = (nowMs: number) => unwrap(engine.matchOffer({ offerId: offerFor(engine, { network: 'net-b', amountAtomic: 10n, maximumFeeAtomic: 1n }, nowMs), caller: BORROWER }, nowMs))
  t.same(onB(T0).refusedLeases, [], 'not in net-b\'s book: no lease refused there (before: one, then out of it)')
  // Its wallet changes on the network it funded (a lease paid, a top-up): net-b's is still short.
  wallets.set(lender.sessionAddress, 900n, NET)
  t.equal(engine.walletChanged(lender.sessionAddress), false, 'it was not parked')
  t.same(onB(T0 + 1).refusedLeases, [], 'still out of net-b\'s book: no lease refused (before: back in every book, refused again)')
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 1n }, T0 + 2), T0 + 2), lender.address, 'in the book of the network it funded')
  wallets.set(lender.sessionAddress, 10n, 'net-b')
  engine.walletChanged(lender.sessionAddress)
  t.equal(onB(T0 + 3).lease?.lender, lender.address, 'funded on net-b: in its book too')
  engine.checkInvariants()
})
