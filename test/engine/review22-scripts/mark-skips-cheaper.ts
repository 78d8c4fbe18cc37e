// review22's reproduction (not a suite test: run it with npx tap): a walk resumed after its scan mark passes over a
// cheaper lender that entered the book ahead of the mark since, and leases a dearer one (fee 10 for 0): the mark is
// only set after lendersScannedPerMatchMax entries gave no lender (4,096 by default: a flood, or that many busy lenders).
import t from 'tap'
import { BORROWER, T0, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from '../fixtures/world.ts'

t.test('probe: a scan mark skips a cheaper lender that entered the book ahead of it', async (t) => {
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
  t.equal(second.lease?.lender, fresh.address, `the cheapest eligible lender (0 bps) wins; got ${second.lease?.lender} fee ${second.lease?.feeAtomic}`)
})
