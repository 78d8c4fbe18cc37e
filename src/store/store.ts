// The LMDB store: snapshots of actors and engine records, named record collections, idempotency records.
//
// Writes go through one queue. Every commit() waits in the queue; one LMDB write transaction takes all commits
// queued so far (group commit): each commit is checked against the state the ones before it leave, a failing one is
// refused alone, and the accepted ones' writes are put once per key (writes.ts applyGroup). The promise of a commit
// resolves after that transaction is committed and, with durability 'sync', fsynced (LMDB's synchronous commit: we
// open with overlappingSync off, so lmdb-js resolves only after mdb_txn_commit returned, which flushes the data pages
// and then the meta page). Reads are synchronous LMDB reads.

import path from 'node:path'
import { open, type Database, type RootDatabase } from 'lmdb'
import { checkRecordEntry, checkSnapshotEntry, isExpired } from './checks.ts'
import { closedCleanly, forgetCleanShutdown, recordCleanShutdown } from './clean-shutdown.ts'
import { checkDataFile } from './data-file.ts'
import { StoreAssertionError, StoreClosedError, StoreError, StoreOverloadedError, StoreStalledError, StoreVersionError, StoreWriteFailedError } from './errors.ts'
import { Idempotency } from './idempotency.ts'
import { migrateSnapshots, reencodeValues, type SnapshotMigration } from './migrate.ts'
import { checkDirectory, checkFormat, checkStoredVersions, DB_NAMES, openError, STORE_FORMAT_VERSION, type FormatRecord, type SchemaRecord } from './open-checks.ts'
import { checkBesideReads, clearDeepCheckRunning, deepCheck, deepCheckWasCut, probeTimeoutMsFor } from './probe.ts'
import { isProofInfo, RecordCollection, UsedProofs } from './records.ts'
import { ACTOR_KINDS, ENGINE_RECORD_KINDS, type ActorKind, type ChangeKind, type CommitResult, type Durability, type IdempotencyRecord, type RecordEntry, type SnapshotEntry } from './types.ts'
import { assertChangeKind, assertCollectionName, assertId, assertVersion, fail, isActorKind, isPlainObject } from './validate.ts'
import { encodeWithStructures } from './structures-encoder.ts'
import { LEGACY_VALUE_ENCODING, STRUCTURES_RECORD, valueEncoding } from './value-encoding.ts'
import {
  applyGroup, IDEMPOTENCY_COLLECTION, type CommitLimits, IDEMPOTENCY_RECORD_VERSION, overlayKeyOf, prepareCommit, type CommitInput, type ExpiryKey, type GroupOutcome,
  type Prepared, type PreparedRecordWrite, type RecordKey, type SnapshotKey, SNAPSHOT_VALUES_CHECKED,
} from './writes.ts'

export { DB_NAMES, STORE_FORMAT_VERSION } from './open-checks.ts'
export { LEGACY_VALUE_ENCODING, STRUCTURES_RECORD, VALUE_STRUCTURES, storedValueEncoding, valueEncoding } from './value-encoding.ts'
export { RecordCollection, UsedProofs, type PutOptions, type UsedProofInfo } from './records.ts'
export { IDEMPOTENCY_COLLECTION, RECORD_WRITES_PER_COMMIT_MAX, type CommitInput } from './writes.ts'

export const USED_PROOF_COLLECTION = 'used-proof'

export const CHANGES_PER_COMMIT_MAX_DEFAULT = 10_000
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
  /**
   * 'deep-unless-clean' (default): the deep check (every entry read in a child process before opening) unless this
   * release closed the store cleanly and data.mdb is as it left it (clean-shutdown.ts); 'deep': always;
   * 'header': data.mdb's header only.
   */
  readonly verifyOnOpen?: 'deep-unless-clean' | 'deep' | 'header'
  /**
   * When the deep check runs, return before its verdict (after the header, the main database and every branch page
   * passed), with the check running beside the caller's reads: the caller must write nothing and serve nothing until
   * checked() resolves. The service's start (issue 11). Not when the previous such start died before its verdict
   * (probe.ts): then the check runs first, alone. A migration or schema record due (a write at open) waits in open()
   * for the verdict.
   */
  readonly deepCheckBesideReads?: boolean
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

