// The registry of live actors: the one way an event reaches one (`send`), the machine's answer, and eviction of
// actors that reached a final state.
import { createActor, type Actor, type ActorLogic, type AnyActor, type AnyActorRef, type AnyMachineSnapshot, type AnyStateMachine, type EventFromLogic, type InputFrom, type Snapshot } from 'xstate'
import { assignedContext, assign as machineAssign } from '../../machines/assign.ts'
import { machines, refusalCode, refusals } from '../../machines/index.ts'
import { finalActorRecord, hasKeys } from './changes.ts'
import { scheduleOffer } from './dispatch.ts'
import { fail } from './errors.ts'
import type { AnyLive, EngineState, OfferSnapshot } from './state.ts'
import type { ActorKind, Address, EngineError } from './types.ts'
import { attachHistory, recordTransition, restoreHistory } from './history.ts'

export type LiveOf<K extends ActorKind> = Actor<(typeof machines)[K]>
export type EventOf<K extends ActorKind> = EventFromLogic<(typeof machines)[K]>

/** A machine's answer to one event: taken (from one state to another), or refused with the code of its table. */
export type Answer = { accepted: true; from: string; to: string } | { accepted: false; code: string; state: string }
export type Refusal = Extract<Answer, { accepted: false }>

const ID_FIELDS = { job: 'jobId', offer: 'offerId', lease: 'leaseId', advance: 'advanceId' } as const
const idOf = (kind: ActorKind, context: Record<string, unknown>): string => context[ID_FIELDS[kind]] as string

/**
 * The root of one engine's actor system: every job, offer, lease and advance the engine starts or restores is its
 * child. XState
 * gives each root actor a system of its own (two Maps, a WeakMap, a Set and some twenty closures: about 1.8 KB of
 * the 3.7 KB a live lease holds, measured with `gc()` around 20,000 actors), made anew for every actor and copied by
 * every scavenge it survives; a child uses its parent's. A child tells its parent when it is done (ignored here) and
 * when an action threw: the root throws it again, so the error reaches XState's unhandled-error report as a root
 * actor's own error would.
 */
export function actorRoot(): AnyActorRef {
  // XState's system keeps every actor it starts in a Map by session id (`x:<n>`, a string built per actor) until the
  // actor stops, and nothing in XState reads that Map (5.33: createSystem's `children`, written by `_register` and
  // `_unregister` only). Shared by all of an engine's actors, it grew with the live ones (~16,000 entries under the
  // load mix, 100,000 after a restart): a set and a delete per actor, 4 % of the in-process load-mix shape's CPU.
  // Here the system registers nothing; an actor with a system id (the engine gives none) still unregisters through
  // XState's own, which also drops it from the system's keyed actors. test/engine/actors.test.ts checks that a live
  // child is not held by the system.
  const root = createActor(ROOT_LOGIC)
  const system = root.system as unknown as { _register(sessionId: string, actor: AnyActor): string; _unregister(actor: AnyActor): void }
  const unregister = system._unregister
  system._register = (sessionId) => sessionId
  system._unregister = (actor) => { if (actor.systemId !== undefined) unregister(actor) }
  return root.start()
}

/**
 * The root's logic: what fromTransition would make of it, except that an event that changes nothing keeps the same
 * snapshot (fromTransition spreads a new one for each) and only an error event's type is read. Every lease and offer
 * that ends tells the root it is done (a `xstate.done.actor.*` event, whose type is a fresh concatenation that
 * startsWith would flatten): about 4 % of a lease time-out's CPU (bench/dispatch.ts profile, issue 11).
 */
const ROOT_LOGIC: ActorLogic<Snapshot<undefined>, { type: string; error?: unknown }> = {
  transition: (snapshot, event) => {
    if ('error' in event && event.type.startsWith('xstate.error.actor')) throw event.error
    return snapshot
  },
  getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }),
  getPersistedSnapshot: (snapshot) => snapshot,
  restoreSnapshot: (snapshot) => snapshot as Snapshot<undefined>,
}

/**
 * createActor(machine, { snapshot }): the restored actor continues exactly where the persisted one stopped (with the
 * machine's flat transition where it has one: flatLogic). Under a parent, and when the snapshot has no children (the
 * engine's never have), it is constructed without options and adopted (adopt says why; about 2 us per actor of a
 * restart's 100,000): its logic's initial snapshot is the restore XState's constructor would have made of `snapshot`
 * (`restoringLogic`), and its options are `{ ...defaultOptions, snapshot, parent }` as XState resolves them.
 */
