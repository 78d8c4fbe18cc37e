// outsider21's findings, as the engine's rules (its scripts, over HTTP on the devnet, are under
// test/api/outsider21-scripts/): a refusal parks only a wallet that cannot pay the least advance; a lender is in the
// books only while its wallet can pay one; a walk that reaches lendersScannedPerMatchMax resumes after it next time.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { EngineState } from '../../src/engine/state.ts'
import { ASSET, BORROWER, NET, T0, dispatchAt, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const LEAST_ADVANCE = { advanceMinAtomic: { [NET]: { [ASSET]: 10n } } }
const stateOf = (engine: Engine) => (engine as unknown as { state: EngineState }).state

t.test('a stranger\'s request larger than the cheapest lender\'s wallet passes it over, and parks it for no later request', async (t) => {
  const { engine, wallets } = newEngine(LEAST_ADVANCE)
  registerBacking(engine)
  const cheap = lenderInput(1, { minFeeBps: 50 })
  unwrap(engine.registerLender(cheap, T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  // The policy lends 1,000,000; the wallet pays 900 (after a cycle its allowance is the policy less what it lent).
  wallets.set(cheap.sessionAddress, 900n)
  // 950 at 50 bps: a fee of 5, the maximum; the 200 bps lender's 19 is over it.
  const stranger = offerFor(engine, { amountAtomic: 950n, maximumFeeAtomic: 5n })
  const first = unwrap(engine.matchOffer({ offerId: stranger, caller: BORROWER }, T0))
  t.equal(first.lease, null, 'nobody can lend 950 within the maximum')
  t.same(first.refusedLeases, [], 'no lease refused: the wallet pays the least advance')
  t.notOk(engine.isParked(cheap.address), 'the cheapest lender stays in its book')
  // Its wallet changes; the ticker's dispatch walks the stranger's waiting offer again.
  wallets.set(cheap.sessionAddress, 901n)
  engine.walletChanged(cheap.sessionAddress)
  const dispatched = unwrap(dispatchAt(engine, T0 + 1000))
  t.same(dispatched.matches, [], 'the dispatch leases nobody and refuses nobody')
  t.notOk(engine.isParked(cheap.address), 'and parks nobody')
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 1n }), T0 + 1000), cheap.address, 'an honest request of 10 goes to the cheapest lender')
  engine.checkInvariants()
})

t.test('a lender is in the books only while its wallet can pay the least advance', async (t) => {
  const { engine, wallets } = newEngine(LEAST_ADVANCE)
  registerBacking(engine)
  const dust = lenderInput(1, { minFeeBps: 0 })
  wallets.set(dust.sessionAddress, 9n)
  unwrap(engine.registerLender(dust, T0))
  t.ok(engine.isParked(dust.address), '9 of a least advance of 10: out of every book')
  wallets.set(dust.sessionAddress, 8n)
  t.equal(engine.walletChanged(dust.sessionAddress), false, 'a change that leaves it below stays out')
  const offerId = offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 1n })
  t.same(unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).refusedLeases, [], 'no lease refused to it')
  wallets.set(dust.sessionAddress, 10n)
  t.equal(engine.walletChanged(dust.sessionAddress), true, 'the least advance: back in its book')
  t.equal(matchedLender(engine, offerId), dust.address)
  engine.checkInvariants()
})

/**
 * Lenders no offer can use (0 bps, maxDurationSeconds 1) first in the book, `junk` of them, and an honest lender at
 * 100 bps behind them; the scan bound is 3.
 */
function flooded(junk: number): { engine: Engine; honest: ReturnType<typeof lenderInput> } {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 3 })
  registerBacking(engine)
  for (let i = 1; i <= junk; i++) unwrap(engine.registerLender(lenderInput(10 + i, { minFeeBps: 0, maxDurationSeconds: 1 }), T0))
  const honest = lenderInput(1, { minFeeBps: 100 })
  unwrap(engine.registerLender(honest, T0))
  return { engine, honest }
}

t.test('a walk that reaches the scan bound resumes after it: the honest lender behind a flood is leased', async (t) => {
  const { engine, honest } = flooded(7)
  const offerId = offerFor(engine)
  const first = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  t.equal(first.lease, null, 'the first walk stops at the bound, no lender: as before')
  t.equal(first.offer.state, 'offered', 'the offer waits')
  t.equal(matchedLender(engine, offerId), null, 'the second walk scans the next 3')
  const third = unwrap(dispatchAt(engine, T0 + 1000))
  t.equal(third.matches[0]?.lease?.lender, honest.address, 'the third (the ticker\'s dispatch) reaches the honest lender')
  t.equal(stateOf(engine).scanMarks.size, 0, 'the leased offer keeps no mark')
  engine.checkInvariants()
})

t.test('a walk that reaches the book\'s end starts the next at the front', async (t) => {
  const { engine } = flooded(4)
  const offerId = offerFor(engine, { maximumFeeAtomic: 5n })
  t.equal(matchedLender(engine, offerId), null, 'junk 1-3')
  t.equal(matchedLender(engine, offerId), null, 'junk 4, then the honest lender\'s ask is over the maximum (the fee break)')
  t.equal(stateOf(engine).scanMarks.size, 0, 'no mark left')
  // A cheap lender ahead of the flood (higher reputation at the same ask): the front is where the next walk starts.
  const front = lenderInput(2, { minFeeBps: 0, reputationBps: 10_000 })
  unwrap(engine.registerLender(front, T0))
  t.equal(matchedLender(engine, offerId), front.address)
  engine.checkInvariants()
})

t.test('a restart forgets the marks: the walk starts at the front again', async (t) => {
  const { engine, honest } = flooded(5)
  const offerId = offerFor(engine)
  t.equal(matchedLender(engine, offerId), null, 'junk 1-3, marked')
  const restored = new Engine(engine.config, stateOf(engine).wallets, engine.snapshots())
  t.equal(stateOf(restored).scanMarks.size, 0, 'in memory only')
  t.equal(matchedLender(restored, offerId), null, 'junk 1-3 again, not 4, 5 and the honest lender')
  t.equal(matchedLender(restored, offerId), honest.address, 'then the walk goes on from there')
  restored.checkInvariants()
})

t.test('an offer that ends drops its mark', async (t) => {
  const { engine } = flooded(5)
  const offerId = offerFor(engine)
  t.equal(matchedLender(engine, offerId), null)
  t.equal(stateOf(engine).scanMarks.size, 1, 'marked')
  engine.checkInvariants()
  const expired = unwrap(dispatchAt(engine, T0 + engine.config.offerTtlMs + 1))
  t.equal(expired.expiredOffers[0]?.offerId, offerId, 'the offer expires')
  t.equal(stateOf(engine).scanMarks.size, 0, 'and its mark goes')
  engine.checkInvariants()
})
