// Advances: opening one on a paid lease, and what its repayment, default or liquidation does to the lender's,
// the reserve's and the borrower's records (the advance machine has taken the event first).
import { createActor } from 'xstate'
import { advanceMachine, type AdvanceInput, type OfferContext, type RepaymentRecord, type TxProof } from '../../machines/index.ts'
import { expect } from './actors.ts'
import { borrowerOf } from './borrowers.ts'
import { touch } from './changes.ts'
import { ID_PREFIXES } from './ids.ts'
import { fundReserve, lenderChanged, lenderOf, payFromReserve, returnRecovery, returnRepayment } from './ledger.ts'
import * as reputation from './reputation.ts'
import { recoveryAmounts } from './plans.ts'
import { insuranceAtomic, lenderRepaymentAtomic, minBig } from './rules.ts'
import type { EngineState } from './state.ts'
import type { Address, AdvanceView, BorrowerRecord, LiquidationPlan, RepaymentReceipt } from './types.ts'
import { viewOf } from './views.ts'

/** The advance a paid lease opens (the next advance id), on its job if the offer drew on one. */
export function openAdvance(
  s: EngineState,
  o: OfferContext,
  l: { leaseId: string; lender: Address; feeAtomic: bigint },
  payer: Address,
  payment: TxProof,
  nowMs: number,
): AdvanceView {
  s.meta.advanceSeq += 1
  touch(s, 'meta', 'engine')
  const advanceId = `${ID_PREFIXES.advance}${s.meta.advanceSeq}`
  const input: AdvanceInput = {
    advanceId, advanceKey: o.offerKey, offerId: o.offerId, leaseId: l.leaseId, lender: l.lender, payer, borrower: o.borrower,
    source: o.source, network: o.network, asset: o.asset, principalAtomic: o.amountAtomic, feeAtomic: l.feeAtomic,
    insuranceAtomic: insuranceAtomic(l.feeAtomic, s.config.insuranceShareBps), supplierAddress: o.supplierAddress,
    payment, fundedAtMs: nowMs, dueAtMs: o.dueAtMs,
  }
  const advance = createActor(advanceMachine, { input }).start()
  s.advances.set(advanceId, advance)
  touch(s, 'advance', advanceId)
  const job = o.source.kind === 'job' ? s.jobs.get(o.source.id) : undefined
  if (job) expect(s, 'job', job, { type: 'ADVANCE_OPENED', advanceId, nowMs })
  return viewOf<AdvanceView>(advance.getSnapshot())
}

/** The ledger and track-record side of a repayment the advance machine has taken (REPAY). */
export function applyRepayment(s: EngineState, a: AdvanceInput, repayment: RepaymentRecord): RepaymentReceipt {
  const lender = lenderOf(s, a.lender)
  returnRepayment(lender, a.principalAtomic, repayment.lenderAmountAtomic)
  reputation.lenderRepaid(lender, s.config)
  lenderChanged(s, lender)
  if (repayment.reserveAmountAtomic > 0n) fundReserve(s, a.network, a.asset, repayment.reserveAmountAtomic)
  const borrower = borrowerOf(s, a.borrower)
  reputation.borrowerRepaid(borrower, s.config)
  touch(s, 'borrower', borrower.address)
  return {
    advanceId: a.advanceId, lender: a.lender, network: a.network, asset: a.asset, principalAtomic: a.principalAtomic,
    feeAtomic: a.feeAtomic, lenderAmountAtomic: repayment.lenderAmountAtomic,
    reserveAmountAtomic: repayment.reserveAmountAtomic, txHash: repayment.txHash,
  }
}

/** What a default costs the borrower's and the lender's records. */
export function advanceDefaulted(s: EngineState, a: AdvanceInput): void {
  const borrower = borrowerOf(s, a.borrower)
  reputation.borrowerDefaulted(borrower)
  touch(s, 'borrower', borrower.address)
  const lender = lenderOf(s, a.lender)
  reputation.lenderDefaulted(lender, s.config)
  lenderChanged(s, lender)
}

/**
 * The ledger side of a liquidation the advance machine has taken: the lender, the reserve, the borrower's shortfall.
 * The collateral pays as the contract pays it (issue 9, case 5): the lender's part of what is owed first, then the
 * reserve's share of the fee, which funds the reserve; so the lender recovers what reached its wallet (collateral up
 * to its part, backing, reserve), never the reserve's share.
 */
export function applyLiquidation(s: EngineState, a: AdvanceInput, plan: LiquidationPlan, fromReserveAtomic: bigint): BorrowerRecord {
  const { fromCollateralAtomic } = recoveryAmounts(plan)
  const collateralToLender = minBig(fromCollateralAtomic, lenderRepaymentAtomic(a))
  const collateralToReserve = fromCollateralAtomic - collateralToLender
  const lender = lenderOf(s, a.lender)
  returnRecovery(lender, a.principalAtomic, plan.recoveredAtomic - collateralToReserve)
  lenderChanged(s, lender)
  if (collateralToReserve > 0n) fundReserve(s, a.network, a.asset, collateralToReserve)
  if (fromReserveAtomic > 0n) payFromReserve(s, a.network, a.asset, fromReserveAtomic)
  const borrower = borrowerOf(s, a.borrower)
  if (plan.shortfallAtomic > 0n) {
    reputation.borrowerShortfall(borrower, plan.shortfallAtomic, s.config)
    touch(s, 'borrower', borrower.address)
  }
  return borrower
}
