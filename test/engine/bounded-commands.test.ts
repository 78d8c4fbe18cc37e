// Bounded work per command: no engine command makes more changes than changesPerCommandMax (the store refuses a
// larger commit, and the service stops on a refused commit). A chain follower's batch that passes thousands of lease
// deadlines at once, thousands of stale offers, or thousands of matches are done over several calls, in the order one
// unbounded call would take, with every invariant true between the calls; dispatchDue says whether work is left.
import t, { type Test } from 'tap'
import { defaultEngineConfig, resolveConfig, type Engine, type EngineConfig } from '../../src/engine/index.ts'
import type { Change, EngineResult } from '../../src/engine/index.ts'
import { CHANGES_PER_COMMIT_MAX_DEFAULT, RECORD_WRITES_PER_COMMIT_MAX } from '../../src/store/store.ts'
import { CHAIN_EVENT_CHANGES_MAX } from '../../src/engine/chain-facts.ts'
import type { ChainEventFact } from '../../src/engine/engine.ts'
import type { LeaseView, OfferView } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, NET, T0, addr, applyChanges, canonical, createJob, creditRequest, dispatchAt, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const LEASE_TTL_MS = 30_000
/** A small budget, so that a few dozen leases are more than one command may change. */
const SMALL_BUDGET = 40
const SMALL: Partial<EngineConfig> = { changesPerCommandMax: SMALL_BUDGET, lendersScannedPerMatchMax: 8, leaseTtlMs: LEASE_TTL_MS }

function observe(engine: Engine, chainTimeMs: number, nowMs: number) {
  return engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events: [] }, nowMs)
}

/** Checks one command: at most `changesMax` changes, and the invariants hold after it. Returns its value. */
function bounded<T>(t: Test, engine: Engine, result: EngineResult<T>, label: string, changesMax: number): T {
  const value = unwrap(result)
  const changes = (result as { changes: Change[] }).changes
  if (changes.length > changesMax) t.fail(`${label}: ${changes.length} changes, more than ${changesMax}`)
  engine.checkInvariants()
  return value
}

/** `n` offers of the borrower, each leased now (one lender with liquidity for all): the lease ids in grant order. */
function leasedOffers(engine: Engine, n: number, nowMs: number): { offerIds: string[]; leaseIds: string[] } {
  const offerIds: string[] = []
  const leaseIds: string[] = []
  for (let i = 0; i < n; i++) {
    const offerId = offerFor(engine, {}, nowMs)
    const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs)).lease
    if (!lease) throw new Error(`offer ${offerId} found no lender`)
    offerIds.push(offerId)
    leaseIds.push(lease.leaseId)
  }
  return { offerIds, leaseIds }
}

/** Dispatch once, then until no work is due: every call checked; the ids of leases and offers expired and offers leased, in order. */
function dispatchUntilDone(t: Test, engine: Engine, nowMs: number, changesMax: number, callsMax: number) {
  const expiredLeases: string[] = []
  const expiredOffers: string[] = []
  const leased: string[] = []
  let calls = 0
  do {
    if (++calls > callsMax) throw new Error(`dispatch still due after ${callsMax} calls`)
    const out = bounded(t, engine, engine.dispatch(nowMs), `dispatch ${calls}`, changesMax)
    expiredLeases.push(...out.expiredLeases.map((l) => l.leaseId))
    expiredOffers.push(...out.expiredOffers.map((o) => o.offerId))
    leased.push(...out.matches.flatMap((m) => (m.lease ? [m.offer.offerId] : [])))
  } while (engine.dispatchDue(nowMs))
  return { expiredLeases, expiredOffers, leased, calls }
}

