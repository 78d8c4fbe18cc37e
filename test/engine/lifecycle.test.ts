// Lifecycles end to end: repayment, job settlement, final actors handed over, rebuild from snapshots.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { Change } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, FakeWallets, NET, T0, applyChanges, asWritten, canonical, createJob, fundAdvance, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, repaidFact, seedSuppliers, unwrap } from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

t.test('repay in full: liquidity, fees, reserve and reputation follow', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 250, reputationBps: 6000 }), T0))
  const advanceId = fundAdvance(engine, { amountAtomic: 10_000n, maximumFeeAtomic: 1000n })
  const plan = unwrap(engine.planRepayment(advanceId))
  t.equal(plan.amountAtomic, 10_000n + 250n - 25n)
  t.equal(plan.reserveAmountAtomic, 25n)
  const fact = repaidFact(engine, advanceId, hash(50), undefined, 3)
  t.match(engine.repayAdvance({ ...fact, lender: lenderInput(2).sessionAddress }, T0), { ok: false, error: { code: 'repayment_mismatch', class: 'invalid' } }, 'paid to another wallet')
  t.match(engine.repayAdvance({ ...fact, network: 'net-b' }, T0), { ok: false, error: { code: 'repayment_mismatch', class: 'invalid' } }, 'on another network')
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

t.test('repay of any amount: principal first, then the rest; each payment counted once, in chain order', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 250, reputationBps: 6000 }), T0))
  const lenderAddress = lenderInput(1).address
  const advanceId = fundAdvance(engine, { amountAtomic: 10_000n, maximumFeeAtomic: 1000n })
  // Owed: 10_225 to the lender (principal 10_000 + fee 250 - 25), 25 to the reserve.
  const principalOnly = repaidFact(engine, advanceId, hash(60), 10_000n)
  const rest = { ...repaidFact(engine, advanceId, hash(61)), amountAtomic: 225n, lenderOwedAtomic: 0n }
  t.match(engine.repayAdvance(rest, T0), { ok: false, error: { code: 'repayment_mismatch', class: 'conflict' } }, 'a later payment before the earlier one is counted')
  t.equal(engine.getAdvance(advanceId)?.lenderOwedAtomic, 10_225n, 'the refusal changed nothing')

  const first = engine.repayAdvance(principalOnly, T0 + 1)
  t.match(unwrap(first), { lenderAmountAtomic: 10_000n, reserveAmountAtomic: 0n, lenderOwedAtomic: 225n, reserveOwedAtomic: 25n, repaid: false })
  t.ok(first.ok && first.changes.some((c) => c.kind === 'advance' && !c.final), 'the advance stays live')
  t.match(engine.getAdvance(advanceId), { state: 'active', lenderOwedAtomic: 225n, reserveOwedAtomic: 25n, repayments: [{ txHash: hash(60), lenderAmountAtomic: 10_000n }] })
  t.match(unwrap(engine.planRepayment(advanceId)), { amountAtomic: 225n, reserveAmountAtomic: 25n }, 'the plan is what is still owed')
  let lender = engine.getLender(lenderAddress)!
  t.match(lender, { availableAtomic: 1_000_000n, deployedAtomic: 0n, feesEarnedAtomic: 0n, advancesRepaid: 0, reputationBps: 6048 }, 'the principal is back, no fee yet, no repayment counted; reputation by its share: floor(50 x 10_000 / 10_250)')
  t.same(engine.borrowerExposure(BORROWER, T0 + 1).outstanding, [{ network: NET, asset: 'USDC', outstandingAtomic: 250n }])
  t.equal(engine.creditState().reserves.length, 0, 'nothing for the reserve yet')
  engine.checkInvariants()
  t.same(unwrap(engine.repayAdvance(principalOnly, T0 + 2)), unwrap(first), 'the same fact again: the same receipt')
  t.equal(engine.getAdvance(advanceId)?.repayments.length, 1, 'counted once')

  const second = unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(61), 10_000n), T0 + 3))
  t.match(second, { lenderAmountAtomic: 225n, reserveAmountAtomic: 25n, lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, repaid: true }, 'an overpayment is capped by the contract: the fact shows what moved')
  t.equal(engine.getAdvance(advanceId), undefined, 'repaid: final')
  lender = engine.getLender(lenderAddress)!
  t.match(lender, { availableAtomic: 1_000_225n, deployedAtomic: 0n, feesEarnedAtomic: 225n, advancesRepaid: 1, reputationBps: 6050 })
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 25n)
  t.equal(engine.getBorrower(BORROWER)?.advancesRepaid, 1)
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n, 'the source is released once, when repaid')
  engine.checkInvariants()
})

