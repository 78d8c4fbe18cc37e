// Recovery of a defaulted (or past-due) advance: the plan of its steps, and the executed liquidate transaction applied
// (the advance machine decides whether it may be liquidated now; the amounts are the contract's). Called by engine.ts.
import { refused, send, wouldTake } from './actors.ts'
import { advanceDefaulted, applyLiquidation } from './advances.ts'
import { closeOnSource } from './capacity.ts'
import { drain } from './changes.ts'
import { fail, forbidden } from './errors.ts'
import { executedPlan, liquidationPlan, recoveryOf } from './plans.ts'
import { seqOf } from './keys.ts'
import { isLenderOrOperator } from './roles.ts'
import type { EngineState } from './state.ts'
import type { Address, EngineResult, LiquidationInput, LiquidationPlan, LiquidationReceipt } from './types.ts'

/** Recovery amounts, step by step, for a defaulted (or past-due) advance. */
export function planLiquidation(s: EngineState, input: { advanceId: string; caller: Address }, nowMs: number): EngineResult<LiquidationPlan> {
  const { advanceId } = input
  const advance = s.advances.get(advanceId)
  if (!advance) return fail('not_found', 'advance_not_found', `advance ${advanceId} is not live`)
  if (!isLenderOrOperator(s, advance, input.caller)) return forbidden('an advance is liquidated by its lender or an operator')
  const plan = liquidationPlan(s, advance)
  // A query sends nothing: it asks the machine whether it would take LIQUIDATE now (defaulted, or past due).
  const due = wouldTake('advance', advance, { type: 'LIQUIDATE', recovery: recoveryOf(plan, '', '0x'), nowMs })
  if (!due.accepted) return refused('advance', advanceId, due)
  return { ok: true, value: plan, changes: [] }
}

/**
 * The advances on the same source (a job, or a backing source), older than `advanceId` by their offers' order (the
 * order in which their risk bands and capacity counted the source: a request's coverage leaves out what earlier offers
 * and advances hold), that may be liquidated now, oldest first; empty unless the caller may liquidate `advanceId` now
 * and the source still holds what a liquidation takes (a job's collateral, a backing source's liquidation value). The
 * contract's liquidate takes a job's collateral for whichever advance it is sent for first, and a backing source's
 * value went the same way: a later advance (a band-C one of the borrower's own lender, say) liquidated first took what
 * an earlier band-A advance had counted on; these are liquidated before it (an outsider's finding, outsider28). A job's
 * advances share its due time; a backing source's are due in their offers' order, so the older ones are due first.
 * None when what the source holds covers all of them and this one in full (a job's collateral what each owes, a
 * backing source's value each lender's part): this one's liquidation then takes nothing an older one counted on, and
 * forcing theirs would only default them (their lenders' and borrower's penalties) when their lenders may rather wait
 * for a late settlement or repayment (review32).
 */
export function seniorLiquidations(s: EngineState, input: { advanceId: string; caller: Address }, nowMs: number): { advanceId: string; lender: Address }[] {
  const advance = s.advances.get(input.advanceId)
  if (!advance || !planLiquidation(s, input, nowMs).ok) return []
  const a = advance.getSnapshot().context
  let candidates: Iterable<string>
  let leftAtomic: bigint
  if (a.source.kind === 'job') {
    const job = s.jobs.get(a.source.id)
    if (!job) return []
    const j = job.getSnapshot().context
    leftAtomic = j.collateralAtomic - j.collateralUsedAtomic
    candidates = j.advanceIds
  } else {
    const src = s.sources.get(a.source.id)
    if (!src) return []
    leftAtomic = src.liquidationValueAtomic - src.backingUsedAtomic
    candidates = s.advanceIdsOfBacking.get(a.source.id) ?? []
  }
  if (leftAtomic <= 0n) return []
  // What a liquidation can take of the source: on a job what the advance owes, on a backing source its lender's part.
  const takes = (c: { source: { kind: string }; lenderOwedAtomic: bigint; reserveOwedAtomic: bigint }): bigint =>
    c.source.kind === 'job' ? c.lenderOwedAtomic + c.reserveOwedAtomic : c.lenderOwedAtomic
  let takenAtomic = takes(a)
  const own = seqOf(a.offerId)
  const seniors: { seq: number; advanceId: string; lender: Address }[] = []
  for (const advanceId of candidates) {
    const other = s.advances.get(advanceId)
    if (!other || advanceId === a.advanceId) continue
    const o = other.getSnapshot().context
    const seq = seqOf(o.offerId)
    if (seq >= own) continue
    const plan = liquidationPlan(s, other)
    if (!wouldTake('advance', other, { type: 'LIQUIDATE', recovery: recoveryOf(plan, '', '0x'), nowMs }).accepted) continue
    seniors.push({ seq, advanceId, lender: o.lender })
    takenAtomic += takes(o)
  }
  if (takenAtomic <= leftAtomic) return []
  return seniors.sort((x, y) => x.seq - y.seq).map(({ advanceId, lender }) => ({ advanceId, lender }))
}

/** Apply the executed liquidate transaction: recover in order, record the shortfall and its penalty. */
export function liquidate(s: EngineState, input: LiquidationInput & { caller: Address }, nowMs: number): EngineResult<LiquidationReceipt> {
  const advance = s.advances.get(input.advanceId)
  if (!advance) return fail('not_found', 'advance_not_found', `advance ${input.advanceId} is not live`)
  if (!isLenderOrOperator(s, advance, input.caller)) return forbidden('an advance is liquidated by its lender or an operator')
  const predicted = liquidationPlan(s, advance)
  const plan = input.executed === undefined ? predicted : executedPlan(predicted, input.executed)
  if (plan.recoveredAtomic + plan.shortfallAtomic !== plan.owedAtomic) {
    return fail('conflict', 'liquidation_mismatch', `the contract's recovery does not sum to the ${plan.owedAtomic} owed`)
  }
  const recovery = recoveryOf(plan, input.network, input.txHash)
  if ((input.fromRevenueAtomic !== undefined && input.fromRevenueAtomic !== recovery.fromRevenueAtomic) ||
    (input.fromCollateralAtomic !== undefined && input.fromCollateralAtomic !== recovery.fromCollateralAtomic) ||
    (input.fromReserveAtomic !== undefined && input.fromReserveAtomic !== recovery.fromReserveAtomic)) {
    return fail('conflict', 'plan_changed', 'the executed amounts differ from the current liquidation plan')
  }
  if (plan.recoveredAtomic + plan.shortfallAtomic !== plan.owedAtomic || plan.recoveredAtomic > plan.owedAtomic) {
    throw new Error('invariant: recovery steps must sum to what is owed')
  }

  const a = advance.getSnapshot().context
  // The advance decides: a defaulted one is liquidated, an active one only once past due (it defaults now).
  const liquidated = send(s, 'advance', advance, { type: 'LIQUIDATE', recovery, nowMs })
  if (!liquidated.accepted) return refused('advance', input.advanceId, liquidated)
  if (liquidated.from === 'active') advanceDefaulted(s, a)

  const borrower = applyLiquidation(s, a, plan, recovery.fromReserveAtomic)
  closeOnSource(s, a, {
    revenueUsedAtomic: recovery.fromRevenueAtomic, collateralUsedAtomic: recovery.fromCollateralAtomic, backingUsedAtomic: recovery.fromBackingAtomic,
  }, nowMs)
  return drain(s, { ...plan, txHash: input.txHash, borrowerReputationBps: borrower.reputationBps })
}