export function restoreActor<M extends AnyStateMachine>(machine: M, snapshot: unknown, parent?: AnyActorRef): Actor<M> {
  const logic = flatLogic(machine) ?? (machine as AnyStateMachine)
  const children = (snapshot as { children?: unknown } | null)?.children
  let actor: AnyActor
  if (parent === undefined || (typeof children === 'object' && children !== null && hasKeys(children))) {
    actor = createActor(logic, { snapshot: snapshot as Snapshot<unknown>, parent }).start()
  } else {
    restoring = snapshot
    actor = createActor(restoringLogic(logic))
    restoring = undefined
    adopt(actor, parent)
    const options = (actor as unknown as ActorFields).options as Record<string, unknown>
    ;(actor as unknown as ActorFields).options = { clock: options.clock, logger: options.logger, devTools: options.devTools, snapshot, parent }
    actor.start()
  }
  restoreHistory(actor, snapshot)
  return actor as unknown as Actor<M>
}

/** The persisted snapshot restoreActor is restoring, which its restoring logic's getInitialSnapshot takes. */
let restoring: unknown
const restoringLogics = new WeakMap<AnyStateMachine, AnyStateMachine>()

/**
 * The logic (the machine, or its flat logic) whose initial snapshot is `logic.restoreSnapshot(restoring, actorScope)`,
 * the call XState's constructor makes for `{ snapshot }` (in the same try: a snapshot that does not restore gives an
 * actor in error either way). Every other method is the logic's own (this object's prototype).
 */
function restoringLogic(logic: AnyStateMachine): AnyStateMachine {
  let restorer = restoringLogics.get(logic)
  if (restorer === undefined) {
    restorer = Object.create(logic, {
      getInitialSnapshot: { value: (actorScope: never) => logic.restoreSnapshot?.(restoring as Snapshot<unknown>, actorScope) },
    }) as AnyStateMachine
    restoringLogics.set(logic, restorer)
  }
  return restorer
}

/**
 * A new actor in its machine's initial state, started from its initial snapshot built as a restore would: the
 * machine's own context factory applied to the input, in the machine's own initial state. createActor(machine, { input }) computes
 * the same snapshot through XState's initial transition (a pre-initial snapshot, an assign, a micro- and a macrostep),
 * which costs as much again as the actor itself and, for these machines, runs nothing else: their initial state has
 * no entry action, no eventless or delayed transition, no invoked actor (checked once per machine; a machine where
 * it does not hold takes the ordinary path). test/engine/actors.test.ts checks that both give the same actor.
 * `parent` is the engine's actorRoot (EngineState.actorRoot); without one the actor is the root of a system of its own.
 */
export function startActor<M extends AnyStateMachine>(machine: M, input: InputFrom<M>, parent?: AnyActorRef): Actor<M> {
  const born = bornLogic(machine)
  let actor: AnyActor
  if (born === null) actor = createActor(machine as AnyStateMachine, { input, parent }).start()
  else {
    bornContext = (machine.config.context as (args: { input: unknown }) => unknown)({ input })
    actor = createActor(born)
    bornContext = undefined
    if (parent !== undefined) adopt(actor, parent)
    actor.start()
  }
  attachHistory(actor, undefined)
  return actor as unknown as Actor<M>
}

/**
 * The context of the actor startActor is creating, which its born logic's getInitialSnapshot takes (XState's Actor
 * constructor calls it): createActor then takes no options at all (`adopt` says why).
 */
let bornContext: unknown

/** The fields of XState's Actor that its constructor derives from `options.parent` (adopt). */
type ActorFields = {
  system: unknown
  _parent: AnyActorRef | undefined
  options: object
  logger: unknown
  clock: unknown
  _actorScope: { system: unknown; logger: unknown }
}