t.test('a partially repaid advance on a job: settlement pays only what is still owed', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_p', 10_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_p', amountAtomic: 3000n })
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(70), 1000n), T0 + 1))
  const plan = unwrap(engine.planJobSettlement({ jobId: 'job_p', caller: CLIENT }))
  t.same(plan.advances.map((a) => [a.amountAtomic, a.reserveAmountAtomic]), [[3000n + 30n - 3n - 1000n, 3n]])
  t.equal(plan.toBorrowerAtomic, 10_000n - 2030n)
  const completed = engine.completeJob({ jobId: 'job_p', caller: CLIENT, network: NET, txHash: hash(71) }, T0 + 2)
  const done = unwrap(completed)
  // The settlement's repayment record as the advance stores it: every field, in RepaymentRecord's key order.
  const stored = completed.ok ? completed.changes.find((c) => c.kind === 'advance' && c.id === advanceId)?.record as { context: { repayments: object[] } } : undefined
  const settlement = stored?.context.repayments[1] as Record<string, unknown>
  t.same(Object.keys(settlement), ['kind', 'network', 'txHash', 'logIndex', 'payer', 'lenderAmountAtomic', 'reserveAmountAtomic', 'lenderOwedAfterAtomic', 'reserveOwedAfterAtomic'])
  t.match(settlement, { kind: 'job_settlement', network: NET, txHash: hash(71), logIndex: null, payer: null, lenderAmountAtomic: 2027n, reserveAmountAtomic: 3n, lenderOwedAfterAtomic: 0n, reserveOwedAfterAtomic: 0n })
  t.match(done.receipts, [{ lenderAmountAtomic: 2027n, reserveAmountAtomic: 3n, lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, repaid: true }])
  t.match(engine.getLender(lenderInput(1).address), { availableAtomic: 1_000_000n + 27n, deployedAtomic: 0n, feesEarnedAtomic: 27n })
  engine.checkInvariants()
})

t.test('a partially repaid advance liquidated: the plan starts from what is still owed, the lender\'s part first', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_l', 1000n)
  unwrap(engine.postCollateral({ jobId: 'job_l', caller: BORROWER, borrower: BORROWER, amountAtomic: 500n, proof: { network: NET, txHash: hash(80), logIndex: 0 } }, T0))
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_l', amountAtomic: 1000n, maximumFeeAtomic: 100n })
  // Owed 1009 + 1; 600 repaid leaves 409 + 1.
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(81), 600n), T0 + 1))
  unwrap(engine.failJob({ jobId: 'job_l', reason: 'not_delivered', caller: CLIENT }, T0 + 2))
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, T0 + 3))
  t.equal(plan.owedAtomic, 410n, 'what is still owed, not principal + fee')
  const receipt = unwrap(engine.liquidate({ advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(82), executed: { fromCollateralAtomic: 410n, fromBackingAtomic: 0n, fromReserveAtomic: 0n, shortfallAtomic: 0n } }, T0 + 4))
  t.equal(receipt.recoveredAtomic, 410n)
  const lender = engine.getLender(lenderInput(1).address)!
  t.match(lender, { availableAtomic: 1_000_000n + 9n, deployedAtomic: 0n, feesEarnedAtomic: 9n, lossesAtomic: 0n }, '600 + 409 back: the principal and the fee less the insurance share')
  t.equal(engine.creditState().reserves[0]?.balanceAtomic, 1n, "the collateral paid the reserve's share after the lender's part")
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
  // A waiting offer does not hold the job open: the completion declines it.
  const pending = offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 10n })
  const plan = unwrap(engine.planJobSettlement({ jobId: 'job_1', caller: CLIENT }))
  t.same(plan.advances.map((a) => [a.advanceId, a.amountAtomic, a.reserveAmountAtomic]), [[a1, 3000n + 30n - 3n, 3n], [a2, 2000n + 10n - 1n, 1n]])
  t.equal(plan.toLendersAtomic, 5036n)
  t.equal(plan.toReserveAtomic, 4n)
  t.equal(plan.toBorrowerAtomic, 10_000n - 5040n)
  const result = engine.completeJob({ jobId: 'job_1', caller: CLIENT, network: NET, txHash: hash(60) }, T0 + 1)
  unwrap(result)
  t.same(result.ok && result.changes.filter((c) => c.final).map((c) => `${c.kind}:${c.id}`).sort(), [`advance:${a1}`, `advance:${a2}`, 'job:job_1', `offer:${pending}`].sort())
  t.equal(engine.getJob('job_1'), undefined)
  t.equal(engine.getOffer(pending), undefined, 'the waiting offer ended with the job')
  engine.checkInvariants()
})

