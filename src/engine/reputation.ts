// Every change to a lender's or a borrower's track record: the counts and the reputation and reliability scores
// (basis points, clamped to 0..10000) that each event of a lease or an advance moves, by the config's weights. One
// function per event, called where the event happens; the README's table ("Reputation and reliability") lists them.
// Integers only, so replays and the book order are deterministic.
import type { AdvanceInput } from '../../machines/index.ts'
import type { EngineConfig } from './config.ts'
import { clampBps, isActiveLender, leaseAllowance, probationWaitMs } from './rules.ts'
import type { BorrowerRecord, LenderRecord } from './types.ts'

/** A lease outcome in a lender's uptime window (LenderRecord.recentLeaseOutcomes): paid in time, or expired unpaid. */
export const LEASE_PAID = 'P'
export const LEASE_MISSED = 'M'

/**
 * The lender's uptime: the share of its last `lenderUptimeWindowLeases` lease outcomes that were paid in time, in bps;
 * null before its first outcome (nothing measured yet).
 */
export function uptimeBps(lender: Pick<LenderRecord, 'recentLeaseOutcomes'>): number | null {
  const outcomes = lender.recentLeaseOutcomes
  if (outcomes.length === 0) return null
  let paid = 0
  for (const c of outcomes) if (c === LEASE_PAID) paid += 1
  return Math.floor((paid * 10_000) / outcomes.length)
}

/**
 * One lease outcome enters the window (the oldest leaves it when full). Every `lenderUptimeWindowLeases` outcomes the
 * window's uptime is one observation that moves reliability towards it (lenderUptime): a lender's reliability follows
 * how often it actually answers, not only the fixed steps of each outcome.
 */
function leaseOutcome(lender: LenderRecord, outcome: typeof LEASE_PAID | typeof LEASE_MISSED, config: EngineConfig, nowMs: number): void {
  const n = config.lenderUptimeWindowLeases
  lender.recentLeaseOutcomes = (lender.recentLeaseOutcomes + outcome).slice(-n)
  // A full window only: a lender migrated with counts but no window waits until its window holds N outcomes.
  if (lender.recentLeaseOutcomes.length === n && (lender.leasesPaid + lender.leasesExpired) % n === 0) {
    lenderUptime(lender, uptimeBps(lender) as number, config, nowMs)
  }
}

/**
 * Every change of a lender's reliability: crossing below the minimum starts its probation clock (inactiveSinceMs),
 * reaching the minimum again stops it. Staying below keeps the clock (leaseMissed restarts it).
 */
function setReliability(lender: LenderRecord, reliabilityBps: number, config: EngineConfig, nowMs: number): void {
  lender.reliabilityBps = clampBps(reliabilityBps)
  if (lender.reliabilityBps >= config.lenderReliabilityMinBps) lender.inactiveSinceMs = null
  else if (lender.inactiveSinceMs === null) lender.inactiveSinceMs = nowMs
}

/**
 * The part of `rewardBps` that a payment earns: the reward times the share of the advance's total (principal + fee)
 * repaid after it, less the same before it, each rounded down. The parts telescope, so any split of a repayment
 * earns exactly what repaying at once does (never more), and the full repayment earns the whole reward.
 */
export function repaymentShareBps(rewardBps: number, paidBeforeAtomic: bigint, paidAfterAtomic: bigint, totalAtomic: bigint): number {
  if (totalAtomic <= 0n) return 0
  const reward = BigInt(rewardBps)
  return Number((reward * paidAfterAtomic) / totalAtomic - (reward * paidBeforeAtomic) / totalAtomic)
}

/**
 * A lease granted to an inactive lender is its probation lease (matching grants one only once its probation wait has
 * passed, rules.ts isEligibleLender): the lender stands at the minimum, so the lease's outcome moves it from there,
 * paid to active, missed below again (and the next wait doubles). Its clock restarts now, so it gets no second lease
 * before this one's outcome (a lease ends long before a probation): one lease at a time, one borrower's wait if the
 * lender is still away.
 */
export function leaseGranted(lender: LenderRecord, config: EngineConfig, nowMs: number): void {
  lender.leasesGranted += 1
  if (isActiveLender(lender, config)) return
  if (lender.reliabilityBps < config.lenderReliabilityMinBps) lender.reliabilityBps = config.lenderReliabilityMinBps
  lender.inactiveSinceMs = nowMs
}

