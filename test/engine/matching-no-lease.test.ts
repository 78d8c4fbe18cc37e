// Why a match made no lease (matching.ts whyNoLease): the reasons the HTTP test (test/api/match-no-lease) does not
// reach cheaply, and that a leased match carries none.
import t from 'tap'
import { BORROWER, T0, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

t.test('a walk stopped at lendersScannedPerMatchMax: scan_bound_reached, the next attempt resumes and leases', async (t) => {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 2 })
  registerBacking(engine)
  for (const n of [2, 3]) unwrap(engine.registerLender(lenderInput(n, { minFeeBps: 50, maxDurationSeconds: 1 }), T0))
  const dear = lenderInput(9, { minFeeBps: 100 })
  unwrap(engine.registerLender(dear, T0))
  const offerId = offerFor(engine, { amountAtomic: 3000n, maximumFeeAtomic: 150n })
  const first = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  t.equal(first.lease, null)
  t.match(first.noLease, { reason: 'scan_bound_reached', lendersInBook: 3, lendersScanned: 2, passedOver: { durationNotOffered: 2, busy: 0 } })
  t.match(first.noLease?.detail, /resumes after them/)
  const second = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  t.equal(second.lease?.lender, dear.address)
  t.equal(second.noLease, undefined, 'a leased match carries no noLease')
})

t.test('the only lender holds its allowance of live leases: lenders_busy', async (t) => {
  const { engine } = newEngine({ lenderLeaseAllowanceInitial: 1 })
  registerBacking(engine)
  const only = lenderInput(1, { minFeeBps: 0 })
  unwrap(engine.registerLender(only, T0))
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })), only.address)
  const offerId = offerFor(engine, { amountAtomic: 1000n, maximumFeeAtomic: 100n })
  const match = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  t.equal(match.lease, null)
  t.match(match.noLease, { reason: 'lenders_busy', lendersInBook: 1, lendersScanned: 1, passedOver: { busy: 1 } })
  engine.checkInvariants()
})
