// What one commit writes: its input checked and prepared before it is queued, then checked against the group's state
// and written with the group's other commits in the group's write transaction (snapshots and the live index, records
// and their expiry index, the idempotency record, and a sweep of expired records when asked).
import type { Database } from 'lmdb'
import { isExpired } from './checks.ts'
import { StoreAssertionError, StoreConflictError, StoreError } from './errors.ts'
import { IdempotencyTicket, type IdempotencyCompletion } from './idempotency.ts'
import { NOT_JSON_LIKE, type CheckedValues } from './structures-encoder.ts'
import type { Change, IdempotencyRecord, RecordEntry, RecordWrite, SnapshotEntry } from './types.ts'
import {
  assertChangeKind, assertId, assertRecordKey, assertTimeMs, fail, failAt, isActorKind, isId, isPlainObject, isRecordKey,
  jsonLikeProblem, problemMessage, VALUE_DEPTH_MAX,
} from './validate.ts'

export const IDEMPOTENCY_COLLECTION = '$idempotency'
export const IDEMPOTENCY_RECORD_VERSION = 1
export const RECORD_WRITES_PER_COMMIT_MAX = 10_000

export interface CommitInput {
  readonly changes?: readonly Change[]
  readonly records?: readonly RecordWrite[]
  readonly idempotency?: IdempotencyCompletion
}

export type SnapshotKey = [string, string]
export type RecordKey = [string, string]
export type ExpiryKey = [number, string, string]

export interface PreparedSnapshot {
  readonly key: SnapshotKey
  readonly entry: SnapshotEntry
  readonly actor: boolean
  /** A live actor already in the live index (Change.alreadyLive): no live-index write. */
  readonly alreadyLive: boolean
  /** A removed record (Change.removed): its snapshot is deleted, `entry` is not written. */
  readonly removed: boolean
}

export interface PreparedRecordWrite {
  readonly write: RecordWrite
  readonly entry: RecordEntry | null
  readonly overlayKey: string
  /** The store's write sequence, set when the commit is queued: the overlay drops the write it still shows. */
  seq: number
}

/** A commit ready to queue: everything checked, every entry built. */
export interface Prepared {
  readonly nowMs: number
  readonly snapshots: readonly PreparedSnapshot[]
  readonly records: readonly PreparedRecordWrite[]
  readonly idempotency: IdempotencyCompletion | null
  readonly sweepLimit: number
}

/** What a commit is checked against: its size limit and the versions registered for kinds and collections. */
export interface CommitLimits {
  readonly changesPerCommitMax: number
  readonly versions: ReadonlyMap<string, number>
  readonly collectionVersions: ReadonlyMap<string, number>
}

/** The databases a commit writes. */
export interface StoreDatabases {
  readonly snapshots: Database<unknown, SnapshotKey>
  readonly live: Database<number, SnapshotKey>
  readonly records: Database<unknown, RecordKey>
  readonly expiry: Database<boolean, ExpiryKey>
}

export function overlayKeyOf(collection: string, key: string): string {
  return `${collection}\u0000${key}`
}

/**
 * Checks a commit's input and prepares its entries, stamped with the clock's time. Throws StoreAssertionError on
 * anything invalid: nothing of the commit is queued then. A change's record is checked as the group writes it
 * (SNAPSHOT_VALUES_CHECKED): one walk of it instead of two (issue 11); a record that is not JSON-like fails its commit
 * there, alone, with the same StoreAssertionError, and nothing of that commit is written.
 */
