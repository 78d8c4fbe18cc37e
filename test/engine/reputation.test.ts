// Reputation from the service's own observations (issue 13): each event's change as the README's table says, through
// the engine. Repayments earn in proportion (a split repayment never earns more than one payment), defaults and
// shortfalls cost the borrower, uptime is the measured share of the lender's last leases paid in time, and the book
// order follows reputation after the ask.
import t from 'tap'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import { repaymentShareBps } from '../../src/engine/reputation.ts'
import { resolveConfig } from '../../src/engine/config.ts'
import type { Engine } from '../../src/engine/index.ts'
import { ASSET, BORROWER, CLIENT, NET, T0, createJob, dispatchAt, fundAdvance, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, repaidFact, unwrap } from './fixtures/world.ts'

const L1 = lenderInput(1).address
const L2 = lenderInput(2).address

/** One lender, one advance (of 10_000 unless named) at 250 bps (owed 10_250 in all): the engine and the advance. */
function oneAdvance(config = {}, amountAtomic = 10_000n): { engine: Engine; advanceId: string } {
  const { engine } = newEngine(config)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 250 }), T0))
  return { engine, advanceId: fundAdvance(engine, { amountAtomic, maximumFeeAtomic: amountAtomic / 10n }) }
}

function repayInPieces(engine: Engine, advanceId: string, pieces: bigint[], firstTx = 500): void {
  pieces.forEach((piece, i) => unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(firstTx + i), piece), T0 + 1 + i)))
}

t.test('a partial repayment earns its share of the reward; splitting a repayment never earns more than paying at once', async (t) => {
  const whole = oneAdvance()
  repayInPieces(whole.engine, whole.advanceId, [10_250n])
  const lenderWhole = whole.engine.getLender(L1)!
  const borrowerWhole = whole.engine.getBorrower(BORROWER)!
  t.equal(lenderWhole.reputationBps, 5050, 'lender: +50 for a repaid advance')
  t.equal(borrowerWhole.reputationBps, 5100, 'borrower: +100')

  const half = oneAdvance()
  repayInPieces(half.engine, half.advanceId, [5125n])
  t.equal(half.engine.getLender(L1)?.reputationBps, 5025, 'half the total repaid: half the lender reward')
  t.equal(half.engine.getBorrower(BORROWER)?.reputationBps, 5050, 'and half the borrower reward')
  t.equal(half.engine.getBorrower(BORROWER)?.advancesRepaid, 0, 'not counted as repaid until nothing is owed')

  // Many splits, including 1-unit pieces that round to nothing alone: always exactly the whole reward.
  const splits: bigint[][] = [[1n, 10_249n], [1n, 1n, 1n, 10_247n], [3333n, 3333n, 3584n], [205n, 205n, 205n, 9635n], Array.from({ length: 41 }, () => 250n)]
  for (const pieces of splits) {
    const split = oneAdvance()
    repayInPieces(split.engine, split.advanceId, pieces)
    t.equal(split.engine.getAdvance(split.advanceId), undefined, `${pieces.length} pieces repay it`)
    t.equal(split.engine.getLender(L1)?.reputationBps, lenderWhole.reputationBps, `lender, ${pieces.length} pieces`)
    t.equal(split.engine.getBorrower(BORROWER)?.reputationBps, borrowerWhole.reputationBps, `borrower, ${pieces.length} pieces`)
    t.equal(split.engine.getBorrower(BORROWER)?.advancesRepaid, 1)
  }
  // The share itself: the parts telescope for any split, and each is never more than its proportion.
  for (let total = 1n; total < 60n; total += 7n) {
    for (let cut = 0n; cut <= total; cut += 3n) {
      const parts = repaymentShareBps(97, 0n, cut, total) + repaymentShareBps(97, cut, total, total)
      t.equal(parts, 97, `97 over ${total} split at ${cut}`)
    }
  }
})