/**
 * A lease ended cancelled (its offer withdrawn under it, or funded under an earlier lease paid late): not the lender's
 * doing, so no outcome. When it was the lender's probation lease (granted at `grantedAtMs`, which restarted its clock
 * then, at the minimum: leaseGranted), the probation is given back and no miss counted: its clock is set to when that
 * lease fell due, so the lender is eligible for its probation lease again at once instead of after another whole wait
 * (else a job's client could fail each probation lease's job and keep a cheaper rival waiting a whole probation after
 * another: an adversary's finding, test/api/adversary7-probation-cancel.test.ts).
 */
export function leaseCancelled(lender: LenderRecord, grantedAtMs: number, config: EngineConfig): void {
  if (!isProbationLease(lender, grantedAtMs, config)) return
  lender.inactiveSinceMs = grantedAtMs - probationWaitMs(lender, config)
}

/** The lender paid the supplier in time: its reliability rises, and its run of unpaid probation leases ends. */
export function leasePaid(lender: LenderRecord, config: EngineConfig, nowMs: number): void {
  lender.leasesPaid += 1
  lender.probationMisses = 0
  setReliability(lender, lender.reliabilityBps + config.lenderReliabilityPaidRewardBps, config, nowMs)
  leaseOutcome(lender, LEASE_PAID, config, nowMs)
}

/**
 * The lender let its lease (granted at `grantedAtMs`) expire unpaid: reliability and reputation fall. Its probation
 * lease left unpaid also doubles its next probation wait (rules.ts probationWaitMs), counted while doubling lengthens
 * the wait: below `lenderProbationMaxSeconds`, and not with no probation at all. A miss that uses up the lender's
 * lease allowance (rules.ts leaseAllowance: a new lender's first, or one more than it paid) puts it below the minimum
 * at once, at the minimum less the miss penalty (at least 1 below), as if it had missed there: its probation starts.
 */
export function leaseMissed(lender: LenderRecord, grantedAtMs: number, config: EngineConfig, nowMs: number): void {
  if (isProbationLease(lender, grantedAtMs, config)) {
    const waitMs = probationWaitMs(lender, config)
    if (waitMs > 0 && waitMs < config.lenderProbationMaxSeconds * 1000) lender.probationMisses += 1
  }
  lender.leasesExpired += 1
  const penalty = config.lenderReliabilityMissPenaltyBps
  let reliabilityBps = lender.reliabilityBps - penalty
  if (leaseAllowance(lender, config) <= 0) reliabilityBps = Math.min(reliabilityBps, config.lenderReliabilityMinBps - Math.max(1, penalty))
  setReliability(lender, reliabilityBps, config, nowMs)
  // Below the minimum, each lease left unpaid restarts the wait: the probation runs from the lender's last miss.
  if (lender.inactiveSinceMs !== null) lender.inactiveSinceMs = nowMs
  lender.reputationBps = clampBps(lender.reputationBps - config.lenderReputationMissPenaltyBps)
  leaseOutcome(lender, LEASE_MISSED, config, nowMs)
}

/** The advance an event of a lender's track record is about: its principal weighs the lender's step. */
export type LentAdvance = Pick<AdvanceInput, 'network' | 'asset' | 'principalAtomic'>

/**
 * What one advance moves its lender's reputation by (and, repaid, its borrower's), of a whole `stepBps`:
 * trunc(step x min(principal, full) / full), with full the advance's asset's lenderReputationFullStepAtomic (a whole
 * step when the asset names none). Reputation orders the books among equal asks, so a point of it costs what lending
 * the principal costs, not one least advance.
 */
export function principalStepBps(stepBps: number, advance: LentAdvance, config: EngineConfig): number {
  const full = config.lenderReputationFullStepAtomic[advance.network]?.[advance.asset]
  if (full === undefined || advance.principalAtomic >= full) return stepBps
  return Number((BigInt(stepBps) * advance.principalAtomic) / full)
}

/**
 * A payment of any amount on one of the lender's advances (its borrower repaying, not a recovery): the lender's
 * reputation rises by its share (repaymentShareBps) of the repaid reward weighed by the advance's principal
 * (principalStepBps: weighed first, then shared, so the shares still telescope); a repayment in full counts once.
 */
export function lenderRepayment(lender: LenderRecord, advance: LentAdvance, paid: AdvanceRepaid, config: EngineConfig): void {
  const rewardBps = principalStepBps(config.lenderReputationRepaidRewardBps, advance, config)
  lender.reputationBps = clampBps(lender.reputationBps + repaymentShareBps(rewardBps, paid.paidBeforeAtomic, paid.paidAfterAtomic, paid.totalAtomic))
  if (paid.paidAfterAtomic === paid.totalAtomic) lender.advancesRepaid += 1
}

