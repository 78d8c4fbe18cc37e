// Recovery order: source revenue, collateral, hard backing liquidation value, insurance reserve, shortfall.
import t from 'tap'
import type { Engine, LiquidationPlan } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, NET, T0, createJob, fundAdvance, hash, lenderInput, newEngine, registerBacking, unwrap , repaidFact } from './fixtures/world.ts'

const amounts = (plan: LiquidationPlan) => plan.steps.map((s) => [s.step, s.amountAtomic])

function liquidateNow(engine: Engine, advanceId: string, nowMs: number) {
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, nowMs))
  const steps = Object.fromEntries(plan.steps.map((s) => [s.step, s.amountAtomic]))
  const receipt = unwrap(engine.liquidate({
    advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(777), fromRevenueAtomic: steps.source_revenue,
    fromCollateralAtomic: steps.collateral, fromReserveAtomic: steps.insurance_reserve,
  }, nowMs))
  engine.checkInvariants()
  return { plan, receipt }
}

t.test('a failed job\'s escrow is no recovery: with no collateral, all is a shortfall, and the advance stays live until repaid', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 137 }), T0))
  createJob(engine, 'job_a', 10_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_a', amountAtomic: 1237n, maximumFeeAtomic: 100n })
  t.match(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, T0), { ok: false, error: { code: 'advance_not_in_default', class: 'conflict' } })
  unwrap(engine.failJob({ jobId: 'job_a', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  const { plan, receipt } = liquidateNow(engine, advanceId, T0 + 2)
  t.equal(plan.owedAtomic, 1237n + 17n, 'fee = ceil(1237 * 137 / 10000) = 17')
  // The 10,000 escrowed went back to the client at failJob (the job earned nothing), as the contract does.
  t.same(amounts(plan), [['source_revenue', 0n], ['collateral', 0n], ['backing_liquidation', 0n], ['insurance_reserve', 0n], ['shortfall', 1254n]])
  t.equal(plan.stoppedAt, 'shortfall')
  t.equal(receipt.recoveredAtomic, 0n)
  const lender = engine.getLender(lenderInput(1).address)!
  t.equal(lender.lossesAtomic, 1237n, 'the principal is a loss while nobody pays it')
  t.equal(lender.deployedAtomic, 0n)
  t.equal(engine.getJob('job_a'), undefined, 'the failed job is final once its last advance was liquidated (the contract closes it)')
  t.match(engine.getAdvance(advanceId), { state: 'shortfall', lenderOwedAtomic: 1253n, reserveOwedAtomic: 1n }, 'the borrower still owes it')

  // The borrower repays the shortfall on chain (the contract takes repay on a liquidated advance): in two payments.
  const first = unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(41), 1000n), T0 + 3))
  t.match(first, { repaid: false, lenderOwedAtomic: 253n, reserveOwedAtomic: 1n })
  t.match(engine.getAdvance(advanceId), { state: 'shortfall' })
  t.equal(engine.getLender(lenderInput(1).address)!.lossesAtomic, 237n, 'what came back is a loss no more')
  const last = unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(42)), T0 + 4))
  t.match(last, { repaid: true, lenderOwedAtomic: 0n, reserveOwedAtomic: 0n })
  t.equal(engine.getAdvance(advanceId), undefined, 'repaid: final')
  const after = engine.getLender(lenderInput(1).address)!
  t.equal(after.lossesAtomic, 0n)
  t.equal(after.feesEarnedAtomic, 16n, 'the fee less the insurance share, as for a repayment on time')
  t.equal(after.availableAtomic, 1_000_000n + 16n)
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 1n, "the reserve's share of the fee")
  t.equal(engine.getBorrower(BORROWER)!.advancesRepaid, 1, 'counted as a repaid advance')
})

t.test('stops at collateral', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_b', 1001n)
  unwrap(engine.postCollateral({ jobId: 'job_b', caller: BORROWER, borrower: BORROWER, amountAtomic: 5003n, proof: { network: NET, txHash: hash(5), logIndex: 0 } }, T0))
  // capacity = 1001 * 80% (800) + 5003 = 5803
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_b', amountAtomic: 3001n, maximumFeeAtomic: 100n })
  unwrap(engine.failJob({ jobId: 'job_b', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  const { plan } = liquidateNow(engine, advanceId, T0 + 2)
  t.equal(plan.owedAtomic, 3001n + 31n)
  t.same(amounts(plan), [['source_revenue', 0n], ['collateral', 3032n], ['backing_liquidation', 0n], ['insurance_reserve', 0n], ['shortfall', 0n]])
  t.equal(plan.stoppedAt, 'collateral')
})

t.test('the hard backing liquidation value covers the lender\'s claim (past-due backing advance)', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  unwrap(engine.registerSource({ sourceId: 'src_h', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10_000n, liquidationValueAtomic: 9_000n, advanceRateBps: 5000, evidenceId: 'ev', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_h', amountAtomic: 2003n, maximumFeeAtomic: 100n })
  t.match(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, T0 + 3_600_999), { ok: false, error: { code: 'advance_not_in_default' } }, 'due at T0 + 3,600 s: not past due until the next second, as on chain')
  const { plan } = liquidateNow(engine, advanceId, T0 + 3_601_000)
  t.equal(plan.owedAtomic, 2003n + 21n)
  // As the contract: the backing covers the lender's claim (2003 + 21 - 2), never the reserve's share, which stays owed.
  t.same(amounts(plan), [['source_revenue', 0n], ['collateral', 0n], ['backing_liquidation', 2022n], ['insurance_reserve', 0n], ['shortfall', 2n]])
  t.equal(plan.stoppedAt, 'shortfall')
  t.equal(engine.getSource('src_h')?.backingUsedAtomic, 2022n)
  t.equal(engine.getSource('src_h')?.committedAtomic, 0n)
})

/** Fund the (network, asset) reserve with the insurance share of a repaid advance on another source. */
function fundReserve(engine: Engine, feeAtomicWanted: bigint): bigint {
  registerBacking(engine, 'src_big', 10_000_000n)
  const amount = feeAtomicWanted * 100n // at a 100 bps ask, fee = amount / 100
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_big', amountAtomic: amount, maximumFeeAtomic: feeAtomicWanted }, T0, 2)
  return unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(31), undefined, 2), T0)).reserveAmountAtomic
}

