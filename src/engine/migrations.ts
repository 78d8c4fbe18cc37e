// The schema versions of the engine's persisted snapshots, and how a snapshot an older release stored becomes
// today's. The store applies these at open (src/store/migrate.ts), so the engine only ever restores current shapes.
import { isJobFailureReason } from '../../machines/index.ts'
import { legacyJobKey } from '../chain/ids.ts'
import type { SnapshotMigration } from '../store/migrate.ts'
import { defaultEngineConfig } from './config.ts'
import { failureNoteHash } from './jobs.ts'
import type { ActorKind, RecordKind } from './types.ts'

/** Bump a kind's version whenever its persisted shape changes, and add the migration from the previous one. */
// Actors, 2 (lease 4): the snapshot carries the actor's transition history (`history`, src/engine/history.ts).
export const SNAPSHOT_VERSIONS: Readonly<Record<ActorKind | RecordKind, number>> = {
  // 3: a failed job's reason is a code of JOB_FAILURE_REASONS, and the client's note is kept as its hash (failureNoteHash).
  // 4: the job carries the key it was funded under (jobKey): those stored before per-network keys, the legacy key.
  job: 4,
  offer: 2,
  // 2: the lease's context holds its report grace (reportGraceMs), which its expiry guard reads.
  // 4: it no longer does: a lease expires on the chain's observed time past its deadline (payment, not the report,
  //    counts), so the grace is gone.
  lease: 4,
  // 3: the advance carries what it still owes (lenderOwedAtomic, reserveOwedAtomic) and every payment (repayments).
  advance: 3,
  // 2: the lender records what it withdrew (withdrawnAtomic, withdrawalPendingAtomic).
  // 3: the lender keeps its uptime window (recentLeaseOutcomes).
  // 4: the lender records since when it is below the reliability minimum (inactiveSinceMs, its probation clock).
  // 5: the lender counts the probation leases it left unpaid in a row (probationMisses), which double its wait.
  lender: 5,
  source: 1,
  // 2: the borrower records the principal it repaid and what its advances on jobs owe (repaidPrincipalAtomic,
  //    receivableOwedAtomic), per network and asset, which bound what a job's receivable counts in its risk band.
  borrower: 2,
  // 2: the insurance reserves, kind `ledger` before, are kind `reserve` (same shape).
  reserve: 2,
  supplier: 1,
  // 1: what the credit contract holds for a refused recipient (heldviews12); no store before it has any.
  held: 1,
  meta: 1,
}

interface PersistedActor {
  context: Record<string, unknown>
}

/**
 * An actor stored before histories were kept gets an empty one: what happened to it before the upgrade is not known,
 * and an invented creation entry would claim more than the store holds. Transitions from now on are recorded.
 */
const withEmptyHistory = (snapshot: unknown): unknown => ({ ...(snapshot as object), history: [] })

interface PersistedAdvance {
  value: string
  context: Record<string, unknown> & { principalAtomic: bigint; feeAtomic: bigint; insuranceAtomic: bigint; repayment?: Record<string, unknown> | null }
}

/**
 * An advance stored before partial repayments: only full repayments were counted, so a live one still owes its terms
 * (the lender's principal + fee - insurance share, the reserve's share), and a repaid one owes nothing, its one
 * payment the repayment it recorded. (An advance that ended liquidated or in shortfall owes what its recovery left;
 * it is final, and the owed amounts of a final advance are only shown, so they are the terms minus what it recorded.)
 */
export function withOwedAmounts(snapshot: unknown): unknown {
  const persisted = snapshot as PersistedAdvance
  const { repayment, ...context } = persisted.context
  const repaid = persisted.value === 'repaid'
  const repayments = repayment ? [{ ...repayment, lenderOwedAfterAtomic: 0n, reserveOwedAfterAtomic: 0n }] : []
  const lenderOwedAtomic = repaid ? 0n : context.principalAtomic + context.feeAtomic - context.insuranceAtomic
  const reserveOwedAtomic = repaid ? 0n : context.insuranceAtomic
  return { ...persisted, context: { ...context, lenderOwedAtomic, reserveOwedAtomic, repayments } }
}

/** Drops the report grace a lease stored before version 4 carries (its expiry no longer reads one). */
function withoutReportGrace(snapshot: unknown): unknown {
  const persisted = snapshot as PersistedActor
  const { reportGraceMs: _grace, ...context } = persisted.context
  return { ...persisted, context }
}

/**
 * A job stored before failure reasons were codes: a reason that is a code stays, with no note; any other was the
 * client's free text, which becomes reason `other` and the text's keccak256 as its note (what a note gives today), so
 * no stored job shows a client's text. The passport entries signed then keep the text they were signed with (they
 * must still verify); only the job's record changes.
 */
export function withFailureCode(snapshot: unknown): unknown {
  const persisted = snapshot as PersistedActor
  const reason = persisted.context.failureReason as string | null
  const coded = reason === null || isJobFailureReason(reason)
  return { ...persisted, context: { ...persisted.context, failureReason: coded ? reason : 'other', failureNoteHash: coded ? null : failureNoteHash(reason) } }
}

