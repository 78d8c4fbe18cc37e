// Open-time checks of a data directory, before the store uses it: what LMDB would crash on or reset, another
// program's data, and format and schema versions this release cannot read.
import fs from 'node:fs'
import path from 'node:path'
import type { RootDatabase } from 'lmdb'
import { futureSnapshot } from './checks.ts'
import { checkDataFile, type DataFileCheck } from './data-file.ts'
import { checkPagesPastEnd } from './page-walk.ts'
import { StoreAssertionError, StoreOpenError, StoreVersionError } from './errors.ts'
import type { SnapshotMigration } from './migrate.ts'
import { isPlainObject } from './validate.ts'
import { checkStructures, STRUCTURES_RECORD, VALUE_STRUCTURES } from './value-encoding.ts'

/**
 * Version of the layout of the data directory (database names, key shapes, entry shapes, value encoding).
 * 2 (issue 11): snapshots and records encoded as plain msgpack maps, not lmdb-js's default msgpackr records, which
 * with no shared structures define each record's keys again in every value (format 1).
 * 3 (issue 11): msgpackr records over the shared structures stored in the directory (value-encoding.ts). A records
 * decoder cannot read format 2 values, so opening an older directory rewrites every value in the transaction that
 * records format 3; a release of format 2 refuses format 3 by the format record.
 */
export const STORE_FORMAT_VERSION = 3
export const DB_NAMES = ['meta', 'snapshots', 'live', 'records', 'expiry'] as const

export interface FormatRecord {
  readonly formatVersion: number
  readonly createdAtMs: number
}

export interface SchemaRecord {
  readonly kinds: Record<string, number>
  readonly collections: Record<string, number>
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

export function openError(dataDir: string, error: unknown): StoreOpenError {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'EACCES' || code === 'EPERM' || code === 13 || code === 1) {
    return new StoreOpenError(
      'store_permission_denied',
      dataDir,
      `cannot open data directory ${dataDir}: permission denied (${describe(error)})`,
      { cause: error },
    )
  }
  if (code === 'ENOTDIR' || code === 20) {
    return new StoreOpenError('store_not_a_directory', dataDir, `data directory ${dataDir} is not a directory`, {
      cause: error,
    })
  }
  return new StoreOpenError('store_open_failed', dataDir, `cannot open data directory ${dataDir}: ${describe(error)}`, {
    cause: error,
  })
}

/**
 * Refuses, before LMDB touches anything, what LMDB would crash on, reset, or not be allowed to use. Returns 'new', or
 * the header check of the existing data.mdb.
 */
export function checkDirectory(dataDir: string): 'new' | Extract<DataFileCheck, { ok: true }> {
  let stat: fs.Stats | undefined
  try {
    stat = fs.statSync(dataDir)
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw openError(dataDir, error)
  }
  if (stat === undefined) {
    try {
      fs.mkdirSync(dataDir, { recursive: true })
    } catch (error) {
      throw openError(dataDir, error)
    }
    return 'new'
  }
  if (!stat.isDirectory()) {
    throw new StoreOpenError('store_not_a_directory', dataDir, `data directory ${dataDir} exists but is not a directory`)
  }
  try {
    fs.accessSync(dataDir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK)
  } catch (error) {
    throw openError(dataDir, error)
  }
  const dataFile = path.join(dataDir, 'data.mdb')
  if (!fs.existsSync(dataFile)) return 'new'
  let check: DataFileCheck
  try {
    fs.accessSync(dataFile, fs.constants.R_OK | fs.constants.W_OK)
    check = checkDataFile(dataFile)
  } catch (error) {
    throw openError(dataDir, error)
  }
  const damaged = (reason: string) =>
    new StoreOpenError(
      'store_corrupt',
      dataDir,
      `data directory ${dataDir} is damaged: ${reason}. Nothing was changed; restore it from a backup or ` +
        'point DATA_DIR to another directory.',
    )
  if (!check.ok) throw damaged(check.reason)
  const pastEnd = checkPagesPastEnd(dataFile, check)
  if (!pastEnd.ok) throw damaged(pastEnd.reason)
  return check
}

