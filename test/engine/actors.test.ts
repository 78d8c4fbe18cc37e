// The engine's short cuts around XState must give exactly what XState gives: a new actor started from its initial
// snapshot (startActor) is the actor createActor({ input }) makes, and the record built from a live actor
// (actorRecord) is its persisted snapshot with its history, through every kind's life; the views of live offers and
// leases, built field by field, are the general view of their snapshot; an offer's context copied after each event
// (for V8's fast mode) is the context XState made.
import t from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createActor, setup, type AnyActor, type AnyStateMachine } from 'xstate'
import { advanceMachine, jobMachine, leaseMachine, machines, offerMachine } from '../../machines/index.ts'
import { actorRoot, flatLogic, restoreActor, send, startActor } from '../../src/engine/actors.ts'
import { Engine } from '../../src/engine/engine.ts'
import type { EngineState } from '../../src/engine/state.ts'
import { actorRecord, finalActorRecord, persisted } from '../../src/engine/changes.ts'
import { withHistory } from '../../src/engine/history.ts'
import { leaseView, offerView, viewOf } from '../../src/engine/views.ts'
import { BORROWER, FakeWallets, T0, addr, createJob, creditRequest, fundAdvance, hash, lenderInput, newEngine, registerBacking, unwrap } from './fixtures/world.ts'

const proof = { network: 'base-sepolia', txHash: hash(7) }
const source = { kind: 'asset', id: 'src_1' }
const inputs: [string, AnyStateMachine, Record<string, unknown>, { type: string; [k: string]: unknown }][] = [
  ['job', jobMachine, { jobId: 'job_1', client: addr(1), borrower: addr(2), network: 'n', asset: 'USDC', receivableAtomic: 10n, dueAtMs: T0 + 1, createdAtMs: T0, funding: proof }, { type: 'FAIL', reason: 'x', releasedAtomic: 0n, nowMs: T0 + 5 }],
  ['offer', offerMachine, { offerId: 'off_1', offerKey: hash(1), borrower: addr(2), network: 'n', asset: 'USDC', productType: 'asset-backed', amountAtomic: 100n, maximumFeeAtomic: 5n, purpose: 'p', supplier: 's', supplierDomain: 's.example', supplierAddress: addr(3), source, riskBand: 'A', durationSeconds: 60, dueAtMs: T0 + 60_000, createdAtMs: T0, expiresAtMs: T0 + 1000 }, { type: 'LEASE', leaseId: 'lea_1', lender: addr(4), chainTimeMs: T0, nowMs: T0 }],
  ['lease', leaseMachine, { leaseId: 'lea_1', offerId: 'off_1', lender: addr(4), payer: addr(5), network: 'n', asset: 'USDC', amountAtomic: 100n, feeAtomic: 1n, supplierAddress: addr(3), createdAtMs: T0, expiresAtMs: T0 + 1000 }, { type: 'PAY', payment: proof, nowMs: T0 + 1 }],
  ['advance', advanceMachine, { advanceId: 'adv_1', advanceKey: hash(1), offerId: 'off_1', leaseId: 'lea_1', lender: addr(4), payer: addr(5), borrower: addr(2), source, network: 'n', asset: 'USDC', principalAtomic: 100n, feeAtomic: 1n, insuranceAtomic: 0n, lenderOwedAtomic: 101n, reserveOwedAtomic: 0n, supplierAddress: addr(3), payment: proof, fundedAtMs: T0, dueAtMs: T0 + 60_000 }, { type: 'DEFAULT', reason: 'past_due', nowMs: T0 + 70_000 }],
]

