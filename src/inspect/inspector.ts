// The live inspector's model: how many live actors each machine holds in each state, the recent transitions as a
// feed, and one actor by id with its history. It follows the engine only through the durable change feed
// (`service.onDurable`) and reads actors from the store, so it never shows what a crash could still lose. It shows
// no more than the public read routes: each actor's public view (the same one GET /credit/jobs/{id} and the others
// answer; a lease without its report grace, as the lender's actions list shows it) and its history.
import {
  advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot,
} from '../engine/engine.ts'
import { HISTORY_ENTRIES_MAX, storedHistory, type TransitionEntry } from '../engine/history.ts'
import { ID_PREFIXES } from '../engine/ids.ts'
import { ACTOR_KINDS, type ActorKind, type Change, type Store } from '../store/index.ts'
import { machines } from '../../machines/index.ts'

/** Transitions the feed keeps, newest first: a window for a person watching, not an audit log (each actor's own history is). */
export const FEED_ENTRIES_MAX = 200

export interface FeedEntry extends TransitionEntry {
  readonly kind: ActorKind
  readonly id: string
}

export interface ActorLookup {
  readonly kind: ActorKind
  readonly id: string
  readonly state: string
  readonly final: boolean
  /** The actor's public view without its state (the state is above). */
  readonly context: Record<string, unknown>
  readonly history: readonly TransitionEntry[]
}

const VIEWS: Readonly<Record<ActorKind, (snapshot: unknown) => { state: unknown }>> = {
  job: jobViewFromSnapshot,
  offer: offerViewFromSnapshot,
  lease: leaseViewFromSnapshot,
  advance: advanceViewFromSnapshot,
}

/** The states of each machine, in the order its definition lists them (the diagram's order). */
export function machineStates(kind: ActorKind): string[] {
  return Object.keys(machines[kind].states)
}

/** The kind an id names: minted ids carry their kind's prefix; a job id is the caller's `job_...`. */
export function kindOfId(id: string): ActorKind | undefined {
  if (id.startsWith('job_')) return 'job'
  for (const [kind, prefix] of Object.entries(ID_PREFIXES)) if (id.startsWith(prefix)) return kind as ActorKind
  return undefined
}

const ACTOR_KIND_SET: ReadonlySet<string> = new Set(ACTOR_KINDS)

const stateOf = (record: unknown): string => String((record as { value: unknown }).value)

/** A live actor's state, and its history's length and last entry when the feed last took from it. */
interface Seen {
  readonly state: string
  readonly length: number
  readonly last: TransitionEntry | undefined
}

const seenOf = (state: string, history: readonly TransitionEntry[]): Seen => ({ state, length: history.length, last: history.at(-1) })
const sameEntry = (a: TransitionEntry, b: TransitionEntry): boolean => a.from === b.from && a.to === b.to && a.event === b.event && a.atMs === b.atMs

/**
 * Where the entries the feed has not taken start. Below the bound a history only grows, so they follow the length
 * seen; at the bound the oldest entries drop as new ones come, so they follow the last entry seen (matched by value:
 * after a restart the entries are the store's copies).
 */
function newFrom(known: Seen | undefined, history: readonly TransitionEntry[]): number {
  if (known === undefined) return 0
  if (history.length < HISTORY_ENTRIES_MAX) return Math.min(known.length, history.length)
  const last = known.last
  if (last === undefined) return 0
  for (let i = history.length - 1; i >= 0; i--) if (sameEntry(history[i] as TransitionEntry, last)) return i + 1
  return 0
}

export class Inspector {
  readonly #store: Store
  /** State of every live actor, by `${kind}:${id}`, and how much of its history the feed has taken. */
  readonly #live = new Map<string, Seen>()
  readonly #counts = new Map<ActorKind, Map<string, number>>()
  /** A ring: `#feed[#next]` is the oldest once full. */
  readonly #feed: FeedEntry[] = []
  #next = 0

  /** Counts start from the store's live index (what is durable), read once; the changes then keep them current. */
  constructor(store: Store) {
    this.#store = store
    for (const kind of ACTOR_KINDS) {
      this.#counts.set(kind, new Map(machineStates(kind).map((state) => [state, 0])))
      for (const { id, entry } of store.iterateLive(kind)) {
        const state = stateOf(entry.snapshot)
        this.#live.set(`${kind}:${id}`, seenOf(state, storedHistory(entry.snapshot)))
        this.#count(kind, state, 1)
      }
    }
  }

  readonly #listeners = new Set<(entries: readonly FeedEntry[]) => void>()

  /** Calls `listener` after each durable commit that moved an actor, with its new transitions (oldest first). */
  subscribe(listener: (entries: readonly FeedEntry[]) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** The durable-change listener: a commit's actor changes move the counts and add their new transitions to the feed. */
  readonly onDurable = (changes: readonly Change[]): void => {
    const added: FeedEntry[] = []
    for (const change of changes) {
      if (!ACTOR_KIND_SET.has(change.kind)) continue
      const kind = change.kind as ActorKind
      const key = `${kind}:${change.id}`
      const known = this.#live.get(key)
      const history = storedHistory(change.record)
      for (let i = newFrom(known, history); i < history.length; i++) {
        const entry = history[i] as TransitionEntry
        // Each field by name: an object literal that spreads the entry after keys of its own takes V8's slow path
        // (about 0.1-1 µs each on Node 20), and every transition of every commit comes through here (issue 11).
        const fed: FeedEntry = { kind, id: change.id, from: entry.from, to: entry.to, event: entry.event, atMs: entry.atMs }
        this.#push(fed)
        added.push(fed)
      }
      const state = stateOf(change.record)
      if (known !== undefined) this.#count(kind, known.state, -1)
      if (change.final) this.#live.delete(key)
      else {
        this.#live.set(key, seenOf(state, history))
        this.#count(kind, state, 1)
      }
    }
    if (added.length > 0) for (const listener of this.#listeners) listener(added)
  }

  /** Live actors per machine and state (every state listed, 0 included). */
  counts(): Record<ActorKind, Record<string, number>> {
    const out = {} as Record<ActorKind, Record<string, number>>
    for (const [kind, states] of this.#counts) out[kind] = Object.fromEntries(states)
    return out
  }

  /** The latest `limit` transitions, newest first. */
  recent(limit: number): FeedEntry[] {
    const out: FeedEntry[] = []
    const size = this.#feed.length
    for (let i = 1; i <= Math.min(limit, size); i++) out.push(this.#feed[(this.#next - i + size) % size] as FeedEntry)
    return out
  }

  /** One actor, live or final, as the store holds it (durable); undefined for an id never stored. */
  lookup(id: string): ActorLookup | undefined {
    const kind = kindOfId(id)
    if (kind === undefined) return undefined
    const entry = this.#store.getSnapshot(kind, id)
    if (entry === undefined) return undefined
    const { state, ...context } = VIEWS[kind](entry.snapshot)
    return { kind, id, state: String(state), final: entry.final, context, history: storedHistory(entry.snapshot) }
  }

  #count(kind: ActorKind, state: string, delta: number): void {
    const states = this.#counts.get(kind) as Map<string, number>
    states.set(state, (states.get(state) ?? 0) + delta)
  }

  #push(entry: FeedEntry): void {
    if (this.#feed.length < FEED_ENTRIES_MAX) this.#feed.push(entry)
    else this.#feed[this.#next] = entry
    this.#next = (this.#next + 1) % FEED_ENTRIES_MAX
  }
}