/**
 * A job stored before per-network keys was funded under the legacy rule, keccak256(utf8(jobId)) (src/chain/ids.ts
 * legacyJobKey): it keeps that key, which its escrow is held under on chain, for every read and operator transaction.
 */
export function withLegacyJobKey(snapshot: unknown): unknown {
  const persisted = snapshot as PersistedActor
  return { ...persisted, context: { ...persisted.context, jobKey: legacyJobKey(persisted.context.jobId as string) } }
}

const withUptimeWindow = (snapshot: unknown): unknown => ({ recentLeaseOutcomes: '', ...(snapshot as object) })

/**
 * A lender stored before probation that is below the default minimum has been inactive since some time the store
 * never recorded, no earlier than its registration: its probation counts from there (the restore time would read
 * the wall clock, which the engine never does, and keep an honest lender out one more probation after the upgrade).
 */
export function withProbationClock(snapshot: unknown): unknown {
  const lender = snapshot as { reliabilityBps: number; registeredAtMs: number }
  return { ...lender, inactiveSinceMs: lender.reliabilityBps < defaultEngineConfig.lenderReliabilityMinBps ? lender.registeredAtMs : null }
}

/**
 * A lender stored before its probation misses were counted starts with none: the store never recorded which of its
 * misses were probation leases, so its next probation comes after the base wait, as it would have before the upgrade.
 */
const withoutProbationMisses = (snapshot: unknown): unknown => ({ ...(snapshot as object), probationMisses: 0 })

/**
 * A borrower stored before repaid principal was recorded starts with none repaid and none owed: its record kept only
 * how many advances it repaid, not their amounts nor assets, and a migration reads one record at a time (not the
 * borrower's advances). So until it repays again a job's receivable counts in its band only as far as collateral
 * covers the amount (underwriting.ts). An advance on a job it drew before the upgrade is not counted as owed; once
 * repaid its principal counts as repaid (what is owed never goes below 0).
 */
export const withoutRepaidPrincipal = (snapshot: unknown): unknown => ({ ...(snapshot as object), repaidPrincipalAtomic: {}, receivableOwedAtomic: {} })

export function snapshotMigrations(): SnapshotMigration[] {
  return [
    { from: { kind: 'ledger', version: 1 }, to: { kind: 'reserve', version: 2 }, migrate: (snapshot) => snapshot },
    // The store applies the one migration whose `from` is the directory's recorded version: each goes straight to today's.
    { from: { kind: 'lease', version: 1 }, to: { kind: 'lease', version: 4 }, migrate: withEmptyHistory },
    { from: { kind: 'lease', version: 2 }, to: { kind: 'lease', version: 4 }, migrate: (snapshot) => withoutReportGrace(withEmptyHistory(snapshot)) },
    { from: { kind: 'lease', version: 3 }, to: { kind: 'lease', version: 4 }, migrate: withoutReportGrace },
    { from: { kind: 'job', version: 1 }, to: { kind: 'job', version: 4 }, migrate: (snapshot) => withLegacyJobKey(withFailureCode(withEmptyHistory(snapshot))) },
    { from: { kind: 'job', version: 2 }, to: { kind: 'job', version: 4 }, migrate: (snapshot) => withLegacyJobKey(withFailureCode(snapshot)) },
    { from: { kind: 'job', version: 3 }, to: { kind: 'job', version: 4 }, migrate: withLegacyJobKey },
    { from: { kind: 'offer', version: 1 }, to: { kind: 'offer', version: 2 }, migrate: withEmptyHistory },
    { from: { kind: 'advance', version: 1 }, to: { kind: 'advance', version: 3 }, migrate: (snapshot) => withOwedAmounts(withEmptyHistory(snapshot)) },
    { from: { kind: 'advance', version: 2 }, to: { kind: 'advance', version: 3 }, migrate: withOwedAmounts },
    // A lender stored before withdrawals existed withdrew nothing; one stored before the uptime window starts it empty
    // (its past outcomes are in its counts, not their order).
    { from: { kind: 'lender', version: 1 }, to: { kind: 'lender', version: 5 }, migrate: (snapshot) => withoutProbationMisses(withProbationClock(withUptimeWindow({ withdrawnAtomic: 0n, withdrawalPendingAtomic: 0n, ...(snapshot as object) }))) },
    { from: { kind: 'lender', version: 2 }, to: { kind: 'lender', version: 5 }, migrate: (snapshot) => withoutProbationMisses(withProbationClock(withUptimeWindow(snapshot))) },
    { from: { kind: 'lender', version: 3 }, to: { kind: 'lender', version: 5 }, migrate: (snapshot) => withoutProbationMisses(withProbationClock(snapshot)) },
    { from: { kind: 'lender', version: 4 }, to: { kind: 'lender', version: 5 }, migrate: withoutProbationMisses },
    { from: { kind: 'borrower', version: 1 }, to: { kind: 'borrower', version: 2 }, migrate: withoutRepaidPrincipal },
  ]
}
