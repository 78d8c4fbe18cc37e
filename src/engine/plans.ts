// The money a transaction must move before it is sent: a supplier payment's terms, a repayment, a job's settlement,
// a liquidation's recovery steps. Queries only: nothing here changes the engine.
import { leaseMachine, refusalCode, leaseRefusals, type AdvanceContext, type RecoveryRecord } from '../../machines/index.ts'
import { fail, forbidden } from './errors.ts'
import { reserveId, sameAddress } from './keys.ts'
import { planRecovery } from './rules.ts'
import type { AdvanceActor, EngineState, JobActor } from './state.ts'
import type {
  Address, EngineError, JobSettlementPlan, LeaseView, LiquidationPlan, OfferView, RepaymentPlan, SupplierPaymentTerms,
} from './types.ts'

/** A payment report against a lease in `state`: refused with the lease machine's code for PAY there. */
export function leaseRefusal(state: 'expired' | 'paid', message: string): { ok: false; error: EngineError } {
  return fail('conflict', refusalCode(leaseMachine, leaseRefusals, state, 'PAY'), message)
}

/**
 * What the reporting lender's payment on the offer must show: the terms of the live lease it holds. A lender whose
 * lease there ended unpaid learns that it expired; one that never held one, that it has none.
 */
export function supplierPaymentTerms(
  s: EngineState,
  input: { offerId: string; lender: Address; caller: Address },
): { ok: true; value: SupplierPaymentTerms } | { ok: false; error: EngineError } {
  if (!sameAddress(input.lender, input.caller)) {
    return forbidden('a supplier payment is reported by the lender that paid: sign in as the body\'s lender')
  }
  const offer = s.offers.get(input.offerId)
  if (!offer) return fail('not_found', 'offer_not_found', `offer ${input.offerId} is not live`)
  const o = offer.getSnapshot().context
  const held = o.currentLeaseId ? s.leases.get(o.currentLeaseId)?.getSnapshot().context : undefined
  if (held && sameAddress(held.lender, input.lender)) {
    const { leaseId, network, asset, payer, supplierAddress, amountAtomic } = held
    return { ok: true, value: { offerId: o.offerId, leaseId, network, asset, payer, supplierAddress, amountAtomic } }
  }
  // An ended lease left memory; that it ended unpaid is on the offer (excluded lenders), and it ended expired.
  if (o.excludedLenders.some((l) => sameAddress(l, input.lender))) return leaseRefusal('expired', `the lease of ${input.lender} on offer ${o.offerId} expired`)
  return fail('conflict', 'no_lease', `offer ${o.offerId} has no lease to lender ${input.lender}`)
}

/**
 * Why a payment report on an offer that reached a final state (it left memory; the caller reads it from the store)
 * is refused: the reporting lender's latest lease there answers PAY (lease_expired, lease_not_live), or there is none.
 */
export function supplierPaymentOnClosedOffer(offer: OfferView, leaseOf: (leaseId: string) => LeaseView | undefined, lender: Address): EngineError {
  for (const leaseId of [...offer.leaseIds].reverse()) {
    const lease = leaseOf(leaseId)
    if (lease === undefined || !sameAddress(lease.lender, lender)) continue
    // A lease outlives its offer only between the offer's end and the commit that ends the lease with it.
    if (lease.state === 'leased') return { class: 'conflict', code: 'offer_closed', message: `offer ${offer.offerId} has reached a final state` }
    return leaseRefusal(lease.state, `the lease ${lease.leaseId} of offer ${offer.offerId} is ${lease.state}`).error
  }
  return { class: 'conflict', code: 'no_lease', message: `offer ${offer.offerId} has no lease to lender ${lender}` }
}

/** What repaying the advance in full pays now: what it still owes the lender, and the reserve's share still owed. */
export function repaymentPlan(a: AdvanceContext): RepaymentPlan {
  return {
    advanceId: a.advanceId, network: a.network, asset: a.asset, lender: a.lender,
    amountAtomic: a.lenderOwedAtomic,
    reserveAmountAtomic: a.reserveOwedAtomic,
  }
}

/**
 * The job's advances liquidated with a shortfall (past due while the job was open): they left the job's open advances
 * at their liquidation, but the contract's settleJob pays every advance of the job that still owes, so they are paid
 * in full from the escrow too.
 */
function shortfallsOn(s: EngineState, jobId: string): string[] {
  const ids: string[] = []
  for (const [advanceId, advance] of s.advances) {
    const a = advance.getSnapshot().context
    if (a.recovery !== null && a.source.kind === 'job' && a.source.id === jobId) ids.push(advanceId)
  }
  return ids
}

/**
 * What settling the job pays: each open advance in full, then the reserve share; or why it cannot be settled. `mined`:
 * the settlement is on chain already (recording it), so a lease on the job can no longer be paid (see below).
 */
