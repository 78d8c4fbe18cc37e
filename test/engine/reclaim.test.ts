// The engine's side of a job its client reclaimed on chain (JobReclaimed, applied by the chain follower's batch): the
// job ends failed with reason escrow_reclaimed, its waiting offers are declined and a leased one closes, the borrower
// is neither suspended nor penalised and keeps its other offers; the event's changes stay within what the follower's
// batch budget counts for it.
import t from 'tap'
import { jobKey } from '../../src/chain/ids.ts'
import { CHAIN_EVENT_CHANGES_MAX, chainEventWeight, jobReclaimedChangesMax } from '../../src/engine/chain-facts.ts'
import type { ChainEventFact } from '../../src/engine/engine.ts'
import type { Change, Engine, JobView, OfferView } from '../../src/engine/index.ts'
import { BORROWER, NET, T0, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, unwrap } from './fixtures/world.ts'

const OFFERS_MAX = 6

function reclaimed(jobId: string, n = 1): ChainEventFact {
  return { kind: 'job_reclaimed', proofKey: `${NET}:${hash(7000 + n)}:0`, jobKey: jobKey(jobId) }
}

function observe(engine: Engine, events: ChainEventFact[], network = NET) {
  return engine.observeChain({ network, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: T0, events }, T0)
}

function world() {
  const { engine } = newEngine({ liveOffersPerBorrowerMax: OFFERS_MAX })
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_rc', 1_000_000n)
  createJob(engine, 'job_other', 1_000_000n)
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
