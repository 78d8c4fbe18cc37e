// The LMDB store: snapshots of actors and engine records, named record collections, idempotency records.
//
// Writes go through one queue. Every commit() waits in the queue; one LMDB write transaction takes all commits
// queued so far (group commit), each applied in its own child transaction so one failing commit aborts only its own
// writes. The promise of a commit resolves after that transaction is committed and, with durability 'sync', fsynced
// (LMDB's synchronous commit: we open with overlappingSync off, so lmdb-js resolves only after mdb_txn_commit
// returned, which flushes the data pages and then the meta page). Reads are synchronous LMDB reads.

import fs from 'node:fs'
import path from 'node:path'
import { open, type Database, type RootDatabase } from 'lmdb'
import { checkDataFile } from './data-file.ts'
import {
  StoreAssertionError,
  StoreClosedError,
  StoreConflictError,
  StoreError,
  StoreOpenError,
  StoreOverloadedError,
  StoreVersionError,
} from './errors.ts'
import { Idempotency, IdempotencyTicket, type IdempotencyCompletion, scopeKey } from './idempotency.ts'
import { migrateSnapshots, type SnapshotMigration } from './migrate.ts'
import { PROBE_TIMEOUT_MS_DEFAULT, probeDataDir } from './probe.ts'
import {
  ACTOR_KINDS,
  ENGINE_RECORD_KINDS,
  type ActorKind,
  type Change,
  type ChangeKind,
  type CommitResult,
  type Durability,
  type IdempotencyRecord,
  type RecordEntry,
  type RecordWrite,
  type SnapshotEntry,
} from './types.ts'
import {
  assertChangeKind,
  assertCollectionName,
  assertId,
  assertJsonLike,
  assertRecordKey,
  assertTimeMs,
  assertVersion,
  fail,
  isActorKind,
  isPlainObject,
} from './validate.ts'

/** Version of the layout of the data directory (database names, key shapes, entry shapes). */
export const STORE_FORMAT_VERSION = 1
export const DB_NAMES = ['meta', 'snapshots', 'live', 'records', 'expiry'] as const
export const IDEMPOTENCY_COLLECTION = '$idempotency'
export const USED_PROOF_COLLECTION = 'used-proof'
const IDEMPOTENCY_RECORD_VERSION = 1

export const CHANGES_PER_COMMIT_MAX_DEFAULT = 10_000
export const RECORD_WRITES_PER_COMMIT_MAX = 10_000
export const COMMITS_PER_TXN_MAX_DEFAULT = 4096
export const PENDING_COMMITS_MAX_DEFAULT = 100_000
export const IDEMPOTENCY_RETENTION_MS_DEFAULT = 24 * 60 * 60 * 1000
export const IDEMPOTENCY_WAIT_MS_DEFAULT = 30_000
export const SWEEP_BATCH_MAX = 10_000
/** Deletions per sweeper transaction: a few milliseconds of the event loop each. */
export const SWEEPER_BATCH_DEFAULT = 1000

export interface StoreOptions {
  /** DATA_DIR. Created when missing; an existing directory must hold an agent-credit store or nothing. */
  readonly dataDir: string
  /** 'sync' (default): a commit resolves once fsynced. 'none': LMDB noSync, for benchmarks only. */
  readonly durability?: Durability
  /** Schema version stamped on snapshots of each kind (default 1). Reading a higher version is refused. */
  readonly snapshotVersions?: Partial<Record<ChangeKind, number>>
  /** Rewrites of older snapshots to these versions, applied at open in one transaction (src/store/migrate.ts). */
  readonly migrations?: readonly SnapshotMigration[]
  /** 'deep' (default) reads every entry in a child process before opening; 'header' checks data.mdb's header only. */
  readonly verifyOnOpen?: 'deep' | 'header'
  readonly probeTimeoutMs?: number
  /** Epoch ms for updatedAtMs and expiry. The store is an edge, so it may read the wall clock; tests inject one. */
  readonly clock?: () => number
  readonly idempotencyRetentionMs?: number
  readonly idempotencyWaitMs?: number
  readonly changesPerCommitMax?: number
  readonly commitsPerTxnMax?: number
  readonly pendingCommitsMax?: number
  /** Test hook: while it returns true no group commit starts (commits wait in the queue, unacknowledged). */
  readonly holdCommitsWhile?: () => boolean
}

export interface CommitInput {
  readonly changes?: readonly Change[]
  readonly records?: readonly RecordWrite[]
  readonly idempotency?: IdempotencyCompletion
}

export interface StoreStats {
  /** LMDB write transactions that carried commits (and sweeps). */
  readonly transactions: number
  readonly commits: number
  readonly failedCommits: number
  readonly changes: number
  readonly largestBatch: number
  readonly pending: number
}

interface FormatRecord {
  readonly formatVersion: number
  readonly createdAtMs: number
}

interface SchemaRecord {
  readonly kinds: Record<string, number>
  readonly collections: Record<string, number>
}

type SnapshotKey = [string, string]
type RecordKey = [string, string]
type ExpiryKey = [number, string, string]

interface PreparedSnapshot {
  readonly key: SnapshotKey
  readonly entry: SnapshotEntry
  readonly actor: boolean
}