for (const [kind, machine, input, event] of inputs) {
  t.test(`a new ${kind}: startActor gives the actor createActor({ input }) gives, before and after an event`, async (t) => {
    const born = startActor(machine, input)
    const made = createActor(machine, { input }).start()
    t.same(born.getPersistedSnapshot(), made.getPersistedSnapshot(), 'same persisted snapshot')
    t.equal(born.getSnapshot().context.constructor, Object, 'a plain context')
    born.send(event as never)
    made.send(event as never)
    t.not(made.getSnapshot().value, undefined)
    t.same(born.getPersistedSnapshot(), made.getPersistedSnapshot(), `same after ${event.type}`)
    t.same(born.getSnapshot().status, made.getSnapshot().status)
  })

  t.test(`a new ${kind}: actors started by startActor share no snapshot state and name the machine itself`, async (t) => {
    const [first, second] = [startActor(machine, input), startActor(machine, input)]
    const [a, b] = [first.getSnapshot(), second.getSnapshot()]
    t.equal(a.machine, machine, 'the snapshot names the machine, not the object startActor restores with')
    t.not(a.context, b.context, 'a context each')
    t.not(a.children, b.children, 'children each')
    t.not(a.historyValue, b.historyValue, 'a history value each')
    t.ok(a.matches(String(made(machine, input).getSnapshot().value)), 'in the initial state createActor gives')
    first.send(event as never)
    t.not(first.getSnapshot(), a, 'the first took its event')
    t.equal(second.getSnapshot(), b, 'the other did not move')
    t.same(second.getPersistedSnapshot(), made(machine, input).getPersistedSnapshot(), 'and is still the initial actor')
  })

  t.test(`a new ${kind}: its flat transition gives XState's nodes and tags, one array per state and one empty Set per machine`, async (t) => {
    const [first, second] = [startActor(machine, input), startActor(machine, input)]
    first.send(event as never)
    second.send(event as never)
    const [a, b] = [first.getSnapshot(), second.getSnapshot()]
    const want = made(machine, input)
    want.send(event as never)
    t.strictSame(a._nodes, want.getSnapshot()._nodes, "XState's nodes, in its order")
    t.strictSame([...a.tags], [...want.getSnapshot().tags], "XState's tags (none)")
    t.equal(a._nodes, b._nodes, 'one nodes array for the state the event led to')
    t.equal(a.tags, b.tags, 'one tags Set')
  })
}

function made(machine: AnyStateMachine, input: Record<string, unknown>): AnyActor {
  return createActor(machine, { input }).start()
}

t.test('actorRecord: the persisted snapshot with its history, for every live actor through a life with every kind', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const state = (engine as unknown as { state: { actorMaps(): [string, Map<string, AnyActor>][] } }).state
  let compared = 0
  const check = (step: string) => {
    for (const [kind, map] of state.actorMaps()) {
      for (const [id, actor] of map) {
        const general = withHistory(persisted(actor.getPersistedSnapshot()), actor)
        const record = actorRecord(actor)
        t.same(record, general, `${step}: ${kind} ${id}`)
        t.same(Object.keys(record as object), Object.keys(general as object), `${step}: ${kind} ${id} keys in the same order`)
        compared += 1
      }
    }
  }
  const offerId = unwrap(engine.requestCredit(creditRequest(), T0)).offer!.offerId
  check('offered')
  unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 1_000))
  check('leased')
  fundAdvance(engine, {}, T0 + 2_000, 2)
  check('funded')
  createJob(engine, 'job_actors_1', 10n ** 6n)
  check('a job')
  t.ok(compared >= 8, 'offers, leases and advances were compared')
  const done = createActor(leaseMachine, { input: inputs[2]![2] as never }).start()
  done.send({ type: 'CANCEL', nowMs: T0 })
  t.same(actorRecord(done), withHistory(persisted(done.getPersistedSnapshot()), done), 'a final actor (status done)')
  const final = finalActorRecord(done)
  t.same(final, withHistory(persisted(done.getPersistedSnapshot()), done), 'finalActorRecord: the same record')
  t.same(Object.keys(final as object), Object.keys(actorRecord(done) as object), 'finalActorRecord: keys in the same order')
})

