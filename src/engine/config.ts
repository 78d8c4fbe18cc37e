// Engine configuration: every rule's threshold and every limit, named, with its default and the reason for it.
import type { Address } from '../../machines/types.ts'
import { matchChangesMax } from './dispatch.ts'

export interface EngineConfig {
  /** Share of a job's receivable that may be advanced (bps). */
  jobAdvanceRateBps: number
  /** Duration of an advance drawn on a backing source (jobs run until their due time). */
  backingDurationSecondsDefault: number
  /** How long a lender holds a lease before it expires unpaid: the paySupplier deadline. */
  leaseTtlMs: number
  /**
   * The least time a borrower has to repay an advance: an offer is not leased, and no lease is payable, later than
   * this long before the advance's due time (a job's due time); a request on a job due sooner is declined.
   */
  creditPeriodMinMs: number
  /** How long an offer waits for a lender before dispatch expires it. */
  offerTtlMs: number
  /** Share of each fee routed to the insurance reserve of (network, asset) when the advance is repaid (bps). */
  insuranceShareBps: number
  /** Risk bands from coverage = (source value + collateral) / amount, in bps: A at or above the first, B at or above the second, else C. */
  riskBandACoverageBps: number
  riskBandBCoverageBps: number
  /** Lender reputation and reliability start here unless the caller supplies evidence-based values. */
  lenderReputationInitialBps: number
  lenderReliabilityInitialBps: number
  borrowerReputationInitialBps: number
  /** Reputation and reliability updates (bps, clamped to 0..10000). */
  lenderReputationRepaidRewardBps: number
  lenderReputationDefaultPenaltyBps: number
  lenderReputationMissPenaltyBps: number
  lenderReliabilityMissPenaltyBps: number
  lenderReliabilityPaidRewardBps: number
  /** Weight of one uptime observation in the reliability moving average (bps). */
  lenderReliabilityUptimeWeightBps: number
  /** A lender below this reliability is inactive: matching skips it, except for its probation lease. */
  lenderReliabilityMinBps: number
  /**
   * How long a lender stays inactive (since it fell below the minimum, or its last miss below it) before it may be
   * granted one lease (its probation lease), which sets its reliability to the minimum and restarts the wait: paid, it
   * is active again (+ the paid reward); missed, it falls below again and waits again. Without it an inactive lender
   * never got a lease, so its reliability, which lease outcomes move, never rose.
   */
  lenderProbationSeconds: number
  /**
   * The wait before a probation lease doubles after each probation lease the lender left unpaid in a row (1 h, 2 h,
   * 4 h, ...) up to this, and a paid lease resets it (reputation.ts leaseMissed, leasePaid). Else lenders that never
   * pay, at 0 bps first in the books, got a lease each every probation for ever: each holds a borrower's offer for the
   * lease's life and takes one of its leasesPerOfferMax, so 16 of them used up an offer's leases every hour (an
   * adversary's finding, test/engine/probation-griefing.test.ts).
   */
  lenderProbationMaxSeconds: number
  /**
   * A lender's lease allowance: the live leases it may hold at once is this plus one per lease it paid, less one per
   * lease it left unpaid (at least one); a lease left unpaid that brings the allowance to 0 or below puts the lender
   * below `lenderReliabilityMinBps` at once (rules.ts leaseAllowance, reputation.ts leaseMissed). So a new lender
   * holds one lease until it pays one, and each borrower's offer a lender leaves unpaid costs it a lease it paid
   * before. Else a throw-away lender at 0 bps, first in the books, held as many offers at once as its wallet covered,
   * and about 9 in a row, before its reliability fell below the minimum, then did it again from a fresh wallet with
   * the same capital (an adversary's finding, test/engine/first-leases.test.ts).
   */
  lenderLeaseAllowanceInitial: number
  borrowerReputationRepaidRewardBps: number
  borrowerReputationFailurePenaltyBps: number
  borrowerReputationShortfallPenaltyBps: number
  /** Each of a borrower's advances that defaults (its job failed, or liquidated past due) costs this much. */
  borrowerReputationDefaultPenaltyBps: number
  /**
   * Uptime: the share of a lender's last N lease outcomes (paid in time vs expired unpaid) that were paid, kept in the
   * lender record (recentLeaseOutcomes); every N outcomes it is one uptime observation of reliability.
   */
  lenderUptimeWindowLeases: number
  /** A suspension lifts (in dispatch) once this long has passed and the borrower owes nothing on a defaulted advance. */
  borrowerSuspensionMinSeconds: number
  /**
   * The least principal of one advance, per network slug and asset symbol (atomic units); a request for less is
   * refused 422 amount_below_minimum. A lease must be worth its lender's gas: a lender leaves a dust lease unpaid,
   * and each unpaid expiry costs it reliability, so dust requests would put it below the active minimum for free. The
   * service sets it for every configured asset (src/chain/config.ts advanceMinAtomicOf); an asset not named has none.
   */
  advanceMinAtomic: Readonly<Record<string, Readonly<Record<string, bigint>>>>
  /**
   * The principal at which an advance moves its lender's reputation by a whole step, per network slug and asset symbol
   * (atomic units): a repaid advance earns lenderReputationRepaidRewardBps and a defaulted one costs
   * lenderReputationDefaultPenaltyBps times min(principal, this) / this, rounded down (reputation.ts principalStepBps),
   * so the least advance lent to oneself buys nothing and a stranger's default on it costs little; a repayment's
   * borrowerReputationRepaidRewardBps is weighed the same way (its borrower's penalties are not). The service sets
   * the score's repaymentMinPrincipalUnits whole units of each asset (src/score/settings.ts repaymentMinimumsOf), the
   * principal a repayment counts at in the credit score; an asset not named moves by whole steps whatever the principal.
   */
  lenderReputationFullStepAtomic: Readonly<Record<string, Readonly<Record<string, bigint>>>>
  /** Who may complete or fail any job and liquidate any advance, besides the job's client and the advance's lender. */
  operators: readonly Address[]
  /**
   * The service's own addresses on each network (slug -> lower-case address -> what it is: the credit contract, the
   * asset tokens, the registries, the operator and lease-signer keys): never a supplier (src/engine/suppliers.ts).
   */
  serviceAddresses: Readonly<Record<string, Readonly<Record<string, string>>>>
  /** Limits. */
  lendersScannedPerMatchMax: number
  leasesPerOfferMax: number
  offersDispatchedPerCallMax: number
  networksPerLenderMax: number
  /** Live (not yet final) offers one borrower may hold; a request beyond it is refused 409 live_offers_limit. */
  liveOffersPerBorrowerMax: number
  /**
   * Advances one job may carry at once, its open advances and the borrower's live offers counted together; a request
   * beyond it is refused 409 job_advances_limit. CreditFacilityV2.settleJob names every advance of the job that still
   * owes in one transaction, about 21,700 gas each (bench/settle-gas.ts: 500 took 10.84M gas, 800 17.28M): 500 fit a
   * 30M block and the 16,777,216 gas one transaction may use since EIP-7825; a job with 800 could never be settled.
   */
  advancesPerJobMax: number
  /**
   * Changes (actors and records) one command may make. Dispatch and the chain follower's batch time out leases,
   * expire offers and match only while their next step fits (src/engine/dispatch.ts `roomFor`), and leave the rest
   * due for the next call: a command never makes a commit larger than the store takes (its changes per commit,
   * CHANGES_PER_COMMIT_MAX_DEFAULT in src/store/store.ts, which the service checks at start-up), and one command's
   * work, a turn of the event loop, stays bounded. At least one matching attempt must fit.
   */
  changesPerCommandMax: number
  /**
   * Lease time-outs, and stale-offer expiries, one command takes at most (each kind). Timers fall due in bursts: a
   * chain's time moves in whole-second blocks, so every lease of that second is over at once (a time-out and its
   * offer's expiry about 100 us of CPU together, more with the GC they bring). At most this many per command keeps one
   * command to a few ms, and the dispatch ticker goes on with the rest on the next turns of the event loop, between
   * requests: a burst delays a request by one command, not by all of it. More, smaller commands cost no more CPU in
   * all (README, "Bounded work per command").
   */
  timeOutsPerCommandMax: number
}

