// A borrower at liveOffersPerBorrowerMax whose offers are already past their time, but not yet ended by the dispatch
// ticker (bounded per turn, behind under load): its next request ends its own stale timers first, in the same command,
// exactly as the ticker would (oldest first, at most timeOutsPerCommandMax), and is underwritten. One whose offers are
// all live is still refused 409 live_offers_limit, changing nothing; so is a request another check refuses.
import t, { type Test } from 'tap'
import { Engine, type Change, type EngineConfig } from '../../src/engine/index.ts'
import { BORROWER, NET, T0, addr, canonical, creditRequest, FakeWallets, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const OFFER_TTL_MS = 3_000
const LEASE_TTL_MS = 2_000
const LIMIT = 100
const CONFIG: Partial<EngineConfig> = { offerTtlMs: OFFER_TTL_MS, leaseTtlMs: LEASE_TTL_MS, liveOffersPerBorrowerMax: LIMIT }
const OTHER = addr(0xb1)

function observe(engine: Engine, chainTimeMs: number, nowMs: number) {
  return unwrap(engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events: [] }, nowMs))
}

/** The final records a command wrote, by id: what a store would keep of the offers and leases it ended. */
function finals(changes: readonly Change[], kind: Change['kind']): Map<string, { value: string; context: { endReason?: string } }> {
  return new Map(changes.filter((c) => c.kind === kind && c.final).map((c) => [c.id, c.record as { value: string; context: { endReason?: string } }]))
}

/** A request the engine refuses: its code, and that the engine's state is what it was. */
function refusedUnchanged(t: Test, engine: Engine, over: Parameters<typeof creditRequest>[0], nowMs: number, code: string): void {
  const before = canonical(engine.snapshots())
  const result = engine.requestCredit(creditRequest(over), nowMs)
  t.match(result, { ok: false, error: { code } }, `refused ${code}`)
  t.equal(canonical(engine.snapshots()), before, 'nothing changed')
  // Nothing the refusal did is left pending for the next command to drain.
  const next = engine.advanceSequences()
  t.same(next.ok && next.changes.map((c) => c.kind), ['meta'], 'the next command drains only its own change')
  engine.checkInvariants()
}

t.test('waiting offers past their TTL: the request at the limit expires the oldest, at most timeOutsPerCommandMax, and is approved', async (t) => {
  const { engine } = newEngine(CONFIG)
  registerBacking(engine, 'src_1', 10n ** 12n)
  const offerIds = Array.from({ length: LIMIT }, () => offerFor(engine, {}, T0))
  refusedUnchanged(t, engine, {}, T0 + OFFER_TTL_MS - 1, 'live_offers_limit')

  // No dispatch: the clock moves past every TTL.
  const nowMs = T0 + OFFER_TTL_MS
  const result = engine.requestCredit(creditRequest(), nowMs)
  const decision = unwrap(result)
  t.equal(decision.decision, 'approved', 'approved')
  const ended = finals((result as { changes: Change[] }).changes, 'offer')
  const first = offerIds.slice(0, engine.config.timeOutsPerCommandMax)
  t.same([...ended.keys()], first, 'the oldest timeOutsPerCommandMax (8) expired, in creation order')
  for (const [id, record] of ended) {
    t.equal(record.value, 'expired', `${id} ended expired`)
    t.equal(record.context.endReason, 'stale', `${id} as stale`)
    t.equal(engine.getOffer(id), undefined, `${id} is not live`)
  }
  t.equal(engine.getOffer(offerIds[8] as string)?.state, 'offered', 'the next stale one waits for the ticker')
  engine.checkInvariants()
  t.equal(engine.creditState().counts.liveOffers, LIMIT - 8 + 1, 'live offers recounted')

  // Below the limit now: the next request ends nothing.
  const below = engine.requestCredit(creditRequest(), nowMs)
  t.same([...finals((below as { changes: Change[] }).changes, 'offer').keys()], [], 'below the limit, nothing is ended')
  t.equal(engine.getOffer(offerIds[8] as string)?.state, 'offered')

  // The ticker takes the rest as ever, and the engine restored from its snapshots has the same live offers.
  const restored = new Engine(engine.config, new FakeWallets(), engine.snapshots())
  restored.checkInvariants()
  while (restored.dispatchDue(nowMs)) unwrap(restored.dispatch(nowMs))
  restored.checkInvariants()
  t.same(offerIds.filter((id) => restored.getOffer(id) !== undefined), [], 'the stale ones ended once the ticker caught up')
  t.equal(restored.creditState().counts.liveOffers, 2, 'the two new offers are live')
  t.equal(unwrap(restored.requestCredit(creditRequest(), nowMs)).decision, 'approved', 'the restored engine counts them')
})