export interface StoreStats {
  /** LMDB write transactions that carried commits (and sweeps). */
  readonly transactions: number
  readonly commits: number
  readonly failedCommits: number
  readonly changes: number
  readonly largestBatch: number
  readonly pending: number
  /**
   * Where the group transactions' time went, summed in ms (performance.now() five times per transaction): from asking
   * lmdb-js for the transaction to its callback (the writer thread begins it, then the main thread's event loop runs
   * the callback), the callback (applyGroup), from the callback's end to the resolution (the commit and its syncs on
   * the writer thread, then the event loop again), and the acknowledgements.
   */
  readonly cycleMs: { readonly toCallback: number; readonly callback: number; readonly toResolved: number; readonly acks: number }
}

/** A queued commit: its prepared entries and the promise to settle once its transaction is written. */
interface Pending {
  readonly prepared: Prepared
  readonly resolve: (result: CommitResult & { swept: number }) => void
  readonly reject: (error: unknown) => void
}

/** A durable() call waiting until the commits queued before it (the first `queued` commits) have settled. */
interface DurableWaiter {
  readonly queued: number
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
}

interface CollectionOptions<T> {
  /** Schema version stamped on records (default 1). Records of a higher version are refused when read. */
  readonly version?: number
  /** Checked on every put and on every read back. */
  readonly validate?: (value: unknown) => value is T
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
  /** The databases a commit writes (writes.ts). */
  readonly #dbs: { snapshots: Database<unknown, SnapshotKey>; live: Database<number, SnapshotKey>; records: Database<unknown, RecordKey>; expiry: Database<boolean, ExpiryKey> }
  readonly #clock: () => number
  readonly #versions: ReadonlyMap<string, number>
  readonly #collectionVersions = new Map<string, number>()
  /** What each commit is checked against; collection() adds to its collectionVersions. */
  readonly #limits: CommitLimits
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
  /** Commits queued and commits settled (written or failed) so far; commits settle in queue order. */
  #queuedCount = 0
  #settledCount = 0
  /** In the order of their `queued`, so the settled ones are at the front. */
  #durableWaiters: DurableWaiter[] = []
  readonly #holdCommitsWhile: (() => boolean) | undefined
  /** Whether the previous process closed this store (or it is new); false after a crash. */
  readonly cleanStart: boolean
  /** How open() checked the data: 'deep', 'header', 'clean-shutdown' (the deep check skipped), or 'new'. */
  readonly openCheck: 'deep' | 'header' | 'clean-shutdown' | 'new'
  #markedRunning = false
  /** The verdict of a deep check running beside reads (deepCheckBesideReads); undefined when none runs. */
  readonly #checked: Promise<void> | undefined
  #stats = { transactions: 0, commits: 0, failedCommits: 0, changes: 0, largestBatch: 0 }
  /**
   * Set when a group's write transaction failed (StoreWriteFailedError) or stalled (StoreStalledError): from then on
   * every commit and durable() rejects with it and nothing more is written (fail-stop: memory is ahead of the disk).
   */
  #failure: StoreError | undefined
  #onFailure: ((error: StoreError) => void) | undefined
  /** performance.now() when the group transaction in flight was asked for; 0 while none is (watchStalls reads it). */
  #groupAskedAt = 0
  #cycleMs = { toCallback: 0, callback: 0, toResolved: 0, acks: 0 }

