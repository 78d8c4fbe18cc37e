// Advances: opening one on a paid lease, and what its repayment, default or liquidation does to the lender's,
// the reserve's and the borrower's records (the advance machine has taken the event first).
import { advanceMachine, type AdvanceContext, type AdvanceInput, type OfferContext, type RepaymentRecord, type TxProof } from '../../machines/index.ts'
import { expect, refused, send, startActor } from './actors.ts'
import { borrowerOf, principalBack, receivableDrawn } from './borrowers.ts'
import { advanceCommitmentAtomic, closeOnSource, offerCommitmentAtomic, releaseCapacity } from './capacity.ts'
import { touch, touchBorn } from './changes.ts'
import { fail } from './errors.ts'
import { ID_PREFIXES } from './ids.ts'
import { sameAddress } from './keys.ts'
import { fundReserve, lenderChanged, lenderOf, payFromReserve, returnAfterLoss, returnRecovery, returnRepayment } from './ledger.ts'
import * as reputation from './reputation.ts'
import type { RepaidFact } from './ports.ts'
import { insuranceAtomic, lenderRepaymentAtomic, minBig, principalRepaidAtomic, splitPayment } from './rules.ts'
import type { AdvanceActor, EngineState } from './state.ts'
import type { Address, AdvanceView, BorrowerRecord, EngineError, LiquidationPlan, RepaymentReceipt } from './types.ts'
import { viewOf } from './views.ts'

/** The advance a paid lease opens (the next advance id), on its job if the offer drew on one. */
export function openAdvance(
  s: EngineState,
  o: OfferContext,
  l: { leaseId: string; lender: Address; feeAtomic: bigint },
  payer: Address,
  payment: TxProof,
  nowMs: number,
  supplierPaymentHeld = false,
): AdvanceView {
  s.meta.advanceSeq += 1
  touch(s, 'meta', 'engine')
  const advanceId = `${ID_PREFIXES.advance}${s.meta.advanceSeq}`
  const insurance = insuranceAtomic(l.feeAtomic, s.config.insuranceShareBps)
  const terms = { principalAtomic: o.amountAtomic, feeAtomic: l.feeAtomic, insuranceAtomic: insurance }
  const input: AdvanceInput = {
    advanceId, advanceKey: o.offerKey, offerId: o.offerId, leaseId: l.leaseId, lender: l.lender, payer, borrower: o.borrower,
    // The terms field by field: a spread inside the literal takes V8's slow path (machines/advance.ts's context says).
    source: o.source, network: o.network, asset: o.asset, principalAtomic: terms.principalAtomic, feeAtomic: terms.feeAtomic,
    insuranceAtomic: terms.insuranceAtomic, supplierAddress: o.supplierAddress,
    // What the contract records at paySupplier (lenderOwed = amount + fee - reserveShare, reserveOwed = reserveShare).
    lenderOwedAtomic: lenderRepaymentAtomic(terms), reserveOwedAtomic: insurance,
    payment, fundedAtMs: nowMs, dueAtMs: o.dueAtMs,
  }
  // Only on the rare path (a supplier the token refuses): every other advance keeps the literal's shape.
  if (supplierPaymentHeld) input.supplierPaymentHeld = true
  const advance = startActor(advanceMachine, input, s.actorRoot)
  touchBorn(s, 'advance', advanceId)
  s.advances.set(advanceId, advance)
  s.advanceIdByKey.set(input.advanceKey, advanceId)
  s.backingAdvanceOpened(o.source, advanceId)
  const job = o.source.kind === 'job' ? s.jobs.get(o.source.id) : undefined
  if (job) expect(s, 'job', job, { type: 'ADVANCE_OPENED', advanceId, nowMs })
  if (o.source.kind === 'job') {
    const borrower = borrowerOf(s, o.borrower)
    receivableDrawn(borrower, o, o.amountAtomic)
    touch(s, 'borrower', borrower.address)
  }
  // The offer held its maximum fee; the advance holds the fee its lender charges (capacity.ts): the rest goes back.
  // After ADVANCE_OPENED, so that a failed job this advance keeps open does not end on the release.
  const unchargedFeeAtomic = offerCommitmentAtomic(o) - advanceCommitmentAtomic(input)
  if (unchargedFeeAtomic > 0n) releaseCapacity(s, o.source, unchargedFeeAtomic, nowMs)
  // Paid under a closing offer's lease before its failed job's failJob was mined (the contract refuses it after):
  // the advance is the failed job's, defaulted as failJob defaulted the others, and recovered as they are.
  if (job?.getSnapshot().matches('defaulted')) {
    expect(s, 'advance', advance, { type: 'DEFAULT', reason: 'job_failed', nowMs })
    advanceDefaulted(s, input)
  }
  return viewOf<AdvanceView>(advance.getSnapshot())
}

