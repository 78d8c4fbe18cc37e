// Leases: expiry lowers reliability and rematches; insufficient balance expires at once; late reports are rejected.
import t from 'tap'
import { Engine, type PastLeaseOf } from '../../src/engine/engine.ts'
import { storedHistory } from '../../src/engine/history.ts'
import { eventBody, eventRecord, eventWallets } from '../../src/stream/events.ts'
import type { Change, OfferView } from '../../src/engine/types.ts'
import { ASSET, BORROWER, NET, SUPPLIER, T0, dispatchAt, hash, lenderInput, lenderOfSession, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

function world(config = {}) {
  const { engine, wallets } = newEngine(config)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  unwrap(engine.registerLender(lenderInput(3, { minFeeBps: 300 }), T0))
  return { engine, wallets }
}

/** The payment the lender of session key `payer` made, reported by that lender. */
function payment(offerId: string, payer: `0x${string}`, n = 1) {
  return { network: NET, txHash: hash(n), logIndex: 0, offerId, payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: 1000n, caller: lenderOfSession(payer) }
}

t.test('lease expiry: reliability lowered, rematched to the next lender, the late report rejected', async (t) => {
  const { engine } = world()
  const offerId = offerFor(engine)
  const first = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  t.equal(first.lender, lenderInput(1).address)
  t.equal(first.expiresAtMs, T0 + 30_000, 'default lease TTL is 30 s')
  const before = engine.getLender(first.lender)!

  const early = unwrap(dispatchAt(engine, T0 + 30_999))
  t.equal(early.expiredLeases.length, 0, 'not expired while the chain is within the deadline second (a payment can still be mined)')

  const result = dispatchAt(engine, T0 + 31_000)
  const out = unwrap(result)
  t.equal(out.expiredLeases.length, 1)
  t.equal(out.expiredLeases[0]?.state, 'expired')
  t.equal(out.expiredLeases[0]?.endReason, 'timeout')
  const after = engine.getLender(first.lender)!
  t.equal(after.reliabilityBps, before.reliabilityBps - 500, 'reliability lowered by the miss penalty')
  t.equal(after.availableAtomic, before.availableAtomic + 1000n, 'reserved liquidity released')
  t.equal(after.reservedAtomic, 0n)
  t.equal(out.matches.length, 1)
  t.equal(out.matches[0]?.lease?.lender, lenderInput(2).address, 'rematched to the next eligible lender')
  t.ok(result.ok && result.changes.some((c) => c.kind === 'lease' && c.id === first.leaseId && c.final), 'expired lease handed over as final')
  t.equal(engine.getLease(first.leaseId), undefined, 'and evicted from memory')

  const late = engine.recordSupplierPayment(payment(offerId, lenderInput(1).sessionAddress), T0 + 30_001)
  t.match(late, { ok: false, error: { code: 'lease_expired', class: 'conflict' } })
  t.equal(engine.getOffer(offerId)?.state, 'leased', 'the late report changed nothing')

  const wrong = engine.recordSupplierPayment(payment(offerId, lenderInput(3).sessionAddress), T0 + 30_001)
  t.match(wrong, { ok: false, error: { code: 'lease_not_held', class: 'forbidden' } })

  const paid = unwrap(engine.recordSupplierPayment(payment(offerId, lenderInput(2).sessionAddress), T0 + 30_002))
  t.equal(paid.lender, lenderInput(2).address)
  t.equal(paid.state, 'active')
  t.equal(engine.getLender(lenderInput(2).address)?.deployedAtomic, 1000n)
  engine.checkInvariants()
})

/** The least advance is 1000 here: a wallet holding 999 cannot pay one, and is refused (a wallet that can is passed over). */
const LEAST_ADVANCE_1000 = { advanceMinAtomic: { [NET]: { [ASSET]: 1000n } } }

t.test('insufficient balance: the lease expires at once and the next lender gets it', async (t) => {
  const { engine, wallets } = world(LEAST_ADVANCE_1000)
  wallets.set(lenderInput(1).sessionAddress, 999n)
  const offerId = offerFor(engine)
  const result = engine.matchOffer({ offerId, caller: BORROWER }, T0)
  const out = unwrap(result)
  t.equal(out.refusedLeases.length, 1)
  t.equal(out.refusedLeases[0]?.lender, lenderInput(1).address)
  t.equal(out.refusedLeases[0]?.state, 'expired')
  t.equal(out.refusedLeases[0]?.endReason, 'insufficient_balance')
  t.equal(out.lease?.lender, lenderInput(2).address)
  t.ok(result.ok && result.changes.some((c) => c.kind === 'lease' && c.id === out.refusedLeases[0]?.leaseId && c.final))
  t.equal(engine.getLender(lenderInput(1).address)?.reservedAtomic, 0n, 'no liquidity reserved for the refused lease')
  // The refusal is not one of the offer's leases (issue 10, hole 2): the refused lender never held one.
  t.same(engine.getOffer(offerId)?.leaseIds, [out.lease?.leaseId], 'the offer counts the granted lease only')
  t.match(engine.recordSupplierPayment(payment(offerId, lenderInput(1).sessionAddress), T0), { ok: false, error: { code: 'lease_not_held' } })
  t.ok(engine.isParked(lenderInput(1).address), 'the refused lender is parked')
  engine.checkInvariants()
})

t.test('a parked lender is back in the book once its wallet changes; one never funded starts parked', async (t) => {
  const { engine, wallets } = world(LEAST_ADVANCE_1000)
  wallets.set(lenderInput(1).sessionAddress, 999n)
  unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0))
  const again = unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0))
  t.same(again.refusedLeases, [], 'parked: not refused a second time')
  wallets.set(lenderInput(1).sessionAddress, 5000n)
  t.equal(engine.walletChanged(lenderInput(1).sessionAddress), true, 'the watcher reports the top-up')
  t.notOk(engine.isParked(lenderInput(1).address))
  t.equal(unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0)).lease?.lender, lenderInput(1).address, 'the cheapest lender leases again')
  engine.checkInvariants()
})