/**
 * Makes a new actor, constructed by XState without options (so as the root of a system of its own), the child of
 * `parent` exactly as XState's constructor makes one given `{ parent }`: the parent's system, the parent, the system's
 * logger and clock (the defaults for the engine's root, which takes none of its own), the actor scope's system and
 * logger, and options with the parent. The session id is the same both ways (XState books it from one counter for
 * all systems).
 * Why: the constructor resolves its options as `{ ...defaultOptions, ...options }`, and once V8 has optimized it, a
 * spread that adds a key (`parent`) gives each actor's options a hidden class of its own (`%HaveSameMap` false
 * between two calls), so that spread and every read of the options after it (seven in the constructor, two in
 * start()) miss V8's inline caches: 2.5 against 0.5 us of CPU per started actor in a loop, about 4 us per request +
 * match pair (two actors). Without options the spread copies the defaults alone (the same hidden class every time),
 * and the system it makes (Maps, a WeakMap, a Set, closures) is dropped at once, young. Done before start(), which
 * registers the actor with its system and sends the init inspection event; the constructor's own inspection event
 * (`@xstate.actor`) goes to the dropped system, which no one inspects, as no one inspects the engine's.
 * test/engine/actors.test.ts compares every field with the actor `createActor(logic, { parent })` makes.
 */
function adopt(actor: AnyActor, parent: AnyActorRef): void {
  const fields = actor as unknown as ActorFields
  const system = parent.system as { _logger: unknown; _clock: unknown }
  fields.system = system
  fields._parent = parent
  fields.options = optionsOf(parent, fields.options)
  fields.logger = system._logger
  fields.clock = system._clock
  const scope = fields._actorScope
  scope.system = system
  scope.logger = system._logger
}

/**
 * Each parent's children's options, `{ ...defaultOptions, parent }` as XState resolves them (one object per parent:
 * XState only reads them), kept beside the parent and not in a module variable: one that held the last parent kept a
 * stopped engine's whole actor tree alive until another engine started an actor (bench/scale.ts --quick measured the
 * previous point's engine leaving, a negative heap per live actor).
 */
const optionsByParent = new WeakMap<AnyActorRef, object>()

/** `defaults` is the options of an actor XState made without any (`{ ...defaultOptions }`). */
function optionsOf(parent: AnyActorRef, defaults: object): object {
  let options = optionsByParent.get(parent)
  if (options === undefined) optionsByParent.set(parent, (options = { ...defaults, parent }))
  return options
}

const bornLogics = new WeakMap<AnyStateMachine, AnyStateMachine | null>()

/**
 * The machine, except that its initial snapshot is its initial state with the context startActor made
 * (`bornContext`), or null when entering the initial state runs more than the context factory. XState's own initial
 * snapshot, or a restore of one, revives the state value, every state node, the tags and the context (a walk for actor
 * references) of a snapshot that is the same for every new actor but its context: about half of startActor's CPU
 * (bench/match-request.ts). Here the machine resolves its initial state once, and each new actor's snapshot is that
 * one with its own context and its own (empty) children and history value, which XState copies rather than mutates.
 * Every other method is the machine's own (this object's prototype; `transition` flatLogic's where the machine is
 * flat), and snapshots name the machine itself, so the actor behaves as one created from the machine.
 */
function bornLogic(machine: AnyStateMachine): AnyStateMachine | null {
  let born = bornLogics.get(machine)
  if (born === undefined) {
    const root = machine.root
    const target = root.initial?.target?.[0]
    const runsNothing = (node: typeof root): boolean =>
      node.entry.length === 0 && !node.always?.length && node.invoke.length === 0 && node.after.length === 0
    const plain = typeof machine.config.context === 'function' && target !== undefined && target.type === 'atomic' &&
      (root.initial.actions?.length ?? 0) === 0 && runsNothing(root) && runsNothing(target)
    born = null
    if (plain) {
      const initial = machine.resolveState({ value: target.key, context: {} })
      born = Object.create(flatLogic(machine) ?? machine, {
        getInitialSnapshot: { value: () => ({ ...initial, context: bornContext, children: {}, historyValue: {} }) },
      }) as AnyStateMachine
    }
    bornLogics.set(machine, born)
  }
  return born
}

/** A state node as flatTransition reads it: XState's `next` (its transition selection) is internal to its types. */
type Node = AnyStateMachine['root'] & { next(snapshot: AnyMachineSnapshot, event: { type: string }): Transition[] | undefined }
type Transition = { source: Node; target?: readonly Node[]; reenter: boolean; actions: readonly unknown[]; guard?: unknown }
type FlatSnapshot = AnyMachineSnapshot & { _nodes: Node[] }