t.test('a leased offer holds its job\'s completion until its lease is paid or over: its authorization is payable on chain', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_1', 10_000n)
  const leased = offerFor(engine, { repaymentSource: 'job_1', amountAtomic: 10n })
  t.not(matchedLender(engine, leased), null)
  t.match(engine.planJobSettlement({ jobId: 'job_1', caller: CLIENT }), { ok: false, error: { code: 'job_has_leased_offer' } }, 'no settlement is planned, so none is sent')
  t.equal(engine.getJob('job_1')?.state, 'funded')
  engine.checkInvariants()
  // A settlement mined anyway (the lease granted after its plan) is recorded: test/engine/adversary-settlement-race.test.ts.
})

t.test('rebuilt from the changes it handed out, the engine behaves identically', async (t) => {
  const wallets = new FakeWallets()
  const engine = new Engine({}, wallets)
  const store = new Map<string, Change>()
  const run = (r: { ok: boolean; changes?: Change[] }) => { if (r.ok && r.changes) applyChanges(store, r.changes); return r }
  applyChanges(store, seedSuppliers(engine))
  run(engine.registerSource({ sourceId: 'src_1', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10n ** 7n, liquidationValueAtomic: 10n ** 7n, advanceRateBps: 10_000, evidenceId: 'e', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  for (let i = 1; i <= 4; i++) run(engine.registerLender(lenderInput(i, { minFeeBps: 100 * i }), T0))
  const job = engine.createJob({ jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: CLIENT, borrower: BORROWER, network: NET, asset: 'USDC', receivableAtomic: 10_000n, dueAtMs: T0 + 10 ** 8, funding: { network: NET, txHash: hash(1), logIndex: 0 }, caller: BORROWER }, T0)
  run(job)
  const d = run(engine.requestCredit({ agent: BORROWER, network: NET, asset: 'USDC', productType: 'job', amountAtomic: 500n, purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: lenderInput(99).address, repaymentSource: 'job_1', maximumFeeAtomic: 100n, caller: BORROWER }, T0)) as ReturnType<Engine['requestCredit']>
  const offerId = unwrap(d).offer!.offerId
  run(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  run(engine.requestCredit({ agent: BORROWER, network: NET, asset: 'USDC', productType: 'a', amountAtomic: 700n, purpose: 'p', supplier: 's', supplierDomain: 'd', supplierAddress: lenderInput(99).address, repaymentSource: 'src_1', maximumFeeAtomic: 100n, caller: BORROWER }, T0))

  const live = [...store.values()].filter((c) => !c.final)
  t.equal(canonical(asWritten(live).sort()), canonical(asWritten(engine.snapshots()).sort()), 'the changes handed out are exactly the live state, but for what the restore derives')
  const copy = new Engine({}, wallets, store.values())
  copy.checkInvariants()
  t.equal(canonical(copy.snapshots()), canonical(engine.snapshots()), 'restored from them: the live state')
  const steps: [string, (e: Engine) => unknown][] = [
    ['dispatch after lease expiry', (e) => e.dispatch(T0 + 30_000)],
    ['match the waiting offer', (e) => e.matchOffer({ offerId: 'off_2', caller: BORROWER }, T0 + 30_001)],
    ['pay', (e) => e.recordSupplierPayment({ network: NET, txHash: hash(9), logIndex: 0, offerId, payer: lenderInput(2).sessionAddress, supplier: lenderInput(99).address, asset: 'USDC', amountAtomic: 500n, caller: lenderInput(2).address }, T0 + 30_002)],
    ['fail the job', (e) => e.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: BORROWER }, T0 + 30_003)],
  ]
  for (const [name, step] of steps) {
    t.equal(canonical(step(copy)), canonical(step(engine)), name)
    t.equal(canonical(copy.snapshots()), canonical(engine.snapshots()), `${name}: identical snapshots`)
  }
  engine.checkInvariants()
})