t.test('the wallet must cover all live leases of the lender on that network and asset', async (t) => {
  const { engine, wallets } = world()
  wallets.set(lenderInput(1).sessionAddress, 1500n)
  t.equal(unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0)).lease?.lender, lenderInput(1).address)
  const second = unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0))
  t.equal(second.lease?.lender, lenderInput(2).address, '1500 cannot pay 1000 + 1000')
  t.same(second.refusedLeases, [], 'passed over, not refused: the 500 left pays the least advance (1)')
  t.notOk(engine.isParked(lenderInput(1).address), 'and still in its book')
  engine.checkInvariants()
})

t.test('leases per offer are limited: the offer expires when they run out', async (t) => {
  const { engine } = world({ leasesPerOfferMax: 2 })
  const offerId = offerFor(engine)
  t.ok(unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease, 'first lease')
  const second = unwrap(dispatchAt(engine, T0 + 31_000))
  t.equal(second.matches[0]?.lease?.offerId, offerId, 'the first timed out, a second lease')
  const out = unwrap(dispatchAt(engine, T0 + 62_000))
  t.equal(out.expiredOffers[0]?.offerId, offerId)
  t.equal(out.expiredOffers[0]?.endReason, 'leases_exhausted', 'two leases timed out: the offer ends')
  t.equal(engine.getOffer(offerId), undefined, 'expired offer evicted')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n, 'capacity released')
  engine.checkInvariants()
})

t.test('a payment on time is accepted; paying the wrong supplier or amount is refused', async (t) => {
  const { engine } = world()
  const offerId = offerFor(engine)
  unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  const payer = lenderInput(1).sessionAddress
  t.match(engine.recordSupplierPayment({ ...payment(offerId, payer), amountAtomic: 999n }, T0), { ok: false, error: { code: 'payment_mismatch', class: 'invalid' } })
  t.match(engine.recordSupplierPayment({ ...payment(offerId, payer), supplier: lenderInput(9).address }, T0), { ok: false, error: { code: 'payment_mismatch' } })
  t.match(engine.recordSupplierPayment({ ...payment(offerId, payer), network: 'net-b' }, T0), { ok: false, error: { code: 'payment_mismatch' } })
  const advance = unwrap(engine.recordSupplierPayment(payment(offerId, payer), T0 + 29_999))
  t.equal(advance.principalAtomic, 1000n)
  t.equal(advance.feeAtomic, 10n)
  t.equal(advance.insuranceAtomic, 1n)
  t.equal(engine.getOffer(offerId), undefined, 'funded offer handed over and evicted')
  t.match(engine.recordSupplierPayment(payment(offerId, payer), T0), { ok: false, error: { code: 'offer_not_found', class: 'not_found' } })
  engine.checkInvariants()
})

t.test('stale offers expire in dispatch; the offer TTL is configurable', async (t) => {
  const { engine } = newEngine({ offerTtlMs: 1000 })
  registerBacking(engine)
  const offerId = offerFor(engine)
  t.equal(unwrap(engine.dispatch(T0 + 999)).expiredOffers.length, 0)
  const out = unwrap(engine.dispatch(T0 + 1000))
  t.equal(out.expiredOffers[0]?.offerId, offerId)
  t.equal(out.expiredOffers[0]?.endReason, 'stale')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n)
  engine.checkInvariants()
})