export function prepareCommit(input: CommitInput, clock: () => number, sweepLimit: number, limits: CommitLimits): Prepared {
  if (typeof input !== 'object' || input === null) fail('commit input must be an object')
  const nowMs = clock()
  assertTimeMs(nowMs, 'clock')
  const changes = input.changes ?? []
  const writes = input.records ?? []
  if (!Array.isArray(changes)) fail('commit changes must be an array')
  if (!Array.isArray(writes)) fail('commit records must be an array')
  if (changes.length > limits.changesPerCommitMax) fail(`more than ${limits.changesPerCommitMax} changes in one commit`)
  if (writes.length > RECORD_WRITES_PER_COMMIT_MAX) fail(`more than ${RECORD_WRITES_PER_COMMIT_MAX} record writes`)
  // sized once (a pushed-to array grows to 17 slots at its first push), and no array for no record writes (issue 11)
  const snapshots: PreparedSnapshot[] = new Array(changes.length)
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i] as Change
    if (!isPlainObject(change)) fail(`changes[${i}] is not an object`)
    assertChangeKind(change.kind)
    if (!isId(change.id)) assertId(change.id, `changes[${i}] (${change.kind})`)
    if (typeof change.final !== 'boolean') fail(`changes[${i}] (${change.kind} ${change.id}): final must be boolean`)
    const actor = isActorKind(change.kind)
    if (change.final && !actor) fail(`changes[${i}]: a ${change.kind} record cannot be final`)
    const alreadyLive = change.alreadyLive === true
    if (change.alreadyLive !== undefined && typeof change.alreadyLive !== 'boolean') fail(`changes[${i}] (${change.kind} ${change.id}): alreadyLive must be boolean`)
    if (alreadyLive && (!actor || change.final)) fail(`changes[${i}] (${change.kind} ${change.id}): only a live actor's change is alreadyLive`)
    const removed = change.removed === true
    if (change.removed !== undefined && typeof change.removed !== 'boolean') fail(`changes[${i}] (${change.kind} ${change.id}): removed must be boolean`)
    if (removed && (actor || change.record !== null)) fail(`changes[${i}] (${change.kind} ${change.id}): only a record is removed, and its record is null`)
    if (change.record === undefined) fail(`changes[${i}] (${change.kind} ${change.id}): record is missing`)
    const version = limits.versions.get(change.kind) as number
    snapshots[i] = {
      key: [change.kind, change.id],
      entry: { version, snapshot: change.record, updatedAtMs: nowMs, final: change.final },
      actor,
      alreadyLive,
      removed,
    }
  }
  const records = (writes.length === 0 ? NO_RECORD_WRITES : new Array(writes.length)) as PreparedRecordWrite[]
  for (let i = 0; i < writes.length; i++) {
    const write = writes[i] as RecordWrite
    if (!isPlainObject(write)) fail(`records[${i}] is not an object`)
    assertKnownCollection(limits, write.collection)
    if (!isRecordKey(write.key)) assertRecordKey(write.key, `records[${i}] (${write.collection})`)
    let entry: RecordEntry | null = null
    if (write.op === 'put') {
      if (write.version !== limits.collectionVersions.get(write.collection)) {
        fail(`records[${i}]: version ${write.version} is not the registered version of ${write.collection}`)
      }
      const problem = jsonLikeProblem(write.value)
      if (problem !== undefined) failAt(`records[${i}].value`, problem)
      if (write.value === undefined) fail(`records[${i}]: value is missing`)
      if (write.expiresAtMs !== null) assertTimeMs(write.expiresAtMs, `records[${i}].expiresAtMs`)
      if (typeof write.onlyIfAbsent !== 'boolean') fail(`records[${i}]: onlyIfAbsent must be boolean`)
      entry = { version: write.version, value: write.value, updatedAtMs: nowMs, expiresAtMs: write.expiresAtMs }
    } else if (write.op === 'delete') {
      if (typeof write.mustExist !== 'boolean') fail(`records[${i}]: mustExist must be boolean`)
    } else {
      fail(`records[${i}]: unknown op ${String((write as { op?: unknown }).op)}`)
    }
    records[i] = { write, entry, overlayKey: overlayKeyOf(write.collection, write.key), seq: 0 }
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

/** The records of a commit that writes none: one shared empty array, never written to. */
const NO_RECORD_WRITES: readonly PreparedRecordWrite[] = Object.freeze([])

function assertKnownCollection(limits: CommitLimits, name: unknown): void {
  if (typeof name !== 'string' || !limits.collectionVersions.has(name)) {
    fail(`unknown record collection ${JSON.stringify(name)}: register it with store.collection()`)
  }
}

/**
 * The group's snapshot writes, the last per key, by kind and then id: no joined key string per snapshot (issue 11).
 */
type StagedSnapshots = Map<string, Map<string, PreparedSnapshot>>

/**
 * How the snapshots database's encoder checks the entries it writes: a snapshot entry's record is JSON-like plus
 * bigint (validate.ts jsonLikeProblem, one level below the entry), checked by the walk that encodes it; a record the
 * encoder leaves to msgpackr (a bigint beyond 64 bits) is checked first. A failure throws NOT_JSON_LIKE, which fails
 * the commit with the path (snapshotFailure).
 */
export const SNAPSHOT_VALUES_CHECKED: CheckedValues = {
  depthMax: VALUE_DEPTH_MAX + 1,
  assertJsonLike: (entry) => {
    if (jsonLikeProblem((entry as SnapshotEntry).snapshot) !== undefined) throw NOT_JSON_LIKE
  },
}

/** A commit's failure for NOT_JSON_LIKE: StoreAssertionError with the path to the first record that is not JSON-like. */
function snapshotFailure(pending: Prepared): StoreAssertionError {
  for (let i = 0; i < pending.snapshots.length; i++) {
    const { entry, removed } = pending.snapshots[i] as PreparedSnapshot
    const problem = removed ? undefined : jsonLikeProblem(entry.snapshot)
    if (problem !== undefined) return new StoreAssertionError(problemMessage(`changes[${i}].record`, problem))
  }
  return new StoreAssertionError('a change\'s record is not JSON-like')
}

/** Runs an isolated step: a child transaction of the group's write transaction, aborted (with its writes) on a throw. */
export type Isolated = (step: () => void) => void

/** What each commit of a group came to: its failure (undefined when written) and how many records it swept. */
export interface GroupOutcome {
  readonly failures: unknown[]
  readonly swept: number[]
}

/**
 * A record key's state in the group: as stored before the group, and as the group's accepted commits leave it.
 * `checkedBy` and `checked` hold what the commit being checked would leave there (its earlier writes of the same key
 * count for its later checks); they are taken over only when the whole commit passes, so a refused commit leaves the
 * slot as it was without an undo step, and no map or closure is made per commit (issue 11).
 */
interface RecordSlot {
  readonly key: RecordKey
  readonly stored: RecordEntry | undefined
  current: RecordEntry | undefined
  written: boolean
  checkedBy: Prepared | null
  checked: RecordEntry | undefined
}

/**
 * Applies a group of commits inside the group's write transaction (issue 11: the store's write path).
 *
 * Each commit is first checked against the state the commits before it leave (its conditional record writes and its
 * idempotency record), without writing anything: a commit that fails a check is refused and leaves no trace, the
 * others go on. The accepted commits' writes are then put once per key (the last one: an earlier snapshot or record
 * of the same key would only be overwritten in the same transaction) in ONE child transaction. Should that child
 * throw (an LMDB error, not a check), it aborts with all its writes and the group is written again the old way, one
 * child transaction per commit, so the throw costs only the commit that caused it. A throw straight in the group's
 * callback would not do: lmdb-js commits the writes made before it (write.js executeTxnCallbacks). An actor a failed
 * commit made live is absent from the live index: a later commit's alreadyLive change of it puts the entry.
 * A sweep reads the stored expiry index, so the writes accepted before it are flushed first.
 */
export function applyGroup(dbs: StoreDatabases, batch: readonly Prepared[], idempotencyRetentionMs: number, isolated: Isolated): GroupOutcome {
  const group = new GroupWrite(dbs, batch, idempotencyRetentionMs, isolated)
  for (let i = 0; i < batch.length; i++) {
    const pending = batch[i] as Prepared
    if (pending.sweepLimit > 0) {
      group.flush()
      group.writeAlone(i)
      continue
    }
    try {
      stageCommit(dbs, withBirthsOf(pending, group.unwrittenBirths), idempotencyRetentionMs, group.slots, group.snapshots)
    } catch (error) {
      group.failed(i, error)
      continue
    }
    group.accepted.push(i)
  }
  group.flush()
  return { failures: group.failures, swept: group.swept }
}

/**
 * A group's state while applyGroup runs. Methods, not closures made per group: the service runs under tsx, whose
 * esbuild keepNames wraps every named closure in a `__name` call (Object.defineProperty on the new function), about
 * 0.8 µs each (issue 11).
 */
class GroupWrite {
  readonly failures: unknown[]
  readonly swept: number[]
  /** Actors a failed commit of the group made live: a later commit's change of one (alreadyLive) is its only write. */
  readonly unwrittenBirths = new Set<string>()
  slots = new Map<string, RecordSlot>()
  snapshots: StagedSnapshots = new Map()
  accepted: number[] = []
  readonly #dbs: StoreDatabases
  readonly #batch: readonly Prepared[]
  readonly #idempotencyRetentionMs: number
  readonly #isolated: Isolated

  constructor(dbs: StoreDatabases, batch: readonly Prepared[], idempotencyRetentionMs: number, isolated: Isolated) {
    this.failures = new Array(batch.length).fill(undefined)
    this.swept = new Array(batch.length).fill(0)
    this.#dbs = dbs
    this.#batch = batch
    this.#idempotencyRetentionMs = idempotencyRetentionMs
    this.#isolated = isolated
  }

  failed(i: number, error: unknown): void {
    this.failures[i] = error === NOT_JSON_LIKE ? snapshotFailure(this.#batch[i] as Prepared) : failureOf(error)
    noteBirths(this.#batch[i] as Prepared, this.unwrittenBirths)
  }

  /** Writes the staged writes in one child transaction; on a throw, each accepted commit again in its own. */
  flush(): void {
    if (this.snapshots.size === 0 && this.slots.size === 0) return
    const { snapshots, slots } = this
    try {
      this.#isolated(() => writeGroup(this.#dbs, snapshots, slots))
    } catch {
      for (const i of this.accepted) this.writeAlone(i)
    }
    this.slots = new Map()
    this.snapshots = new Map()
    this.accepted = []
  }

  /** Commit `i` alone in its own child transaction (a sweep, or each commit again after the group's child threw). */
  writeAlone(i: number): void {
    try {
      this.#isolated(() => void (this.swept[i] = applyCommit(this.#dbs, withBirthsOf(this.#batch[i] as Prepared, this.unwrittenBirths), this.#idempotencyRetentionMs)))
    } catch (error) {
      this.failed(i, error)
    }
  }
}

/** Adds the actors `pending` made live (its changes of live actors that are not alreadyLive) to `births`. */
function noteBirths(pending: Prepared, births: Set<string>): void {
  for (const snapshot of pending.snapshots) {
    if (snapshot.actor && !snapshot.alreadyLive && !snapshot.entry.final) births.add(`${snapshot.key[0]}:${snapshot.key[1]}`)
  }
}

/**
 * `pending` with its alreadyLive changes of the actors in `unwrittenBirths` (made live by a commit of the group that
 * failed, so absent from the live index) turned into live-index puts: the actor's entry is written with its snapshot.
 */
function withBirthsOf(pending: Prepared, unwrittenBirths: ReadonlySet<string>): Prepared {
  if (unwrittenBirths.size === 0) return pending
  let changed = false
  const snapshots = pending.snapshots.map((snapshot) => {
    if (!snapshot.alreadyLive || !unwrittenBirths.has(`${snapshot.key[0]}:${snapshot.key[1]}`)) return snapshot
    changed = true
    return { ...snapshot, alreadyLive: false }
  })
  return changed ? { ...pending, snapshots } : pending
}

/** A failure is never undefined (that marks a written commit), whatever was thrown. */
function failureOf(error: unknown): unknown {
  return error ?? new StoreError('store_assertion_failed', 'commit failed')
}

/**
 * Checks one commit against the group's state so far (reading the store for keys the group has not touched) and, when
 * it passes, stages its writes in `slots` and `snapshots` (last write per key); throws StoreConflictError, staging
 * nothing.
 */
function stageCommit(
  dbs: StoreDatabases,
  pending: Prepared,
  idempotencyRetentionMs: number,
  slots: Map<string, RecordSlot>,
  snapshots: StagedSnapshots,
): void {
  const { nowMs } = pending
  for (const { write, entry, overlayKey } of pending.records) {
    const slot = slotOf(dbs, slots, overlayKey, write.collection, write.key)
    const present = isPresent(slot, pending)
    if (write.op === 'put') {
      if (write.onlyIfAbsent && present) {
        throw new StoreConflictError(write.collection, write.key, `${write.collection} ${write.key} already exists`)
      }
    } else if (write.mustExist && !present) {
      throw new StoreConflictError(write.collection, write.key, `${write.collection} ${write.key} does not exist`)
    }
    slot.checkedBy = pending
    slot.checked = entry ?? undefined
  }
  const completion = pending.idempotency
  let idempotencySlot: RecordSlot | null = null
  if (completion !== null) {
    const { key } = completion.ticket
    idempotencySlot = slotOf(dbs, slots, overlayKeyOf(IDEMPOTENCY_COLLECTION, key), IDEMPOTENCY_COLLECTION, key)
    if (isPresent(idempotencySlot, pending)) {
      // The in-flight registry admits one ticket per key; a live record here means it was bypassed.
      throw new StoreConflictError(IDEMPOTENCY_COLLECTION, key, 'idempotency record already stored')
    }
  }
  // Every check passed: from here on nothing throws.
  for (const { overlayKey } of pending.records) takeChecked(slots.get(overlayKey) as RecordSlot)
  if (completion !== null) {
    const slot = idempotencySlot as RecordSlot
    slot.current = idempotencyEntry(completion, nowMs, idempotencyRetentionMs)
    slot.written = true
  }
  for (const snapshot of pending.snapshots) {
    const [kind, id] = snapshot.key
    let byId = snapshots.get(kind)
    if (byId === undefined) snapshots.set(kind, (byId = new Map()))
    // An actor made live by an earlier commit of the group is not in the live index yet: its later write puts it.
    const earlier = snapshot.alreadyLive ? byId.get(id) : undefined
    byId.set(id, earlier !== undefined && !earlier.alreadyLive && !earlier.entry.final ? { ...snapshot, alreadyLive: false } : snapshot)
  }
}

/** The group's slot of a record key, made on first use from what the store holds. */
function slotOf(dbs: StoreDatabases, slots: Map<string, RecordSlot>, overlayKey: string, collection: string, key: string): RecordSlot {
  let slot = slots.get(overlayKey)
  if (slot === undefined) {
    const recordKey: RecordKey = [collection, key]
    const stored = dbs.records.get(recordKey) as RecordEntry | undefined
    slot = { key: recordKey, stored, current: stored, written: false, checkedBy: null, checked: undefined }
    slots.set(overlayKey, slot)
  }
  return slot
}

/** Whether a live record holds the slot's key for `pending`: after its own earlier writes, else after the group's. */
function isPresent(slot: RecordSlot, pending: Prepared): boolean {
  const entry = slot.checkedBy === pending ? slot.checked : slot.current
  return entry !== undefined && !isExpired(entry, pending.nowMs)
}

/** The checked commit's last write of the slot's key becomes the group's (a key written twice is taken twice). */
function takeChecked(slot: RecordSlot): void {
  slot.current = slot.checked
  slot.written = true
}

/** lmdb-js's put options for the live index: MDB_NOOVERWRITE, one object for every put. */
const KEEP_LIVE_ENTRY = { noOverwrite: true } as never

/**
 * The accepted commits' writes, each key once. An actor already in the live index keeps its entry: not written when
 * its change says so (alreadyLive), else put only if absent (noOverwrite: a search of the index and an instruction for
 * LMDB all the same).
 */
function writeGroup(dbs: StoreDatabases, snapshots: StagedSnapshots, slots: ReadonlyMap<string, RecordSlot>): void {
  for (const byId of snapshots.values()) {
    for (const { key, entry, actor, alreadyLive, removed } of byId.values()) {
      if (removed) {
        dbs.snapshots.removeSync(key)
        continue
      }
      dbs.snapshots.putSync(key, entry)
      if (actor) {
        if (entry.final) dbs.live.removeSync(key)
        else if (!alreadyLive) dbs.live.putSync(key, entry.updatedAtMs, KEEP_LIVE_ENTRY)
      }
    }
  }
  for (const slot of slots.values()) {
    if (slot.written) putRecord(dbs, slot.key, slot.stored, slot.current ?? null)
  }
}

function idempotencyEntry(completion: IdempotencyCompletion, nowMs: number, idempotencyRetentionMs: number): RecordEntry {
  const { ticket, response } = completion
  const record: IdempotencyRecord = {
    scope: ticket.scope,
    requestHash: ticket.requestHash,
    response,
    createdAtMs: nowMs,
    expiresAtMs: nowMs + idempotencyRetentionMs,
  }
  return { version: IDEMPOTENCY_RECORD_VERSION, value: record, updatedAtMs: nowMs, expiresAtMs: record.expiresAtMs }
}

/**
 * One commit on its own, inside its own child transaction (a sweep, or the group again after a child threw): the
 * same checks and writes as a group of one; throwing aborts this commit only.
 */
export function applyCommit(dbs: StoreDatabases, pending: Prepared, idempotencyRetentionMs: number): number {
  const slots = new Map<string, RecordSlot>()
  const snapshots: StagedSnapshots = new Map()
  stageCommit(dbs, pending, idempotencyRetentionMs, slots, snapshots)
  writeGroup(dbs, snapshots, slots)
  return pending.sweepLimit > 0 ? sweep(dbs, pending.nowMs, pending.sweepLimit) : 0
}

/** Writes (entry) or deletes (null) a record and keeps the expiry index in step. */
function putRecord(dbs: StoreDatabases, key: RecordKey, existing: RecordEntry | undefined, entry: RecordEntry | null): void {
  if (existing !== undefined && existing.expiresAtMs !== null) {
    dbs.expiry.removeSync([existing.expiresAtMs, key[0], key[1]])
  }
  if (entry === null) {
    if (existing !== undefined) dbs.records.removeSync(key)
    return
  }
  dbs.records.putSync(key, entry)
  if (entry.expiresAtMs !== null) dbs.expiry.putSync([entry.expiresAtMs, key[0], key[1]], true)
}

/** Deletes up to `limit` records whose expiry has come, oldest expiry first; returns how many. */
function sweep(dbs: StoreDatabases, nowMs: number, limit: number): number {
  const due: ExpiryKey[] = []
  for (const key of dbs.expiry.getKeys()) {
    if (key[0] > nowMs || due.length >= limit) break
    due.push(key)
  }
  let deleted = 0
  for (const [expiresAtMs, collection, recordKey] of due) {
    dbs.expiry.removeSync([expiresAtMs, collection, recordKey])
    const existing = dbs.records.get([collection, recordKey]) as RecordEntry | undefined
    if (existing !== undefined && existing.expiresAtMs === expiresAtMs) {
      dbs.records.removeSync([collection, recordKey])
      deleted++
    }
  }
  return deleted
}
