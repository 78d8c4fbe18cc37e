// Pure money and policy rules. The engine holds the control flow; these compute what should change.
import type { EngineConfig } from './config.ts'
import type { LenderRecord, RecoveryStep, RecoveryStepName, RiskBand } from './types.ts'

const BPS = 10_000n

/** Flat fee of an advance: ceil(amount * askBps / 10000), so a lender never earns less than its ask. */
export function feeAtomic(amountAtomic: bigint, askBps: number): bigint {
  return (amountAtomic * BigInt(askBps) + BPS - 1n) / BPS
}

/** Insurance share of a fee, rounded down so the lender keeps any remainder. */
export function insuranceAtomic(feeAtomicValue: bigint, insuranceShareBps: number): bigint {
  return (feeAtomicValue * BigInt(insuranceShareBps)) / BPS
}

export function applyBps(amountAtomic: bigint, bps: number): bigint {
  return (amountAtomic * BigInt(bps)) / BPS
}

export function clampBps(value: number): number {
  return Math.max(0, Math.min(10_000, Math.trunc(value)))
}

export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b
}

/** Coverage (source value + collateral) / amount in bps, capped so it fits a number. */
export function coverageBps(valueAtomic: bigint, collateralAtomic: bigint, amountAtomic: bigint): number {
  const bps = ((valueAtomic + collateralAtomic) * BPS) / amountAtomic
  return bps > 1_000_000_000n ? 1_000_000_000 : Number(bps)
}

const bandOrder: RiskBand[] = ['A', 'B', 'C']

/** Band from coverage, then one band worse when the borrower has any recorded default. */
export function riskBand(coverage: number, borrowerDefaults: number, config: EngineConfig): RiskBand {
  let index = coverage >= config.riskBandACoverageBps ? 0 : coverage >= config.riskBandBCoverageBps ? 1 : 2
  if (borrowerDefaults > 0) index = Math.min(2, index + 1)
  return bandOrder[index] as RiskBand
}

export interface OfferTerms {
  network: string
  asset: string
  amountAtomic: bigint
  maximumFeeAtomic: bigint
  riskBand: RiskBand
  durationSeconds: number
  supplierAddress: string
}

/** What a repayment pays the lender: principal and fee, less the fee's insurance share, which goes to the reserve. */
export function lenderRepaymentAtomic(a: { principalAtomic: bigint; feeAtomic: bigint; insuranceAtomic: bigint }): bigint {
  return a.principalAtomic + a.feeAtomic - a.insuranceAtomic
}

/**
 * The principal the lender has had back so far: its payments count against the principal first, then its fee part
 * (so a partial repayment returns deployed capital before it earns anything).
 */
export function principalRepaidAtomic(a: { principalAtomic: bigint; feeAtomic: bigint; insuranceAtomic: bigint; lenderOwedAtomic: bigint }): bigint {
  return minBig(a.principalAtomic, lenderRepaymentAtomic(a) - a.lenderOwedAtomic)
}

/**
 * How the contract splits tokens paid towards an advance (a repayment, a settlement, collateral in a liquidation):
 * the lender's part first, then the reserve's share, never more than is owed. The one definition of the insurance
 * share on every path where a fee reaches a lender.
 */
export function splitPayment(amountAtomic: bigint, owed: { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint }): { toLenderAtomic: bigint; toReserveAtomic: bigint } {
  const toLenderAtomic = minBig(amountAtomic, owed.lenderOwedAtomic)
  return { toLenderAtomic, toReserveAtomic: minBig(amountAtomic - toLenderAtomic, owed.reserveOwedAtomic) }
}

/**
 * Active: reliable enough to be matched, and not on probation (a lender holding its probation lease stands at the
 * minimum with its clock running). Inactive lenders keep their records and get only probation leases.
 */
export function isActiveLender(lender: LenderRecord, config: Pick<EngineConfig, 'lenderReliabilityMinBps'>): boolean {
  return lender.inactiveSinceMs === null && lender.reliabilityBps >= config.lenderReliabilityMinBps
}

export type ProbationConfig = Pick<EngineConfig, 'lenderReliabilityMinBps' | 'lenderProbationSeconds' | 'lenderProbationMaxSeconds'>

/**
 * Matched as if at the minimum reliability: active, or inactive for its probation wait (due its probation lease,
 * reputation.ts leaseGranted). The time and the misses are read only for an inactive lender: the book walk pays
 * nothing more for an active one than the null check.
 */
export function isEligibleLender(lender: LenderRecord, config: ProbationConfig, nowMs: number): boolean {
  if (isActiveLender(lender, config)) return true
  return nowMs >= (lender.inactiveSinceMs ?? lender.registeredAtMs) + probationWaitMs(lender, config)
}

/**
 * How long an inactive lender waits for its probation lease: `lenderProbationSeconds`, doubled for each probation
 * lease it left unpaid in a row (`probationMisses`), at most `lenderProbationMaxSeconds`.
 */