t.test('dispatch matches offers that were waiting for a lender', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  const offerId = offerFor(engine)
  t.equal(unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease, null)
  unwrap(engine.registerLender(lenderInput(1), T0 + 10))
  const out = unwrap(engine.dispatch(T0 + 20))
  t.equal(out.matches[0]?.lease?.lender, lenderInput(1).address)
  t.same(engine.liveLeasesOf(lenderInput(1).sessionAddress).map((l) => l.offerId), [offerId], 'live leases by session address')
  engine.checkInvariants()
})

t.test('reliability below the floor makes a lender inactive; uptime restores it', async (t) => {
  const { engine } = newEngine({ lenderReliabilityMinBps: 4000 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { reliabilityBps: 4400 }), T0))
  const offerId = offerFor(engine)
  unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  unwrap(dispatchAt(engine, T0 + 31_000))
  t.equal(engine.getLender(lenderInput(1).address)?.reliabilityBps, 3900)
  t.equal(unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0 + 30_001)).lease, null, 'inactive lender gets no lease')
  const up = unwrap(engine.recordLenderUptime({ lender: lenderInput(1).address, uptimeBps: 10_000 }, T0 + 40_000))
  t.equal(up.reliabilityBps, Math.floor((3900 * 9000 + 10_000 * 1000) / 10_000), 'moving average with weight 1000 bps')
  t.equal(unwrap(engine.matchOffer({ offerId: 'off_2', caller: BORROWER }, T0 + 40_001)).lease?.lender, lenderInput(1).address)
  engine.checkInvariants()
})

/** A SupplierPaid of the offer's lease as the chain follower delivers it. */
function paidEvent(offerKey: string, payer: `0x${string}`, n: number) {
  return {
    kind: 'supplier_paid' as const, proofKey: `${NET}:${hash(n)}:0`, offerKey, network: NET,
    txHash: hash(n), logIndex: 0, payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: 1000n,
  }
}
const observe = (engine: Engine, chainTimeMs: number, events: ReturnType<typeof paidEvent>[] = [], pastLease?: PastLeaseOf) =>
  unwrap(engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events }, chainTimeMs, pastLease))

t.test('chain time, not the clock: a lease lives until the chain is observed past its deadline; a payment seen first funds it', async (t) => {
  const { engine } = world()
  const offerId = offerFor(engine)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  t.equal(unwrap(engine.dispatch(T0 + 3_600_000)).expiredLeases.length, 0, 'an hour later by the clock, the chain not observed: not expired')
  t.equal(observe(engine, T0 + 30_999).expiredLeases.length, 0, 'the chain within the deadline second: not expired')
  // The batch that passes the deadline holds the payment mined by it: applied first, the lease is paid, not expired.
  const seen = observe(engine, T0 + 45_000, [paidEvent(engine.getOffer(offerId)!.offerKey, lease.payer, 1)])
  t.equal(seen.advances.length, 1, 'the observed payment opened the advance')
  t.match(seen.advances[0], { leaseId: lease.leaseId, lender: lease.lender, offerId, state: 'active' })
  t.same(seen.expiredLeases, [], 'and no lease expired')
  t.same(seen.appliedProofKeys, [`${NET}:${hash(1)}:0`])
  t.equal(engine.getLender(lease.lender)?.deployedAtomic, 1000n)
  t.equal(engine.getLender(lease.lender)?.leasesExpired, 0, 'no penalty')
  const again = observe(engine, T0 + 46_000, [paidEvent(seen.advances[0]!.advanceKey, lease.payer, 1)])
  t.same(again.advances, [], 'the same fact again opens nothing (its offer is funded)')

  const other = offerFor(engine, {}, T0 + 46_000)
  const second = unwrap(engine.matchOffer({ offerId: other, caller: BORROWER }, T0 + 46_000)).lease!
  const expired = observe(engine, second.expiresAtMs + 1000)
  t.equal(expired.expiredLeases.length, 1, 'no payment and the chain past the deadline: expired')
  const late = engine.recordSupplierPayment(payment(other, second.payer, 2), second.expiresAtMs + 5_001)
  t.equal(late.ok ? 'ok' : late.error.code, 'lease_expired', 'a report of a payment the chain never showed is rejected')
  engine.checkInvariants()
})