t.test('offerView and leaseView: the general view of the snapshot (context and state), keys in the same order, through each life', async (t) => {
  const json = (value: unknown): string => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))
  const compare = (actor: AnyActor, view: (snapshot: never) => unknown, step: string) => {
    const snapshot = actor.getSnapshot()
    const general = viewOf(snapshot)
    t.same(view(snapshot as never), general, step)
    t.equal(json(view(snapshot as never)), json(general), `${step}: keys in the same order`)
  }
  const [, , offerInput] = inputs[1]!
  const [, , leaseInput] = inputs[2]!
  const offer = startActor(offerMachine, offerInput as never)
  compare(offer, offerView, 'offer offered')
  const lease = { leaseId: 'lea_1', lender: addr(4), chainTimeMs: T0, nowMs: T0 }
  for (const [event, step] of [
    [{ type: 'LEASE_REFUSED', ...lease, leaseId: 'lea_0', lender: addr(6) }, 'offer with a refused lease'],
    [{ type: 'LEASE', ...lease }, 'offer leased'],
    [{ type: 'LEASE_ENDED', leaseId: 'lea_1', lender: addr(4), chainTimeMs: T0 + 1, nowMs: T0 + 1 }, 'offer offered again'],
    [{ type: 'EXPIRE', reason: 'stale', chainTimeMs: T0 + 1000, nowMs: T0 + 2 }, 'offer expired'],
  ] as const) {
    offer.send(event)
    compare(offer, offerView, step)
  }
  const endedStale = startActor(offerMachine, offerInput as never)
  endedStale.send({ type: 'LEASE', ...lease })
  endedStale.send({ type: 'LEASE_ENDED', leaseId: 'lea_1', lender: addr(4), chainTimeMs: endedStale.getSnapshot().context.expiresAtMs, nowMs: T0 + 2 })
  t.equal(endedStale.getSnapshot().value, 'expired')
  compare(endedStale, offerView, 'offer expired at its lease\'s end')
  const funded = startActor(offerMachine, offerInput as never)
  funded.send({ type: 'LEASE', ...lease })
  funded.send({ type: 'DECLINE', reason: 'source_closed', nowMs: T0 + 1 })
  compare(funded, offerView, 'offer closing')
  funded.send({ type: 'FUND', advanceId: 'adv_1', nowMs: T0 + 2 })
  compare(funded, offerView, 'offer funded')
  for (const event of [
    { type: 'PAY', payment: proof, nowMs: T0 + 1 },
    { type: 'TIME_OUT', chainTimeMs: T0 + 2000, nowMs: T0 + 2 },
    { type: 'INSUFFICIENT_BALANCE', nowMs: T0 },
    { type: 'CANCEL', nowMs: T0 + 1 },
  ] as { type: string; [k: string]: unknown }[]) {
    const actor = startActor(leaseMachine, leaseInput as never)
    compare(actor, leaseView, 'lease leased')
    actor.send(event as never)
    t.equal(actor.getSnapshot().status, 'done', `${event.type} ends the lease`)
    compare(actor, leaseView, `lease after ${event.type}`)
  }
})

t.test('an offer event through the engine\'s send: the context XState made, copied in the same key order, at every step', async (t) => {
  const { engine } = newEngine()
  const state = (engine as unknown as { state: EngineState }).state
  const [, , offerInput] = inputs[1]!
  const json = (value: unknown): string => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))
  const viaEngine = startActor(offerMachine, offerInput as never)
  const plain = createActor(offerMachine, { input: offerInput as never }).start()
  const lease = { lender: addr(4), chainTimeMs: T0, nowMs: T0 }
  for (const event of [
    { type: 'LEASE_REFUSED', ...lease, leaseId: 'lea_0', lender: addr(6) },
    { type: 'LEASE', ...lease, leaseId: 'lea_1' },
    { type: 'LEASE_ENDED', leaseId: 'lea_1', lender: addr(4), chainTimeMs: T0 + 1, nowMs: T0 + 1 },
    { type: 'LEASE', ...lease, leaseId: 'lea_2', lender: addr(7) },
    { type: 'DECLINE', reason: 'source_closed', nowMs: T0 + 2 },
    { type: 'FUND', advanceId: 'adv_1', nowMs: T0 + 3 },
  ] as { type: string; [k: string]: unknown }[]) {
    const before = viaEngine.getSnapshot().context
    t.ok(send(state, 'offer', viaEngine, event as never).accepted, `${event.type} taken`)
    plain.send(event as never)
    const after = viaEngine.getSnapshot().context
    t.not(after, before, `${event.type}: a new context`)
    t.equal(json(after), json(plain.getSnapshot().context), `${event.type}: the context XState made, keys in the same order`)
    t.same(viaEngine.getPersistedSnapshot(), plain.getPersistedSnapshot(), `${event.type}: the same persisted snapshot`)
  }
  t.equal(viaEngine.getSnapshot().status, 'done', 'the offer ended funded')
})

/** An engine with a live actor of every kind (a matched offer and another waiting, a job, an advance), and its restore. */
function everyKind(jobId: string): { engine: Engine; restored: Engine } {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const offerId = unwrap(engine.requestCredit(creditRequest(), T0)).offer!.offerId
  unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 1_000))
  unwrap(engine.requestCredit(creditRequest(), T0 + 1_000))
  createJob(engine, jobId, 10n ** 6n)
  fundAdvance(engine, {}, T0 + 2_000, 2)
  return { engine, restored: new Engine({}, new FakeWallets(), engine.snapshots()) }
}

