// The schema versions of the engine's persisted snapshots, and how a snapshot an older release stored becomes
// today's. The store applies these at open (src/store/migrate.ts), so the engine only ever restores current shapes.
import type { SnapshotMigration } from '../store/migrate.ts'
import type { ActorKind, RecordKind } from './types.ts'

/** Bump a kind's version whenever its persisted shape changes, and add the migration from the previous one. */
// Actors, 2 (lease 3): the snapshot carries the actor's transition history (`history`, src/engine/history.ts).
export const SNAPSHOT_VERSIONS: Readonly<Record<ActorKind | RecordKind, number>> = {
  job: 2,
  offer: 2,
  // 2: the lease's context holds its report grace (reportGraceMs), which its expiry guard reads.
  lease: 3,
  advance: 2,
  lender: 1,
  source: 1,
  borrower: 1,
  // 2: the insurance reserves, kind `ledger` before, are kind `reserve` (same shape).
  reserve: 2,
  supplier: 1,
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

/**
 * `leaseReportGraceMs`: the grace of the configuration the service starts with. Leases granted before version 2
 * were scheduled to expire with the configured grace, so giving them that one keeps their expiry where it was.
 */
export function snapshotMigrations(options: { leaseReportGraceMs: number }): SnapshotMigration[] {
  return [
    { from: { kind: 'ledger', version: 1 }, to: { kind: 'reserve', version: 2 }, migrate: (snapshot) => snapshot },
    {
      from: { kind: 'lease', version: 1 },
      to: { kind: 'lease', version: 3 },
      migrate: (snapshot) => {
        const persisted = snapshot as PersistedActor
        return withEmptyHistory({ ...persisted, context: { ...persisted.context, reportGraceMs: options.leaseReportGraceMs } })
      },
    },
    // The store applies the one migration whose `from` is the directory's recorded version: each goes straight to today's.
    { from: { kind: 'lease', version: 2 }, to: { kind: 'lease', version: 3 }, migrate: withEmptyHistory },
    { from: { kind: 'job', version: 1 }, to: { kind: 'job', version: 2 }, migrate: withEmptyHistory },
    { from: { kind: 'offer', version: 1 }, to: { kind: 'offer', version: 2 }, migrate: withEmptyHistory },
    { from: { kind: 'advance', version: 1 }, to: { kind: 'advance', version: 2 }, migrate: withEmptyHistory },
  ]
}
