// Snapshot migrations at open: stored snapshots of an older schema version, or of a kind since renamed, are
// rewritten to what this release writes, in the write transaction that records the new versions, before anything
// reads them. The store only moves entries; what a snapshot becomes is declared by the part that owns its shape
// (src/engine/migrations.ts).
import type { RootDatabase } from 'lmdb'
import { StoreAssertionError } from './errors.ts'
import { VALUE_ENCODING } from './open-checks.ts'
import type { ChangeKind, SnapshotEntry } from './types.ts'
import { isPlainObject } from './validate.ts'

export interface SnapshotMigration {
  /** The kind and schema version as stored by an older release. */
  readonly from: { readonly kind: string; readonly version: number }
  /** What they become: the kind (a renamed kind moves its entries) and the version this release writes for it. */
  readonly to: { readonly kind: ChangeKind; readonly version: number }
  /** The persisted form at `to.version` of one stored at `from.version`. */
  readonly migrate: (snapshot: unknown) => unknown
}

type Key = [string, string]

/**
 * Applies `migrations` in order (so v1 -> v2 -> v3 chains), inside the caller's write transaction, which also
 * records the new versions in the schema record; returns how many snapshots were rewritten.
 */
export function migrateSnapshots(root: RootDatabase, migrations: readonly SnapshotMigration[]): number {
  const snapshots = root.openDB<unknown, Key>({ name: 'snapshots', ...VALUE_ENCODING } as never)
  const live = root.openDB<number, Key>({ name: 'live' })
  let migrated = 0
  for (const migration of migrations) {
    const due: { key: Key; entry: SnapshotEntry }[] = []
    for (const { key, value } of snapshots.getRange({ start: [migration.from.kind] })) {
      if (key[0] !== migration.from.kind) break
      if (!isPlainObject(value)) throw new StoreAssertionError(`${key[0]} ${key[1]}: stored snapshot is not an object`)
      if (value.version === migration.from.version) due.push({ key, entry: value as unknown as SnapshotEntry })
    }
    const renamed = migration.to.kind !== migration.from.kind
    for (const { key, entry } of due) {
      const to: Key = [migration.to.kind, key[1]]
      if (renamed) {
        snapshots.removeSync(key)
        const since = live.get(key)
        if (since !== undefined) {
          live.removeSync(key)
          live.putSync(to, since)
        }
      }
      snapshots.putSync(to, { ...entry, version: migration.to.version, snapshot: migration.migrate(entry.snapshot) })
      migrated++
    }
  }
  return migrated
}