/**
 * The ledger and track-record side of one payment the advance machine has taken (REPAY); `a` is the advance before
 * it. The lender's principal comes back first, then its fee; the reserve's share funds the reserve (after a
 * shortfall it also repays what the reserve paid in the recovery: the reserve is subrogated). Reputation rises with
 * each payment by its share of the advance (reputation.ts); the counts take a repayment once, when nothing is owed.
 */
export function applyRepayment(s: EngineState, a: AdvanceContext, repayment: RepaymentRecord): RepaymentReceipt {
  // What the payment leaves owed, with the terms principalRepaidAtomic reads: not a spread of the whole advance with
  // two keys replaced (V8's slow path, about 1 µs: issue 11).
  const after = {
    principalAtomic: a.principalAtomic, feeAtomic: a.feeAtomic, insuranceAtomic: a.insuranceAtomic,
    lenderOwedAtomic: repayment.lenderOwedAfterAtomic, reserveOwedAtomic: repayment.reserveOwedAfterAtomic,
  }
  const fullyRepaid = after.lenderOwedAtomic === 0n && after.reserveOwedAtomic === 0n
  const lender = lenderOf(s, a.lender)
  // After a liquidation (a shortfall) no principal is deployed any more: what comes back reduces the lender's loss.
  const principalReturned = principalRepaidAtomic(after) - principalRepaidAtomic(a)
  if (a.recovery === null) returnRepayment(lender, principalReturned, repayment.lenderAmountAtomic)
  else returnAfterLoss(lender, principalReturned, repayment.lenderAmountAtomic)
  const paid = repaidShare(a, after)
  reputation.lenderRepayment(lender, a, paid, s.config)
  lenderChanged(s, lender)
  if (repayment.reserveAmountAtomic > 0n) fundReserve(s, a.network, a.asset, repayment.reserveAmountAtomic)
  const borrower = borrowerOf(s, a.borrower)
  reputation.borrowerRepayment(borrower, a, paid, s.config)
  const shortfallRepaid = shortfallRepaidAtomic(a, after)
  if (shortfallRepaid > 0n) borrower.shortfallAtomic = borrower.shortfallAtomic > shortfallRepaid ? borrower.shortfallAtomic - shortfallRepaid : 0n
  principalBack(borrower, a, principalReturned, true)
  touch(s, 'borrower', borrower.address)
  return repaymentReceiptOf(a, repayment, fullyRepaid)
}

/**
 * What one payment after a liquidation with a shortfall repays of that shortfall: the shortfall still unpaid is the
 * part of it the advance still owes, min(shortfall, owed), so a payment repays min(shortfall, owed before) − min(shortfall,
 * owed after), and the payments in full sum to the shortfall (the advance owes at least the shortfall after its
 * liquidation: the shortfall, plus what the reserve paid, to which the borrower is indebted too). The borrower's
 * `shortfallAtomic` is what it still owes of its shortfalls (the score counts it while above 0): before, it kept the
 * liquidation's shortfall for good, repaid or not (money26's finding: a settlement mined right after the liquidation
 * pays the shortfall, and the borrower's record still said the debt stayed unpaid). The penalty stays.
 */