/**
 * The same payment, for the borrower who made it: its own reward, weighed by the principal as the lender's
 * (principalStepBps), so a least advance repaid earns what its principal is worth, not what 100 USDC repaid earns. Its
 * penalties stay whole: they are its own doing (a stranger cannot default its advances), and weighed they would make
 * many small defaults cheap.
 */
export function borrowerRepayment(borrower: BorrowerRecord, advance: LentAdvance, paid: AdvanceRepaid, config: EngineConfig): void {
  const rewardBps = principalStepBps(config.borrowerReputationRepaidRewardBps, advance, config)
  borrower.reputationBps = clampBps(borrower.reputationBps + repaymentShareBps(rewardBps, paid.paidBeforeAtomic, paid.paidAfterAtomic, paid.totalAtomic))
  if (paid.paidAfterAtomic === paid.totalAtomic) borrower.advancesRepaid += 1
}

/** Where one payment leaves an advance: what its borrower had repaid before and after it, of its total (principal + fee). */
export interface AdvanceRepaid {
  paidBeforeAtomic: bigint
  paidAfterAtomic: bigint
  totalAtomic: bigint
}

/** One of the borrower's advances defaulted (its job failed, or it was liquidated past due). */
export function borrowerDefaulted(borrower: BorrowerRecord, config: EngineConfig): void {
  borrower.advancesDefaulted += 1
  borrower.reputationBps = clampBps(borrower.reputationBps - config.borrowerReputationDefaultPenaltyBps)
}

/** An advance the lender chose to fund defaulted: its underwriting choice counts against it, weighed by the principal. */
export function lenderDefaulted(lender: LenderRecord, advance: LentAdvance, config: EngineConfig): void {
  lender.advancesDefaulted += 1
  lender.reputationBps = clampBps(lender.reputationBps - principalStepBps(config.lenderReputationDefaultPenaltyBps, advance, config))
}

/** A failed job costs its borrower reputation (the suspension is borrowers.ts). */
export function borrowerFailedJob(borrower: BorrowerRecord, config: EngineConfig): void {
  borrower.reputationBps = clampBps(borrower.reputationBps - config.borrowerReputationFailurePenaltyBps)
}

/** A liquidation that recovered less than was owed: the borrower owes the shortfall and loses reputation. */
export function borrowerShortfall(borrower: BorrowerRecord, shortfallAtomic: bigint, config: EngineConfig): void {
  borrower.shortfallAtomic += shortfallAtomic
  borrower.reputationBps = clampBps(borrower.reputationBps - config.borrowerReputationShortfallPenaltyBps)
}

/**
 * One uptime observation (bps) moves the lender's reliability towards it by lenderReliabilityUptimeWeightBps: the
 * window's own every N lease outcomes (leaseOutcome), or an operator's through Engine.recordLenderUptime.
 */
export function lenderUptime(lender: LenderRecord, uptimeBps: number, config: EngineConfig, nowMs: number): void {
  const w = config.lenderReliabilityUptimeWeightBps
  const probationSinceMs = holdsProbationLease(lender, config) ? lender.inactiveSinceMs : null
  setReliability(lender, Math.floor((lender.reliabilityBps * (10_000 - w) + uptimeBps * w) / 10_000), config, nowMs)
  // The probation lease's outcome decides whether the lender is active again (leaseGranted): an observation while it
  // is live moves the reliability, not the clock, so that it gets no second lease meanwhile.
  if (probationSinceMs !== null) lender.inactiveSinceMs = probationSinceMs
}

/** Inactive at the minimum or above: only while the lender holds its probation lease (setReliability clears it otherwise). */
function holdsProbationLease(lender: LenderRecord, config: EngineConfig): boolean {
  return lender.inactiveSinceMs !== null && lender.reliabilityBps >= config.lenderReliabilityMinBps
}

/** The lease granted at `grantedAtMs` is the lender's live probation lease: its grant restarted the clock then (leaseGranted). */
function isProbationLease(lender: LenderRecord, grantedAtMs: number, config: EngineConfig): boolean {
  return holdsProbationLease(lender, config) && lender.inactiveSinceMs === grantedAtMs
}

/** Evidence the reputation was initialised from (an ERC-8004 agent) no longer counts: its offset is taken back. */
export function evidenceWithdrawn(lender: LenderRecord, offsetBps: number): void {
  lender.reputationBps = clampBps(lender.reputationBps - offsetBps)
}
