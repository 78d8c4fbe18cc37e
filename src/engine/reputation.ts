// Every change to a lender's or a borrower's track record: the counts and the reputation and reliability scores
// (basis points, clamped to 0..10000) that each event of a lease or an advance moves, by the config's weights.
import type { EngineConfig } from './config.ts'
import { clampBps } from './rules.ts'
import type { BorrowerRecord, LenderRecord } from './types.ts'

export function leaseGranted(lender: LenderRecord): void {
  lender.leasesGranted += 1
}

/** The lender paid the supplier in time: its reliability rises. */
export function leasePaid(lender: LenderRecord, config: EngineConfig): void {
  lender.leasesPaid += 1
  lender.reliabilityBps = clampBps(lender.reliabilityBps + config.lenderReliabilityPaidRewardBps)
}

/** The lender let its lease expire unpaid: reliability and reputation fall. */
export function leaseMissed(lender: LenderRecord, config: EngineConfig): void {
  lender.leasesExpired += 1
  lender.reliabilityBps = clampBps(lender.reliabilityBps - config.lenderReliabilityMissPenaltyBps)
  lender.reputationBps = clampBps(lender.reputationBps - config.lenderReputationMissPenaltyBps)
}

export function lenderRepaid(lender: LenderRecord, config: EngineConfig): void {
  lender.advancesRepaid += 1
  lender.reputationBps = clampBps(lender.reputationBps + config.lenderReputationRepaidRewardBps)
}

export function borrowerRepaid(borrower: BorrowerRecord, config: EngineConfig): void {
  borrower.advancesRepaid += 1
  borrower.reputationBps = clampBps(borrower.reputationBps + config.borrowerReputationRepaidRewardBps)
}

export function borrowerDefaulted(borrower: BorrowerRecord): void {
  borrower.advancesDefaulted += 1
}

export function lenderDefaulted(lender: LenderRecord, config: EngineConfig): void {
  lender.advancesDefaulted += 1
  lender.reputationBps = clampBps(lender.reputationBps - config.lenderReputationDefaultPenaltyBps)
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

/** One uptime observation (bps of the period the lender was reachable) moves its reliability towards it. */
export function lenderUptime(lender: LenderRecord, uptimeBps: number, config: EngineConfig): void {
  const w = config.lenderReliabilityUptimeWeightBps
  lender.reliabilityBps = clampBps(Math.floor((lender.reliabilityBps * (10_000 - w) + uptimeBps * w) / 10_000))
}

/** Evidence the reputation was initialised from (an ERC-8004 agent) no longer counts: its offset is taken back. */
export function evidenceWithdrawn(lender: LenderRecord, offsetBps: number): void {
  lender.reputationBps = clampBps(lender.reputationBps - offsetBps)
}
