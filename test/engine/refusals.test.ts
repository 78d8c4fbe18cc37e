// The machines decide: a command sends its event, and a refusal comes back as a conflict with the machine's code and
// nothing changed; an event the engine expects to be taken and is not stops the command loudly instead of vanishing.
import t from 'tap'
import { BORROWER, CLIENT, NET, T0, canonical, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

/** job_1 failed with an advance open on it: defaulted. */
function defaultedJob() {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_1', 10_000n)
  fundAdvance(engine, { repaymentSource: 'job_1' })
  unwrap(engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  return engine
}

t.test('completing a defaulted job: job_not_open from the job machine, nothing changed', async (t) => {
  const engine = defaultedJob()
  t.equal(engine.getJob('job_1')?.state, 'defaulted')
  const before = canonical(engine.snapshots())
  const refused = engine.completeJob({ jobId: 'job_1', caller: CLIENT, network: NET, txHash: hash(7) }, T0 + 2)
  t.match(refused, { ok: false, error: { code: 'job_not_open', class: 'conflict' } })
  t.equal(canonical(engine.snapshots()), before, 'nothing changed')
})

t.test('collateral on a defaulted job counts: the contract took it while the job was open there, before its failure', async (t) => {
  const engine = defaultedJob()
  const posted = unwrap(engine.postCollateral({ jobId: 'job_1', caller: BORROWER, borrower: BORROWER, amountAtomic: 5n, proof: { network: NET, txHash: hash(7), logIndex: 0 } }, T0 + 2))
  t.equal(posted.totalCollateralAtomic, 5n)
  t.equal(engine.getJob('job_1')?.state, 'defaulted')
})

t.test('a stale offer is not leased even with lenders waiting: the offer machine expires it as stale', async (t) => {
  const { engine, wallets } = newEngine({ offerTtlMs: 1000 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  wallets.set(lenderInput(1).sessionAddress, 0n) // lender 1 would get a lease refused at once, lender 2 the lease
  const offerId = offerFor(engine)
  const out = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 1000))
  t.same({ lease: out.lease, refused: out.refusedLeases.length, expired: out.offerExpired, reason: out.offer.endReason }, { lease: null, refused: 0, expired: true, reason: 'stale' })
  t.equal(engine.getLender(lenderInput(2).address)?.leasesGranted, 0, 'no lease granted')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n, 'its capacity released')
  engine.checkInvariants()
})

t.test('failing a job releases its waiting offers\' capacity in the job\'s final record', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 10_000n)
  offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 700n, maximumFeeAtomic: 100n })
  t.equal(engine.getJob('job_1')?.committedAtomic, 800n, 'the amount and its maximum fee')
  const failed = engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, T0 + 1)
  const record = failed.ok ? failed.changes.find((c) => c.kind === 'job' && c.final)?.record : undefined
  t.match(record, { value: 'failed', context: { committedAtomic: 0n, failureReason: 'not_delivered' } })
})

t.test('liquidating an active advance: refused until the second after its due time\'s (the contract\'s block.timestamp > dueAt); then the advance defaults as past due', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const advanceId = fundAdvance(engine)
  const early = engine.liquidate({
 advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(3) }, T0 + 3_600_999)
  t.match(early, { ok: false, error: { code: 'advance_not_in_default', class: 'conflict' } })
  t.equal(engine.getBorrower(BORROWER)?.advancesDefaulted, 0, 'nothing changed')
  const done = engine.liquidate({
 advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(3) }, T0 + 3_601_000)
  const record = done.ok ? done.changes.find((c) => c.kind === 'advance')?.record : undefined
  // The backing covers the lender's claim only (as the contract's liquidate): the reserve's share is a shortfall.
  t.match(record, { value: 'shortfall', context: { defaultReason: 'past_due', defaultedAtMs: T0 + 3_601_000 } })
  t.equal(engine.getBorrower(BORROWER)?.advancesDefaulted, 1, 'the default counts')
  t.equal(engine.getLender(lenderInput(1).address)?.advancesDefaulted, 1)
  engine.checkInvariants()
})

t.test('an event the engine expects to be taken and is not is an invariant error, never dropped', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const lease = unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0)).lease!
  // a schedule that disagrees with the lease machine: the observed chain time would time the lease out one ms early
  // The schedule lives in the engine's state (src/engine/state.ts), one per network.
  type Schedule = { delete(id: string): boolean; push(d: { id: string; seq: number; atMs: number }): void }
  const internals = (engine as unknown as { state: { leaseExpiries: Map<string, Schedule> } }).state
  const schedule = internals.leaseExpiries.get(lease.network) as Schedule
  schedule.delete(lease.leaseId)
  schedule.push({ id: lease.leaseId, seq: 1, atMs: lease.expiresAtMs - 1 })
  const batch = { network: lease.network, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: lease.expiresAtMs - 1, events: [] }
  t.throws(() => engine.observeChain(batch, lease.expiresAtMs - 1), /invariant: lease lse_1 refused TIME_OUT in state leased \(lease_not_due\)/)
})