export const defaultEngineConfig: Readonly<EngineConfig> = Object.freeze({
  jobAdvanceRateBps: 8000,
  backingDurationSecondsDefault: 30 * 24 * 3600,
  leaseTtlMs: 30_000,
  offerTtlMs: 10 * 60_000,
  creditPeriodMinMs: 60_000,
  insuranceShareBps: 1000,
  riskBandACoverageBps: 20_000,
  riskBandBCoverageBps: 12_500,
  lenderReputationInitialBps: 5000,
  lenderReliabilityInitialBps: 5000,
  borrowerReputationInitialBps: 5000,
  lenderReputationRepaidRewardBps: 50,
  lenderReputationDefaultPenaltyBps: 100,
  lenderReputationMissPenaltyBps: 50,
  lenderReliabilityMissPenaltyBps: 500,
  lenderReliabilityPaidRewardBps: 100,
  lenderReliabilityUptimeWeightBps: 1000,
  lenderReliabilityMinBps: 1000,
  lenderProbationSeconds: 3600,
  lenderProbationMaxSeconds: 30 * 24 * 3600,
  lenderLeaseAllowanceInitial: 1,
  borrowerReputationRepaidRewardBps: 100,
  borrowerReputationFailurePenaltyBps: 1000,
  borrowerReputationShortfallPenaltyBps: 2000,
  borrowerReputationDefaultPenaltyBps: 500,
  lenderUptimeWindowLeases: 20,
  borrowerSuspensionMinSeconds: 7 * 24 * 3600,
  advanceMinAtomic: {},
  lenderReputationFullStepAtomic: {},
  operators: [],
  serviceAddresses: {},
  lendersScannedPerMatchMax: 4096,
  leasesPerOfferMax: 16,
  offersDispatchedPerCallMax: 1000,
  liveOffersPerBorrowerMax: 100,
  advancesPerJobMax: 500,
  networksPerLenderMax: 16,
  changesPerCommandMax: 10_000,
  timeOutsPerCommandMax: 8,
})

