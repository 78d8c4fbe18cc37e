// Offers withdrawn while leased (issue 9, design-engine-9-10.md: "leases are never cancelled while their authorization
// can still be used"): the offer is `closing`, its lease stays payable until its deadline on chain time. Paid in time,
// the offer is funded and the advance is the failed job's, defaulted; over unpaid, it ends declined with no penalty.
import t from 'tap'
import { jobViewFromSnapshot, offerViewFromSnapshot, type Engine } from '../../src/engine/index.ts'
import type { Change, LeaseView } from '../../src/engine/index.ts'
import {
  ASSET, BORROWER, CLIENT, NET, SUPPLIER, T0, applyChanges, createJob, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap,
} from './fixtures/world.ts'

const LENDER = lenderInput(1).address

function world() {
  const { engine } = newEngine()
  const store = new Map<string, Change>()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_1', 100_000n)
  const offerId = offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 1000n })
  const leased = engine.matchOffer({ offerId, caller: BORROWER }, T0)
  if (!leased.ok || !leased.value.lease) throw new Error('not leased')
  applyChanges(store, leased.changes)
  return { engine, store, offerId, lease: leased.value.lease }
}

/** The follower's batch: chain time `chainTimeMs`, and the SupplierPaid of `lease` when given. */
function observe(engine: Engine, store: Map<string, Change>, chainTimeMs: number, paid?: { lease: LeaseView; offerKey: string; n: number }) {
  const events = paid === undefined ? [] : [{
    kind: 'supplier_paid' as const, proofKey: `${NET}:${hash(paid.n)}:0`, offerKey: paid.offerKey, network: NET,
    txHash: hash(paid.n), logIndex: 0, payer: paid.lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: paid.lease.amountAtomic,
  }]
  const r = engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events }, chainTimeMs)
  const value = unwrap(r)
  if (r.ok) applyChanges(store, r.changes)
  return value
}

function fail(engine: Engine, store: Map<string, Change>, nowMs: number) {
  const r = engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, nowMs)
  const value = unwrap(r)
  if (r.ok) applyChanges(store, r.changes)
  return value
}

t.test('a job failed under a lease: the offer is closing until the chain passes the deadline, then declined without a penalty', async (t) => {
  const { engine, store, offerId, lease } = world()
  const failed = fail(engine, store, T0 + 1)
  t.same(failed.declinedOfferIds, [offerId], 'the offer is withdrawn')
  t.equal(engine.getOffer(offerId)?.state, 'closing', 'not declined: its authorization is still payable')
  t.equal(engine.getLease(lease.leaseId)?.state, 'leased', 'the lease is not cancelled')
  t.equal(engine.getJob('job_1')?.state, 'defaulted', 'the failed job is not final while an offer on it is closing')
  t.equal(engine.getLender(LENDER)?.reservedAtomic, 1000n, "the lease's liquidity stays reserved")

  const refused = engine.matchOffer({ offerId, caller: BORROWER }, T0 + 2)
  t.equal(refused.ok ? 'matched' : refused.error.code, 'offer_not_offered', 'a closing offer is never leased again')
  t.same(unwrap(engine.dispatch(T0 + 3_600_000)).matches, [], 'nor rematched by dispatch')
  t.equal(observe(engine, store, lease.expiresAtMs).expiredLeases.length, 0, 'the chain within the deadline second: still payable')
  engine.checkInvariants()

  const reliabilityBps = engine.getLender(LENDER)!.reliabilityBps
  const over = observe(engine, store, lease.expiresAtMs + 1000)
  t.match(over.expiredLeases, [{ leaseId: lease.leaseId, state: 'expired', endReason: 'offer_closed' }], 'the lease ends with the deadline, as withdrawn')
  const offer = offerViewFromSnapshot(store.get(`offer:${offerId}`)!.record)
  t.match(offer, { state: 'declined', endReason: 'borrower_suspended', currentLeaseId: null })
  t.equal(jobViewFromSnapshot(store.get('job:job_1')!.record).state, 'failed', 'the job is final once nothing on it is live')
  t.equal(engine.getJob('job_1'), undefined)
  t.match(engine.getLender(LENDER), { reservedAtomic: 0n, availableAtomic: 1_000_000n, leasesExpired: 0, reliabilityBps },
    'the liquidity is back and the lender is not penalised')
  engine.checkInvariants()
})

