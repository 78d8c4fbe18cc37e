// The engine's side of a job its client reclaimed on chain (JobReclaimed, applied by the chain follower's batch): the
// job ends failed with reason escrow_reclaimed, its waiting offers are declined and a leased one closes, the borrower
// is neither suspended nor penalised and keeps its other offers; the event's changes stay within what the follower's
// batch budget counts for it.
import t from 'tap'
import { legacyJobKey } from '../../src/chain/ids.ts'
import { CHAIN_EVENT_CHANGES_MAX, chainEventWeight, jobReclaimedChangesMax } from '../../src/engine/chain-facts.ts'
import type { ChainEventFact } from '../../src/engine/engine.ts'
import { jobViewFromSnapshot, type Change, type Engine, type JobView, type OfferView } from '../../src/engine/index.ts'
import { ASSET, BORROWER, NET, T0, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, unwrap } from './fixtures/world.ts'

const OFFERS_MAX = 6

const RECEIVABLE = 1_000_000n

/** The JobReclaimed of a job: by default it gave back the receivable and no collateral, as the world's jobs hold. */
function reclaimed(jobId: string, n = 1, amounts: { escrowRefundedAtomic?: bigint; collateralReleasedAtomic?: bigint } = {}): ChainEventFact {
  return {
    kind: 'job_reclaimed', proofKey: `${NET}:${hash(7000 + n)}:0`, jobKey: legacyJobKey(jobId),
    escrowRefundedAtomic: amounts.escrowRefundedAtomic ?? RECEIVABLE, collateralReleasedAtomic: amounts.collateralReleasedAtomic ?? 0n,
  }
}

function posted(jobId: string, amountAtomic: bigint, n: number): ChainEventFact {
  return {
    kind: 'collateral_posted', jobKey: legacyJobKey(jobId), asset: ASSET, proofKey: `${NET}:${hash(8000 + n)}:0`,
    borrower: BORROWER, amountAtomic, proof: { network: NET, txHash: hash(8000 + n), logIndex: 0 },
  }
}

function observe(engine: Engine, events: ChainEventFact[], network = NET) {
  return engine.observeChain({ network, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0, events }, T0)
}

function world() {
  const { engine } = newEngine({ liveOffersPerBorrowerMax: OFFERS_MAX })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_rc', RECEIVABLE)
  createJob(engine, 'job_other', RECEIVABLE)
  return engine
}

t.test('a JobReclaimed fails its job (escrow_reclaimed); offers declined or closing; nobody penalised', async (t) => {
  const engine = world()
  const leased = offerFor(engine, { repaymentSource: 'job_rc' })
  t.ok(unwrap(engine.matchOffer({ offerId: leased, caller: BORROWER }, T0)).lease, 'one offer is leased')
  const waiting = offerFor(engine, { repaymentSource: 'job_rc', maximumFeeAtomic: 1n })
  const elsewhere = offerFor(engine, { repaymentSource: 'job_other', maximumFeeAtomic: 1n })
  const borrowerBefore = engine.getBorrower(BORROWER)

  const outcome = unwrap(observe(engine, [reclaimed('job_rc')]))
  t.same(outcome.reclaimed.map((r) => [r.jobId, [...r.declinedOfferIds].sort()]), [['job_rc', [leased, waiting].sort()]])
  const job = engine.getJob('job_rc') as JobView
  t.match(job, { state: 'defaulted', failureReason: 'escrow_reclaimed' }, 'failed; defaulted while its leased offer closes')
  t.match(engine.getOffer(leased), { state: 'closing', endReason: 'source_closed' })
  t.equal(engine.getOffer(waiting), undefined, 'the waiting offer ended (declined)')
  t.match(engine.getOffer(elsewhere) as OfferView, { state: 'offered' }, 'the borrower\'s offer on another job stays')
  t.same(engine.getBorrower(BORROWER), borrowerBefore, 'the borrower is neither suspended nor penalised')
  engine.checkInvariants()

  const again = unwrap(observe(engine, [reclaimed('job_rc', 2)]))
  t.same(again.reclaimed, [], 'a second JobReclaimed of the job changes nothing')
})

