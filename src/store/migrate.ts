// Rewrites at open, in the write transaction that records what they change, before anything reads the entries:
// snapshot migrations (stored snapshots of an older schema version, or of a kind since renamed, rewritten to what
// this release writes; the store only moves entries, what a snapshot becomes is declared by the part that owns its
// shape, src/engine/migrations.ts), and the upgrade of a format 1 or 2 directory's values to format 3's encoding.
import type { RootDatabase } from 'lmdb'
import { StoreAssertionError } from './errors.ts'
import { LEGACY_VALUE_ENCODING, valueEncoding } from './value-encoding.ts'
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
 * records the new versions in the schema record; returns how many snapshots were rewritten. `structures` are the
 * directory's (value-encoding.ts).
 */
export function migrateSnapshots(root: RootDatabase, migrations: readonly SnapshotMigration[], structures: readonly (readonly string[])[]): number {
  const snapshots = root.openDB<unknown, Key>({ name: 'snapshots', ...valueEncoding(structures) } as never)
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

/** Entries read per range while re-encoding: the range ends before its entries are written again. */
const REENCODE_CHUNK = 1000

/**
 * Rewrites every value of the snapshots and records databases, read as format 1 or 2 wrote it, in format 3's encoding
 * with `structures`, inside the caller's write transaction (which records format 3 and the structures); returns how
 * many values were rewritten. Keys are unchanged; each chunk's range is closed before its values are put.
 */
export function reencodeValues(root: RootDatabase, structures: readonly (readonly string[])[]): number {
  let rewritten = 0
  for (const name of ['snapshots', 'records']) {
    const legacy = root.openDB<unknown, Key>({ name, ...LEGACY_VALUE_ENCODING } as never)
    const current = root.openDB<unknown, Key>({ name, ...valueEncoding(structures) } as never)
    let after: Key | undefined
    for (;;) {
      const chunk: { key: Key; value: unknown }[] = []
      const range = after === undefined ? { limit: REENCODE_CHUNK } : { start: after, exclusiveStart: true, limit: REENCODE_CHUNK }
      for (const { key, value } of legacy.getRange(range as never)) chunk.push({ key, value })
      for (const { key, value } of chunk) current.putSync(key, value)
      rewritten += chunk.length
      if (chunk.length < REENCODE_CHUNK) break
      after = (chunk.at(-1) as { key: Key }).key
    }
  }
  return rewritten
}