  private constructor(
    dataDir: string,
    root: RootDatabase,
    options: StoreOptions,
    versions: ReadonlyMap<string, number>,
    recordedCollections: Record<string, number>,
    structures: readonly (readonly string[])[],
    cleanStart: boolean,
    openCheck: Store['openCheck'],
    checked: Promise<void> | undefined,
  ) {
    this.dataDir = dataDir
    this.durability = options.durability ?? 'sync'
    this.#root = root
    this.#meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
    this.#snapshots = root.openDB<unknown, SnapshotKey>({ name: 'snapshots', ...valueEncoding(structures) } as never)
    this.#live = root.openDB<number, SnapshotKey>({ name: 'live' })
    this.#records = root.openDB<unknown, RecordKey>({ name: 'records', ...valueEncoding(structures) } as never)
    this.#expiry = root.openDB<boolean, ExpiryKey>({ name: 'expiry' })
    encodeWithStructures(this.#snapshots, structures, SNAPSHOT_VALUES_CHECKED)
    encodeWithStructures(this.#records, structures)
    for (const db of [this.#live, this.#expiry]) encodeWithStructures(db, [])
    this.#dbs = { snapshots: this.#snapshots, live: this.#live, records: this.#records, expiry: this.#expiry }
    this.#clock = options.clock ?? Date.now
    this.#versions = versions
    for (const [name, version] of Object.entries(recordedCollections)) this.#collectionVersions.set(name, version)
    this.#limits = {
      changesPerCommitMax: options.changesPerCommitMax ?? CHANGES_PER_COMMIT_MAX_DEFAULT, versions, collectionVersions: this.#collectionVersions,
    }
    this.#commitsPerTxnMax = options.commitsPerTxnMax ?? COMMITS_PER_TXN_MAX_DEFAULT
    this.#pendingCommitsMax = options.pendingCommitsMax ?? PENDING_COMMITS_MAX_DEFAULT
    this.#holdCommitsWhile = options.holdCommitsWhile
    this.cleanStart = cleanStart
    this.openCheck = openCheck
    this.#checked = checked
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
    handleLmdbCommitRejections()
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
    const verify = options.verifyOnOpen ?? 'deep-unless-clean'
    if (verify !== 'deep-unless-clean' && verify !== 'deep' && verify !== 'header') fail(`unknown verifyOnOpen ${String(verify)}`)
    // A start that ran the deep check beside its reads and died before the verdict: this one checks first, alone.
    const checkWasCut = state !== 'new' && deepCheckWasCut(dataDir)
    const openCheck = state === 'new' ? 'new' : verify === 'header' ? 'header' : verify === 'deep-unless-clean' && closedCleanly(dataDir, state) && !checkWasCut ? 'clean-shutdown' : 'deep'
    // The deep check's verdict, when it runs beside the caller's reads.
    let checked: Promise<void> | undefined
    if (state !== 'new' && openCheck === 'deep') {
      const timeoutMs = options.probeTimeoutMs ?? probeTimeoutMsFor(dataDir)
      if (options.deepCheckBesideReads === true && !checkWasCut) {
        checked = checkBesideReads(dataDir, state, DB_NAMES, timeoutMs)
      } else {
        await deepCheck(dataDir, state, DB_NAMES, timeoutMs)
        clearDeepCheckRunning(dataDir)
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
      if (checked !== undefined) await checked
      throw openError(dataDir, error)
    }
    try {
      const migrations = options.migrations ?? []
      for (const migration of migrations) {
        if (versions.get(migration.to.kind) !== migration.to.version) {
          fail(`a migration to ${migration.to.kind} version ${migration.to.version} must match snapshotVersions.${migration.to.kind}`)
        }
      }
      const recorded = checkFormat(dataDir, root, versions, migrations)
      // A migration is due while the schema record still names its old version: both change in one transaction.
      const due = migrations.filter((m) => recorded.kinds[m.from.kind] === m.from.version)
      const kinds: Record<string, number> = { ...recorded.kinds, ...Object.fromEntries(versions) }
      for (const migration of due) if (!versions.has(migration.from.kind)) delete kinds[migration.from.kind]
      const upgrade = recorded.format.formatVersion < STORE_FORMAT_VERSION
      const rewrite = upgrade || recorded.unwritten || due.length > 0 || Object.entries(kinds).some(([kind, version]) => recorded.kinds[kind] !== version)
      // Nothing is written to a directory before every snapshot in it is known to be readable by this release.
      if (rewrite && state !== 'new') checkStoredVersions(dataDir, root, versions, due, upgrade ? LEGACY_VALUE_ENCODING : valueEncoding(recorded.structures))
      // Nor before the deep check passed.
      if (rewrite && checked !== undefined) {
        await checked
        checked = undefined
      }
      // From here on this process may write: a crash must find no clean-shutdown record. (Beside a check still
      // running, once it passed: a refused start leaves the directory as it found it.)
      const writable = checked?.then(() => forgetCleanShutdown(dataDir))
      writable?.catch(() => {})
      if (checked === undefined) forgetCleanShutdown(dataDir)
      if (rewrite) {
        const meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
        root.transactionSync(() => {
          // Format 1 or 2 -> 3: every value in format 3's encoding, with the structures it records.
          if (upgrade) {
            reencodeValues(root, recorded.structures)
            meta.putSync(STRUCTURES_RECORD, recorded.structures)
            meta.putSync('format', { ...recorded.format, formatVersion: STORE_FORMAT_VERSION } satisfies FormatRecord)
          }
          migrateSnapshots(root, due, recorded.structures)
          meta.putSync('schema', { kinds, collections: recorded.collections } satisfies SchemaRecord)
        })
      }
      const shutdown = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never).get('shutdown')
      // A store written before the shutdown mark existed has none: its last stop is unknown, so it counts as unclean.
      return new Store(dataDir, root, options, versions, recorded.collections, recorded.structures, recorded.created || shutdown === 'clean', openCheck, writable)
    } catch (error) {
      await root.close()
      // Damage explains any other failure of reading it: the deep check's refusal comes first.
      if (checked !== undefined) await checked
      throw error
    }
  }

  // ---------------------------------------------------------------------------------------------------- writes

  /**
   * Queues `input` for the next group commit and resolves once it is durable (durability 'sync'). All writes of
   * one commit land together or not at all. Rejects with StoreAssertionError (invalid input, nothing queued; a change's
   * record that is not JSON-like, found as its group writes it: nothing of this commit written), StoreConflictError (a
   * conditional record write lost; nothing of this commit written), StoreOverloadedError.
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
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (this.#settledCount === this.#queuedCount) return Promise.resolve()
    // A promise per call, not per commit: reads wait here, commits never do (issue 11).
    return new Promise((resolve, reject) => this.#durableWaiters.push({ queued: this.#queuedCount, resolve, reject }))
  }

  /** How long (ms) the group transaction in flight has gone unsettled; 0 while none is (GET /health reads it in a stall). */
  writePendingMs(): number {
    return this.#groupAskedAt === 0 ? 0 : performance.now() - this.#groupAskedAt
  }

  /** The failure that stopped the store's writes (a failed or stalled group transaction); undefined while it writes. */
  get failure(): StoreError | undefined {
    return this.#failure
  }

  /**
   * Calls `handler` once, when the store fails (a failed or stalled group transaction, see `failure`), after the
   * commits and durable() calls it failed were rejected: the service stops then (memory is ahead of the disk), even
   * when the failed group carried no request (a sweep) or the stall no commit anybody waits for.
   */
  onFailure(handler: (error: StoreError) => void): void {
    this.#onFailure = handler
  }

  /**
   * Checks every `stallMs / 4` (7.5 s for the service's default: nothing to speak of when idle) on an unref'd timer whether the group transaction in flight has
   * settled within `stallMs`; when not, the store fails (StoreStalledError: every commit queued and to come rejects
   * with it, as after a failed transaction) and the onFailure handler is called. A write that never returns (a flush the
   * disk never completes, the write lock held by another process) would otherwise keep every request waiting.
   * Nothing per commit: the group records when it was asked for, which it measured already. Returns the stop.
   */
  watchStalls(stallMs: number): () => void {
    if (!Number.isSafeInteger(stallMs) || stallMs < 100) fail('stall limit must be at least 100 ms')
    const timer = setInterval(() => {
      const askedAt = this.#groupAskedAt
      if (this.#failure !== undefined || askedAt === 0 || performance.now() - askedAt < stallMs) return
      clearInterval(timer)
      const error = new StoreStalledError(
        `a write transaction of the store in ${this.dataDir} has not settled in ${stallMs} ms (storeCommitStallMs): the disk or LMDB's write lock does not answer; nothing queued after it is written`,
      )
      this.#fail(error, [])
    }, Math.max(25, Math.floor(stallMs / 4)))
    timer.unref()
    return () => clearInterval(timer)
  }

  /** The overlay entries of a settled commit (written or refused), unless a commit queued later took the key over. */
  #dropOverlay(prepared: Prepared): void {
    for (const record of prepared.records) {
      if (this.#overlay.get(record.overlayKey)?.seq === record.seq) this.#overlay.delete(record.overlayKey)
    }
  }

  /**
   * Stops the store's writes with `error`: the commits of `batch` and every queued commit reject with it, as do the
   * durable() calls waiting. Commits settle in queue order, so those queued behind a failed group are never written.
   */
  #fail(error: StoreError, batch: readonly Pending[]): void {
    const first = this.#failure === undefined
    this.#failure ??= error
    const rejected = [...batch, ...this.#queue.splice(0)]
    for (const { prepared, reject } of rejected) {
      this.#dropOverlay(prepared)
      this.#stats.failedCommits++
      reject(this.#failure)
      prepared.idempotency?.ticket.settle()
    }
    this.#settledCount += rejected.length
    for (const waiter of this.#durableWaiters.splice(0)) waiter.reject(this.#failure)
    if (first) this.#onFailure?.(error)
  }

  /**
   * Resolves once the deep check open() left running beside reads (deepCheckBesideReads) has passed, at once when none
   * runs; rejects with its refusal (StoreOpenError store_corrupt or store_check_timeout). Nothing may be written to
   * the store, and nothing served, before it resolves.
   */
  checked(): Promise<void> {
    return this.#checked ?? Promise.resolve()
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

  #prepare(input: CommitInput, sweepLimit: number): Prepared {
    if (this.#closed) throw new StoreClosedError()
    if (this.#failure !== undefined) throw this.#failure
    return prepareCommit(input, this.#clock, sweepLimit, this.#limits)
  }

  #enqueue(prepared: Prepared): Promise<CommitResult & { swept: number }> {
    if (this.#queue.length >= this.#pendingCommitsMax) {
      throw new StoreOverloadedError(`more than ${this.#pendingCommitsMax} commits are waiting for the disk`)
    }
    // From here on nothing throws: the commit is queued and its promise settles in #drain.
    prepared.idempotency?.ticket.markCommitting()
    for (const record of prepared.records) {
      record.seq = ++this.#seq
      this.#overlay.set(record.overlayKey, record)
    }
    this.#queuedCount++
    const committed = new Promise<CommitResult & { swept: number }>((resolve, reject) => {
      this.#queue.push({ prepared, resolve, reject })
    })
    this.#schedule()
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
      // The first group is what was queued by this turn; each next one, asked as soon as the previous one is written,
      // is what is queued when its callback runs.
      await this.#write(this.#queue.splice(0, this.#commitsPerTxnMax))
      while (this.#queue.length > 0 && this.#failure === undefined) await this.#write(null)
    } finally {
      this.#draining = false
      const resolveDrained = this.#resolveDrained
      this.#resolveDrained = null
      resolveDrained?.()
    }
  }

  /**
   * One group transaction of `taken`, or (null) of the commits queued when lmdb-js runs its callback (the writer
   * thread has begun the transaction), not when it is asked for: the commits issued meanwhile, among them those that
   * the previous group's acknowledgements let their callers issue at once, join it instead of following in a
   * transaction of their own (issue 11).
   */
  async #write(taken: Pending[] | null): Promise<void> {
    let batch = taken ?? undefined
    let outcome: GroupOutcome | undefined
    let txnId = 0
    let txnError: unknown
    const asked = performance.now()
    this.#groupAskedAt = asked
    let callbackStart = asked
    let callbackEnd = asked
    try {
      await this.#root.transaction(() => {
        callbackStart = performance.now()
        batch ??= this.#queue.splice(0, this.#commitsPerTxnMax)
        txnId = this.#root.getWriteTxnId()
        outcome = applyGroup(this.#dbs, batch.map((pending) => pending.prepared), this.idempotency.retentionMs, (step) => void this.#root.childTransaction(step))
        callbackEnd = performance.now()
      })
    } catch (error) {
      txnError = error
    }
    const resolved = performance.now()
    this.#groupAskedAt = 0
    // A transaction that failed before its callback ran fails the commits it would have taken.
    batch ??= this.#queue.splice(0, this.#commitsPerTxnMax)
    if (outcome === undefined && txnError === undefined) txnError = new StoreError('store_assertion_failed', 'the write transaction did not run')
    this.#stats.transactions++
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, batch.length)
    // A stall already failed the store: this group's commits (written or not) are rejected with it, as is the rest.
    if (txnError !== undefined || this.#failure !== undefined) {
      this.#fail(txnError === undefined ? (this.#failure as StoreError) : await writeFailure(txnError, batch.length), batch)
      return
    }
    for (let i = 0; i < batch.length; i++) {
      const { prepared, resolve, reject } = batch[i] as Pending
      this.#dropOverlay(prepared)
      const error = outcome?.failures[i]
      if (error === undefined) {
        this.#stats.commits++
        this.#stats.changes += prepared.snapshots.length
        resolve({ txnId, swept: outcome?.swept[i] ?? 0 })
      } else {
        this.#stats.failedCommits++
        reject(error)
      }
      // After resolve: a waiting retry reads the stored response, which the read transaction now sees.
      prepared.idempotency?.ticket.settle()
    }
    this.#settledCount += batch.length
    // After the commits' own promises: a read waiting here answers after the commits it waited for are acknowledged.
    let ready = 0
    while (ready < this.#durableWaiters.length && (this.#durableWaiters[ready] as DurableWaiter).queued <= this.#settledCount) ready++
    if (ready > 0) for (const waiter of this.#durableWaiters.splice(0, ready)) waiter.resolve()
    const cycle = this.#cycleMs
    cycle.toCallback += callbackStart - asked
    cycle.callback += callbackEnd - callbackStart
    cycle.toResolved += resolved - callbackEnd
    cycle.acks += performance.now() - resolved
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
    return checkSnapshotEntry(raw, kind, id, this.#versions.get(kind) as number, this.dataDir)
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
    const known = collection === IDEMPOTENCY_COLLECTION ? IDEMPOTENCY_RECORD_VERSION : this.#collectionVersions.get(collection)
    return checkRecordEntry(raw, collection, key, known, this.dataDir)
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

  // ------------------------------------------------------------------------------------------------ operations

  /** Whether a commit queued now would be accepted: callers check before changing memory they must then persist. */
  hasRoom(): boolean {
    return this.#queue.length < this.#pendingCommitsMax
  }

  stats(): StoreStats {
    return { ...this.#stats, pending: this.#queue.length, cycleMs: { ...this.#cycleMs } }
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
    // A failed store is left as its last written transaction made it, marked in use: the next start checks it deeply.
    // (A stalled one never drains: its close waits for the transaction in flight.)
    while (this.#queue.length > 0 || this.#draining || this.#scheduled) await this.#drained
    if (this.#markedRunning && this.#failure === undefined) await this.#meta.put('shutdown', 'clean')
    await this.#root.close()
    if (this.#failure !== undefined) return
    // Only synced commits leave data.mdb as the record describes it after a power loss; and a store whose deep check
    // failed (or never ended) was never clean.
    if (this.durability !== 'sync') return
    if (this.#checked !== undefined && !(await this.#checked.then(() => true, () => false))) return
    const check = checkDataFile(path.join(this.dataDir, 'data.mdb'))
    if (check.ok) recordCleanShutdown(this.dataDir, check)
  }
}

/**
 * The StoreWriteFailedError of a group transaction that failed, with LMDB's native error in its message. lmdb-js
 * (3.5.6, write.js rejectCommit) rejects each write of a failed transaction with "Commit failed (see commitError for
 * details)", whose `commitError` is another promise, rejected with the native error (lmdbError of the write thread's
 * status) right after, in the same callback (write.js startWriting): handled here, so it is never an unhandled
 * rejection, and waited for one turn at most.
 */
async function writeFailure(error: unknown, commits: number): Promise<StoreWriteFailedError> {
  let native = error
  const commitError = (error as { commitError?: unknown } | null)?.commitError
  if (commitError instanceof Promise) {
    const settled = commitError.then(() => error, (reason: unknown) => reason)
    native = await Promise.race([settled, new Promise((resolve) => setImmediate(() => resolve(error)))])
  }
  const code = (native as { code?: unknown } | null)?.code
  const detail = `${native instanceof Error ? native.message : String(native)}${code === undefined ? '' : ` (code ${String(code)})`}`
  return new StoreWriteFailedError(
    `the store's write transaction failed: ${detail}; its ${commits} commit(s) are not stored and the store writes nothing more`,
    { cause: native },
  )
}

/** lmdb-js's rejection of the writes of a failed transaction (write.js rejectCommit). */
function isLmdbCommitFailure(reason: unknown): boolean {
  return reason instanceof Error && typeof (reason as { commitError?: unknown }).commitError === 'object' && reason.message.startsWith('Commit failed')
}

let lmdbCommitRejectionsHandled = false

/**
 * lmdb-js 3.5.6 also rejects, on a failed transaction, a promise of its own that nobody holds (the event-turn batch's
 * start, write.js: `writeBatchStart()`, its result dropped): by default Node would crash on it as an unhandled
 * rejection (exit 1), before the service's orderly exit 70 whenever that waits a turn. The store learns of the failure
 * through its own transaction's promise (writeFailure), so that rejection is dropped here. Any other unhandled
 * rejection is thrown as Node does by default when this is the only listener (other listeners, a test runner's, keep
 * theirs).
 */
function handleLmdbCommitRejections(): void {
  if (lmdbCommitRejectionsHandled) return
  lmdbCommitRejectionsHandled = true
  process.on('unhandledRejection', (reason) => {
    if (isLmdbCommitFailure(reason)) return
    if (process.listenerCount('unhandledRejection') === 1) throw reason
  })
}