export function shortfallRepaidAtomic(before: Pick<AdvanceContext, 'recovery' | 'lenderOwedAtomic' | 'reserveOwedAtomic'>, after: Pick<AdvanceContext, 'lenderOwedAtomic' | 'reserveOwedAtomic'>): bigint {
  const shortfall = before.recovery?.shortfallAtomic ?? 0n
  if (shortfall === 0n) return 0n
  return minBig(shortfall, before.lenderOwedAtomic + before.reserveOwedAtomic) - minBig(shortfall, after.lenderOwedAtomic + after.reserveOwedAtomic)
}

/** What the advance's payments had covered of its total (principal + fee) before this one and after it. */
function repaidShare(before: AdvanceContext, after: Pick<AdvanceContext, 'lenderOwedAtomic' | 'reserveOwedAtomic'>): reputation.AdvanceRepaid {
  const totalAtomic = before.principalAtomic + before.feeAtomic
  return {
    paidBeforeAtomic: totalAtomic - before.lenderOwedAtomic - before.reserveOwedAtomic,
    paidAfterAtomic: totalAtomic - after.lenderOwedAtomic - after.reserveOwedAtomic,
    totalAtomic,
  }
}

export function repaymentReceiptOf(
  a: Pick<AdvanceContext, 'advanceId' | 'lender' | 'network' | 'asset' | 'principalAtomic' | 'feeAtomic'>,
  repayment: RepaymentRecord,
  fullyRepaid = repayment.lenderOwedAfterAtomic === 0n && repayment.reserveOwedAfterAtomic === 0n,
): RepaymentReceipt {
  return {
    advanceId: a.advanceId, lender: a.lender, network: a.network, asset: a.asset, principalAtomic: a.principalAtomic,
    feeAtomic: a.feeAtomic, lenderAmountAtomic: repayment.lenderAmountAtomic,
    reserveAmountAtomic: repayment.reserveAmountAtomic, txHash: repayment.txHash, logIndex: repayment.logIndex,
    lenderOwedAtomic: repayment.lenderOwedAfterAtomic, reserveOwedAtomic: repayment.reserveOwedAfterAtomic, repaid: fullyRepaid,
  }
}

/**
 * One verified Repaid fact of any amount (from a report or from the chain follower): the advance's owed amounts go
 * down, the ledger follows (lender's capital, reserve), and the advance closes on its source only once nothing is
 * owed. The same fact twice (by its proof, network:txHash:logIndex) answers the same receipt and changes nothing.
 * Does not drain: the caller (a command, or a batch of chain facts) drains once.
 */
export function applyRepaidFact(s: EngineState, fact: RepaidFact, nowMs: number): { ok: true; value: RepaymentReceipt } | { ok: false; error: EngineError } {
  const advance = s.advances.get(fact.advanceId) as AdvanceActor | undefined
  if (!advance) return fail('not_found', 'advance_not_found', `advance ${fact.advanceId} is not live`)
  const a = advance.getSnapshot().context
  const counted = a.repayments.find((r) => r.network === fact.network && r.txHash === fact.txHash && r.logIndex === fact.logIndex)
  if (counted) return { ok: true, value: repaymentReceiptOf(a, counted) }
  // On chain the advance's lender is the session wallet that paid the supplier: that is who a Repaid pays.
  if (fact.network !== a.network || !sameAddress(fact.lender, a.payer)) {
    return fail('invalid', 'repayment_mismatch', 'the repayment is on another network or to another lender')
  }
  const repayment: RepaymentRecord = {
    kind: 'repaid', network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex, payer: fact.payer,
    lenderAmountAtomic: fact.amountAtomic, reserveAmountAtomic: fact.reserveAmountAtomic,
    lenderOwedAfterAtomic: fact.lenderOwedAtomic, reserveOwedAfterAtomic: fact.reserveOwedAtomic,
  }
  const repaid = send(s, 'advance', advance, { type: 'REPAY', repayment, nowMs })
  if (!repaid.accepted) {
    if (repaid.code !== 'repayment_mismatch') return refused('advance', a.advanceId, repaid)
    return fail('conflict', 'repayment_mismatch',
      `advance ${a.advanceId} owes ${a.lenderOwedAtomic} to the lender and ${a.reserveOwedAtomic} to the reserve; this repayment ` +
      `(${fact.amountAtomic} + ${fact.reserveAmountAtomic}, leaving ${fact.lenderOwedAtomic} + ${fact.reserveOwedAtomic}) is not the next one on it: ` +
      'an earlier repayment of the advance is counted first')
  }
  const receipt = applyRepayment(s, a, repayment)
  // A shortfall advance closed on its source at its liquidation (as the contract resolves it there).
  if (receipt.repaid && a.recovery === null) closeOnSource(s, a, { revenueUsedAtomic: 0n, collateralUsedAtomic: 0n, backingUsedAtomic: 0n }, nowMs)
  return { ok: true, value: receipt }
}