t.test('a payment under an ended lease (timed out by an older release) still funds the offer; the next lease is cancelled', async (t) => {
  const { engine } = world()
  const offerId = offerFor(engine)
  const first = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const out = unwrap(dispatchAt(engine, T0 + 31_000))
  const expiredView = out.expiredLeases[0]!
  const second = out.matches[0]!.lease!
  t.equal(second.lender, lenderInput(2).address, 'rematched to lender 2')
  const before = engine.getLender(first.lender)!
  const pastLease: PastLeaseOf = (leaseId) => (leaseId === expiredView.leaseId ? expiredView : undefined)
  const seen = observe(engine, T0 + 32_000, [paidEvent(engine.getOffer(offerId)!.offerKey, first.payer, 3)], pastLease)
  t.match(seen.advances, [{ lender: first.lender, leaseId: first.leaseId, feeAtomic: first.feeAtomic }], 'the advance is the payer\'s, on its lease\'s terms')
  t.equal(engine.getLease(second.leaseId), undefined, 'the second lease ended (cancelled: its authorization can no longer be used)')
  t.equal(engine.getLender(second.lender)?.reservedAtomic, 0n, 'its reservation released')
  t.equal(engine.getLender(first.lender)?.deployedAtomic, before.deployedAtomic + 1000n, 'the payer\'s principal is deployed')
  t.equal(engine.getLender(first.lender)?.availableAtomic, before.availableAtomic - 1000n)
  engine.checkInvariants()
})

// An unpaid lease that ends at or after its offer's expiry instant: the offer has nothing left but to expire, so it
// does in the lease's own event (LEASE_ENDED), on the clock and comparison of the expiry pass (the network's chain
// time, expired from the instant on), and ends as that pass would have ended it.

/** The offer's stored record in a command's changes. */
function offerRecord(changes: Change[], offerId: string) {
  const change = changes.find((c) => c.kind === 'offer' && c.id === offerId)
  return change as (Change & { record: { value: string; context: Record<string, unknown> } }) | undefined
}

t.test('a lease timed out past its offer\'s expiry: the offer expires in that one event, stale, its capacity given back', async (t) => {
  const { engine } = world({ offerTtlMs: 10_000 })
  const offerId = offerFor(engine)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const { reliabilityBps } = engine.getLender(lease.lender)!
  const observed = engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0 + 31_000, events: [] }, T0 + 31_005)
  const batch = unwrap(observed)
  t.same(batch.expiredLeases.map((l) => [l.leaseId, l.endReason]), [[lease.leaseId, 'timeout']])
  const stored = offerRecord(observed.ok ? observed.changes : [], offerId)
  t.ok(stored?.final, 'the offer\'s record is final in the batch\'s commit')
  t.equal(stored?.record.value, 'expired')
  t.match(stored?.record.context, { endReason: 'stale', endedAtMs: T0 + 31_005, currentLeaseId: null, excludedLenders: [lease.lender], leaseIds: [lease.leaseId] })
  t.same(storedHistory(stored?.record).map((e) => [e.from, e.to, e.event, e.atMs]), [
    [null, 'offered', 'created', T0], ['offered', 'leased', 'LEASE', T0], ['leased', 'expired', 'LEASE_ENDED', T0 + 31_005],
  ], 'one event ends it: no LEASE_ENDED back to waiting, no EXPIRE after')
  t.same(batch.expiredOffers?.map((o) => [o.offerId, o.state, o.endReason]), [[offerId, 'expired', 'stale']], 'the batch reports the offer expired')
  t.equal(engine.getOffer(offerId), undefined, 'evicted')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n, 'capacity released')
  t.equal(engine.getLender(lease.lender)?.reliabilityBps, reliabilityBps - 500, 'the lender\'s miss is counted as before')
  t.same(unwrap(engine.dispatch(T0 + 31_005)), { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] }, 'nothing left for dispatch')
  engine.checkInvariants()
})