interface PreparedRecordWrite {
  readonly write: RecordWrite
  readonly entry: RecordEntry | null
  readonly overlayKey: string
  readonly seq: number
}

interface Pending {
  readonly nowMs: number
  readonly snapshots: readonly PreparedSnapshot[]
  readonly records: readonly PreparedRecordWrite[]
  readonly idempotency: IdempotencyCompletion | null
  readonly sweepLimit: number
  swept: number
  readonly resolve: (result: CommitResult & { swept: number }) => void
  readonly reject: (error: unknown) => void
}

interface CollectionOptions<T> {
  /** Schema version stamped on records (default 1). Records of a higher version are refused when read. */
  readonly version?: number
  /** Checked on every put and on every read back. */
  readonly validate?: (value: unknown) => value is T
}

function overlayKeyOf(collection: string, key: string): string {
  return `${collection}\u0000${key}`
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function openError(dataDir: string, error: unknown): StoreOpenError {
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

/** Refuses, before LMDB touches anything, what LMDB would crash on, reset, or not be allowed to use. */
function checkDirectory(dataDir: string): 'new' | 'existing' {
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
  let check: ReturnType<typeof checkDataFile>
  try {
    fs.accessSync(dataFile, fs.constants.R_OK | fs.constants.W_OK)
    check = checkDataFile(dataFile)
  } catch (error) {
    throw openError(dataDir, error)
  }
  if (!check.ok) {
    throw new StoreOpenError(
      'store_corrupt',
      dataDir,
      `data directory ${dataDir} is damaged: ${check.reason}. Nothing was changed; restore it from a backup or ` +
        'point DATA_DIR to another directory.',
    )
  }
  return 'existing'
}

export class Store {
  readonly dataDir: string
  readonly durability: Durability
  readonly idempotency: Idempotency
  readonly proofs: UsedProofs

  readonly #root: RootDatabase
  readonly #meta: Database<unknown, string>
  readonly #snapshots: Database<unknown, SnapshotKey>
  readonly #live: Database<number, SnapshotKey>
  readonly #records: Database<unknown, RecordKey>
  readonly #expiry: Database<boolean, ExpiryKey>
  readonly #clock: () => number
  readonly #versions: ReadonlyMap<string, number>
  readonly #collectionVersions = new Map<string, number>()
  readonly #changesPerCommitMax: number
  readonly #commitsPerTxnMax: number
  readonly #pendingCommitsMax: number
  #queue: Pending[] = []
  #draining = false
  #scheduled = false
  #closed = false
  #drained: Promise<void> = Promise.resolve()
  #resolveDrained: (() => void) | null = null
  #overlay = new Map<string, PreparedRecordWrite>()
  #seq = 0
  /** Settles when the last commit queued so far is written (or failed): commits are written in queue order. */
  #tail: Promise<void> = Promise.resolve()
  readonly #holdCommitsWhile: (() => boolean) | undefined
  /** Whether the previous process closed this store (or it is new); false after a crash. */
  readonly cleanStart: boolean
  #markedRunning = false
  #stats = { transactions: 0, commits: 0, failedCommits: 0, changes: 0, largestBatch: 0 }

  private constructor(
    dataDir: string,
    root: RootDatabase,
    options: StoreOptions,
    versions: ReadonlyMap<string, number>,
    recordedCollections: Record<string, number>,
    cleanStart: boolean,
  ) {
    this.dataDir = dataDir
    this.durability = options.durability ?? 'sync'
    this.#root = root
    this.#meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
    this.#snapshots = root.openDB<unknown, SnapshotKey>({ name: 'snapshots', useBigIntExtension: true } as never)
    this.#live = root.openDB<number, SnapshotKey>({ name: 'live' })
    this.#records = root.openDB<unknown, RecordKey>({ name: 'records', useBigIntExtension: true } as never)
    this.#expiry = root.openDB<boolean, ExpiryKey>({ name: 'expiry' })
    this.#clock = options.clock ?? Date.now
    this.#versions = versions
    for (const [name, version] of Object.entries(recordedCollections)) this.#collectionVersions.set(name, version)
    this.#changesPerCommitMax = options.changesPerCommitMax ?? CHANGES_PER_COMMIT_MAX_DEFAULT
    this.#commitsPerTxnMax = options.commitsPerTxnMax ?? COMMITS_PER_TXN_MAX_DEFAULT
    this.#pendingCommitsMax = options.pendingCommitsMax ?? PENDING_COMMITS_MAX_DEFAULT
    this.#holdCommitsWhile = options.holdCommitsWhile
    this.cleanStart = cleanStart
    this.idempotency = new Idempotency({
      retentionMs: options.idempotencyRetentionMs ?? IDEMPOTENCY_RETENTION_MS_DEFAULT,
      waitMs: options.idempotencyWaitMs ?? IDEMPOTENCY_WAIT_MS_DEFAULT,
      clock: this.#clock,
      read: (key) => this.#readIdempotency(key),
    })
    this.proofs = new UsedProofs(this.collection(USED_PROOF_COLLECTION, { version: 1, validate: isProofInfo }))
  }

  /**
   * Opens (or creates) the store in `dataDir`. Refuses with StoreOpenError a directory that is not one, is not
   * writable, holds a damaged data.mdb or another program's LMDB data, and with StoreVersionError data written by a
   * newer release. Never resets or repairs anything.
   */
  static async open(options: StoreOptions): Promise<Store> {
    const dataDir = path.resolve(options.dataDir)
    const durability = options.durability ?? 'sync'
    if (durability !== 'sync' && durability !== 'none') fail(`unknown durability ${String(durability)}`)
    const versions = new Map<string, number>()
    for (const kind of [...ACTOR_KINDS, ...ENGINE_RECORD_KINDS]) {
      const version = options.snapshotVersions?.[kind] ?? 1
      assertVersion(version, `snapshotVersions.${kind}`)
      versions.set(kind, version)
    }
    const state = checkDirectory(dataDir)
    if (state === 'existing' && (options.verifyOnOpen ?? 'deep') === 'deep') {
      const probe = await probeDataDir(dataDir, DB_NAMES, options.probeTimeoutMs ?? PROBE_TIMEOUT_MS_DEFAULT)
      if (!probe.ok) {
        throw new StoreOpenError(
          'store_corrupt',
          dataDir,
          `data directory ${dataDir} is damaged: ${probe.reason}. Nothing was changed; restore it from a backup ` +
            'or point DATA_DIR to another directory.',
        )
      }
    }
    let root: RootDatabase
    try {
      root = open({
        path: dataDir,
        // lmdb-js takes a path with an extension (`/tmp/tmp.x1Yz`, `data.v2`) for a single file unless told otherwise.
        noSubdir: false,
        // A commit must mean "on disk": synchronous LMDB commits. overlappingSync would resolve before the flush.
        overlappingSync: false,
        noSync: durability === 'none',
        maxDbs: 8,
        useBigIntExtension: true,
      } as never)
    } catch (error) {
      throw openError(dataDir, error)
    }
    try {
      const migrations = options.migrations ?? []
      for (const migration of migrations) {
        if (versions.get(migration.to.kind) !== migration.to.version) {
          fail(`a migration to ${migration.to.kind} version ${migration.to.version} must match snapshotVersions.${migration.to.kind}`)
        }
      }
      const recorded = Store.#checkFormat(dataDir, root, versions, migrations)
      // A migration is due while the schema record still names its old version: both change in one transaction.
      const due = migrations.filter((m) => recorded.kinds[m.from.kind] === m.from.version)
      const kinds: Record<string, number> = { ...recorded.kinds, ...Object.fromEntries(versions) }
      for (const migration of due) if (!versions.has(migration.from.kind)) delete kinds[migration.from.kind]
      if (recorded.unwritten || due.length > 0 || Object.entries(kinds).some(([kind, version]) => recorded.kinds[kind] !== version)) {
        // Nothing is written to a directory before every snapshot in it is known to be readable by this release.
        if (state === 'existing') Store.#checkStoredVersions(dataDir, root, versions, due)
        const meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
        root.transactionSync(() => {
          migrateSnapshots(root, due)
          meta.putSync('schema', { kinds, collections: recorded.collections } satisfies SchemaRecord)
        })
      }
      const shutdown = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never).get('shutdown')
      // A store written before the shutdown mark existed has none: its last stop is unknown, so it counts as unclean.
      return new Store(dataDir, root, options, versions, recorded.collections, recorded.created || shutdown === 'clean')
    } catch (error) {
      await root.close()
      throw error
    }
  }

  /** Checks (or, for a new directory, writes) the format and schema meta records. Returns recorded collections. */
  static #checkFormat(
    dataDir: string,
    root: RootDatabase,
    versions: ReadonlyMap<string, number>,
    migrations: readonly SnapshotMigration[],
  ): { kinds: Record<string, number>; collections: Record<string, number>; unwritten: boolean; created: boolean } {
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
    const format = meta.get('format')
    const created = format === undefined
    if (format === undefined) {
      if (names.length > 0 && names.some((name) => name !== 'meta')) {
        throw new StoreOpenError(
          'store_not_a_store',
          dataDir,
          `data directory ${dataDir} has store databases but no format record; refusing to guess its version`,
        )
      }
      const created: FormatRecord = { formatVersion: STORE_FORMAT_VERSION, createdAtMs: Date.now() }
      meta.putSync('format', created)
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
    return { kinds: recorded.kinds, collections: recorded.collections, unwritten: schema === undefined, created: format === undefined }
  }

  /** Reads every stored snapshot's kind and version: what this release cannot read is refused before any write. */
  static #checkStoredVersions(dataDir: string, root: RootDatabase, versions: ReadonlyMap<string, number>, due: readonly SnapshotMigration[]): void {
    const snapshots = root.openDB<unknown, SnapshotKey>({ name: 'snapshots', useBigIntExtension: true } as never)
    for (const { key, value } of snapshots.getRange()) {
      const version = isPlainObject(value) ? value.version : undefined
      if (!Number.isSafeInteger(version)) throw new StoreAssertionError(`${key[0]} ${key[1]}: stored snapshot has no valid version`)
      if (due.some((m) => m.from.kind === key[0] && m.from.version === version)) continue
      const known = versions.get(key[0])
      if (known === undefined) throw new StoreAssertionError(`${key[0]} ${key[1]}: unknown snapshot kind`)
      if ((version as number) > known) throw futureSnapshot(dataDir, `${key[0]} ${key[1]}`, version as number, known)
    }
  }

  // ---------------------------------------------------------------------------------------------------- writes

  /**
   * Queues `input` for the next group commit and resolves once it is durable (durability 'sync'). All writes of
   * one commit land together or not at all. Rejects with StoreAssertionError (invalid input, nothing queued),
   * StoreConflictError (a conditional record write lost; nothing of this commit written), StoreOverloadedError.
   */
  commit(input: CommitInput): Promise<CommitResult> {
    try {
      return this.#enqueue(this.#prepare(input, 0))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Resolves once every commit queued before the call is durable (settled); at once when none is pending. A read
   * built from memory awaits it before answering, so nothing it shows can be lost by a crash (issue 10, hole 4).
   */
  durable(): Promise<void> {
    if (this.#queue.length === 0 && !this.#draining && !this.#scheduled) return Promise.resolve()
    return this.#tail
  }

  /**
   * Marks the store as in use (durably) until close() marks it clean: a start that finds the mark learns that the
   * previous process died (cleanStart false). Called once the service is about to serve, so a refused start writes
   * nothing.
   */
  async markRunning(): Promise<void> {
    await this.#meta.put('shutdown', 'running')
    this.#markedRunning = true
  }

  /** Deletes expired records and idempotency records (at most `limit`); resolves with how many were deleted. */
  async sweepExpired(limit = SWEEP_BATCH_MAX): Promise<number> {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > SWEEP_BATCH_MAX) fail(`sweep limit 1..${SWEEP_BATCH_MAX}`)
    const result = await this.#enqueue(this.#prepare({}, limit))
    return result.swept
  }

  /**
   * Sweeps every `intervalMs` on an unref'd timer; returns the function that stops it. A tick deletes in batches of
   * `batch` (each its own short transaction) until a batch comes back short, so a backlog larger than one batch
   * (more expiries per interval than a batch holds) is caught up in the same tick instead of growing for ever.
   */
  startSweeper(intervalMs: number, onError: (error: unknown) => void = () => {}, batch = SWEEPER_BATCH_DEFAULT): () => void {
    if (!Number.isSafeInteger(intervalMs) || intervalMs < 10) fail('sweeper interval must be at least 10 ms')
    let running = false
    const sweepAll = async (): Promise<void> => {
      while (!this.#closed && (await this.sweepExpired(batch)) === batch) {
        // Let requests through between batches.
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    const timer = setInterval(() => {
      if (running || this.#closed) return
      running = true
      sweepAll()
        .catch(onError)
        .finally(() => (running = false))
    }, intervalMs)
    timer.unref()
    return () => clearInterval(timer)
  }

  #prepare(input: CommitInput, sweepLimit: number): Omit<Pending, 'resolve' | 'reject' | 'swept'> {
    if (this.#closed) throw new StoreClosedError()
    if (typeof input !== 'object' || input === null) fail('commit input must be an object')
    const nowMs = this.#clock()
    assertTimeMs(nowMs, 'clock')
    const changes = input.changes ?? []
    const writes = input.records ?? []
    if (!Array.isArray(changes)) fail('commit changes must be an array')
    if (!Array.isArray(writes)) fail('commit records must be an array')
    if (changes.length > this.#changesPerCommitMax) fail(`more than ${this.#changesPerCommitMax} changes in one commit`)
    if (writes.length > RECORD_WRITES_PER_COMMIT_MAX) fail(`more than ${RECORD_WRITES_PER_COMMIT_MAX} record writes`)
    const snapshots: PreparedSnapshot[] = []
    for (let i = 0; i < changes.length; i++) {
      const change = changes[i] as Change
      if (!isPlainObject(change)) fail(`changes[${i}] is not an object`)
      assertChangeKind(change.kind)
      assertId(change.id, `changes[${i}] (${change.kind})`)
      if (typeof change.final !== 'boolean') fail(`changes[${i}] (${change.kind} ${change.id}): final must be boolean`)
      const actor = isActorKind(change.kind)
      if (change.final && !actor) fail(`changes[${i}]: a ${change.kind} record cannot be final`)
      if (change.record === undefined) fail(`changes[${i}] (${change.kind} ${change.id}): record is missing`)
      assertJsonLike(change.record, `changes[${i}].record`)
      const version = this.#versions.get(change.kind) as number
      snapshots.push({
        key: [change.kind, change.id],
        entry: { version, snapshot: change.record, updatedAtMs: nowMs, final: change.final },
        actor,
      })
    }
    const records: PreparedRecordWrite[] = []
    for (let i = 0; i < writes.length; i++) {
      const write = writes[i] as RecordWrite
      if (!isPlainObject(write)) fail(`records[${i}] is not an object`)
      this.#assertKnownCollection(write.collection)
      assertRecordKey(write.key, `records[${i}] (${write.collection})`)
      let entry: RecordEntry | null = null
      if (write.op === 'put') {
        if (write.version !== this.#collectionVersions.get(write.collection)) {
          fail(`records[${i}]: version ${write.version} is not the registered version of ${write.collection}`)
        }
        assertJsonLike(write.value, `records[${i}].value`)
        if (write.value === undefined) fail(`records[${i}]: value is missing`)
        if (write.expiresAtMs !== null) assertTimeMs(write.expiresAtMs, `records[${i}].expiresAtMs`)
        if (typeof write.onlyIfAbsent !== 'boolean') fail(`records[${i}]: onlyIfAbsent must be boolean`)
        entry = { version: write.version, value: write.value, updatedAtMs: nowMs, expiresAtMs: write.expiresAtMs }
      } else if (write.op === 'delete') {
        if (typeof write.mustExist !== 'boolean') fail(`records[${i}]: mustExist must be boolean`)
      } else {
        fail(`records[${i}]: unknown op ${String((write as { op?: unknown }).op)}`)
      }
      records.push({ write, entry, overlayKey: overlayKeyOf(write.collection, write.key), seq: 0 })
    }
    const idempotency = input.idempotency ?? null
    if (idempotency !== null && !(idempotency.ticket instanceof IdempotencyTicket)) {
      fail('commit idempotency must come from IdempotencyTicket.complete()')
    }
    if (idempotency !== null && idempotency.ticket.state !== 'open') {
      fail(`idempotency ticket is ${idempotency.ticket.state}; a ticket carries exactly one commit`)
    }
    return { nowMs, snapshots, records, idempotency, sweepLimit }
  }

  #enqueue(prepared: Omit<Pending, 'resolve' | 'reject' | 'swept'>): Promise<CommitResult & { swept: number }> {
    if (this.#queue.length >= this.#pendingCommitsMax) {
      throw new StoreOverloadedError(`more than ${this.#pendingCommitsMax} commits are waiting for the disk`)
    }
    // From here on nothing throws: the commit is queued and its promise settles in #drain.
    prepared.idempotency?.ticket.markCommitting()
    const records = prepared.records.map((record) => {
      const withSeq = { ...record, seq: ++this.#seq }
      this.#overlay.set(withSeq.overlayKey, withSeq)
      return withSeq
    })
    const committed = new Promise<CommitResult & { swept: number }>((resolve, reject) => {
      this.#queue.push({ ...prepared, records, swept: 0, resolve, reject })
      this.#schedule()
    })
    this.#tail = committed.then(
      () => undefined,
      () => undefined,
    )
    return committed
  }

  #schedule(): void {
    if (this.#draining || this.#scheduled) return
    this.#scheduled = true
    if (this.#resolveDrained === null) this.#drained = new Promise((resolve) => (this.#resolveDrained = resolve))
    // Wait one turn so every commit issued in this turn of the event loop shares the transaction.
    setImmediate(() => void this.#drain())
  }

  async #drain(): Promise<void> {
    if (this.#holdCommitsWhile?.() === true) {
      setTimeout(() => void this.#drain(), 10)
      return
    }
    this.#scheduled = false
    if (this.#draining) return
    this.#draining = true
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#commitsPerTxnMax)
        await this.#write(batch)
      }
    } finally {
      this.#draining = false
      const resolveDrained = this.#resolveDrained
      this.#resolveDrained = null
      resolveDrained?.()
    }
  }

  async #write(batch: Pending[]): Promise<void> {
    const failures: unknown[] = new Array(batch.length).fill(undefined)
    let txnId = 0
    let txnError: unknown
    try {
      await this.#root.transaction(() => {
        txnId = this.#root.getWriteTxnId()
        for (let i = 0; i < batch.length; i++) {
          const pending = batch[i] as Pending
          try {
            this.#root.childTransaction(() => this.#apply(pending))
          } catch (error) {
            failures[i] = error ?? new StoreError('store_assertion_failed', 'commit failed')
          }
        }
      })
    } catch (error) {
      txnError = error
    }
    this.#stats.transactions++
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, batch.length)
    for (let i = 0; i < batch.length; i++) {
      const pending = batch[i] as Pending
      for (const record of pending.records) {
        if (this.#overlay.get(record.overlayKey)?.seq === record.seq) this.#overlay.delete(record.overlayKey)
      }
      const error = txnError ?? failures[i]
      if (error === undefined) {
        this.#stats.commits++
        this.#stats.changes += pending.snapshots.length
        pending.resolve({ txnId, swept: pending.swept })
      } else {
        this.#stats.failedCommits++
        pending.reject(error)
      }
      // After resolve: a waiting retry reads the stored response, which the read transaction now sees.
      pending.idempotency?.ticket.settle()
    }
  }

  /** Runs inside a child transaction of the group's write transaction; throwing aborts this commit only. */
  #apply(pending: Pending): void {
    for (const { key, entry, actor } of pending.snapshots) {
      this.#snapshots.putSync(key, entry)
      if (actor) {
        if (entry.final) this.#live.removeSync(key)
        else this.#live.putSync(key, entry.updatedAtMs)
      }
    }
    for (const { write, entry } of pending.records) {
      const key: RecordKey = [write.collection, write.key]
      const existing = this.#records.get(key) as RecordEntry | undefined
      const present = existing !== undefined && !isExpired(existing, pending.nowMs)
      if (write.op === 'put') {
        if (write.onlyIfAbsent && present) {
          throw new StoreConflictError(write.collection, write.key, `${write.collection} ${write.key} already exists`)
        }
      } else if (write.mustExist && !present) {
        throw new StoreConflictError(write.collection, write.key, `${write.collection} ${write.key} does not exist`)
      }
      this.#putRecord(key, existing, entry)
    }
    const completion = pending.idempotency
    if (completion !== null) {
      const { ticket, response } = completion
      const key: RecordKey = [IDEMPOTENCY_COLLECTION, scopeKey(ticket.scope)]
      const existing = this.#records.get(key) as RecordEntry | undefined
      if (existing !== undefined && !isExpired(existing, pending.nowMs)) {
        // The in-flight registry admits one ticket per key; a live record here means it was bypassed.
        throw new StoreConflictError(IDEMPOTENCY_COLLECTION, key[1], 'idempotency record already stored')
      }
      const record: IdempotencyRecord = {
        scope: ticket.scope,
        requestHash: ticket.requestHash,
        response,
        createdAtMs: pending.nowMs,
        expiresAtMs: pending.nowMs + this.idempotency.retentionMs,
      }
      this.#putRecord(key, existing, {
        version: IDEMPOTENCY_RECORD_VERSION,
        value: record,
        updatedAtMs: pending.nowMs,
        expiresAtMs: record.expiresAtMs,
      })
    }
    if (pending.sweepLimit > 0) pending.swept = this.#sweep(pending.nowMs, pending.sweepLimit)
  }

  /** Writes (entry) or deletes (null) a record and keeps the expiry index in step. */
  #putRecord(key: RecordKey, existing: RecordEntry | undefined, entry: RecordEntry | null): void {
    if (existing !== undefined && existing.expiresAtMs !== null) {
      this.#expiry.removeSync([existing.expiresAtMs, key[0], key[1]])
    }
    if (entry === null) {
      if (existing !== undefined) this.#records.removeSync(key)
      return
    }
    this.#records.putSync(key, entry)
    if (entry.expiresAtMs !== null) this.#expiry.putSync([entry.expiresAtMs, key[0], key[1]], true)
  }

  #sweep(nowMs: number, limit: number): number {
    const due: ExpiryKey[] = []
    for (const key of this.#expiry.getKeys()) {
      if (key[0] > nowMs || due.length >= limit) break
      due.push(key)
    }
    let deleted = 0
    for (const [expiresAtMs, collection, recordKey] of due) {
      this.#expiry.removeSync([expiresAtMs, collection, recordKey])
      const existing = this.#records.get([collection, recordKey]) as RecordEntry | undefined
      if (existing !== undefined && existing.expiresAtMs === expiresAtMs) {
        this.#records.removeSync([collection, recordKey])
        deleted++
      }
    }
    return deleted
  }

  // ----------------------------------------------------------------------------------------------------- reads

  /** The stored snapshot of an actor or engine record, live or final. */
  getSnapshot(kind: ChangeKind, id: string): SnapshotEntry | undefined {
    assertChangeKind(kind)
    assertId(id, kind)
    const raw = this.#snapshots.get([kind, id])
    return raw === undefined ? undefined : this.#checkSnapshot(raw, kind, id)
  }

  isLive(kind: ActorKind, id: string): boolean {
    if (!isActorKind(kind)) fail(`${kind} is not an actor kind`)
    return this.#live.get([kind, id]) !== undefined
  }

  /** Live (non-final) actors of one kind, in id order, read from the live index: final actors are never scanned. */
  *iterateLive(kind: ActorKind): Generator<{ id: string; entry: SnapshotEntry }> {
    if (!isActorKind(kind)) fail(`${kind} is not an actor kind`)
    for (const key of this.#live.getKeys({ start: [kind] })) {
      if (key[0] !== kind) break
      const raw = this.#snapshots.get(key)
      if (raw === undefined) throw new StoreAssertionError(`live index names ${kind} ${key[1]} but no snapshot exists`)
      const entry = this.#checkSnapshot(raw, kind, key[1])
      if (entry.final) throw new StoreAssertionError(`live index names ${kind} ${key[1]} but its snapshot is final`)
      yield { id: key[1], entry }
    }
  }

  /** Every stored snapshot of a kind (for record kinds: all records; for actor kinds: live and final). */
  *iterateKind(kind: ChangeKind): Generator<{ id: string; entry: SnapshotEntry }> {
    assertChangeKind(kind)
    for (const { key, value } of this.#snapshots.getRange({ start: [kind] })) {
      if (key[0] !== kind) break
      yield { id: key[1], entry: this.#checkSnapshot(value, kind, key[1]) }
    }
  }

  countLive(kind: ActorKind): number {
    let count = 0
    for (const key of this.#live.getKeys({ start: [kind] })) {
      if (key[0] !== kind) break
      count++
    }
    return count
  }

  #checkSnapshot(raw: unknown, kind: string, id: string): SnapshotEntry {
    const where = `${kind} ${id}`
    if (!isPlainObject(raw)) throw new StoreAssertionError(`${where}: stored snapshot is not an object`)
    const { version, snapshot, updatedAtMs, final } = raw
    if (!Number.isSafeInteger(version) || (version as number) < 1) {
      throw new StoreAssertionError(`${where}: stored snapshot has no valid version`)
    }
    const known = this.#versions.get(kind) as number
    if ((version as number) > known) throw futureSnapshot(this.dataDir, where, version as number, known)
    if (!Number.isSafeInteger(updatedAtMs)) throw new StoreAssertionError(`${where}: stored snapshot has no updatedAtMs`)
    if (typeof final !== 'boolean') throw new StoreAssertionError(`${where}: stored snapshot has no final flag`)
    if (final && !isActorKind(kind)) throw new StoreAssertionError(`${where}: a record kind cannot be final`)
    if (snapshot === undefined) throw new StoreAssertionError(`${where}: stored snapshot is empty`)
    return raw as unknown as SnapshotEntry
  }

  /** @internal used by RecordCollection. Returns the pending value first (read-your-writes across requests). */
  readRecord(collection: string, key: string, nowMs: number): RecordEntry | undefined {
    const pending = this.#overlay.get(overlayKeyOf(collection, key))
    if (pending !== undefined) {
      if (pending.entry === null || isExpired(pending.entry, nowMs)) return undefined
      return pending.entry
    }
    const raw = this.#records.get([collection, key])
    if (raw === undefined) return undefined
    const entry = this.#checkRecord(raw, collection, key)
    return isExpired(entry, nowMs) ? undefined : entry
  }

  /** @internal used by RecordCollection: durable records only, non-expired, key starting with `prefix`. */
  *rangeRecords(collection: string, prefix: string, nowMs: number): Generator<{ key: string; entry: RecordEntry }> {
    for (const { key, value } of this.#records.getRange({ start: [collection, prefix] })) {
      if (key[0] !== collection || !key[1].startsWith(prefix)) break
      const entry = this.#checkRecord(value, collection, key[1])
      if (!isExpired(entry, nowMs)) yield { key: key[1], entry }
    }
  }

  #checkRecord(raw: unknown, collection: string, key: string): RecordEntry {
    const where = `${collection} ${key}`
    if (!isPlainObject(raw)) throw new StoreAssertionError(`${where}: stored record is not an object`)
    const { version, value, updatedAtMs, expiresAtMs } = raw
    if (!Number.isSafeInteger(version) || (version as number) < 1) {
      throw new StoreAssertionError(`${where}: stored record has no valid version`)
    }
    const known = collection === IDEMPOTENCY_COLLECTION ? IDEMPOTENCY_RECORD_VERSION : this.#collectionVersions.get(collection)
    if (known !== undefined && (version as number) > known) {
      throw new StoreVersionError(
        `data directory ${this.dataDir}: ${where}: record version ${String(version)} is newer than this release reads ` +
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

  #readIdempotency(key: string): IdempotencyRecord | undefined {
    const raw = this.#records.get([IDEMPOTENCY_COLLECTION, key])
    if (raw === undefined) return undefined
    const entry = this.#checkRecord(raw, IDEMPOTENCY_COLLECTION, key)
    if (isExpired(entry, this.#clock())) return undefined
    const record = entry.value as IdempotencyRecord
    if (!isPlainObject(record) || typeof record.requestHash !== 'string' || !isPlainObject(record.response)) {
      throw new StoreAssertionError(`idempotency record ${key} is malformed`)
    }
    return record
  }

  // ------------------------------------------------------------------------------------------------ collections

  /**
   * Typed access to a named record collection (sessions, nonces, reputation, ...). Registering a version records it
   * in the meta database; a data directory holding a newer version of the collection is refused.
   */
  collection<T>(name: string, options: CollectionOptions<T> = {}): RecordCollection<T> {
    assertCollectionName(name)
    const version = options.version ?? 1
    assertVersion(version, `collection ${name}`)
    const recorded = this.#collectionVersions.get(name)
    if (recorded !== undefined && recorded > version) {
      throw new StoreVersionError(
        `data directory ${this.dataDir} holds ${name} records of version ${recorded}; this release reads up to ${version}`,
      )
    }
    if (recorded !== version) {
      const schema = this.#meta.get('schema') as SchemaRecord
      this.#meta.putSync('schema', { kinds: schema.kinds, collections: { ...schema.collections, [name]: version } })
      this.#collectionVersions.set(name, version)
    }
    return new RecordCollection<T>(this, name, version, options.validate, this.#clock)
  }

  #assertKnownCollection(name: unknown): void {
    if (typeof name !== 'string' || !this.#collectionVersions.has(name)) {
      fail(`unknown record collection ${JSON.stringify(name)}: register it with store.collection()`)
    }
  }

  // ------------------------------------------------------------------------------------------------ operations

  /** Whether a commit queued now would be accepted: callers check before changing memory they must then persist. */
  hasRoom(): boolean {
    return this.#queue.length < this.#pendingCommitsMax
  }

  stats(): StoreStats {
    return { ...this.#stats, pending: this.#queue.length }
  }

  /** Reads and checks every entry of every database; returns the count. Throws on the first bad entry. */
  verify(): { snapshots: number; live: number; records: number } {
    let snapshots = 0
    let live = 0
    let records = 0
    for (const { key, value } of this.#snapshots.getRange()) {
      assertChangeKind(key[0])
      const entry = this.#checkSnapshot(value, key[0], key[1])
      const isLive = this.#live.get(key) !== undefined
      if (isActorKind(key[0]) && isLive === entry.final) {
        throw new StoreAssertionError(`${key[0]} ${key[1]}: live index and final flag disagree`)
      }
      snapshots++
    }
    for (const key of this.#live.getKeys()) {
      if (this.#snapshots.get(key) === undefined) throw new StoreAssertionError(`live ${key[0]} ${key[1]} has no snapshot`)
      live++
    }
    for (const { key, value } of this.#records.getRange()) {
      this.#checkRecord(value, key[0], key[1])
      records++
    }
    return { snapshots, live, records }
  }

  /** Waits for every queued commit, then closes LMDB. Commits after close() reject with StoreClosedError. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    while (this.#queue.length > 0 || this.#draining || this.#scheduled) await this.#drained
    if (this.#markedRunning) await this.#meta.put('shutdown', 'clean')
    await this.#root.close()
  }
}

function futureSnapshot(dataDir: string, where: string, version: number, known: number): StoreVersionError {
  return new StoreVersionError(
    `data directory ${dataDir}: ${where}: snapshot schema version ${version} is newer than this release reads (${known}). ` +
      'Run the newer release or use another DATA_DIR.',
  )
}

function isExpired(entry: RecordEntry, nowMs: number): boolean {
  return entry.expiresAtMs !== null && entry.expiresAtMs <= nowMs
}

export interface PutOptions {
  readonly expiresAtMs?: number | null
  readonly onlyIfAbsent?: boolean
}

/** A named record collection. Reads are synchronous; writes are RecordWrite values carried by `store.commit()`. */
export class RecordCollection<T> {
  readonly name: string
  readonly version: number
  readonly #store: Store
  readonly #validate: ((value: unknown) => value is T) | undefined
  readonly #clock: () => number

  constructor(
    store: Store,
    name: string,
    version: number,
    validate: ((value: unknown) => value is T) | undefined,
    clock: () => number,
  ) {
    this.#store = store
    this.name = name
    this.version = version
    this.#validate = validate
    this.#clock = clock
  }

  /** The value, including one a queued commit is writing (so a concurrent request sees it), unless expired. */
  get(key: string): T | undefined {
    return this.getEntry(key)?.value
  }

  getEntry(key: string): RecordEntry<T> | undefined {
    assertRecordKey(key, this.name)
    const entry = this.#store.readRecord(this.name, key, this.#clock())
    if (entry !== undefined) this.#check(entry.value, key)
    return entry as RecordEntry<T> | undefined
  }

  has(key: string): boolean {
    return this.getEntry(key) !== undefined
  }

  /** Durable, unexpired records whose key starts with `prefix`, in key order. */
  *iterate(prefix = ''): Generator<{ key: string; value: T; entry: RecordEntry<T> }> {
    for (const { key, entry } of this.#store.rangeRecords(this.name, prefix, this.#clock())) {
      this.#check(entry.value, key)
      yield { key, value: entry.value as T, entry: entry as RecordEntry<T> }
    }
  }

  putOp(key: string, value: T, options: PutOptions = {}): RecordWrite {
    assertRecordKey(key, this.name)
    this.#check(value, key)
    return {
      op: 'put',
      collection: this.name,
      key,
      value,
      version: this.version,
      expiresAtMs: options.expiresAtMs ?? null,
      onlyIfAbsent: options.onlyIfAbsent ?? false,
    }
  }

  deleteOp(key: string, options: { readonly mustExist?: boolean } = {}): RecordWrite {
    assertRecordKey(key, this.name)
    return { op: 'delete', collection: this.name, key, mustExist: options.mustExist ?? false }
  }

  #check(value: unknown, key: string): void {
    if (this.#validate !== undefined && !this.#validate(value)) {
      throw new StoreAssertionError(`${this.name} ${key}: value fails the collection's validator`)
    }
  }
}

export interface UsedProofInfo {
  readonly usedBy: string
  readonly usedAtMs: number
}

function isProofInfo(value: unknown): value is UsedProofInfo {
  return isPlainObject(value) && typeof value.usedBy === 'string' && Number.isSafeInteger(value.usedAtMs)
}

/** Chain proofs already consumed: key `${network}:${txHash}:${logIndex}` by convention of src/chain. */
export class UsedProofs {
  readonly #collection: RecordCollection<UsedProofInfo>
  constructor(collection: RecordCollection<UsedProofInfo>) {
    this.#collection = collection
  }
  /** True once a commit adding the proof was queued (before it is durable, so two requests cannot both use it). */
  has(key: string): boolean {
    return this.#collection.has(key)
  }
  get(key: string): UsedProofInfo | undefined {
    return this.#collection.get(key)
  }
  /** Create-only: the commit carrying this fails with StoreConflictError if the proof was already used. */
  addOp(key: string, info: UsedProofInfo): RecordWrite {
    return this.#collection.putOp(key, info, { onlyIfAbsent: true })
  }
}