/** The `resolve` of machines/assign.ts's assign: builds the next snapshot and spawns, raises or runs nothing else. */
const machineAssignResolve = (machineAssign(() => ({})) as unknown as { resolve: unknown }).resolve

const runsNothing = (node: AnyStateMachine['root']): boolean =>
  node.entry.length === 0 && node.exit.length === 0 && !node.always?.length && node.invoke.length === 0 &&
  node.after.length === 0 && node.tags.length === 0 && node.output === undefined

/**
 * Whether the machine is flat as flatTransition takes it: a root of atomic and final states, no history state, and
 * no node (the root included) with an entry or exit action, an eventless or delayed transition, an invoked actor, a
 * tag or an output; the root takes no event itself. The four machines are (test/machines checks it).
 */
export function isFlat(machine: AnyStateMachine): boolean {
  const root = machine.root
  if (root.type !== 'compound' || !runsNothing(root) || root.transitions.size > 0) return false
  return Object.values(root.states).every((node) => (node.type === 'atomic' || node.type === 'final') && runsNothing(node))
}

const flatLogics = new WeakMap<AnyStateMachine, AnyStateMachine | null>()

/**
 * The machine with flatTransition as its `transition` (null when it is not flat): the logic of every new (bornLogic)
 * and restored (restoreActor) actor of a flat machine. Its restore is the machine's own, called on the machine, so a
 * restored snapshot names the machine itself as a new one does.
 */
export function flatLogic(machine: AnyStateMachine): AnyStateMachine | null {
  let logic = flatLogics.get(machine)
  if (logic === undefined) {
    logic = isFlat(machine)
      ? (Object.create(machine, {
          transition: { value: flatTransition(machine) },
          restoreSnapshot: { value: (snapshot: Snapshot<unknown>, actorScope: never) => machine.restoreSnapshot?.(snapshot, actorScope) },
          // XState's start() calls it for every actor it starts; the machine's own walks Object.values(children) with
          // a closure, for children these machines never have (a snapshot with any still takes it).
          start: { value: (snapshot: AnyMachineSnapshot) => { if (hasKeys(snapshot.children)) machine.start(snapshot) } },
        }) as AnyStateMachine)
      : null
    flatLogics.set(machine, logic)
  }
  return logic
}

/**
 * The transitions a state takes for an event, in XState's order, when flatTransition can select among them itself:
 * the state's transitions for that exact type (no wildcard descriptor in the state: XState's getCandidates then
 * adds none), each without a guard or with one guardPasses evaluates as XState's evaluateGuard does. Else null, and
 * XState's `StateNode.next` selects (a wildcard, a built-in guard such as `and`, an event the state does not take).
 * Decided once per state and event type, in `cache` (flatTransition's, one per machine). XState's `next` looks its
 * candidates up by a key it concatenates per call and collects the chosen transition's actions into an array nobody
 * reads (issue 11: about 6 % of a match's samples with its guard evaluation).
 */
function candidatesOf(machine: AnyStateMachine, cache: Map<Node, Map<string, readonly Transition[] | null>>, source: Node, type: string): readonly Transition[] | null {
  let byType = cache.get(source)
  if (byType === undefined) cache.set(source, (byType = new Map()))
  let found = byType.get(type)
  if (found === undefined) {
    const transitions = source.transitions as unknown as Map<string, Transition[]>
    const exact = transitions.get(type)
    // Only the types the state takes are kept: the engine sends each machine's own few.
    if (exact === undefined) return null
    const wildcard = [...transitions.keys()].some((descriptor) => descriptor.includes('*'))
    found = !wildcard && exact.every((t) => t.guard === undefined || plainGuard(machine, t.guard) !== undefined) ? exact : null
    byType.set(type, found)
  }
  return found
}

/** The guard's implementation when it is a plain function (named by a string or a `{ type, params }`, or inline). */
function plainGuard(machine: AnyStateMachine, guard: unknown): ((args: object, params: unknown) => boolean) | undefined {
  const resolved: unknown = typeof guard === 'function'
    ? guard
    : machine.implementations.guards[typeof guard === 'string' ? guard : (guard as { type?: string } | null)?.type as string]
  return typeof resolved === 'function' && !('check' in resolved) ? (resolved as (args: object, params: unknown) => boolean) : undefined
}