t.test('the insurance reserve covers what is left of the lender\'s claim, never its own share', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100, availableLiquidityAtomic: 10n ** 9n }), T0))
  t.equal(fundReserve(engine, 230n), 23n, 'reserve share = floor(230 * 1000 / 10000)')
  unwrap(engine.registerSource({ sourceId: 'src_r', productType: 'asset-backed', agent: BORROWER, valueAtomic: 2000n, liquidationValueAtomic: 1000n, advanceRateBps: 5000, evidenceId: 'ev', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_r', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 3)
  const { plan } = liquidateNow(engine, advanceId, T0 + 3_601_000)
  // The reserve covers what is left of the lender's claim (1000 + 10 - 1 - 1000 backing = 9), never its own share (1).
  t.same(amounts(plan), [['source_revenue', 0n], ['collateral', 0n], ['backing_liquidation', 1000n], ['insurance_reserve', 9n], ['shortfall', 1n]])
  t.equal(plan.stoppedAt, 'shortfall')
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 14n, '23 - 9 left in the reserve')
})

t.test('ends in shortfall with a reputation penalty to the borrower', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100, availableLiquidityAtomic: 10n ** 9n }), T0))
  t.equal(fundReserve(engine, 70n), 7n)
  unwrap(engine.registerSource({ sourceId: 'src_s', productType: 'asset-backed', agent: BORROWER, valueAtomic: 2000n, liquidationValueAtomic: 1000n, advanceRateBps: 5000, evidenceId: 'ev', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_s', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 3)
  const before = engine.getBorrower(BORROWER)!
  const { plan, receipt } = liquidateNow(engine, advanceId, T0 + 3_601_000)
  t.equal(plan.owedAtomic, 1010n)
  t.same(amounts(plan), [['source_revenue', 0n], ['collateral', 0n], ['backing_liquidation', 1000n], ['insurance_reserve', 7n], ['shortfall', 3n]])
  t.equal(plan.stoppedAt, 'shortfall')
  t.equal(plan.recoveredAtomic + plan.shortfallAtomic, plan.owedAtomic)
  const after = engine.getBorrower(BORROWER)!
  t.equal(after.shortfallAtomic, 3n)
  t.equal(after.reputationBps, before.reputationBps - 500 - 2000, 'past due: the default penalty, then the shortfall penalty')
  t.equal(receipt.borrowerReputationBps, after.reputationBps)
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 0n)
  const lender = engine.getLender(lenderInput(1).address)!
  t.equal(lender.feesEarnedAtomic, 63n + 7n, '70 - 7 from the repaid advance, then 7 recovered above principal')
  t.equal(lender.lossesAtomic, 0n)
})

t.test('executed amounts that differ from the plan are refused', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_c', 10_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_c' })
  unwrap(engine.failJob({ jobId: 'job_c', reason: 'not_delivered', caller: CLIENT }, T0))
  const bad = engine.liquidate({ advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(1), fromRevenueAtomic: 1n }, T0)
  t.match(bad, { ok: false, error: { code: 'plan_changed', class: 'conflict' } })
  t.equal(engine.getAdvance(advanceId)?.state, 'defaulted', 'nothing changed')
})

t.test('a suspension lifts in dispatch only once nothing is owed on a defaulted or shortfall advance and the minimum time passed', async (t) => {
  const { engine } = newEngine({ borrowerSuspensionMinSeconds: 60 })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_s', 10_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_s', amountAtomic: 1000n, maximumFeeAtomic: 100n })
  unwrap(engine.failJob({ jobId: 'job_s', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  t.equal(engine.getBorrower(BORROWER)?.suspended, true)
  t.same(unwrap(engine.dispatch(T0 + 120_000)).suspensionsLifted, [], 'the time passed, but the defaulted advance is still owed')
  // No collateral: the liquidation recovers nothing (the escrow went back to the client), the advance is a shortfall.
  liquidateNow(engine, advanceId, T0 + 120_001)
  t.match(engine.getAdvance(advanceId), { state: 'shortfall' })
  t.same(unwrap(engine.dispatch(T0 + 120_002)).suspensionsLifted, [], 'liquidated, but the shortfall is still owed')
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(51), 500n), T0 + 120_003))
  t.same(unwrap(engine.dispatch(T0 + 120_004)).suspensionsLifted, [], 'part of the shortfall is still owed')
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(52)), T0 + 120_005))
  t.same(unwrap(engine.dispatch(T0 + 120_006)).suspensionsLifted.map((e) => [e.type, e.borrower, e.suspendedAtMs]), [['suspension_lifted', BORROWER, T0 + 1]], 'the shortfall repaid: lifted')
  t.equal(engine.getBorrower(BORROWER)?.suspended, false)
  engine.checkInvariants()
})
