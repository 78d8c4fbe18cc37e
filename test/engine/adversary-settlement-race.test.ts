// A settlement mined while an offer on its job was leased (the completion plans with none leased, and a request and
// its match, or the ticker, lease one while settleJob waits for its confirmations): the contract refuses every payment
// on a settled job (JobNotOpen), so the lease can never be paid. The engine refused to record the mined settlement
// (409 job_has_leased_offer, "nothing recorded" while the escrow had paid the lenders), the job stayed open over no
// escrow, the lease expired at its lender's cost, and a borrower asking again before each expiry kept the completion
// refused for ever, each lease another lender's penalty (an adversary's finding, reading src/engine/jobs.ts). Now the
// settlement is recorded and the leased offer is closing: its lease ends at its deadline without a penalty.
import t from 'tap'
import type { Change } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, NET, T0, applyChanges, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, unwrap } from './fixtures/world.ts'

t.test('a settlement mined over a lease granted after its plan is recorded; the lease ends without a penalty', async (t) => {
  const { engine } = newEngine()
  const store = new Map<string, Change>()
  unwrap(engine.registerLender(lenderInput(1), T0))
  unwrap(engine.registerLender(lenderInput(2), T0))
  createJob(engine, 'job_1', 100_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_1', amountAtomic: 1000n }, T0, 1)
  const plan = unwrap(engine.planJobSettlement({ jobId: 'job_1', caller: CLIENT }))
  t.same(plan.advances.map((a) => a.advanceId), [advanceId])

  // While settleJob is on its way: another request on the job, matched at once.
  const offerId = offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 500n }, T0 + 1)
  const leased = engine.matchOffer({ offerId, caller: BORROWER }, T0 + 1)
  if (!leased.ok || !leased.value.lease) throw new Error('not leased')
  applyChanges(store, leased.changes)
  const lease = leased.value.lease
  const lender = engine.getLender(lease.lender)!
  const reliabilityBps = lender.reliabilityBps

  const completed = engine.completeJob({ jobId: 'job_1', caller: CLIENT, network: NET, txHash: hash(77) }, T0 + 2)
  t.ok(completed.ok, `the mined settlement is recorded: ${completed.ok ? '' : completed.error.code}`)
  if (completed.ok) applyChanges(store, completed.changes)
  t.equal(engine.getJob('job_1'), undefined, 'the job is completed (it left memory)')
  t.equal(engine.getOffer(offerId)?.state, 'closing', 'the leased offer is closing: its authorization can no longer be paid')
  engine.checkInvariants()

  const over = engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: lease.expiresAtMs + 1000, events: [] }, lease.expiresAtMs + 1000)
  unwrap(over)
  if (over.ok) applyChanges(store, over.changes)
  t.equal(engine.getOffer(offerId), undefined, 'the offer ended with its lease')
  t.equal(engine.getLender(lease.lender)!.reliabilityBps, reliabilityBps, 'no penalty: the lender could not have paid')
  t.equal(engine.getLender(lease.lender)!.reservedAtomic, 0n, 'its liquidity came back')
  engine.checkInvariants()
})
