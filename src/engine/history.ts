// Per-actor transition history: what happened to one job, offer, lease or advance, for the inspector's lookup. The
// engine records every transition its one send takes (`Engine.send`), and the history travels inside the actor's
// persisted snapshot (field `history`, snapshot schema versions of src/engine/migrations.ts), so it survives a
// restart and a final actor's history is read from the store like the rest of its snapshot.
//
// Kept on the actor object (a symbol-keyed property) rather than in the machine's context: the machines stay pure
// lifecycles (their diagrams do not grow an audit field), and an evicted actor's history goes with it.
import type { AnyActor } from 'xstate'
import { machines, type ActorKind } from '../../machines/index.ts'

/**
 * The most entries kept per actor; older ones are dropped first. 64 holds an offer's whole life at the largest
 * lease count (leasesPerOfferMax 16: a LEASE and its end per lease, then FUND or EXPIRE, plus its creation); a job
 * with many advances keeps its latest 64.
 */
export const HISTORY_ENTRIES_MAX = 64

/** The event type of the first entry: the actor was created (from null) in its machine's initial state. */
export const CREATED_EVENT = 'created'

/** One transition: from a state to a state (the same one for an event taken in place), by an event, at a time. */
export interface TransitionEntry {
  readonly from: string | null
  readonly to: string
  readonly event: string
  readonly atMs: number
}

/** Which context field holds the creation time of each kind (the `nowMs` of the command that created it). */
const CREATED_AT: Readonly<Record<ActorKind, string>> = {
  job: 'createdAtMs',
  offer: 'createdAtMs',
  lease: 'createdAtMs',
  advance: 'fundedAtMs',
}

/**
 * Where an actor's history is kept: a property of the actor object itself (not of its context, which the machine
 * owns), given to every actor when it is started or restored (`attachHistory`), so that all have the same shape. Not
 * a WeakMap: its lookups and the garbage collector's handling of its entries were about 2 % of a durable match's
 * main-thread profile (issue 11).
 */
const HISTORY = Symbol('history')
type ActorWithHistory = AnyActor & { [HISTORY]?: TransitionEntry[] }

function kindOf(actor: AnyActor): ActorKind {
  const id = (actor.logic as { id: string }).id
  if (!(id in machines)) throw new Error(`history: ${id} is not an actor kind`)
  return id as ActorKind
}

/** Each kind's initial state, read once: XState's `initial` getter looks it up in its memo on every read. */
const initialStates = new Map<ActorKind, string>()

function initialState(kind: ActorKind): string {
  let state = initialStates.get(kind)
  if (state === undefined) {
    const target = machines[kind].root.initial?.target?.[0]
    if (target === undefined) throw new Error(`history: the ${kind} machine has no initial state`)
    initialStates.set(kind, (state = target.key))
  }
  return state
}

/** The actor's history, started with its creation the first time it is asked for (a new actor has no entry yet). */
export function historyOf(actor: AnyActor): TransitionEntry[] {
  let history = (actor as ActorWithHistory)[HISTORY]
  if (history === undefined) {
    const kind = kindOf(actor)
    const context = actor.getSnapshot().context as Record<string, unknown>
    history = [{ from: null, to: initialState(kind), event: CREATED_EVENT, atMs: context[CREATED_AT[kind]] as number }]
    ;(actor as ActorWithHistory)[HISTORY] = history
  }
  return history
}

/** Records a transition the actor took; the oldest entry goes once the bound is reached. */
export function recordTransition(actor: AnyActor, from: string, to: string, event: { type: string; nowMs: number }): void {
  const history = historyOf(actor)
  history.push({ from, to, event: event.type, atMs: event.nowMs })
  if (history.length > HISTORY_ENTRIES_MAX) history.splice(0, history.length - HISTORY_ENTRIES_MAX)
}

/**
 * The persisted record of an actor with its history. A copy of the list: the record is encoded and handed to the
 * durable listeners after the command, while the live list keeps growing (the entries themselves never change).
 */
export function withHistory(record: unknown, actor: AnyActor): unknown {
  return { ...(record as object), history: historyCopy(actor) }
}

/** A copy of the actor's history for its record (see withHistory). */
export function historyCopy(actor: AnyActor): TransitionEntry[] {
  return historyOf(actor).slice()
}

/**
 * The record of an actor born final without ever being a live actor (a lease refused at once is computed with
 * XState's pure functions): its creation and its one transition, both at its creation time.
 */
export function withBornFinalHistory(record: unknown, kind: ActorKind, eventType: string): unknown {
  const snapshot = record as { value: unknown; context: Record<string, unknown> }
  const atMs = snapshot.context[CREATED_AT[kind]] as number
  const initial = initialState(kind)
  const history: TransitionEntry[] = [
    { from: null, to: initial, event: CREATED_EVENT, atMs },
    { from: initial, to: String(snapshot.value), event: eventType, atMs },
  ]
  return { ...snapshot, history }
}

/** Gives an actor its history: none yet for a new one (historyOf starts it), what it stored for a restored one. */
export function attachHistory(actor: AnyActor, history: TransitionEntry[] | undefined): void {
  ;(actor as ActorWithHistory)[HISTORY] = history
}

/** Gives a restored actor the history its stored snapshot carries. */
export function restoreHistory(actor: AnyActor, record: unknown): void {
  const stored = (record as { history?: unknown }).history
  attachHistory(actor, Array.isArray(stored) ? (stored as TransitionEntry[]).slice(-HISTORY_ENTRIES_MAX) : undefined)
}

/** The history a stored snapshot carries (empty for one stored before histories were kept). */
export function storedHistory(record: unknown): readonly TransitionEntry[] {
  const stored = (record as { history?: unknown } | null)?.history
  return Array.isArray(stored) ? (stored as TransitionEntry[]) : []
}