/**
 * The least advance in `asset` on `network` (advanceMinAtomic; 1 atomic unit when not named): the least a request may
 * ask, and what a lender's session wallet must hold to be in that book (matching.ts walletFunded, walkBook).
 */
export function leastAdvanceAtomic(config: Pick<EngineConfig, 'advanceMinAtomic'>, network: string, asset: string): bigint {
  return config.advanceMinAtomic[network]?.[asset] ?? 1n
}

export function resolveConfig(partial: Partial<EngineConfig> = {}): EngineConfig {
  const config = { ...defaultEngineConfig, ...partial }
  const bpsKeys = [
    'jobAdvanceRateBps', 'insuranceShareBps', 'lenderReputationInitialBps', 'lenderReliabilityInitialBps',
    'borrowerReputationInitialBps', 'lenderReliabilityUptimeWeightBps', 'lenderReliabilityMinBps',
    'lenderReputationRepaidRewardBps', 'lenderReputationDefaultPenaltyBps', 'lenderReputationMissPenaltyBps',
    'lenderReliabilityMissPenaltyBps', 'lenderReliabilityPaidRewardBps', 'borrowerReputationRepaidRewardBps',
    'borrowerReputationFailurePenaltyBps', 'borrowerReputationShortfallPenaltyBps', 'borrowerReputationDefaultPenaltyBps',
  ] as const
  for (const key of bpsKeys) {
    if (!Number.isInteger(config[key]) || config[key] < 0 || config[key] > 10_000) {
      throw new RangeError(`engine config ${key} must be an integer in 0..10000`)
    }
  }
  if (!Number.isInteger(config.lenderProbationSeconds) || config.lenderProbationSeconds < 0) throw new RangeError('engine config lenderProbationSeconds must be a non-negative integer')
  if (!Number.isInteger(config.lenderProbationMaxSeconds) || config.lenderProbationMaxSeconds < config.lenderProbationSeconds) {
    throw new RangeError('engine config lenderProbationMaxSeconds must be an integer >= lenderProbationSeconds')
  }
  if (!Number.isSafeInteger(config.lenderLeaseAllowanceInitial) || config.lenderLeaseAllowanceInitial < 1) throw new RangeError('engine config lenderLeaseAllowanceInitial must be a positive integer')
  if (!Number.isInteger(config.creditPeriodMinMs) || config.creditPeriodMinMs < 0) throw new RangeError('engine config creditPeriodMinMs must be a non-negative integer')
  if (config.riskBandACoverageBps < config.riskBandBCoverageBps) {
    throw new RangeError('engine config riskBandACoverageBps must be >= riskBandBCoverageBps')
  }
  for (const key of ['lendersScannedPerMatchMax', 'leasesPerOfferMax', 'offersDispatchedPerCallMax', 'liveOffersPerBorrowerMax', 'advancesPerJobMax', 'borrowerSuspensionMinSeconds', 'leaseTtlMs', 'offerTtlMs', 'timeOutsPerCommandMax'] as const) {
    if (!Number.isInteger(config[key]) || config[key] < 1) throw new RangeError(`engine config ${key} must be a positive integer`)
  }
  if (!Number.isInteger(config.changesPerCommandMax) || config.changesPerCommandMax < matchChangesMax(config)) {
    throw new RangeError(`engine config changesPerCommandMax must be an integer >= lendersScannedPerMatchMax + 4 (${matchChangesMax(config)}): one matching attempt must fit in a command`)
  }
  for (const key of ['advanceMinAtomic', 'lenderReputationFullStepAtomic'] as const) {
    for (const [network, assets] of Object.entries(config[key])) {
      for (const [asset, amount] of Object.entries(assets)) {
        if (typeof amount !== 'bigint' || amount < 1n) throw new RangeError(`engine config ${key} of ${asset} on ${network} must be a bigint >= 1`)
      }
    }
  }
  // The window is kept in every lender record: bounded so that the record stays small.
  if (!Number.isInteger(config.lenderUptimeWindowLeases) || config.lenderUptimeWindowLeases < 1 || config.lenderUptimeWindowLeases > 1000) {
    throw new RangeError('engine config lenderUptimeWindowLeases must be an integer in 1..1000')
  }
  return config
}