t.test('a batch that passes more lease deadlines than one command may change: bounded, and dispatch finishes them in order', async (t) => {
  const { engine } = newEngine(SMALL)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 9n }), T0))
  observe(engine, T0, T0)
  const { offerIds, leaseIds } = leasedOffers(engine, 60, T0)

  // One batch's chain time passes every deadline at once (a follower that lagged, a chain moved forward).
  const batch = bounded(t, engine, observe(engine, T0 + LEASE_TTL_MS + 5_000, T0 + 1_000), 'the batch', SMALL_BUDGET)
  t.ok(batch.expiredLeases.length > 0 && batch.expiredLeases.length < leaseIds.length, 'the batch times out as many as fit, not all')
  t.same(batch.expiredLeases.map((l) => l.leaseId), leaseIds.slice(0, batch.expiredLeases.length), 'the first ones by deadline, then sequence')
  t.ok(engine.dispatchDue(T0 + 1_000), 'the rest is due')
  // The deadlines are over from the chain second after T0 + LEASE_TTL_MS (leaseOverAtChainMs), 4 s before this chain time.
  t.equal(engine.dispatchOverdueMs(T0 + 1_000), 4_000, 'the oldest due lease is overdue by the chain time past its deadline')
  t.same(engine.dispatchDueCounts(T0 + 1_000), { leases: leaseIds.length - batch.expiredLeases.length, offers: 0 }, 'the leases left are due')
  const left = leaseIds[batch.expiredLeases.length] as string
  t.equal(engine.getLease(left)?.state, 'leased', 'a lease past its deadline waits, live, for its turn')
  const leftOffer = offerIds[batch.expiredLeases.length] as string
  const rematch = engine.matchOffer({ offerId: leftOffer, caller: BORROWER }, T0 + 1_000)
  t.match(rematch, { ok: false, error: { code: 'offer_not_offered' } }, 'its offer is not leased to anyone else meanwhile')

  const done = dispatchUntilDone(t, engine, T0 + 1_000, SMALL_BUDGET, 20)
  t.ok(done.calls > 1, 'the rest takes more than one dispatch')
  t.same([...batch.expiredLeases.map((l) => l.leaseId), ...done.expiredLeases], leaseIds, 'every lease expired once, in deadline and sequence order')
  t.same(leaseIds.filter((id) => engine.getLease(id) !== undefined), [], 'none of them is live')
  t.same(offerIds.filter((id) => engine.getOffer(id)?.state !== 'offered'), [], 'each offer waits for another lender')
  t.notOk(engine.dispatchDue(T0 + 1_000), 'nothing is due any more')
  t.equal(engine.dispatchOverdueMs(T0 + 1_000), 0, 'nothing is overdue')
  t.same(engine.dispatchDueCounts(T0 + 1_000), { leases: 0, offers: 0 })
})

t.test('stale offers beyond one command are expired over several dispatches, in creation order', async (t) => {
  const { engine } = newEngine({ ...SMALL, offerTtlMs: 60_000 })
  registerBacking(engine)
  observe(engine, T0, T0)
  const offerIds = Array.from({ length: 90 }, () => offerFor(engine, {}, T0))
  t.equal(engine.dispatchOverdueMs(T0 + 60_000), 0, 'no offer is past its TTL yet')
  bounded(t, engine, observe(engine, T0 + 61_500, T0 + 61_500), 'the batch', SMALL_BUDGET)
  t.equal(engine.dispatchOverdueMs(T0 + 61_500), 1_500, 'the oldest stale offer is overdue by the chain time past its TTL')
  t.same(engine.dispatchDueCounts(T0 + 61_500, 50), { leases: 0, offers: 50 }, 'the stale offers are due, counted up to the most asked')
  const done = dispatchUntilDone(t, engine, T0 + 61_500, SMALL_BUDGET, 20)
  t.ok(done.calls > 1, 'more than one dispatch')
  t.same(done.expiredOffers, offerIds, 'every offer expired once, in creation order')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n, 'their capacity is back')
})

t.test("dispatch's matches stop at the budget too, and the next calls lease the rest in creation order", async (t) => {
  const { engine } = newEngine(SMALL)
  registerBacking(engine)
  observe(engine, T0, T0)
  const offerIds = Array.from({ length: 60 }, () => offerFor(engine, {}, T0))
  // A lender arrives: dispatch leases every waiting offer to it, more than one command may change.
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 9n }), T0))
  const done = dispatchUntilDone(t, engine, T0 + 1, SMALL_BUDGET, 20)
  t.ok(done.calls > 1, 'more than one dispatch')
  t.same(done.leased, offerIds, 'every offer leased once, in creation order')
  t.notOk(engine.dispatchDue(T0 + 1), 'nothing is due once every offer is leased')
})