/** XState's evaluateGuard for a plain guard (candidatesOf): the implementation on `{ context, event }` and its params. */
function guardPasses(machine: AnyStateMachine, guard: unknown, context: unknown, event: unknown): boolean {
  const resolved = plainGuard(machine, guard) as (args: object, params: unknown) => boolean
  const params: unknown = typeof guard === 'object' && guard !== null && 'params' in guard
    ? typeof guard.params === 'function' ? guard.params({ context, event }) : guard.params
    : undefined
  return resolved({ context, event }, params)
}

/** The transitions flatTransition takes itself: each decided once (the machine's transitions never change). */
const plainTransitions = new WeakMap<Transition, boolean>()

/**
 * Whether flatTransition takes this transition: to another state of the root, or none (an event taken in place), never
 * re-entering, and with machines/assign.ts's assigns as its only actions.
 */
function isPlain(machine: AnyStateMachine, t: Transition): boolean {
  let plain = plainTransitions.get(t)
  if (plain === undefined) {
    const target = t.target
    const actions = t.actions as unknown[]
    plain = !t.reenter && t.source.parent === machine.root &&
      (target === undefined || (target.length === 1 && target[0] !== t.source && target[0]?.parent === machine.root)) &&
      actions.every((action) => actionOf(machine, action)?.resolve === machineAssignResolve)
    plainTransitions.set(t, plain)
  }
  return plain
}

type BuiltIn = { resolve?: unknown; type?: string }
/** An assign of machines/assign.ts as isPlain found it. */
type AssignAction = Parameters<typeof assignedContext>[0]

function actionOf(machine: AnyStateMachine, action: unknown): BuiltIn | undefined {
  if (typeof action === 'function') return action as BuiltIn
  const type = typeof action === 'string' ? action : (action as { type?: unknown } | null)?.type
  return typeof type === 'string' ? (machine.implementations.actions[type] as BuiltIn | undefined) : undefined
}

/**
 * The machine's `transition` for a flat machine (isFlat): the snapshot XState's macrostep gives, without its walks.
 * XState's step for one event selects the transition (`StateNode.next`, its own guard evaluation, called here), exits
 * the source, resolves the actions, enters the target, then looks for eventless transitions and raised events; for a
 * flat machine whose states run nothing that is: the assigns' snapshot, then, when the transition has a target, a
 * snapshot in the target state (done in a final one, whose nodes XState sorts by their order), built as XState's
 * createMachineSnapshot builds it, key by key. Computing the exit and entry sets, the transition domains, the
 * conflicting transitions and the eventless ones cost about half of an offer's LEASE and allocated most of a match's
 * garbage (issue 11). Anything else (an event of XState's own, an actor not active or with children, a transition
 * that is not plain: isPlain) takes the machine's own transition. test/machines checks both give the same snapshot for
 * every event of the four machines in every state.
 */
