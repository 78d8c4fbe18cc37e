// review32: the older advances a liquidation on a backing source liquidates first (liquidation.ts seniorLiquidations)
// are found among the source's own live advances (EngineState.advanceIdsOfBacking), no longer by looking through every
// live advance of the service (about 0.3 µs each: 5 to 30 ms of a request at 100,000, repeatable by a lender whose
// liquidation keeps failing). The list is kept as advances open, are restored and close: a restored engine finds the
// senior (fails if the restore does not list it), and checkInvariants fails on a list that disagrees with the live
// advances (an advance repaid, or liquidated in full, left in it).
import t from 'tap'
import { Engine } from '../../src/engine/engine.ts'
import { BORROWER, FakeWallets, NET, T0, createJob, fundAdvance, lenderInput, newEngine, repaidFact, hash, unwrap } from './fixtures/world.ts'

function twoOnBacking() {
  const { engine } = newEngine()
  for (let i = 1; i <= 2; i++) unwrap(engine.registerLender(lenderInput(i, { minFeeBps: 100 }), T0))
  // A hard liquidation value of 2000 for two advances of 1000 (their lenders' parts about 1010 each): not both in full.
  unwrap(engine.registerSource({
    sourceId: 'src_1', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10_000_000n, liquidationValueAtomic: 2000n,
    advanceRateBps: 10_000, evidenceId: 'ev_src_1', validUntilMs: 8_000_000_000_000, caller: BORROWER,
  }, T0))
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

// An older advance is liquidated first only when the later one's liquidation could take what it counted on: with
// collateral enough for both in full, forcing its liquidation would only default it (its lender's and its borrower's
// penalties) on a job that may yet settle late. Fails without the check: the ample case forces the older one too.
t.test('the older advances are forced only when the source cannot cover them and the later one in full', async (t) => {
  for (const [collateral, forced] of [[5_000n, false], [1_500n, true]] as const) {
    const { engine } = newEngine()
    for (let i = 1; i <= 2; i++) unwrap(engine.registerLender(lenderInput(i, { minFeeBps: 100 }), T0))
    createJob(engine, 'job_c', 10_000_000n)
    unwrap(engine.postCollateral({ jobId: 'job_c', caller: BORROWER, borrower: BORROWER, amountAtomic: collateral, proof: { network: NET, txHash: hash(5), logIndex: 0 } }, T0))
    const senior = fundAdvance(engine, { repaymentSource: 'job_c', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 1)
    const junior = fundAdvance(engine, { repaymentSource: 'job_c', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 2)
    const j = engine.getAdvance(junior)!
    const pastDue = j.dueAtMs + 60_000
    const seniors = engine.seniorLiquidations({ advanceId: junior, caller: j.lender }, pastDue).map((x) => x.advanceId)
    t.same(seniors, forced ? [senior] : [], `collateral ${collateral} for two advances owing about 1010 each: ${forced ? 'the older one first' : 'none forced'}`)
  }
})
