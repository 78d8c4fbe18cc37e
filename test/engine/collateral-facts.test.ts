// Collateral is what the contract holds (outsider's finding): a CollateralPosted the chain follower
// sees counts for the job whether or not its borrower reports it, also on a job whose failure the service recorded
// before the follower reached the posting, and after a restart; a posting mined before the job was registered comes
// with the registration. Nothing else (another job, another borrower, another asset) moves a job's collateral.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { ChainEventFact } from '../../src/engine/engine.ts'
import type { Change } from '../../src/engine/index.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'
import {
  ASSET, BORROWER, CLIENT, NET, T0, addr, applyChanges, createJob, fundAdvance, hash, lenderInput, newEngine, unwrap,
} from './fixtures/world.ts'

function posted(jobId: string, amountAtomic: bigint, n: number, over: Partial<{ borrower: `0x${string}`; asset: string }> = {}): ChainEventFact {
  return {
    kind: 'collateral_posted', jobKey: legacyJobKey(jobId), asset: over.asset ?? ASSET, proofKey: `${NET}:${hash(n)}:0`,
    borrower: over.borrower ?? BORROWER, amountAtomic, proof: { network: NET, txHash: hash(n), logIndex: 0 },
  }
}

function observe(engine: Engine, events: ChainEventFact[], store?: Map<string, Change>) {
  const r = engine.observeChain({ network: NET, toBlock: 10n, toBlockHash: '0x', toBlockTimeMs: T0, events }, T0)
  if (store !== undefined && r.ok) applyChanges(store, r.changes)
  return unwrap(r)
}

t.test('the follower applies a CollateralPosted nobody reported to its live job', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 1000n)
  const seen = observe(engine, [posted('job_1', 300n, 1)])
  t.match(seen.collateral, [{ proofKey: `${NET}:${hash(1)}:0`, position: { jobId: 'job_1', amountAtomic: 300n, totalCollateralAtomic: 300n } }])
  t.equal(engine.getJob('job_1')?.collateralAtomic, 300n, 'the job holds what the contract holds')
  t.same(seen.ignored, [])
  // A job created after the first lookup is found by its key; one that ended is not.
  createJob(engine, 'job_2', 1000n)
  unwrap(engine.completeJob({ jobId: 'job_1', caller: CLIENT, network: NET, txHash: hash(2) }, T0))
  const later = observe(engine, [posted('job_2', 5n, 3), posted('job_1', 5n, 4)])
  t.same(later.collateral.map((c) => c.position.jobId), ['job_2'])
  t.same(later.ignored.map((i) => i.reason), ['job_not_live'])
  engine.checkInvariants()
})

t.test('a posting the service does not hold a job for, by another wallet or in another asset, changes nothing', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 1000n)
  const seen = observe(engine, [
    posted('job_unknown', 5n, 1),
    posted('job_1', 5n, 2, { borrower: addr(0xee) }),
    posted('job_1', 5n, 3, { asset: 'DAI' }),
  ])
  t.same(seen.collateral, [])
  t.same(seen.ignored.map((i) => i.reason), ['job_not_live', 'not_job_borrower', 'asset_mismatch'])
  t.equal(engine.getJob('job_1')?.collateralAtomic, 0n)
})

t.test('a posting of the same job key on another network (anyone may fund that key there) moves nothing', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 1000n)
  const elsewhere = unwrap(engine.observeChain({ network: 'other-net', toBlock: 10n, toBlockHash: '0x', toBlockTimeMs: T0, events: [posted('job_1', 500n, 1)] }, T0))
  t.same(elsewhere.collateral, [])
  t.same(elsewhere.ignored.map((i) => i.reason), ['job_not_live'])
  t.equal(engine.getJob('job_1')?.collateralAtomic, 0n, 'only the job\'s own network\'s contract holds its collateral')
})

t.test('a posting mined before the failure counts when the follower learns of it after the failure: the recovery takes it', async (t) => {
  const { engine } = newEngine({ operators: [addr(0x0e)] })
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_1', 100_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_1', amountAtomic: 1000n })
  unwrap(engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, T0))
  t.equal(engine.getJob('job_1')?.state, 'defaulted')
  observe(engine, [posted('job_1', 400n, 1)])
  t.equal(engine.getJob('job_1')?.collateralAtomic, 400n)
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: addr(0x0e) }, T0))
  t.match(plan.steps.find((s) => s.step === 'collateral'), { amountAtomic: 400n }, 'the liquidation recovers from it')
  engine.checkInvariants()
})

t.test('after a restart the follower still finds the job by its key', async (t) => {
  const { engine, wallets } = newEngine()
  const store = new Map<string, Change>()
  const created = engine.createJob({
    jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 1000n, dueAtMs: T0 + 86_400_000,
    funding: { network: NET, txHash: hash(9000), logIndex: 0 }, caller: CLIENT,
  }, T0)
  if (created.ok) applyChanges(store, created.changes)
  const restarted = new Engine({}, wallets, store.values())
  observe(restarted, [posted('job_1', 70n, 1)])
  t.equal(restarted.getJob('job_1')?.collateralAtomic, 70n)
})

t.test('a job registered after its borrower posted collateral holds it from its creation', async (t) => {
  const { engine } = newEngine()
  const input = {
    jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 1000n, dueAtMs: T0 + 86_400_000,
    funding: { network: NET, txHash: hash(9000), logIndex: 0 }, caller: CLIENT,
  }
  const byStranger = engine.createJob({ ...input, postedCollateral: [{ borrower: addr(0xee), amountAtomic: 5n, proof: { network: NET, txHash: hash(1), logIndex: 0 } }] }, T0)
  t.match(byStranger, { ok: false, error: { code: 'not_job_borrower' } }, 'only the job\'s borrower posts its collateral')
  t.equal(engine.getJob('job_1'), undefined, 'nothing created')
  const job = unwrap(engine.createJob({
    ...input,
    postedCollateral: [
      { borrower: BORROWER, amountAtomic: 20n, proof: { network: NET, txHash: hash(1), logIndex: 0 } },
      { borrower: BORROWER, amountAtomic: 30n, proof: { network: NET, txHash: hash(2), logIndex: 0 } },
    ],
  }, T0))
  t.equal(job.collateralAtomic, 50n)
  // A later report of one of them answers the same position and changes nothing.
  const reported = engine.reportedCollateral({ jobId: 'job_1', caller: BORROWER, borrower: BORROWER, amountAtomic: 20n, proof: { network: NET, txHash: hash(1), logIndex: 0 } })
  t.match(reported, { ok: true, value: { amountAtomic: 20n, totalCollateralAtomic: 50n }, changes: [] })
  t.match(engine.reportedCollateral({ jobId: 'job_1', caller: CLIENT, borrower: BORROWER, amountAtomic: 20n, proof: { network: NET, txHash: hash(1), logIndex: 0 } }), { ok: false, error: { class: 'forbidden' } })
})