/** A settlement (or any payment in full) of what the advance still owes, as one repayment record. */
export function paymentInFull(a: AdvanceContext, proof: { kind: RepaymentRecord['kind']; network: string; txHash: `0x${string}`; logIndex: number | null; payer: Address | null }): RepaymentRecord {
  const { toLenderAtomic, toReserveAtomic } = splitPayment(a.lenderOwedAtomic + a.reserveOwedAtomic, a)
  // A literal in RepaymentRecord's key order (the advance stores it), not a spread of `proof` with keys added.
  return {
    kind: proof.kind, network: proof.network, txHash: proof.txHash, logIndex: proof.logIndex, payer: proof.payer,
    lenderAmountAtomic: toLenderAtomic, reserveAmountAtomic: toReserveAtomic, lenderOwedAfterAtomic: 0n, reserveOwedAfterAtomic: 0n,
  }
}

/** What a default costs the borrower's and the lender's records. */
export function advanceDefaulted(s: EngineState, a: AdvanceInput): void {
  const borrower = borrowerOf(s, a.borrower)
  reputation.borrowerDefaulted(borrower, s.config)
  touch(s, 'borrower', borrower.address)
  const lender = lenderOf(s, a.lender)
  reputation.lenderDefaulted(lender, a, s.config)
  lenderChanged(s, lender)
}

/**
 * The ledger side of a liquidation the advance machine has taken (`a` is the advance before it): the lender, the
 * reserve, the borrower's shortfall. As the contract does: tokens from the source (revenue, collateral) pay the
 * lender's part first, then the reserve's share; backing and the reserve cover only the lender's part.
 */
export function applyLiquidation(s: EngineState, a: AdvanceContext, plan: LiquidationPlan, fromReserveAtomic: bigint): BorrowerRecord {
  const amountOf = (step: string): bigint => plan.steps.find((st) => st.step === step)?.amountAtomic ?? 0n
  const tokens = splitPayment(amountOf('source_revenue') + amountOf('collateral'), a)
  const lender = lenderOf(s, a.lender)
  const principalDeployed = a.principalAtomic - principalRepaidAtomic(a)
  returnRecovery(lender, principalDeployed, tokens.toLenderAtomic + amountOf('backing_liquidation') + fromReserveAtomic)
  lenderChanged(s, lender)
  if (tokens.toReserveAtomic > 0n) fundReserve(s, a.network, a.asset, tokens.toReserveAtomic)
  if (fromReserveAtomic > 0n) payFromReserve(s, a.network, a.asset, fromReserveAtomic)
  const borrower = borrowerOf(s, a.borrower)
  // The source's tokens recovered the principal they paid the lender: no longer owed on the receivable, not repaid.
  const recoveredPrincipal = minBig(principalDeployed, tokens.toLenderAtomic)
  if (a.source.kind === 'job' && recoveredPrincipal > 0n) {
    principalBack(borrower, a, recoveredPrincipal, false)
    touch(s, 'borrower', borrower.address)
  }
  if (plan.shortfallAtomic > 0n) {
    reputation.borrowerShortfall(borrower, plan.shortfallAtomic, s.config)
    touch(s, 'borrower', borrower.address)
  }
  return borrower
}
