// The engine's liquidation plan against the contract's liquidate (the faithful model, src/chain/facility-model.ts):
// for a failed job and for an open job past its due time, with no, some and ample collateral, the plan predicts
// every recovery step the contract takes. In particular no source revenue: a failed job's escrow went back to its
// client at failJob, and an open job's escrow waits for its settlement.
import t from 'tap'
import { getAddress, type Address as ChainAddress } from 'viem'
import { FacilityModel, type ModelEvent } from '../../src/chain/facility-model.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'
import { recoveryAmounts } from '../../src/engine/engine.ts'
import type { AdvanceView, LiquidationPlan } from '../../src/engine/index.ts'
import { BORROWER, CLIENT, NET, T0, addr, createJob, fundAdvance, hash, lenderInput, newEngine, unwrap } from './fixtures/world.ts'

const TOKEN = getAddress(addr(0x70)) as ChainAddress
const FACILITY = getAddress(addr(0xfa)) as ChainAddress
const OPERATOR = getAddress(addr(0x0e)) as ChainAddress
const LEASE_SIGNER = getAddress(addr(0x5e)) as ChainAddress
const DUE_MS = T0 + 3 * 86_400_000

/** One job due at `dueMs` with one advance, in the engine and in the model alike. */
function funded(collateralAtomic: bigint, dueMs = DUE_MS) {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  createJob(engine, 'job_l', 10_000n, dueMs)
  if (collateralAtomic > 0n) {
    unwrap(engine.postCollateral({ jobId: 'job_l', caller: BORROWER, borrower: BORROWER, amountAtomic: collateralAtomic, proof: { network: NET, txHash: hash(5), logIndex: 0 } }, T0))
  }
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_l', amountAtomic: 1000n, maximumFeeAtomic: 100n })
  const advance = engine.getAdvance(advanceId) as AdvanceView

  const model = new FacilityModel({ address: FACILITY, operator: OPERATOR, leaseSigner: LEASE_SIGNER, reclaimDelay: devnetReclaimDelaySeconds })
  for (const holder of [CLIENT, BORROWER, advance.payer]) {
    model.setBalance(TOKEN, getAddress(holder), 1_000_000n)
    model.setAllowance(TOKEN, getAddress(holder), FACILITY, 10n ** 30n)
  }
  const at = (sender: string, nowMs: number) => ({ sender: getAddress(sender) as ChainAddress, nowSeconds: BigInt(Math.floor(nowMs / 1000)) })
  const must = (outcome: ReturnType<FacilityModel['repay']>): ModelEvent[] => {
    if (!outcome.ok) throw new Error(`model reverted: ${outcome.error}`)
    return outcome.events
  }
  must(model.fundJob(at(CLIENT, T0), legacyJobKey('job_l'), TOKEN, 10_000n, getAddress(BORROWER)))
  if (collateralAtomic > 0n) must(model.postCollateral(at(BORROWER, T0), legacyJobKey('job_l'), TOKEN, collateralAtomic))
  must(model.paySupplier(at(advance.payer, T0), {
    offerKey: advance.advanceKey, jobKey: legacyJobKey('job_l'), payer: getAddress(advance.payer), supplier: getAddress(advance.supplierAddress),
    asset: TOKEN, amount: advance.principalAtomic, fee: advance.feeAtomic, reserveShare: advance.insuranceAtomic,
    deadline: BigInt(Math.floor(T0 / 1000) + 60), dueAt: BigInt(Math.floor(advance.dueAtMs / 1000)),
  }, { recovered: LEASE_SIGNER }))
  return { engine, model, advance, advanceId, at, must }
}

/** The job failed, or left open past its due time: the engine's plan, and the contract's liquidation. */
function scenario(collateralAtomic: bigint, failed: boolean): { plan: LiquidationPlan; liquidated: Record<string, bigint>; advance: AdvanceView } {
  const { engine, model, advance, advanceId, at, must } = funded(collateralAtomic)
  let nowMs = T0 + 1000
  if (failed) {
    must(model.failJob(at(OPERATOR, nowMs), legacyJobKey('job_l')))
    unwrap(engine.failJob({ jobId: 'job_l', reason: 'not_delivered', caller: CLIENT }, nowMs))
  } else {
    nowMs = advance.dueAtMs + 1000
  }
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: advance.lender }, nowMs))
  const events = must(model.liquidate(at(OPERATOR, nowMs), advance.advanceKey, recoveryAmounts(plan).fromBackingAtomic))
  const liquidated = (events.find((e) => e.name === 'Liquidated') as ModelEvent).args as Record<string, bigint>
  return { plan, liquidated, advance }
}

for (const failed of [true, false]) {
  const which = failed ? 'a failed job' : 'an open job past its due time'
  t.test(`the plan for ${which} is what the contract's liquidate does`, async (t) => {
    for (const collateral of [0n, 300n, 5_000n]) {
      const { plan, liquidated } = scenario(collateral, failed)
      const steps = Object.fromEntries(plan.steps.map((s) => [s.step, s.amountAtomic]))
      t.equal(steps.source_revenue, 0n, `collateral ${collateral}: no source revenue (the escrow of 10,000 is not a recovery)`)
      t.same({
        collateral: steps.collateral, backing: steps.backing_liquidation, reserve: steps.insurance_reserve, shortfall: steps.shortfall,
      }, {
        collateral: liquidated.fromCollateral, backing: liquidated.fromBacking, reserve: liquidated.fromReserve, shortfall: liquidated.shortfall,
      }, `collateral ${collateral}: every step as the contract took it`)
      t.equal(plan.recoveredAtomic + plan.shortfallAtomic, plan.owedAtomic)
    }
  })
}

t.test('an open job\'s advance is past due from the second after its due time\'s, as the contract judges it', async (t) => {
  // A due time in whole seconds and one within a second: the contract's dueAt is floor(dueAtMs / 1000), and its
  // liquidate takes block.timestamp > dueAt. Before, the engine planned the liquidation from dueAtMs itself.
  for (const dueMs of [DUE_MS, DUE_MS + 400]) {
    const { engine, model, advance, advanceId, at } = funded(0n, dueMs)
    const secondMs = Math.floor(advance.dueAtMs / 1000) * 1000
    for (const nowMs of [advance.dueAtMs, secondMs + 999, secondMs + 1000]) {
      const plan = engine.planLiquidation({ advanceId, caller: advance.lender }, nowMs)
      const onChain = model.liquidate(at(OPERATOR, nowMs), advance.advanceKey, 0n)
      t.equal(plan.ok, onChain.ok, `due ${advance.dueAtMs}, at ${nowMs}: the engine ${plan.ok ? 'plans' : 'refuses'} the liquidation, the contract ${onChain.ok ? 'takes' : 'refuses'} it`)
      if (!plan.ok) t.equal(plan.error.code, 'advance_not_in_default')
      t.equal(plan.ok, nowMs >= secondMs + 1000, 'past due from the next second on')
      if (onChain.ok) break
    }
  }
})