t.test("an engine's live jobs, offers, leases and advances are children of its actorRoot: one XState system for all of them, restored ones too", async (t) => {
  const { engine, restored } = everyKind('job_root_1')
  for (const [name, e] of [['new', engine], ['restored', restored]] as const) {
    const state = (e as unknown as { state: EngineState }).state
    for (const kind of ['job', 'offer', 'lease', 'advance'] as const) {
      const actors = [...state.actorMap(kind).values()]
      t.ok(actors.length > 0, `${name}: a live ${kind}`)
      for (const actor of actors) t.equal(actor.system, state.actorRoot.system, `${name}: the ${kind} is in the engine's system`)
    }
  }
  const [one, other] = [engine, restored].map((e) => (e as unknown as { state: EngineState }).state.actorRoot)
  t.not(one!.system, other!.system, 'each engine its own system')
})

t.test("an engine's new and restored actors transition with their machine's flat transition, and their snapshots name the machine", async (t) => {
  const { engine, restored } = everyKind('job_flat_1')
  for (const [name, e] of [['new', engine], ['restored', restored]] as const) {
    const state = (e as unknown as { state: EngineState }).state
    for (const kind of ['job', 'offer', 'lease', 'advance'] as const) {
      const machine = machines[kind] as AnyStateMachine
      const flat = flatLogic(machine)
      t.ok(flat, `the ${kind} machine is flat`)
      for (const actor of state.actorMap(kind).values()) {
        t.equal((actor.logic as AnyStateMachine).transition, flat!.transition, `${name}: the ${kind} transitions flat`)
        t.equal(actor.getSnapshot().machine, machine, `${name}: the ${kind}'s snapshot names its machine`)
      }
    }
  }
  // The restored engine goes on as the one it was restored from would: the same answer, the same changes.
  const next = (e: Engine) => e.matchOffer({ offerId: unwrap(e.requestCredit(creditRequest(), T0 + 3_000)).offer!.offerId, caller: BORROWER }, T0 + 3_000)
  t.strictSame(next(restored), next(engine), 'a request and a match after the restore')
})

t.test("actorRoot: an action that throws in a child reaches the root's error report, as it would a root actor's own", async (t) => {
  const thrown = new Error('an action threw')
  const machine = setup({ actions: { fail: () => { throw thrown } } }).createMachine({ context: () => ({}), initial: 'idle', states: { idle: { on: { GO: { actions: 'fail' } } } } })
  const root = actorRoot()
  const reported: unknown[] = []
  root.subscribe({ error: (error) => reported.push(error) })
  const child = startActor(machine, {}, root)
  child.send({ type: 'GO' })
  t.equal(child.getSnapshot().status, 'error', 'the child is in error')
  t.same(reported, [thrown], "the root reported the child's error")
})

t.test('actorRoot: a child that reaches its final state leaves the root running', async (t) => {
  const root = actorRoot()
  const lease = startActor(leaseMachine, inputs[2]![2] as never, root)
  lease.send({ type: 'CANCEL', nowMs: T0 } as never)
  t.equal(lease.getSnapshot().status, 'done', 'the lease is done')
  t.equal(root.getSnapshot().status, 'active', 'the root ignored its done event')
})

t.test("actorRoot: a child's done event leaves the root's snapshot as it was, not a copy of it", async (t) => {
  const root = actorRoot()
  const before = root.getSnapshot()
  const lease = startActor(leaseMachine, inputs[2]![2] as never, root)
  lease.send({ type: 'CANCEL', nowMs: T0 } as never)
  t.equal(lease.getSnapshot().status, 'done', 'the lease is done')
  t.equal(root.getSnapshot(), before, 'the same snapshot object')
})

t.test("actorRoot: its system holds no live child (XState's registry of a system's actors by session id, which nothing reads)", async (t) => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const root = actorRoot()
  let held: WeakRef<AnyActor> | undefined = new WeakRef(startActor(leaseMachine, inputs[2]![2] as never, root))
  t.equal(held.deref()?.getSnapshot().status, 'active', 'a live lease, never stopped')
  // A WeakRef keeps its target until the current job ends: collect on later turns.
  for (let i = 0; i < 5 && held.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  t.equal(held.deref(), undefined, 'collected once nothing of the engine holds it')
  held = undefined
  t.equal(root.getSnapshot().status, 'active', 'the root still runs')
})

