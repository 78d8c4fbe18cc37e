// Checks of stored entries as they are read back (snapshots, records): shape, version, expiry. Nothing read from
// disk is trusted before it passed one of these.
import { StoreAssertionError, StoreVersionError } from './errors.ts'
import type { RecordEntry, SnapshotEntry } from './types.ts'
import { isActorKind, isPlainObject } from './validate.ts'

/** A stored snapshot entry as read back: its shape, and a version this release reads (`known`, of its kind). */
export function checkSnapshotEntry(raw: unknown, kind: string, id: string, known: number, dataDir: string): SnapshotEntry {
  const where = `${kind} ${id}`
  if (!isPlainObject(raw)) throw new StoreAssertionError(`${where}: stored snapshot is not an object`)
  const { version, snapshot, updatedAtMs, final } = raw
  if (!Number.isSafeInteger(version) || (version as number) < 1) {
    throw new StoreAssertionError(`${where}: stored snapshot has no valid version`)
  }
  if ((version as number) > known) throw futureSnapshot(dataDir, where, version as number, known)
  if (!Number.isSafeInteger(updatedAtMs)) throw new StoreAssertionError(`${where}: stored snapshot has no updatedAtMs`)
  if (typeof final !== 'boolean') throw new StoreAssertionError(`${where}: stored snapshot has no final flag`)
  if (final && !isActorKind(kind)) throw new StoreAssertionError(`${where}: a record kind cannot be final`)
  if (snapshot === undefined) throw new StoreAssertionError(`${where}: stored snapshot is empty`)
  return raw as unknown as SnapshotEntry
}

/** A stored record entry as read back: its shape, and a version no newer than `known` (its collection's, if any). */
export function checkRecordEntry(raw: unknown, collection: string, key: string, known: number | undefined, dataDir: string): RecordEntry {
  const where = `${collection} ${key}`
  if (!isPlainObject(raw)) throw new StoreAssertionError(`${where}: stored record is not an object`)
  const { version, value, updatedAtMs, expiresAtMs } = raw
  if (!Number.isSafeInteger(version) || (version as number) < 1) {
    throw new StoreAssertionError(`${where}: stored record has no valid version`)
  }
  if (known !== undefined && (version as number) > known) {
    throw new StoreVersionError(
      `data directory ${dataDir}: ${where}: record version ${String(version)} is newer than this release reads ` +
        `(${known}). Run the newer release or use another DATA_DIR.`,
    )
  }
  if (!Number.isSafeInteger(updatedAtMs)) throw new StoreAssertionError(`${where}: stored record has no updatedAtMs`)
  if (expiresAtMs !== null && !Number.isSafeInteger(expiresAtMs)) {
    throw new StoreAssertionError(`${where}: stored record has an invalid expiresAtMs`)
  }
  if (value === undefined) throw new StoreAssertionError(`${where}: stored record is empty`)
  return raw as unknown as RecordEntry
}

export function futureSnapshot(dataDir: string, where: string, version: number, known: number): StoreVersionError {
  return new StoreVersionError(
    `data directory ${dataDir}: ${where}: snapshot schema version ${version} is newer than this release reads (${known}). ` +
      'Run the newer release or use another DATA_DIR.',
  )
}

export function isExpired(entry: RecordEntry, nowMs: number): boolean {
  return entry.expiresAtMs !== null && entry.expiresAtMs <= nowMs
}