t.test('at the default budget: a batch passing 5,100 deadlines (over 10,000 changes at once) stays within the store limit', async (t) => {
  // No bound on the count of time-outs here: the change budget alone is what this checks.
  const { engine } = newEngine({ leaseTtlMs: LEASE_TTL_MS, liveOffersPerBorrowerMax: 10_000, timeOutsPerCommandMax: 1_000_000 })
  registerBacking(engine, 'src_1', 10n ** 12n)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 12n }), T0))
  observe(engine, T0, T0)
  const { leaseIds } = leasedOffers(engine, 5_100, T0)
  const batch = bounded(t, engine, observe(engine, T0 + LEASE_TTL_MS + 5_000, T0 + 1_000), 'the batch', CHANGES_PER_COMMIT_MAX_DEFAULT)
  t.equal(engine.config.changesPerCommandMax, CHANGES_PER_COMMIT_MAX_DEFAULT, "the default budget is the store's limit")
  const done = dispatchUntilDone(t, engine, T0 + 1_000, CHANGES_PER_COMMIT_MAX_DEFAULT, 10)
  t.same([...batch.expiredLeases.map((l) => l.leaseId), ...done.expiredLeases], leaseIds, 'every lease expired once, in order')
})

t.test('a burst of timers is spread over commands of at most timeOutsPerCommandMax time-outs, and of stale offers', async (t) => {
  const { engine } = newEngine({ leaseTtlMs: LEASE_TTL_MS, timeOutsPerCommandMax: 7 })
  t.equal(defaultEngineConfig.timeOutsPerCommandMax, 8, 'the default')
  registerBacking(engine, 'src_1', 10n ** 12n)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 12n }), T0))
  observe(engine, T0, T0)
  const { leaseIds } = leasedOffers(engine, 30, T0)
  // Every deadline passes in one block, as a whole second of leases does on a live chain.
  const batch = unwrap(observe(engine, T0 + LEASE_TTL_MS + 5_000, T0 + 1_000))
  t.equal(batch.expiredLeases.length, 7, 'the batch times out seven')
  const expired = batch.expiredLeases.map((l) => l.leaseId)
  let calls = 0
  while (engine.dispatchDue(T0 + 1_000) && calls < 20) {
    calls += 1
    const out = unwrap(engine.dispatch(T0 + 1_000))
    if (out.expiredLeases.length > 7) t.fail(`dispatch ${calls}: ${out.expiredLeases.length} time-outs`)
    expired.push(...out.expiredLeases.map((l) => l.leaseId))
    engine.checkInvariants()
  }
  t.same(expired, leaseIds, 'every lease timed out once, in deadline order')

  // The offers wait (their only lender's lease on them expired); 20 more are opened; then all are stale at once.
  const more = Array.from({ length: 20 }, () => offerFor(engine, {}, T0 + 2_000))
  const staleAtMs = (engine.getOffer(more[19] as string)?.expiresAtMs as number) + 1
  unwrap(observe(engine, staleAtMs, staleAtMs))
  const expiredOffers: string[] = []
  calls = 0
  while (engine.dispatchDue(staleAtMs) && calls < 20) {
    calls += 1
    const out = unwrap(engine.dispatch(staleAtMs))
    if (out.expiredOffers.length > 7) t.fail(`dispatch ${calls}: ${out.expiredOffers.length} stale offers expired`)
    expiredOffers.push(...out.expiredOffers.map((o) => o.offerId))
    engine.checkInvariants()
  }
  t.ok(calls >= 3, `spread over ${calls} calls`)
  t.same(expiredOffers.filter((id) => more.includes(id)), more, 'every stale offer expired once, in creation order')
  t.throws(() => resolveConfig({ timeOutsPerCommandMax: 0 }), RangeError)
})