function flatTransition(machine: AnyStateMachine): AnyStateMachine['transition'] {
  const root = machine.root
  const candidates = new Map<Node, Map<string, readonly Transition[] | null>>()
  // A flat machine's snapshot in a state has the nodes [root, state] (a final one's sorted: [state, root]) and no tag
  // (isFlat), so each target's nodes are one array and every snapshot's tags one empty Set, shared by the machine's
  // snapshots as a new actor's initial snapshot already shares its state's (bornLogic); XState reads them, never
  // writes them. XState builds both anew for each transition: about 0.4 KB per request + match pair (its five
  // transitions) of the load mix's garbage.
  const nodesInto = new Map<Node, Node[]>()
  const noTags = new Set<string>()
  return (snapshot, event, actorScope) => {
    const current = snapshot as FlatSnapshot
    if (current.status !== 'active' || event.type.startsWith('xstate.') || hasKeys(current.children) || typeof current.value !== 'string') {
      return machine.transition(snapshot, event, actorScope)
    }
    const source = root.states[current.value] as Node
    // The root takes no event of its own (isFlat), so the source state's transitions are all there is.
    const plainCandidates = candidatesOf(machine, candidates, source, event.type)
    let t: Transition | undefined
    if (plainCandidates === null) {
      const selected = source.next(current, event)
      if (selected === undefined || selected.length === 0) return snapshot
      if (selected.length !== 1) return machine.transition(snapshot, event, actorScope)
      t = selected[0] as Transition
    } else {
      try {
        for (const candidate of plainCandidates) {
          if (candidate.guard === undefined || guardPasses(machine, candidate.guard, current.context, event)) {
            t = candidate
            break
          }
        }
      } catch {
        // A guard that throws: XState's own step throws it as XState does (guards are pure, so asking again is safe).
        return machine.transition(snapshot, event, actorScope)
      }
      if (t === undefined) return snapshot
    }
    if (!isPlain(machine, t)) return machine.transition(snapshot, event, actorScope)
    // Each assign's context straight from assignedContext (what its resolve puts in the snapshot it builds): one
    // snapshot at the end rather than one per assign, dropped at once when the transition has a target.
    let context = current.context
    for (const action of t.actions as unknown[]) {
      const params: unknown = typeof action === 'object' && action !== null && 'params' in action
        ? typeof action.params === 'function' ? action.params({ context, event }) : action.params
        : undefined
      context = assignedContext(actionOf(machine, action) as AssignAction, context, event, actorScope, params)
    }
    const target = t.target?.[0]
    if (target === undefined) return context === current.context ? snapshot : { ...current, context }
    const done = target.type === 'final'
    const before = current._nodes
    let nodes: Node[]
    if (before.length === 2 && before[0] === root && before[1] === source) {
      nodes = nodesInto.get(target) ?? nodesAfter(nodesInto, before, source, target, done)
    } else nodes = nodesAfter(undefined, before, source, target, done)
    return {
      status: done ? 'done' : current.status, output: done ? undefined : current.output, error: current.error, machine: current.machine,
      context, _nodes: nodes, value: target.key, tags: noTags, children: current.children,
      historyValue: current.historyValue || {}, matches: current.matches, hasTag: current.hasTag, can: current.can, getMeta: current.getMeta,
      toJSON: current.toJSON,
    } as unknown as ReturnType<AnyStateMachine['transition']>
  }
}

/**
 * A transition's nodes as XState's step builds them for a flat machine: the source's nodes without the source, then
 * the target, sorted by order when the target is final. Kept in `shared` (flatTransition's, by target) when given.
 */
function nodesAfter(shared: Map<Node, Node[]> | undefined, before: readonly Node[], source: Node, target: Node, done: boolean): Node[] {
  const nodes = before.filter((node) => node !== source)
  nodes.push(target)
  if (done) sortByOrderDescending(nodes)
  shared?.set(target, nodes)
  return nodes
}

/**
 * XState's `nodes.sort((a, b) => b.order - a.order)` for a final state's nodes, in place and by insertion: the same
 * order (both sorts are stable), without what V8's sort allocates for any array, two items included (its TimSort's
 * run stack and work array: about 860 bytes, 1.7 KB per request + match pair under the load mix, whose lease time-out
 * and offer expiry end in final states; V8's sampling heap profile, issue 11).
 */
function sortByOrderDescending<T extends { order: number }>(nodes: T[]): void {
  for (let i = 1; i < nodes.length; i++) {
    const node = nodes[i] as T
    let j = i - 1
    while (j >= 0 && (nodes[j] as T).order < node.order) {
      nodes[j + 1] = nodes[j] as T
      j -= 1
    }
    nodes[j + 1] = node
  }
}

/**
 * The one way an event reaches a live actor. The machine's answer is read off its snapshot: XState keeps the very
 * same snapshot object when no transition is taken, so an unchanged reference is a refusal, and the refusal's code
 * is the machine's (its table in machines/). Nothing is computed twice: no can() before the send.
 */
export function send<K extends ActorKind>(s: EngineState, kind: K, actor: LiveOf<K>, event: EventOf<K>): Answer {
  const from = String((actor.getSnapshot() as AnyMachineSnapshot).value)
  const refusal = deliver(s, kind, actor, event)
  return refusal ?? { accepted: true, from, to: String((actor.getSnapshot() as AnyMachineSnapshot).value) }
}