/** Checks (or, for a new directory, writes) the format and schema meta records. Returns recorded collections. */
export function checkFormat(
  dataDir: string,
  root: RootDatabase,
  versions: ReadonlyMap<string, number>,
  migrations: readonly SnapshotMigration[],
): {
  kinds: Record<string, number>
  collections: Record<string, number>
  unwritten: boolean
  created: boolean
  format: FormatRecord
  /** The shared structures of the directory's values: stored (format 3), or those an upgrade will store. */
  structures: string[][]
} {
  const names: string[] = []
  for (const key of root.getKeys()) names.push(String(key))
  const foreign = names.filter((name) => !(DB_NAMES as readonly string[]).includes(name))
  if (foreign.length > 0) {
    throw new StoreOpenError(
      'store_not_a_store',
      dataDir,
      `data directory ${dataDir} holds LMDB data that is not an agent-credit store (databases ${foreign
        .slice(0, 5)
        .join(', ')}); refusing to use it`,
    )
  }
  const meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
  let format = meta.get('format') as FormatRecord | undefined
  const created = format === undefined
  if (format === undefined) {
    if (names.length > 0 && names.some((name) => name !== 'meta')) {
      throw new StoreOpenError(
        'store_not_a_store',
        dataDir,
        `data directory ${dataDir} has store databases but no format record; refusing to guess its version`,
      )
    }
    const fresh = { formatVersion: STORE_FORMAT_VERSION, createdAtMs: Date.now() }
    // Together: a format 3 directory always has its structures.
    meta.transactionSync(() => {
      meta.putSync('format', fresh)
      meta.putSync(STRUCTURES_RECORD, VALUE_STRUCTURES)
    })
    format = fresh
  } else {
    if (!isPlainObject(format) || !Number.isSafeInteger(format.formatVersion) || (format.formatVersion as number) < 1) {
      throw new StoreOpenError('store_corrupt', dataDir, `data directory ${dataDir} has an unreadable format record`)
    }
    if ((format.formatVersion as number) > STORE_FORMAT_VERSION) {
      throw new StoreVersionError(
        `data directory ${dataDir} has store format version ${String(format.formatVersion)}, written by a newer ` +
          `release; this release reads format ${STORE_FORMAT_VERSION}. Run the newer release or use another DATA_DIR.`,
      )
    }
  }
  const structures =
    format.formatVersion < STORE_FORMAT_VERSION ? VALUE_STRUCTURES.map((keys) => [...keys]) : checkStructures(dataDir, meta.get(STRUCTURES_RECORD))
  const schema = meta.get('schema')
  const recorded: SchemaRecord =
    schema === undefined ? { kinds: {}, collections: {} } : (schema as SchemaRecord)
  if (!isPlainObject(recorded) || !isPlainObject(recorded.kinds) || !isPlainObject(recorded.collections)) {
    throw new StoreOpenError('store_corrupt', dataDir, `data directory ${dataDir} has an unreadable schema record`)
  }
  for (const [kind, have] of Object.entries(recorded.kinds)) {
    const version = versions.get(kind)
    const migrated = migrations.some((m) => m.from.kind === kind && m.from.version === have)
    if (version === undefined ? !migrated : have > version) {
      throw new StoreVersionError(
        `data directory ${dataDir} holds ${kind} snapshots of schema version ${have}, written by a newer release; ` +
          `this release reads up to version ${version ?? 0}. Run the newer release or use another DATA_DIR.`,
      )
    }
  }
  for (const name of DB_NAMES) root.openDB({ name })
  return { kinds: recorded.kinds, collections: recorded.collections, unwritten: schema === undefined, created, format, structures }
}

/**
 * Reads every stored snapshot's kind and version (decoded with `encoding`, the directory's as stored): what this
 * release cannot read is refused before any write.
 */
export function checkStoredVersions(dataDir: string, root: RootDatabase, versions: ReadonlyMap<string, number>, due: readonly SnapshotMigration[], encoding: object): void {
  const snapshots = root.openDB<unknown, [string, string]>({ name: 'snapshots', ...encoding } as never)
  for (const { key, value } of snapshots.getRange()) {
    const version = isPlainObject(value) ? value.version : undefined
    if (!Number.isSafeInteger(version)) throw new StoreAssertionError(`${key[0]} ${key[1]}: stored snapshot has no valid version`)
    if (due.some((m) => m.from.kind === key[0] && m.from.version === version)) continue
    const known = versions.get(key[0])
    if (known === undefined) throw new StoreAssertionError(`${key[0]} ${key[1]}: unknown snapshot kind`)
    if ((version as number) > known) throw futureSnapshot(dataDir, `${key[0]} ${key[1]}`, version as number, known)
  }
}