t.test('defaults and shortfalls cost the borrower; its lender loses for the default', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_a', 10_000n)
  fundAdvance(engine, { repaymentSource: 'job_a', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 1)
  fundAdvance(engine, { repaymentSource: 'job_a', amountAtomic: 1000n, maximumFeeAtomic: 100n }, T0, 2)
  unwrap(engine.failJob({ jobId: 'job_a', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  t.match(engine.getBorrower(BORROWER), { advancesDefaulted: 2, reputationBps: 5000 - 1000 - 2 * 500 }, 'failed job -1000, each defaulted advance -500')
  t.match(engine.getLender(L1), { advancesDefaulted: 2, reputationBps: 5000 - 2 * 100 })

  // A past-due advance liquidated with nothing to recover from but the reserve: a default and a shortfall.
  const past = newEngine({ backingDurationSecondsDefault: 3600 })
  unwrap(past.engine.registerSource({
    sourceId: 'src_s', productType: 'asset-backed', agent: BORROWER, valueAtomic: 2000n, liquidationValueAtomic: 1000n,
    advanceRateBps: 5000, evidenceId: 'ev', validUntilMs: 8_000_000_000_000, caller: BORROWER,
  }, T0))
  unwrap(past.engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  const advanceId = fundAdvance(past.engine, { repaymentSource: 'src_s', amountAtomic: 1000n, maximumFeeAtomic: 100n })
  const due = T0 + 3_601_000 // due at T0 + 3,600 s: past due from the next second on, as on chain
  const plan = unwrap(past.engine.planLiquidation({ advanceId, caller: L1 }, due))
  t.ok(plan.shortfallAtomic > 0n, 'nothing backs it: a shortfall')
  const receipt = unwrap(past.engine.liquidate({ advanceId, caller: L1, network: NET, txHash: hash(777), fromRevenueAtomic: 0n, fromCollateralAtomic: 0n, fromReserveAtomic: 0n }, due))
  t.equal(receipt.borrowerReputationBps, 5000 - 500 - 2000, 'default -500, shortfall -2000')
  t.match(past.engine.getBorrower(BORROWER), { advancesDefaulted: 1, shortfallAtomic: plan.shortfallAtomic })
})

// A lender's whole step at FULL principal (the service sets the score's 100 whole units: 100 USDC); LEAST stands for
// the least advance, 1 USDC. outsider22: one least advance lent to oneself and repaid bought +50, and a stranger's
// default on one cost an honest lender 100, whatever the principal.
const FULL = 10_000n
const LEAST = 100n
const FULL_STEP = { lenderReputationFullStepAtomic: { [NET]: { [ASSET]: FULL } } }

t.test('a repayment reward (the lender\'s and the borrower\'s) moves with the principal, up to a whole step at the full-step principal', async (t) => {
  const cases: [bigint, number, number][] = [[LEAST, 0, 1], [3_333n, 16, 33], [FULL - 1n, 49, 99], [FULL, 50, 100], [2n * FULL, 50, 100]]
  for (const [principal, reward, borrowerReward] of cases) {
    const { engine, advanceId } = oneAdvance(FULL_STEP, principal)
    repayInPieces(engine, advanceId, [engine.getAdvance(advanceId)!.lenderOwedAtomic + engine.getAdvance(advanceId)!.reserveOwedAtomic])
    t.equal(engine.getLender(L1)?.reputationBps, 5000 + reward, `${principal} of ${FULL} repaid: trunc(50 x min(principal, full) / full) = +${reward}`)
    t.match(engine.getLender(L1), { advancesRepaid: 1 }, 'counted as repaid whatever the reward')
    t.equal(engine.getBorrower(BORROWER)?.reputationBps, 5000 + borrowerReward, `the borrower's too: trunc(100 x min(principal, full) / full) = +${borrowerReward} (before, +100 for any principal)`)
  }
  // Without the config (an engine test's, or an asset the service did not name) the step is whole, as before.
  const unnamed = oneAdvance({ lenderReputationFullStepAtomic: { [NET]: { EURC: FULL } } }, LEAST)
  repayInPieces(unnamed.engine, unnamed.advanceId, [10_000n])
  t.equal(unnamed.engine.getLender(L1)?.reputationBps, 5050, 'an asset without a full-step principal: +50 for any principal')
  t.equal(unnamed.engine.getBorrower(BORROWER)?.reputationBps, 5100, 'and +100 to its borrower')
})

t.test('a weighed reward is shared by the payments: any split earns what one full repayment does', async (t) => {
  const whole = oneAdvance(FULL_STEP, 3_333n)
  const a = whole.engine.getAdvance(whole.advanceId)!
  const total = a.lenderOwedAtomic + a.reserveOwedAtomic
  repayInPieces(whole.engine, whole.advanceId, [total])
  t.equal(whole.engine.getLender(L1)?.reputationBps, 5016)
  const splits: bigint[][] = [[1n, total - 1n], [total / 2n, total - total / 2n], [1n, 1n, 1n, total - 3n], [...Array.from({ length: 9 }, () => total / 10n), total - 9n * (total / 10n)]]
  for (const pieces of splits) {
    const split = oneAdvance(FULL_STEP, 3_333n)
    repayInPieces(split.engine, split.advanceId, pieces)
    t.equal(split.engine.getAdvance(split.advanceId), undefined, `${pieces.length} pieces repay it`)
    t.equal(split.engine.getLender(L1)?.reputationBps, 5016, `${pieces.length} pieces: +16 in all, as at once`)
  }
  const half = oneAdvance(FULL_STEP, 3_333n)
  repayInPieces(half.engine, half.advanceId, [total / 2n])
  t.equal(half.engine.getLender(L1)?.reputationBps, 5000 + Math.floor(16 * Number(total / 2n) / Number(total)), 'half repaid: half the weighed reward')
})

t.test('a lender\'s default penalty moves with the principal, up to a whole step at the full-step principal', async (t) => {
  const cases: [bigint, number][] = [[LEAST, 1], [3_333n, 33], [FULL, 100], [2n * FULL, 100]]
  for (const [principal, penalty] of cases) {
    const { engine } = newEngine(FULL_STEP)
    unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
    createJob(engine, 'job_a', 100_000n)
    fundAdvance(engine, { repaymentSource: 'job_a', amountAtomic: principal, maximumFeeAtomic: principal }, T0, 1)
    unwrap(engine.failJob({ jobId: 'job_a', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
    t.match(engine.getLender(L1), { advancesDefaulted: 1, reputationBps: 5000 - penalty }, `${principal} of ${FULL} defaulted: -${penalty}`)
    t.match(engine.getBorrower(BORROWER), { reputationBps: 5000 - 1000 - 500 }, 'the borrower\'s penalties are not weighed')
  }
  t.throws(() => resolveConfig({ lenderReputationFullStepAtomic: { [NET]: { [ASSET]: 0n } } }), /lenderReputationFullStepAtomic of USDC on net-a must be a bigint >= 1/)
})

t.test('uptime: the share of the last N leases paid in time, kept in the record; every N outcomes it moves reliability', async (t) => {
  const { engine } = newEngine({ lenderUptimeWindowLeases: 2 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  t.match(engine.getLender(L1), { recentLeaseOutcomes: '', uptimeBps: null }, 'nothing measured yet')

  fundAdvance(engine, { amountAtomic: 100n }, T0, 1)
  t.match(engine.getLender(L1), { recentLeaseOutcomes: 'P', uptimeBps: 10_000, reliabilityBps: 5100 })

  const missed = offerFor(engine, { amountAtomic: 100n }, T0 + 1)
  t.equal(matchedLender(engine, missed, T0 + 1), L1)
  unwrap(dispatchAt(engine, T0 + 40_000))
  // 5100 - 500 = 4600, then the second outcome completes a window of 2: towards its uptime 5000 by 10%.
  t.match(engine.getLender(L1), { recentLeaseOutcomes: 'PM', uptimeBps: 5000, reliabilityBps: Math.floor((4600 * 9000 + 5000 * 1000) / 10_000) })

  fundAdvance(engine, { amountAtomic: 100n }, T0 + 50_000, 3)
  t.match(engine.getLender(L1), { recentLeaseOutcomes: 'MP', uptimeBps: 5000, reliabilityBps: 4740 }, 'the window slides; no observation between windows')
  fundAdvance(engine, { amountAtomic: 100n }, T0 + 60_000, 4)
  t.match(engine.getLender(L1), { recentLeaseOutcomes: 'PP', uptimeBps: 10_000, reliabilityBps: Math.floor((4840 * 9000 + 10_000 * 1000) / 10_000) })
  engine.checkInvariants()
})

t.test('matching order follows reputation after the ask: a missed lease and a partial repayment reorder the book', async (t) => {
  const { engine } = newEngine({ lenderReputationMissPenaltyBps: 20 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 250 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 250, availableLiquidityAtomic: 20_000n }), T0))
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 50n })), L1, 'same ask and reputation: the larger liquidity, L1')
  unwrap(dispatchAt(engine, T0 + 40_000))
  t.equal(engine.getLender(L1)?.reputationBps, 4980, 'L1 let its lease expire: -20')
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 50n }, T0 + 40_000), T0 + 40_000), L2, 'L2 (5000) now before L1 (4980)')

  // More than L2 can lend goes to L1; its borrower repays half of the 30_750 owed: +25, L1 at 5005.
  const advanceId = fundAdvance(engine, { amountAtomic: 30_000n, maximumFeeAtomic: 1000n }, T0 + 40_000, 2)
  t.equal(engine.getAdvance(advanceId)?.lender, L1)
  repayInPieces(engine, advanceId, [15_375n])
  t.equal(engine.getLender(L1)?.reputationBps, 5005)
  t.equal(matchedLender(engine, offerFor(engine, { amountAtomic: 50n }, T0 + 41_000), T0 + 41_000), L1, 'L1 (5005) before L2 (5000) again')
  engine.checkInvariants()
})

t.test('a lender stored before the uptime window (versions 1 and 2) opens as version 5 with an empty window', async (t) => {
  t.equal(SNAPSHOT_VERSIONS.lender, 5)
  const { engine } = newEngine()
  const { recentLeaseOutcomes: _w, uptimeBps: _u, policyAvailableAtomic: _a, ...v2 } = unwrap(engine.registerLender(lenderInput(1), T0))
  const { withdrawnAtomic: _d, withdrawalPendingAtomic: _p, ...v1 } = v2
  for (const [version, older] of [[1, v1], [2, v2]] as const) {
    const migration = snapshotMigrations().find((m) => m.from.kind === 'lender' && m.from.version === version)
    t.same(migration?.to, { kind: 'lender', version: 5 })
    t.match(migration!.migrate(older), { recentLeaseOutcomes: '', withdrawnAtomic: 0n, address: L1, reputationBps: 5000 })
  }
})