t.test("startActor under a parent: the child XState's createActor(logic, { parent }) makes, field by field, with one options object per parent", async (t) => {
  type Fields = Record<string, unknown> & { _actorScope: Record<string, unknown>; id: string }
  // The engine's root, and a root with a logger and a clock of its own, which its children take from its system.
  const clock = { setTimeout: () => 0, clearTimeout: () => undefined }
  const roots = [actorRoot(), createActor(setup({}).createMachine({}), { logger: () => undefined, clock }).start()]
  for (const root of roots) for (const [kind, machine, input] of inputs) {
    const born = startActor(machine, input, root) as unknown as Fields
    // What startActor made before: XState's constructor given the same logic (born, or flat) and { parent }.
    const made = createActor(born.logic as AnyStateMachine, { parent: root }).start() as unknown as Fields
    const other = startActor(machine, input, root) as unknown as Fields
    t.same(Object.keys(born), Object.keys(made), `${kind}: the same fields in the same order`)
    for (const key of ['system', '_parent', 'logger', 'clock', '_syncSnapshot', 'systemId', '_processingStatus'] as const) {
      t.equal(born[key], made[key], `${kind}: the same ${key}`)
    }
    t.equal(born.system, root.system, `${kind}: the parent's system`)
    t.equal(born._parent, root, `${kind}: the parent`)
    t.strictSame(born.options, made.options, `${kind}: the options XState resolves for { parent }, keys in order`)
    t.equal(born.options, other.options, `${kind}: one options object for the children of one parent`)
    // Session ids are booked in creation order, one per actor, as XState books them (one counter for all systems).
    const seq = (id: string): number => Number(id.slice(id.indexOf(':') + 1))
    t.equal(born.id, born.sessionId, `${kind}: its id is its session id`)
    t.equal(seq(other.id), seq(made.id) + 1, `${kind}: the next one books the next id`)
    t.equal(seq(made.id), seq(born.id) + 1, `${kind}: booked in creation order, one id per actor`)
    t.same(Object.keys(born._actorScope), Object.keys(made._actorScope), `${kind}: the same actor scope`)
    t.equal(born._actorScope.system, root.system, `${kind}: the actor scope's system is the parent's`)
    t.equal(born._actorScope.self, born, `${kind}: the actor scope's self`)
    t.equal(born._actorScope.id, born.id, `${kind}: the actor scope's id`)
    t.equal(born._actorScope.sessionId, born.sessionId, `${kind}: the actor scope's session id`)
    t.equal(born._actorScope.logger, made._actorScope.logger, `${kind}: the actor scope's logger`)
  }
})

t.test("restoreActor under a parent: the child XState's createActor(logic, { snapshot, parent }) makes, field by field", async (t) => {
  type Fields = Record<string, unknown> & { _actorScope: Record<string, unknown>; id: string; getPersistedSnapshot(): unknown; getSnapshot(): { value: unknown; status: string } }
  const root = actorRoot()
  for (const [kind, machine, input, event] of inputs) {
    const live = startActor(machine, input)
    live.send(event as never)
    for (const persistedSnapshot of [startActor(machine, input).getPersistedSnapshot(), live.getPersistedSnapshot()]) {
      const restored = restoreActor(machine, persistedSnapshot, root) as unknown as Fields
      const made = createActor(flatLogic(machine)!, { snapshot: persistedSnapshot as never, parent: root }).start() as unknown as Fields
      const state = `${kind} in ${String(made.getSnapshot().value)}`
      t.same(Object.keys(restored), Object.keys(made), `${state}: the same fields in the same order`)
      for (const key of ['system', '_parent', 'logger', 'clock', '_syncSnapshot', 'systemId', '_processingStatus'] as const) {
        t.equal(restored[key], made[key], `${state}: the same ${key}`)
      }
      t.equal(restored.system, root.system, `${state}: the parent's system`)
      t.strictSame(restored.options, made.options, `${state}: the options XState resolves for { snapshot, parent }, keys in order`)
      t.equal(restored._actorScope.system, root.system, `${state}: the actor scope's system is the parent's`)
      t.equal(restored._actorScope.self, restored, `${state}: the actor scope's self`)
      t.same(restored.getPersistedSnapshot(), made.getPersistedSnapshot(), `${state}: the same persisted snapshot`)
      t.equal(restored.getSnapshot().status, made.getSnapshot().status, `${state}: the same status`)
      t.equal((restored.getSnapshot() as unknown as { machine: unknown }).machine, machine, `${state}: the snapshot names the machine`)
      // Constructed without options: its logic's initial snapshot is the restore (the flat logic is its prototype).
      t.equal(Object.getPrototypeOf(restored.logic), flatLogic(machine), `${state}: constructed through the restoring logic`)
    }
  }
})
