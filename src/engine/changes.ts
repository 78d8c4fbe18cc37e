// Change tracking: what the running command touched, drained into the Changes the store commits.
import type { EngineState, Pending } from './state.ts'
import type { ActorKind, Address, BorrowerRecord, Change, HeldPaymentRecord, ReserveRecord, SourceRecord, SupplierRecord } from './types.ts'
import type { AnyActor, AnyMachineSnapshot } from 'xstate'
import { historyCopy, historyOf, withHistory } from './history.ts'

/**
 * XState's persisted snapshot carries `output: undefined` (and `error: undefined`) until an actor is done; the seam
 * promises JSON-like records (src/README.md), so absent values are dropped rather than stored as `undefined`.
 */
export function persisted(snapshot: unknown): unknown {
  // Copied without the absent keys rather than deleted from a copy: `delete` would turn the record into a slow
  // dictionary object, and every record is encoded and checked by the store after this.
  const source = snapshot as Record<string, unknown>
  const record: Record<string, unknown> = {}
  for (const key in source) {
    const value = source[key]
    if (value !== undefined) record[key] = value
  }
  return record
}

/**
 * The persisted record of a live actor with its history: what withHistory(persisted(actor.getPersistedSnapshot()))
 * gives, built in one object. XState's getPersistedSnapshot copies the snapshot twice (a rest spread, then a spread
 * into the result) and walks the whole context for actor references; these machines hold none, have no history
 * states and invoke nothing, so their record is the snapshot's own fields and context. An actor with children or a
 * history value takes the general path. test/engine/actors.test.ts checks both give the same record.
 */
export function actorRecord(actor: AnyActor): unknown {
  return recordOf(actor, false)
}

/**
 * The record of an actor that reached a final state and leaves memory now: with its history list itself, not a copy
 * (actorRecord copies it because a live actor's list keeps growing after the command; an evicted one's never does).
 */
export function finalActorRecord(actor: AnyActor): unknown {
  return recordOf(actor, true)
}

function recordOf(actor: AnyActor, final: boolean): unknown {
  const snapshot = actor.getSnapshot() as AnyMachineSnapshot
  if (hasKeys(snapshot.children) || hasKeys(snapshot.historyValue)) return withHistory(persisted(actor.getPersistedSnapshot()), actor)
  // Same keys in the same order as the general path (status, output or error once done, value, historyValue,
  // context, children, history), absent values left out as persisted() leaves them.
  const record: Record<string, unknown> = { status: snapshot.status }
  if (snapshot.output !== undefined) record.output = snapshot.output
  if (snapshot.error !== undefined) record.error = snapshot.error
  record.value = snapshot.value
  record.historyValue = {}
  record.context = snapshot.context
  record.children = {}
  record.history = final ? historyOf(actor) : historyCopy(actor)
  return record
}

/** Whether an object has an own enumerable key, without building the array of keys. */
export function hasKeys(object: object): boolean {
  for (const _ in object) return true
  return false
}

/**
 * What the running command changed, in the order it first touched each thing (the order the store and the stream read
 * changes in): one slot per (kind, id), replaced in place when the thing is touched again. Not a map by a
 * `${kind}:${id}` key, which cost a string built and hashed per touch (about 0.1 µs with a lender's address, several
 * per match and time-out: issue 11). A command touches a handful of things: its slots are found by a scan, comparing
 * the kind (an interned constant) first; past SCAN_MAX slots a command indexes them by kind and id, so a large batch
 * (a follower's, dispatch's) stays linear.
 */
export class PendingChanges {
  /** The slots in first-touch order. */
  private list: Pending[] = []
  /** Each slot's position by kind, then id: built once the command has more than SCAN_MAX slots. */
  private index: Map<Change['kind'], Map<string, number>> | undefined = undefined

  get size(): number {
    return this.list.length
  }

  /** Marks it touched, once: a second touch keeps the first slot and its content. */
  touch(kind: Change['kind'], id: string): void {
    if (this.find(kind, id) < 0) this.append({ kind, id })
  }