t.test('a closing offer paid before the deadline (seen by the follower): funded, and the advance is the failed job\'s, defaulted', async (t) => {
  const { engine, store, offerId, lease } = world()
  fail(engine, store, T0 + 1)
  const seen = observe(engine, store, lease.expiresAtMs, { lease, offerKey: engine.getOffer(offerId)!.offerKey, n: 7 })
  t.same(seen.ignored, [], 'the payment is not ignored')
  t.equal(seen.advances.length, 1)
  const advance = seen.advances[0]!
  t.match(advance, { offerId, leaseId: lease.leaseId, lender: LENDER, state: 'defaulted', principalAtomic: 1000n, source: { kind: 'job', id: 'job_1' } })
  t.match(offerViewFromSnapshot(store.get(`offer:${offerId}`)!.record), { state: 'funded', advanceId: advance.advanceId, endReason: null })
  t.match(engine.getJob('job_1'), { state: 'defaulted', advanceIds: [advance.advanceId] }, 'the job waits for the recovery of this advance')
  t.match(engine.getLender(LENDER), { reservedAtomic: 0n, deployedAtomic: 1000n, leasesExpired: 0 })
  engine.checkInvariants()

  // Recovered as the job's other advances are: liquidation is open at once (the job failed), and the job then ends.
  const plan = unwrap(engine.planLiquidation({ advanceId: advance.advanceId, caller: LENDER }, T0 + 2))
  t.equal(plan.owedAtomic, advance.principalAtomic + advance.feeAtomic)
  const l = engine.liquidate({ advanceId: advance.advanceId, caller: LENDER, network: NET, txHash: hash(8) }, T0 + 3)
  unwrap(l)
  if (l.ok) applyChanges(store, l.changes)
  // Nothing backs it (no collateral, the escrow went back at failJob): what the reserve did not cover stays owed.
  t.match(engine.getAdvance(advance.advanceId), { state: 'shortfall' }, 'liquidated, and live as a shortfall until repaid')
  t.equal(jobViewFromSnapshot(store.get('job:job_1')!.record).state, 'failed')
  engine.checkInvariants()
})

t.test('a closing offer paid and reported by its lender: the same advance, and the follower\'s copy changes nothing', async (t) => {
  const { engine, store, offerId, lease } = world()
  fail(engine, store, T0 + 1)
  const offerKey = engine.getOffer(offerId)!.offerKey
  const reported = unwrap(engine.recordSupplierPayment({
    network: NET, txHash: hash(9), logIndex: 0, offerId, payer: lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: 1000n, caller: LENDER,
  }, T0 + 2))
  t.equal(reported.state, 'defaulted')
  const again = observe(engine, store, lease.expiresAtMs + 5000, { lease, offerKey, n: 9 })
  t.same(again.advances, [])
  t.same(again.ignored.map((i) => i.reason), ['offer_not_live'])
  engine.checkInvariants()
})

t.test("a suspended borrower's leased offer on a backing source: closing, and a payment in time opens an ordinary advance", async (t) => {
  const { engine } = newEngine()
  const store = new Map<string, Change>()
  unwrap(engine.registerLender(lenderInput(1), T0))
  registerBacking(engine)
  createJob(engine, 'job_1', 100_000n)
  const offerId = offerFor(engine, { amountAtomic: 1000n })
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  fail(engine, store, T0 + 1)
  t.equal(engine.getOffer(offerId)?.state, 'closing')
  t.equal(engine.getJob('job_1'), undefined, 'the failed job had nothing live: it is final')
  const seen = observe(engine, store, lease.expiresAtMs, { lease, offerKey: engine.getOffer(offerId)!.offerKey, n: 11 })
  t.match(seen.advances, [{ offerId, state: 'active', source: { kind: 'backing', id: 'src_1' } }], 'the backing source still backs it')
  engine.checkInvariants()
})