t.test('the offer a lease time-out expires ends with the record the expiry pass gives a waiting offer', async (t) => {
  // Two offers expiring at the same instant: one leased (its lease times out at that chain time), one waiting (no
  // lender's ask fits its fee), expired by dispatch at the same instants.
  const { engine } = world({ offerTtlMs: 31_000 })
  const leased = offerFor(engine)
  unwrap(engine.matchOffer({ offerId: leased, caller: BORROWER }, T0))
  const waiting = offerFor(engine, { maximumFeeAtomic: 0n })
  t.equal(unwrap(engine.matchOffer({ offerId: waiting, caller: BORROWER }, T0)).lease, null)
  const dispatched = dispatchAt(engine, T0 + 31_000)
  const out = unwrap(dispatched)
  t.same(out.expiredOffers.map((o) => o.offerId), [leased, waiting], 'both expired: the leased one with its lease, then the waiting one')
  const [fromLease, fromPass] = out.expiredOffers
  const ending = (o: OfferView | undefined) => o && { state: o.state, endReason: o.endReason, endedAtMs: o.endedAtMs, currentLeaseId: o.currentLeaseId, keys: Object.keys(o) }
  t.same(ending(fromLease), ending(fromPass), 'the same final state, reason, time and fields')
  // What the live event stream publishes of each: the borrower gets the offer, expired, with the same fields.
  const published = (offerId: string) => {
    const change = offerRecord(dispatched.ok ? dispatched.changes : [], offerId) as Change
    const { offer } = eventBody('offer', eventRecord(change), 'at', { leaseAction: () => null }) as { offer: Record<string, unknown> }
    return { wallets: eventWallets(change), state: offer['state'], endReason: offer['endReason'], endedAt: offer['endedAt'], keys: Object.keys(offer) }
  }
  t.match(published(leased), { wallets: [BORROWER], state: 'expired', endReason: 'stale' })
  t.same(published(leased), published(waiting), 'the same event')
  engine.checkInvariants()
})

t.test('the boundary: a lease ending 1 ms before its offer\'s expiry leaves it waiting and rematched; at the instant, it expires', async (t) => {
  // The lease's deadline is T0 + 30 s: the chain at T0 + 31 s is past it. The offer's expiry is that instant, or 1 ms
  // after. The expiry pass's own boundary: a waiting offer at its expiry instant expires (test 'stale offers expire').
  const past = { network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0 + 31_000, events: [] }
  const before = world({ offerTtlMs: 31_001 }).engine
  const offerId = offerFor(before)
  const first = unwrap(before.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const waiting = before.observeChain(past, T0 + 31_000)
  t.equal(offerRecord(waiting.ok ? waiting.changes : [], offerId)?.record.value, 'offered', '1 ms before its expiry instant: waiting again')
  const out = unwrap(before.dispatch(T0 + 31_000))
  t.equal(out.matches[0]?.lease?.offerId, offerId, 'and rematched')
  t.not(out.matches[0]?.lease?.lender, first.lender, 'to another lender')
  before.checkInvariants()

  const at = world({ offerTtlMs: 31_000 }).engine
  const atId = offerFor(at)
  unwrap(at.matchOffer({ offerId: atId, caller: BORROWER }, T0))
  const ended = at.observeChain(past, T0 + 31_000)
  const record = offerRecord(ended.ok ? ended.changes : [], atId)
  t.match(record, { final: true, record: { value: 'expired', context: { endReason: 'stale' } } }, 'at the expiry instant: expired with the lease')
  t.same(unwrap(at.dispatch(T0 + 31_000)), { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] })
  at.checkInvariants()
})

t.test('the offer\'s clock is its network\'s chain time, not the service\'s: a lease ending past the expiry on the clock alone rematches', async (t) => {
  const { engine } = world({ offerTtlMs: 40_000 })
  const offerId = offerFor(engine)
  unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  // The chain is observed past the lease's deadline but before the offer's expiry; the service's clock is past both.
  const batch = unwrap(engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0 + 31_000, events: [] }, T0 + 60_000))
  t.equal(batch.expiredLeases.length, 1)
  t.same(batch.expiredOffers, [], 'the chain at T0 + 31 s: the offer has 9 s left on its clock')
  t.equal(engine.getOffer(offerId)?.state, 'offered')
  engine.checkInvariants()
})

t.test('restart between lease and time-out: a stored leased offer past its expiry expires with its lease after the restore', async (t) => {
  const { engine, wallets } = world({ offerTtlMs: 10_000 })
  const offerId = offerFor(engine)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const restored = new Engine({ offerTtlMs: 10_000 }, wallets, engine.snapshots())
  restored.checkInvariants()
  t.equal(restored.getOffer(offerId)?.state, 'leased', 'restored leased, past its expiry on any clock once the chain passes T0 + 10 s')
  const observed = restored.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0 + 31_000, events: [] }, T0 + 31_000)
  const stored = offerRecord(observed.ok ? observed.changes : [], offerId)
  t.same(storedHistory(stored?.record).map((e) => `${e.from}->${e.to} ${e.event}`), ['null->offered created', 'offered->leased LEASE', 'leased->expired LEASE_ENDED'], 'its history from before the restart, then the one event')
  t.match(stored?.record.context, { endReason: 'stale', excludedLenders: [lease.lender], currentLeaseId: null })
  t.same(unwrap(observed).expiredOffers?.map((o) => o.offerId), [offerId])
  t.equal(restored.getSource('src_1')?.committedAtomic, 0n)
  restored.checkInvariants()
})