  /** Sets its slot: in place when the command touched it already (its position stays), else at the end. */
  set(kind: Change['kind'], id: string, item: Pending): void {
    const position = this.find(kind, id)
    if (position < 0) this.append(item)
    else this.list[position] = item
  }

  /** The slots in order, and the set emptied for the next command. */
  take(): Pending[] {
    const list = this.list
    this.list = []
    this.index = undefined
    return list
  }

  private find(kind: Change['kind'], id: string): number {
    if (this.index !== undefined) return this.index.get(kind)?.get(id) ?? -1
    const list = this.list
    for (let i = 0; i < list.length; i++) {
      const item = list[i] as Pending
      if (item.kind === kind && item.id === id) return i
    }
    return -1
  }

  private append(item: Pending): void {
    const list = this.list
    list.push(item)
    if (this.index !== undefined) {
      indexSlot(this.index, item, list.length - 1)
    } else if (list.length > SCAN_MAX) {
      const index = (this.index = new Map())
      for (let i = 0; i < list.length; i++) indexSlot(index, list[i] as Pending, i)
    }
  }
}

/** Slots a command finds by scanning; past it, by index (a scan of 16 costs less than a map's lookups). */
const SCAN_MAX = 16

function indexSlot(index: Map<Change['kind'], Map<string, number>>, item: Pending, position: number): void {
  let positions = index.get(item.kind)
  if (positions === undefined) index.set(item.kind, (positions = new Map()))
  positions.set(item.id, position)
}

/** Mark a record or live actor changed: its record is read when the command drains, so the last state wins. */
export function touch(s: EngineState, kind: Change['kind'], id: string): void {
  s.pending.touch(kind, id)
}

/**
 * Mark an actor the running command just started: its change is not `alreadyLive`, so the store lists it live. Called
 * before anything else touches it in the command (an event sent to it would mark it as an actor already live).
 */
export function touchBorn(s: EngineState, kind: ActorKind, id: string): void {
  s.pending.set(kind, id, { kind, id, born: true })
}

/** Record a change whose record is fixed now (an actor that reached a final state and leaves memory, or a removed record). */
export function recordFinal(s: EngineState, change: Change): void {
  s.pending.set(change.kind, change.id, change)
}

/** What the command changed, drained from the pending set: the store commits it. */
export function drain<T>(s: EngineState, value: T): { ok: true; value: T; changes: Change[] } {
  const changes: Change[] = []
  for (const item of s.pending.take()) {
    changes.push('record' in item ? item : changeOf(s, item.kind, item.id, item.born === true))
  }
  return { ok: true, value, changes }
}

function changeOf(s: EngineState, kind: Change['kind'], id: string, born: boolean): Change {
  switch (kind) {
    case 'meta': return { kind, id, record: { ...s.meta }, final: false }
    case 'lender': {
      const lender = s.lenders.get(id as Address)
      if (!lender) throw new Error(`engine: lender ${id} vanished`)
      return { kind, id, record: { ...lender }, final: false }
    }
    case 'source': return { kind, id, record: { ...(s.sources.get(id) as SourceRecord) }, final: false }
    case 'borrower': return { kind, id, record: { ...(s.borrowers.get(id as Address) as BorrowerRecord) }, final: false }
    case 'reserve': return { kind, id, record: { ...(s.reserves.get(id) as ReserveRecord) }, final: false }
    case 'supplier': return { kind, id, record: { ...(s.suppliers.get(id) as SupplierRecord) }, final: false }
    case 'held': return { kind, id, record: { ...(s.heldPayments.get(id) as HeldPaymentRecord) }, final: false }
    default: {
      const actor = s.actorMap(kind).get(id)
      if (!actor) throw new Error(`engine: ${kind} ${id} changed but is not live`)
      return born ? { kind, id, record: actorRecord(actor), final: false } : { kind, id, record: actorRecord(actor), final: false, alreadyLive: true }
    }
  }
}