t.test('a smaller timeOutsPerCommandMax bounds the request the same way', async (t) => {
  const { engine } = newEngine({ ...CONFIG, timeOutsPerCommandMax: 3 })
  registerBacking(engine, 'src_1', 10n ** 12n)
  const offerIds = Array.from({ length: LIMIT }, () => offerFor(engine, {}, T0))
  const result = engine.requestCredit(creditRequest(), T0 + OFFER_TTL_MS)
  t.equal(unwrap(result).decision, 'approved')
  t.same([...finals((result as { changes: Change[] }).changes, 'offer').keys()], offerIds.slice(0, 3), 'three expired')
  engine.checkInvariants()
})

t.test('leased offers whose leases are past their chain deadline: the request times the oldest out, their offers expire with them', async (t) => {
  const { engine } = newEngine(CONFIG)
  registerBacking(engine, 'src_1', 10n ** 12n)
  registerBacking(engine, 'src_2', 10n ** 12n, OTHER)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 12n }), T0))
  observe(engine, T0, T0)
  const lease = (offerId: string, caller = BORROWER) => {
    const leased = unwrap(engine.matchOffer({ offerId, caller }, T0)).lease
    if (!leased) throw new Error(`offer ${offerId} found no lender`)
    return leased.leaseId
  }
  // Another borrower's leases are due first: the follower's batch times out as many as one command may, all theirs.
  const timeOuts = engine.config.timeOutsPerCommandMax
  for (let i = 0; i < timeOuts; i++) lease(offerFor(engine, { agent: OTHER, repaymentSource: 'src_2' }, T0), OTHER)
  const offerIds = Array.from({ length: LIMIT }, () => offerFor(engine, {}, T0))
  const leaseIds = offerIds.map((id) => lease(id))
  const chainMs = T0 + OFFER_TTL_MS + LEASE_TTL_MS + 5_000
  const batch = observe(engine, chainMs, T0 + 1_000)
  t.equal(batch.expiredLeases.length, timeOuts, 'the batch timed out its share')
  t.notOk(batch.expiredLeases.some((l) => leaseIds.includes(l.leaseId)), 'none of the borrower\'s')
  t.equal(engine.getOffer(offerIds[0] as string)?.state, 'leased', 'its offers are still leased, their leases past their deadline')

  const lenderBefore = engine.getLender(addr(0x1001))
  const result = engine.requestCredit(creditRequest(), T0 + 1_000)
  t.equal(unwrap(result).decision, 'approved', 'approved')
  const changes = (result as { changes: Change[] }).changes
  t.same([...finals(changes, 'lease').keys()], leaseIds.slice(0, timeOuts), 'the oldest leases timed out')
  for (const [id, record] of finals(changes, 'lease')) t.equal(record.value, 'expired', `${id} expired`)
  const ended = finals(changes, 'offer')
  t.same([...ended.keys()], offerIds.slice(0, timeOuts), 'their offers ended with them')
  for (const [id, record] of ended) t.equal(record.value, 'expired', `${id} expired`)
  t.ok(changes.some((c) => c.kind === 'lender'), 'the lender who missed the leases is recorded')
  t.ok((engine.getLender(addr(0x1001))?.reservedAtomic ?? 0n) < (lenderBefore?.reservedAtomic ?? 0n), 'its reservation is given back')
  engine.checkInvariants()
})

t.test('a borrower at the limit with no stale offer is still refused, and nothing changes', async (t) => {
  const { engine } = newEngine({ ...CONFIG, offerTtlMs: 60_000 })
  registerBacking(engine, 'src_1', 10n ** 12n)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 12n }), T0))
  observe(engine, T0, T0)
  const offerIds = Array.from({ length: LIMIT }, () => offerFor(engine, {}, T0))
  refusedUnchanged(t, engine, {}, T0 + 1_000, 'live_offers_limit')
  // Leases past their deadline whose offers are not past their TTL: those offers are live (they wait for another lender).
  for (const id of offerIds.slice(0, 20)) unwrap(engine.matchOffer({ offerId: id, caller: BORROWER }, T0))
  const chainMs = T0 + LEASE_TTL_MS + 1_000
  t.equal(observe(engine, chainMs, chainMs).expiredLeases.length, engine.config.timeOutsPerCommandMax, 'the batch times out its share')
  t.equal(engine.getOffer(offerIds[0] as string)?.state, 'offered', 'their offers wait for another lender')
  t.equal(engine.getOffer(offerIds[8] as string)?.state, 'leased', 'a lease past its deadline is left for the ticker')
  refusedUnchanged(t, engine, {}, chainMs, 'live_offers_limit')
})

t.test('a request at the limit that another check refuses ends nothing', async (t) => {
  const { engine } = newEngine(CONFIG)
  registerBacking(engine, 'src_1', 10n ** 12n)
  const offerIds = Array.from({ length: LIMIT }, () => offerFor(engine, {}, T0))
  refusedUnchanged(t, engine, { repaymentSource: 'src_none' }, T0 + OFFER_TTL_MS, 'repayment_source_not_found')
  t.equal(engine.getOffer(offerIds[0] as string)?.state, 'offered', 'the stale offers wait for the ticker')
})