export function probationWaitMs(lender: Pick<LenderRecord, 'probationMisses'>, config: Pick<EngineConfig, 'lenderProbationSeconds' | 'lenderProbationMaxSeconds'>): number {
  return Math.min(config.lenderProbationSeconds * 2 ** lender.probationMisses, config.lenderProbationMaxSeconds) * 1000
}

/**
 * The lender's lease allowance (README "First leases"): `lenderLeaseAllowanceInitial`, plus one per lease it paid, less
 * one per lease it left unpaid. It may hold that many live leases at once, at least one (matching.ts); a miss that
 * brings it to 0 or below puts the lender below the reliability minimum (reputation.ts leaseMissed). Read from the
 * record's counts, so it survives a restart, and cancelled leases and refusals, which count neither, do not move it.
 */
export function leaseAllowance(lender: Pick<LenderRecord, 'leasesPaid' | 'leasesExpired'>, config: Pick<EngineConfig, 'lenderLeaseAllowanceInitial'>): number {
  return config.lenderLeaseAllowanceInitial + lender.leasesPaid - lender.leasesExpired
}

/** The policy filter of screenLender a lender fails for an offer's terms. */
export type PolicyMiss = 'asset' | 'riskBand' | 'duration' | 'liquidity' | 'supplier' | 'inactive' | 'fee'

/**
 * Policy filters of DESIGN section 5 except the per-offer exclusion and the wallet check, which the engine applies:
 * the fee when the lender is eligible for the terms, else the first filter it fails, in this order (matching.ts
 * whyNoLease counts lenders by it).
 */
export function screenLender(lender: LenderRecord, terms: OfferTerms, config: ProbationConfig, nowMs: number): bigint | PolicyMiss {
  if (lender.assets[terms.network] !== terms.asset) return 'asset'
  if (!lender.acceptedRiskBands.includes(terms.riskBand)) return 'riskBand'
  if (lender.maxDurationSeconds < terms.durationSeconds) return 'duration'
  if (lender.availableAtomic < terms.amountAtomic) return 'liquidity'
  // The supplier must be a third party: never the lender itself or its session key.
  if (lender.address === terms.supplierAddress || lender.sessionAddress === terms.supplierAddress) return 'supplier'
  if (!isEligibleLender(lender, config, nowMs)) return 'inactive'
  const fee = feeAtomic(terms.amountAtomic, lender.askBps)
  return fee <= terms.maximumFeeAtomic ? fee : 'fee'
}

/** screenLender's fee, or null when the lender is not eligible for the terms. */
export function eligibleFee(lender: LenderRecord, terms: OfferTerms, config: ProbationConfig, nowMs: number): bigint | null {
  const screened = screenLender(lender, terms, config, nowMs)
  return typeof screened === 'bigint' ? screened : null
}

export interface RecoverySources {
  revenueAtomic: bigint
  collateralAtomic: bigint
  backingAtomic: bigint
  reserveAtomic: bigint
}

/**
 * Recovery in the spec's order; each step takes what it can of what is still owed. With `lenderOwedAtomic` (the
 * lender's part of `owedAtomic`), as the contract: tokens from the source (revenue, collateral) pay the lender's part
 * first, then the reserve's share; the backing and the insurance reserve cover only what is left of the lender's part
 * (the reserve never pays its own share).
 */
export function planRecovery(owedAtomic: bigint, sources: RecoverySources, lenderOwedAtomic = owedAtomic): {
  steps: RecoveryStep[]
  recoveredAtomic: bigint
  shortfallAtomic: bigint
  stoppedAt: RecoveryStepName
} {
  const order: [RecoveryStepName, bigint][] = [
    ['source_revenue', sources.revenueAtomic],
    ['collateral', sources.collateralAtomic],
    ['backing_liquidation', sources.backingAtomic],
    ['insurance_reserve', sources.reserveAtomic],
  ]
  let remaining = owedAtomic
  let lenderLeft = lenderOwedAtomic
  let stoppedAt: RecoveryStepName = 'shortfall'
  const steps: RecoveryStep[] = []
  for (const [step, available] of order) {
    const tokens = step === 'source_revenue' || step === 'collateral'
    const takeable = tokens ? remaining : lenderLeft
    const take = takeable > 0n && available > 0n ? minBig(takeable, available) : 0n
    const covers = remaining > 0n && take === remaining
    remaining -= take
    lenderLeft -= tokens ? minBig(take, lenderLeft) : take
    steps.push({ step, amountAtomic: take })
    if (covers && stoppedAt === 'shortfall') stoppedAt = step
  }
  steps.push({ step: 'shortfall', amountAtomic: remaining })
  return { steps, recoveredAtomic: owedAtomic - remaining, shortfallAtomic: remaining, stoppedAt }
}
