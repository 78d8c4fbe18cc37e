// review32: the older advances a liquidation on a backing source liquidates first (liquidation.ts seniorLiquidations)
// are found among the source's own live advances (EngineState.advanceIdsOfBacking), no longer by looking through every
// live advance of the service (about 0.3 µs each: 5 to 30 ms of a request at 100,000, repeatable by a lender whose
// liquidation keeps failing). The list is kept as advances open, are restored and close: a restored engine finds the
// senior (fails if the restore does not list it), and checkInvariants fails on a list that disagrees with the live
// advances (an advance repaid, or liquidated in full, left in it).
import t from 'tap'
import { Engine } from '../../src/engine/engine.ts'
import { FakeWallets, T0, createJob, fundAdvance, lenderInput, newEngine, registerBacking, repaidFact, hash, unwrap } from './fixtures/world.ts'

function twoOnBacking() {
  const { engine } = newEngine()
  for (let i = 1; i <= 2; i++) unwrap(engine.registerLender(lenderInput(i, { minFeeBps: 100 }), T0))
  registerBacking(engine, 'src_1', 10_000_000n)
  createJob(engine, 'job_x', 10_000_000n)
  const onJob = fundAdvance(engine, { repaymentSource: 'job_x', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 1)
  const senior = fundAdvance(engine, { repaymentSource: 'src_1', productType: 'asset-backed', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 2)
  const junior = fundAdvance(engine, { repaymentSource: 'src_1', productType: 'asset-backed', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0 + 1000, 3)
  return { engine, onJob, senior, junior }
}

t.test('a backing source lists its live advances, and a restored engine finds the senior through it', async (t) => {
  const { engine, onJob, senior, junior } = twoOnBacking()
  const state = (engine as unknown as { state: { advanceIdsOfBacking: Map<string, Set<string>> } }).state
  t.same([...(state.advanceIdsOfBacking.get('src_1') ?? [])], [senior, junior], 'the source lists its two, not the one on the job')
  t.notOk([...state.advanceIdsOfBacking.values()].some((ids) => ids.has(onJob)))
  engine.checkInvariants()

  const j = engine.getAdvance(junior)!
  const pastDue = j.dueAtMs + 60_000
  const expected = [{ advanceId: senior, lender: engine.getAdvance(senior)!.lender }]
  t.same(engine.seniorLiquidations({ advanceId: junior, caller: j.lender }, pastDue), expected, 'the older one, past due first')
  const restored = new Engine({}, new FakeWallets(), engine.snapshots())
  restored.checkInvariants()
  t.same(restored.seniorLiquidations({ advanceId: junior, caller: j.lender }, pastDue), expected, 'the restored engine finds it too')

  // Repaid in full, the senior leaves the list (and the list goes with the source's last advance).
  unwrap(engine.repayAdvance(repaidFact(engine, senior, hash(77)), T0 + 2000))
  t.equal(engine.getAdvance(senior), undefined, 'the senior is repaid and evicted')
  t.same([...(state.advanceIdsOfBacking.get('src_1') ?? [])], [junior])
  engine.checkInvariants()
  t.same(engine.seniorLiquidations({ advanceId: junior, caller: j.lender }, pastDue), [])
  unwrap(engine.repayAdvance(repaidFact(engine, junior, hash(78)), T0 + 3000))
  t.notOk(state.advanceIdsOfBacking.has('src_1'))
  engine.checkInvariants()
})

t.test('checkInvariants fails on a backing source\'s list that disagrees with the live advances', async (t) => {
  const { engine, senior } = twoOnBacking()
  const state = (engine as unknown as { state: { advanceIdsOfBacking: Map<string, Set<string>> } }).state
  state.advanceIdsOfBacking.get('src_1')!.delete(senior)
  t.throws(() => engine.checkInvariants(), /listed by them/)
  state.advanceIdsOfBacking.get('src_1')!.add(senior)
  state.advanceIdsOfBacking.set('src_2', new Set([senior]))
  t.throws(() => engine.checkInvariants(), /not a live one of it/)
})
