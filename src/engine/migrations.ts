// The schema versions of the engine's persisted snapshots, and how a snapshot an older release stored becomes
// today's. The store applies these at open (src/store/migrate.ts), so the engine only ever restores current shapes.
import type { SnapshotMigration } from '../store/migrate.ts'
import type { ActorKind, RecordKind } from './types.ts'

/** Bump a kind's version whenever its persisted shape changes, and add the migration from the previous one. */
export const SNAPSHOT_VERSIONS: Readonly<Record<ActorKind | RecordKind, number>> = {
  job: 1,
  offer: 1,
  // 2: the lease's context holds its report grace (reportGraceMs), which its expiry guard reads.
  lease: 2,
  advance: 1,
  lender: 1,
  source: 1,
  borrower: 1,
  // 2: the insurance reserves, kind `ledger` before, are kind `reserve` (same shape).
  reserve: 2,
  meta: 1,
}

interface PersistedActor {
  context: Record<string, unknown>
}

/**
 * `leaseReportGraceMs`: the grace of the configuration the service starts with. Leases granted before version 2
 * were scheduled to expire with the configured grace, so giving them that one keeps their expiry where it was.
 */
export function snapshotMigrations(options: { leaseReportGraceMs: number }): SnapshotMigration[] {
  return [
    { from: { kind: 'ledger', version: 1 }, to: { kind: 'reserve', version: 2 }, migrate: (snapshot) => snapshot },
    {
      from: { kind: 'lease', version: 1 },
      to: { kind: 'lease', version: 2 },
      migrate: (snapshot) => {
        const persisted = snapshot as PersistedActor
        return { ...persisted, context: { ...persisted.context, reportGraceMs: options.leaseReportGraceMs } }
      },
    },
  ]
}