t.test('a JobReclaimed of another network, of no live job, or of a job with an advance is not applied', async (t) => {
  const engine = world()
  const other = unwrap(observe(engine, [reclaimed('job_rc')], 'net-b'))
  t.same([other.reclaimed, other.ignored.map((i) => i.reason)], [[], ['job_not_live']], 'the same key funded on another network')
  t.match(engine.getJob('job_rc'), { state: 'funded' })
  t.same(unwrap(observe(engine, [reclaimed('job_unknown')])).ignored.map((i) => i.reason), ['job_not_live'])
  // The contract refuses a reclaim once an advance was paid on the job: such an event would be a gap for reconciliation.
  fundAdvance(engine, { repaymentSource: 'job_rc' })
  t.same(unwrap(observe(engine, [reclaimed('job_rc')])).ignored.map((i) => i.reason), ['job_has_advances'])
  t.match(engine.getJob('job_rc'), { state: 'active', failureReason: null })
})

t.test('a JobReclaimed makes at most jobReclaimedChangesMax changes, which its batch weight covers', async (t) => {
  const engine = world()
  for (let i = 0; i < OFFERS_MAX; i++) offerFor(engine, { repaymentSource: 'job_rc', maximumFeeAtomic: 1n })
  const result = observe(engine, [reclaimed('job_rc')])
  const changes = (result as { changes: Change[] }).changes.length
  t.equal(changes, 1 + OFFERS_MAX, 'the job and each of its offers')
  const config = { liveOffersPerBorrowerMax: OFFERS_MAX }
  t.equal(jobReclaimedChangesMax(config), changes)
  t.ok(chainEventWeight(config, 'JobReclaimed') * CHAIN_EVENT_CHANGES_MAX >= changes, 'the follower counts it as enough events')
  t.equal(chainEventWeight(config, 'SupplierPaid'), 1, 'any other event counts once')
})

t.test('a JobReclaimed whose amounts are not what the job holds is not applied (reclaim_mismatch)', async (t) => {
  const engine = world()
  unwrap(observe(engine, [posted('job_rc', 300n, 1)]))
  const mismatches = [
    { escrowRefundedAtomic: RECEIVABLE - 1n, collateralReleasedAtomic: 300n },
    { escrowRefundedAtomic: RECEIVABLE + 1n, collateralReleasedAtomic: 300n },
    // Less collateral than the job counted: the service counted a posting the contract never held.
    { escrowRefundedAtomic: RECEIVABLE, collateralReleasedAtomic: 299n },
  ]
  for (const [i, amounts] of mismatches.entries()) {
    const outcome = unwrap(observe(engine, [reclaimed('job_rc', i + 1, amounts)]))
    t.same([outcome.reclaimed, outcome.ignored.map((r) => r.reason)], [[], ['reclaim_mismatch']], JSON.stringify(amounts, (_, v) => typeof v === 'bigint' ? v.toString() : v))
    t.match(engine.getJob('job_rc'), { state: 'funded', failureReason: null, collateralAtomic: 300n }, 'the job is as it was')
  }
  const exact = unwrap(observe(engine, [reclaimed('job_rc', 9, { collateralReleasedAtomic: 300n })]))
  t.same(exact.reclaimed.map((r) => [r.jobId, r.uncountedCollateralAtomic]), [['job_rc', 0n]], 'the job\'s own amounts: applied')
  engine.checkInvariants()
})

t.test('collateral the contract released beyond what the job counted is counted on the job by its reclaim', async (t) => {
  // A job registered under a release that did not read postings made before its registration: the contract holds
  // 500 of collateral, the job counts the 200 posted after.
  const engine = world()
  unwrap(observe(engine, [posted('job_rc', 200n, 1)]))
  const result = observe(engine, [reclaimed('job_rc', 1, { collateralReleasedAtomic: 500n })])
  const outcome = unwrap(result)
  t.same(outcome.reclaimed.map((r) => [r.jobId, r.uncountedCollateralAtomic]), [['job_rc', 300n]], 'the difference, said')
  // Final at once (no leased offer): the job leaves memory, its last snapshot is in the command's changes.
  const change = (result as { changes: Change[] }).changes.find((c) => c.kind === 'job' && c.id === 'job_rc') as Change
  t.match(jobViewFromSnapshot(change.record), { state: 'failed', failureReason: 'escrow_reclaimed', collateralAtomic: 500n }, 'what the contract released is what the job counts')
  engine.checkInvariants()
})