export function jobSettlement(s: EngineState, job: JobActor, mined = false): { ok: true; value: JobSettlementPlan } | { ok: false; error: EngineError } {
  const j = job.getSnapshot().context
  // A waiting offer does not hold the job open: the completion declines it (completeJob), or its borrower could keep
  // the escrow from repaying the job's lenders by asking again and again. A leased one does, for at most its lease:
  // its authorization stays payable on chain until the deadline, and a payment under it funds an advance the
  // settlement must pay. Not once the settlement is mined: a payment before it would have made it revert (its advance
  // count), and the contract refuses every one after it (JobNotOpen); the completion closes such an offer.
  for (const offer of mined ? [] : s.offers.values()) {
    const snap = offer.getSnapshot()
    const src = snap.context.source
    if (src.kind === 'job' && src.id === j.jobId && !snap.matches('offered')) {
      return fail('conflict', 'job_has_leased_offer', `offer ${snap.context.offerId} on the job is leased: complete the job once its lease is paid or over`)
    }
  }
  const advances: JobSettlementPlan['advances'] = []
  let toLenders = 0n
  let toReserve = 0n
  for (const advanceId of [...j.advanceIds, ...shortfallsOn(s, j.jobId)]) {
    const plan = repaymentPlan((s.advances.get(advanceId) as AdvanceActor).getSnapshot().context)
    advances.push({ advanceId, lender: plan.lender, amountAtomic: plan.amountAtomic, reserveAmountAtomic: plan.reserveAmountAtomic })
    toLenders += plan.amountAtomic
    toReserve += plan.reserveAmountAtomic
  }
  const held = j.receivableAtomic - j.revenueUsedAtomic + j.collateralAtomic - j.collateralUsedAtomic
  if (toLenders + toReserve > held) {
    return fail('conflict', 'settlement_underfunded', 'the escrow and collateral do not cover the advances; liquidate instead')
  }
  return {
    ok: true,
    value: {
      jobId: j.jobId, network: j.network, asset: j.asset, borrower: j.borrower, advances,
      toLendersAtomic: toLenders, toReserveAtomic: toReserve, toBorrowerAtomic: held - toLenders - toReserve,
    },
  }
}

/** What recovering the advance would take now, step by step; whether it may be liquidated is the machine's say. */
export function liquidationPlan(s: EngineState, advance: AdvanceActor): LiquidationPlan {
  const a = advance.getSnapshot().context
  // The source's revenue is never a recovery, as the contract's liquidate takes none (README "Where every token goes"):
  // a failed job's escrow went back to its client at failJob (it earned nothing), and an open job's escrow waits for
  // its completion, whose settlement pays the job's advances first, liquidated ones included.
  const revenue = 0n
  let collateral = 0n
  let backing = 0n
  if (a.source.kind === 'job') {
    const job = s.jobs.get(a.source.id)
    if (job) {
      const j = job.getSnapshot().context
      collateral = j.collateralAtomic - j.collateralUsedAtomic
    }
  } else {
    const src = s.sources.get(a.source.id)
    if (src) backing = src.liquidationValueAtomic - src.backingUsedAtomic
  }
  const reserve = s.reserves.get(reserveId(a.network, a.asset))?.balanceAtomic ?? 0n
  // What is still owed (after any partial repayment), the lender's part first: backing and the reserve cover only the
  // lender's part, as the contract's liquidate does.
  const owed = a.lenderOwedAtomic + a.reserveOwedAtomic
  const recovery = planRecovery(owed, { revenueAtomic: revenue, collateralAtomic: collateral, backingAtomic: backing, reserveAtomic: reserve }, a.lenderOwedAtomic)
  return {
    advanceId: a.advanceId, jobId: a.source.kind === 'job' ? a.source.id : null, sourceId: a.source.kind === 'backing' ? a.source.id : null,
    lender: a.lender, borrower: a.borrower, network: a.network, asset: a.asset, owedAtomic: owed, ...recovery,
  }
}

/** The amounts of a liquidation plan's recovery steps, by name (a step the plan does not take recovers nothing). */
export function recoveryAmounts(plan: LiquidationPlan): { fromRevenueAtomic: bigint; fromCollateralAtomic: bigint; fromBackingAtomic: bigint; fromReserveAtomic: bigint } {
  const amountOf = (step: string): bigint => plan.steps.find((st) => st.step === step)?.amountAtomic ?? 0n
  return {
    fromRevenueAtomic: amountOf('source_revenue'), fromCollateralAtomic: amountOf('collateral'),
    fromBackingAtomic: amountOf('backing_liquidation'), fromReserveAtomic: amountOf('insurance_reserve'),
  }
}

/** A liquidation plan whose steps are the amounts the contract executed (no revenue step: a liquidation takes none). */
export function executedPlan(
  plan: LiquidationPlan,
  executed: { fromCollateralAtomic: bigint; fromBackingAtomic: bigint; fromReserveAtomic: bigint; shortfallAtomic: bigint },
): LiquidationPlan {
  const steps: LiquidationPlan['steps'] = [
    { step: 'source_revenue', amountAtomic: 0n },
    { step: 'collateral', amountAtomic: executed.fromCollateralAtomic },
    { step: 'backing_liquidation', amountAtomic: executed.fromBackingAtomic },
    { step: 'insurance_reserve', amountAtomic: executed.fromReserveAtomic },
    { step: 'shortfall', amountAtomic: executed.shortfallAtomic },
  ]
  const recovered = executed.fromCollateralAtomic + executed.fromBackingAtomic + executed.fromReserveAtomic
  let covered = 0n
  let stoppedAt: LiquidationPlan['stoppedAt'] = 'shortfall'
  for (const step of steps.slice(0, 4)) {
    covered += step.amountAtomic
    if (step.amountAtomic > 0n && covered === plan.owedAtomic && executed.shortfallAtomic === 0n) {
      stoppedAt = step.step
      break
    }
  }
  return { ...plan, steps, recoveredAtomic: recovered, shortfallAtomic: executed.shortfallAtomic, stoppedAt }
}

/** The recovery an executed liquidation records: the plan's steps, by name. */
export function recoveryOf(plan: LiquidationPlan, network: string, txHash: `0x${string}`): RecoveryRecord {
  return { network, txHash, owedAtomic: plan.owedAtomic, ...recoveryAmounts(plan), shortfallAtomic: plan.shortfallAtomic }
}