t.test('while more offers are stale than one command may expire, dispatch matches none; then the rest in creation order', async (t) => {
  const { engine } = newEngine({ leaseTtlMs: LEASE_TTL_MS, timeOutsPerCommandMax: 5 })
  registerBacking(engine, 'src_1', 10n ** 12n)
  observe(engine, T0, T0)
  // No lender yet: every offer waits. Twelve will be stale, three not yet.
  const stale = Array.from({ length: 12 }, () => offerFor(engine, {}, T0))
  const staleAtMs = (engine.getOffer(stale[11] as string)?.expiresAtMs as number) + 1
  observe(engine, staleAtMs - 10_000, staleAtMs - 10_000)
  const fresh = Array.from({ length: 3 }, () => offerFor(engine, {}, staleAtMs - 10_000))
  observe(engine, staleAtMs, staleAtMs)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 12n }), staleAtMs))

  const calls: { expired: string[]; leased: string[] }[] = []
  while (engine.dispatchDue(staleAtMs) || calls.length === 0) {
    if (calls.length >= 10) throw new Error('dispatch still due after 10 calls')
    const out = unwrap(engine.dispatch(staleAtMs))
    calls.push({ expired: out.expiredOffers.map((o) => o.offerId), leased: out.matches.flatMap((m) => (m.lease ? [m.offer.offerId] : [])) })
    engine.checkInvariants()
  }
  t.same(calls.map((c) => c.expired.length), [5, 5, 2], 'the stale ones, at most five per call')
  t.same(calls.map((c) => c.leased), [[], [], fresh], 'no match while stale ones are left beyond the call; then the others')
  t.same(calls.flatMap((c) => c.expired), stale, 'every stale offer expired once, in creation order')
})

t.test('the time-out bound splits a burst over commands and changes nothing else: the same records as one unbounded call', async (t) => {
  // The same world twice: leases timed out on the chain and their offers stale by then, offers still fresh (matched by
  // the dispatch), three lenders.
  const run = (timeOutsPerCommandMax: number) => {
    const { engine } = newEngine({ leaseTtlMs: LEASE_TTL_MS, offerTtlMs: LEASE_TTL_MS, timeOutsPerCommandMax })
    const records = new Map<string, Change>()
    const keep = <T>(result: EngineResult<T>): T => {
      applyChanges(records, (result as { changes: Change[] }).changes)
      return unwrap(result)
    }
    registerBacking(engine, 'src_1', 10n ** 12n)
    for (let n = 1; n <= 3; n++) keep(engine.registerLender(lenderInput(n, { availableLiquidityAtomic: 10n ** 9n, minFeeBps: 100 * n }), T0))
    keep(observe(engine, T0, T0))
    for (let i = 0; i < 40; i++) {
      const decision = keep(engine.requestCredit(creditRequest(), T0))
      keep(engine.matchOffer({ offerId: decision.offer?.offerId as string, caller: BORROWER }, T0))
    }
    const nowMs = T0 + LEASE_TTL_MS + 5_000
    for (let i = 0; i < 10; i++) keep(engine.requestCredit(creditRequest(), nowMs - 1_000))
    keep(observe(engine, nowMs, nowMs))
    // The ticker's run: a dispatch, and again while work is due.
    let calls = 0
    do {
      calls += 1
      keep(engine.dispatch(nowMs))
    } while (engine.dispatchDue(nowMs) && calls < 100)
    engine.checkInvariants()
    return { calls, records: [...records].map(([key, change]) => `${key} ${canonical(change)}`).sort() }
  }
  const bounded = run(4)
  const unbounded = run(1_000_000)
  // The follower's batch times out 4 of the 40 leases, dispatch the other 36 at 4 per call (each offer expires with
  // its lease: its TTL is over too).
  t.ok(bounded.calls >= 9 && unbounded.calls === 1, `spread over ${bounded.calls} calls against ${unbounded.calls}`)
  t.same(bounded.records, unbounded.records, 'every record the same')
})