/** A send whose refusal would be a bug: the engine already knows the machine takes it (a schedule, an invariant). */
export function expect<K extends ActorKind>(s: EngineState, kind: K, actor: LiveOf<K>, event: EventOf<K>): void {
  const refusal = deliver(s, kind, actor, event)
  if (refusal !== undefined) {
    const id = idOf(kind, (actor.getSnapshot() as AnyMachineSnapshot).context as Record<string, unknown>)
    throw new Error(`invariant: ${kind} ${id} refused ${event.type} in state ${refusal.state} (${refusal.code})`)
  }
}

/** send's work: the event delivered and, when taken, recorded; the refusal, or undefined (expect builds no answer). */
function deliver<K extends ActorKind>(s: EngineState, kind: K, actor: LiveOf<K>, event: EventOf<K>): Refusal | undefined {
  const before = actor.getSnapshot() as AnyMachineSnapshot
  ;(actor as AnyActor).send(event)
  const after = actor.getSnapshot() as AnyMachineSnapshot
  const from = String(before.value)
  if (after === before) return { accepted: false, code: refusalCode(machines[kind], refusals[kind], from, event.type), state: from }
  recordTransition(actor as AnyActor, from, String(after.value), event)
  // An offer's new context is already in V8's fast mode: machines/assign.ts says why.
  if (kind === 'offer') scheduleOffer(s, after as OfferSnapshot)
  noteActor(s, kind, idOf(kind, after.context as Record<string, unknown>), actor as AnyLive, after)
  return undefined
}

/**
 * Whether the machine would take `event` now, for queries that send nothing (the plans run before an operator
 * transaction). A command sends the event itself and learns the answer from it instead.
 */
export function wouldTake<K extends ActorKind>(kind: K, actor: LiveOf<K>, event: EventOf<K>): Answer {
  const snapshot = actor.getSnapshot() as AnyMachineSnapshot
  const state = String(snapshot.value)
  if (snapshot.can(event)) return { accepted: true, from: state, to: state }
  return { accepted: false, code: refusalCode(machines[kind], refusals[kind], state, event.type), state }
}

/** A refused event as the command's conflict: the machine's code, nothing changed. */
export function refused(kind: ActorKind, id: string, answer: Refusal): { ok: false; error: EngineError } {
  return fail('conflict', answer.code, `${kind} ${id} is ${answer.state}`)
}

/**
 * A final actor is persisted now, stopped and evicted; a live one is snapshotted when the command drains (marked once
 * per command: a second event to it in the same command adds nothing). `snapshot` is the actor's, just taken.
 */
function noteActor(s: EngineState, kind: ActorKind, id: string, actor: AnyLive, snapshot: AnyMachineSnapshot): void {
  if (snapshot.status === 'done') {
    // No stop(): XState stopped the actor as it reached its final state (and refuses stop() on a child).
    s.pending.set(kind, id, { kind, id, record: finalActorRecord(actor), final: true })
    s.actorMap(kind).delete(id)
    if (kind === 'offer') {
      const o = snapshot.context as OfferSnapshot['context']
      countOffer(s, o, -1)
      s.offerIdByKey.delete(o.offerKey)
    } else if (kind === 'advance') {
      const a = snapshot.context as { advanceKey: string; source: { kind: string; id: string } }
      s.advanceIdByKey.delete(a.advanceKey)
      s.backingAdvanceClosed(a.source, id)
    } else if (kind === 'job') {
      s.jobIdByKey?.delete((snapshot.context as { jobKey: string }).jobKey)
    }
  } else {
    s.pending.touch(kind, id)
  }
}

/**
 * Live offers per borrower, and what those on jobs ask, kept as offers are created (+1) and evicted (-1). Offers are
 * created and restored in sequence order, so each borrower's set iterates oldest first.
 */
export function countOffer(s: EngineState, o: Pick<OfferSnapshot['context'], 'offerId' | 'borrower' | 'source' | 'network' | 'asset' | 'amountAtomic'>, delta: 1 | -1): void {
  const live = s.liveOffersOf.get(o.borrower)
  if (delta === 1) {
    if (live === undefined) s.liveOffersOf.set(o.borrower, new Set([o.offerId]))
    else live.add(o.offerId)
  } else if (live !== undefined) {
    live.delete(o.offerId)
    if (live.size === 0) s.liveOffersOf.delete(o.borrower)
  }
  if (o.source.kind !== 'job') return
  s.receivableOffered.add(o.borrower, o.network, o.asset, delta === 1 ? o.amountAtomic : -o.amountAtomic)
}
