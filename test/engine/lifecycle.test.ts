// Lifecycles end to end: repayment, job settlement, final actors handed over, rebuild from snapshots.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { Change } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, FakeWallets, NET, T0, applyChanges, canonical, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, registerBacking, seedSuppliers, unwrap } from './fixtures/world.ts'

t.test('repay: only the exact plan is accepted; liquidity, fees, reserve and reputation follow', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 250, reputationBps: 6000 }), T0))
  const advanceId = fundAdvance(engine, { amountAtomic: 10_000n, maximumFeeAtomic: 1000n })
  const plan = unwrap(engine.planRepayment(advanceId))
  t.equal(plan.amountAtomic, 10_000n + 250n - 25n)
  t.equal(plan.reserveAmountAtomic, 25n)
  const fact = { network: NET, txHash: hash(50), logIndex: 3, advanceId, lender: plan.lender, payer: BORROWER, amountAtomic: plan.amountAtomic, reserveAmountAtomic: plan.reserveAmountAtomic }
  t.match(engine.repayAdvance({ ...fact, amountAtomic: plan.amountAtomic - 1n }, T0), { ok: false, error: { code: 'repayment_amount_mismatch', class: 'invalid' } })
  const result = engine.repayAdvance(fact, T0 + 1)
  const receipt = unwrap(result)
  t.equal(receipt.lenderAmountAtomic, 10_225n)
  t.ok(result.ok && result.changes.some((c) => c.kind === 'advance' && c.final), 'repaid advance handed over as final')
  const lender = engine.getLender(lenderInput(1).address)!
  t.equal(lender.availableAtomic, 1_000_000n + 225n)
  t.equal(lender.deployedAtomic, 0n)
  t.equal(lender.reputationBps, 6050)
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 25n)
  t.equal(engine.getBorrower(BORROWER)?.advancesRepaid, 1)
  t.match(engine.repayAdvance(fact, T0 + 2), { ok: false, error: { code: 'advance_not_found' } })
  engine.checkInvariants()
})

t.test('complete a job: plan, then record the settlement transaction', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  createJob(engine, 'job_1', 10_000n)
  const a1 = fundAdvance(engine, { repaymentSource: 'job_1', amountAtomic: 3000n }, T0, 1)
  unwrap(engine.registerLender(lenderInput(3, { minFeeBps: 50, availableLiquidityAtomic: 2000n }), T0))
  const a2 = fundAdvance(engine, { repaymentSource: 'job_1', amountAtomic: 2000n }, T0, 2)
  t.equal(engine.getJob('job_1')?.state, 'active')
  const pending = offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 10n })
  t.match(engine.planJobSettlement({ jobId: 'job_1', caller: CLIENT }), { ok: false, error: { code: 'job_has_live_offers' } })
  unwrap(engine.dispatch(T0 + 10 * 60_000)) // the live lease times out and the offer goes stale
  unwrap(engine.dispatch(T0 + 20 * 60_000))
  t.equal(engine.getOffer(pending), undefined)
  const plan = unwrap(engine.planJobSettlement({ jobId: 'job_1', caller: CLIENT }))
  t.same(plan.advances.map((a) => [a.advanceId, a.amountAtomic, a.reserveAmountAtomic]), [[a1, 3000n + 30n - 3n, 3n], [a2, 2000n + 10n - 1n, 1n]])
  t.equal(plan.toLendersAtomic, 5036n)
  t.equal(plan.toReserveAtomic, 4n)
  t.equal(plan.toBorrowerAtomic, 10_000n - 5040n)
  const result = engine.completeJob({ jobId: 'job_1', caller: CLIENT, network: NET, txHash: hash(60) }, T0 + 20 * 60_000 + 1)
  unwrap(result)
  t.same(result.ok && result.changes.filter((c) => c.final).map((c) => `${c.kind}:${c.id}`).sort(), [`advance:${a1}`, `advance:${a2}`, 'job:job_1'])
  t.equal(engine.getJob('job_1'), undefined)
  engine.checkInvariants()
})

t.test('rebuilt from the changes it handed out, the engine behaves identically', async (t) => {
  const wallets = new FakeWallets()
  const engine = new Engine({}, wallets)
  const store = new Map<string, Change>()
  const run = (r: { ok: boolean; changes?: Change[] }) => { if (r.ok && r.changes) applyChanges(store, r.changes); return r }
  applyChanges(store, seedSuppliers(engine))
  run(engine.registerSource({ sourceId: 'src_1', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10n ** 7n, liquidationValueAtomic: 10n ** 7n, advanceRateBps: 10_000, evidenceId: 'e', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  for (let i = 1; i <= 4; i++) run(engine.registerLender(lenderInput(i, { minFeeBps: 100 * i }), T0))
  const job = engine.createJob({ jobId: 'job_1', client: BORROWER, borrower: BORROWER, network: NET, asset: 'USDC', receivableAtomic: 10_000n, dueAtMs: T0 + 10 ** 8, funding: { network: NET, txHash: hash(1), logIndex: 0 }, caller: BORROWER }, T0)
  run(job)
  const d = run(engine.requestCredit({ agent: BORROWER, network: NET, asset: 'USDC', productType: 'job', amountAtomic: 500n, purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: lenderInput(99).address, repaymentSource: 'job_1', maximumFeeAtomic: 100n, caller: BORROWER }, T0)) as ReturnType<Engine['requestCredit']>
  const offerId = unwrap(d).offer!.offerId
  run(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  run(engine.requestCredit({ agent: BORROWER, network: NET, asset: 'USDC', productType: 'a', amountAtomic: 700n, purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: lenderInput(99).address, repaymentSource: 'src_1', maximumFeeAtomic: 100n, caller: BORROWER }, T0))

  const live = [...store.values()].filter((c) => !c.final)
  t.equal(canonical(live.map((c) => [c.kind, c.id, c.record]).sort()), canonical(engine.snapshots().map((c) => [c.kind, c.id, c.record]).sort()), 'the changes handed out are exactly the live state')
  const copy = new Engine({}, wallets, store.values())
  copy.checkInvariants()
  const steps: [string, (e: Engine) => unknown][] = [
    ['dispatch after lease expiry', (e) => e.dispatch(T0 + 30_000)],
    ['match the waiting offer', (e) => e.matchOffer({ offerId: 'off_2', caller: BORROWER }, T0 + 30_001)],
    ['pay', (e) => e.recordSupplierPayment({ network: NET, txHash: hash(9), logIndex: 0, offerId, payer: lenderInput(2).sessionAddress, supplier: lenderInput(99).address, asset: 'USDC', amountAtomic: 500n, caller: lenderInput(2).address }, T0 + 30_002)],
    ['fail the job', (e) => e.failJob({ jobId: 'job_1', reason: 'x', caller: BORROWER }, T0 + 30_003)],
  ]
  for (const [name, step] of steps) {
    t.equal(canonical(step(copy)), canonical(step(engine)), name)
    t.equal(canonical(copy.snapshots()), canonical(engine.snapshots()), `${name}: identical snapshots`)
  }
  engine.checkInvariants()
})