t.test("suspension lifts stop where their passport events' record writes would pass the budget, and the next call lifts the rest", async (t) => {
  const { engine } = newEngine({ ...SMALL, borrowerSuspensionMinSeconds: 60 })
  const borrowers = Array.from({ length: 25 }, (_, i) => addr(0x7000 + i))
  for (const [i, borrower] of borrowers.entries()) {
    createJob(engine, `job_${i}`, 1_000n, T0 + 86_400_000, borrower)
    unwrap(engine.failJob({ jobId: `job_${i}`, reason: 'not_delivered', caller: CLIENT }, T0))
  }
  const lifted: string[] = []
  let calls = 0
  do {
    calls += 1
    const out = bounded(t, engine, engine.dispatch(T0 + 61_000), `dispatch ${calls}`, SMALL_BUDGET)
    // The service writes each lift's passport event (two record writes) in the dispatch's commit.
    if (out.suspensionsLifted.length * 2 > SMALL_BUDGET) t.fail(`dispatch ${calls}: ${out.suspensionsLifted.length} lifts, more record writes than ${SMALL_BUDGET}`)
    lifted.push(...out.suspensionsLifted.map((l) => l.borrower))
  } while (engine.dispatchDue(T0 + 61_000) && calls < 10)
  t.ok(calls > 1, 'more than one dispatch')
  t.same([...lifted].sort(), [...borrowers].sort(), 'every suspension lifted once')
})

t.test('the change budget: at least one matching attempt fits, and it fits in one store commit', async (t) => {
  t.throws(() => resolveConfig({ changesPerCommandMax: 11, lendersScannedPerMatchMax: 8 }), RangeError, 'a matching attempt needs lendersScannedPerMatchMax + 4')
  t.doesNotThrow(() => resolveConfig({ changesPerCommandMax: 12, lendersScannedPerMatchMax: 8 }))
  t.throws(() => resolveConfig({ changesPerCommandMax: 1.5 }), RangeError)
  t.ok(defaultEngineConfig.changesPerCommandMax <= Math.min(CHANGES_PER_COMMIT_MAX_DEFAULT, RECORD_WRITES_PER_COMMIT_MAX), 'within what the store takes')
})

t.test("a chain event's most changes are CHAIN_EVENT_CHANGES_MAX: a SupplierPaid under an ended lease, on a job failed meanwhile", async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  createJob(engine, 'job_worst', 100_000n)
  const offerId = offerFor(engine, { repaymentSource: 'job_worst' })
  const first = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease as LeaseView
  const nowMs = first.expiresAtMs + 1000
  const rematched = unwrap(dispatchAt(engine, nowMs))
  const ended = rematched.expiredLeases[0] as LeaseView
  t.equal(rematched.matches[0]?.lease?.lender, lenderInput(2).address, 'the offer is leased to lender 2 after lender 1 timed out')
  unwrap(engine.failJob({ jobId: 'job_worst', reason: 'not_delivered', caller: CLIENT }, nowMs))
  // Lender 1 paid by its deadline, and the follower sees it only now: the worst case of observeChain's per-event work.
  const paid: ChainEventFact = {
    kind: 'supplier_paid', proofKey: `${NET}:${hash(4242)}:0`, offerKey: (engine.getOffer(offerId) as OfferView).offerKey, network: NET,
    txHash: hash(4242), logIndex: 0, payer: first.payer, supplier: first.supplierAddress, asset: first.asset, amountAtomic: first.amountAtomic,
  }
  const result = engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: nowMs, events: [paid] }, nowMs, (id) => (id === ended.leaseId ? ended : undefined))
  t.match(unwrap(result).advances, [{ lender: first.lender, state: 'defaulted' }], "the advance is lender 1's, born defaulted with its job")
  // The offer, lender 2's lease cancelled and lender 2, lender 1, meta, the advance, the job and the borrower.
  t.equal((result as { changes: Change[] }).changes.length, CHAIN_EVENT_CHANGES_MAX)
})
