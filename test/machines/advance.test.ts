// The advance machine on its own, through XState's pure functions: which event each state takes, what it refuses and
// with which code, the guards' edges, and what each action writes.
import t from 'tap'
import { ADVANCE_STATES, advanceMachine, advanceRefusals, type AdvanceEvent, type AdvanceInput, type RecoveryRecord, type RepaymentRecord } from '../../machines/index.ts'
import { checkMatrix, run, start, step, type Snap } from './fixtures/pure.ts'

const T0 = 1_700_000_000_000
const DUE = T0 + 3_600_000
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as const
const input: AdvanceInput = {
  advanceId: 'adv_1', advanceKey: hash(99), offerId: 'off_1', leaseId: 'lse_1', lender: '0x0000000000000000000000000000000000001001',
  payer: '0x0000000000000000000000000000000000002001', borrower: '0x00000000000000000000000000000000000000b0',
  source: { kind: 'backing', id: 'src_1' }, network: 'net-a', asset: 'USDC', principalAtomic: 1000n, feeAtomic: 10n,
  insuranceAtomic: 1n, lenderOwedAtomic: 1009n, reserveOwedAtomic: 1n, supplierAddress: '0x0000000000000000000000000000000000000050', payment: { network: 'net-a', txHash: hash(1), logIndex: 0 },
  fundedAtMs: T0, dueAtMs: DUE,
}
const paid = (lenderAmountAtomic: bigint, reserveAmountAtomic: bigint, lenderOwedAfterAtomic: bigint, reserveOwedAfterAtomic: bigint, n = 2): RepaymentRecord => ({
  kind: 'repaid', network: 'net-a', txHash: hash(n), logIndex: 0, payer: input.borrower, lenderAmountAtomic, reserveAmountAtomic, lenderOwedAfterAtomic, reserveOwedAfterAtomic,
})
const repayment = paid(1009n, 1n, 0n, 0n)
const repay = (r: RepaymentRecord, nowMs = T0): AdvanceEvent => ({ type: 'REPAY', repayment: r, nowMs })
const recovery = (shortfallAtomic: bigint): RecoveryRecord => ({
  network: 'net-a', txHash: hash(3), owedAtomic: 1010n, fromRevenueAtomic: 0n, fromCollateralAtomic: 1010n - shortfallAtomic,
  fromBackingAtomic: 0n, fromReserveAtomic: 0n, shortfallAtomic,
})
const liquidate = (shortfallAtomic: bigint, nowMs = T0): AdvanceEvent => ({ type: 'LIQUIDATE', recovery: recovery(shortfallAtomic), nowMs })

const active = start(advanceMachine, input)
const defaulted = run(advanceMachine, active, { type: 'DEFAULT', reason: 'job_failed', nowMs: T0 })
const states: Record<string, Snap> = {
  active,
  defaulted,
  repaid: run(advanceMachine, active, { type: 'REPAY', repayment, nowMs: T0 }),
  liquidated: run(advanceMachine, defaulted, liquidate(0n)),
  shortfall: run(advanceMachine, defaulted, liquidate(3n)),
}
const events: Record<string, AdvanceEvent> = {
  REPAY: { type: 'REPAY', repayment, nowMs: T0 },
  DEFAULT: { type: 'DEFAULT', reason: 'job_failed', nowMs: T0 },
  LIQUIDATE: liquidate(0n),
}
const finalRow = { REPAY: { refused: 'advance_not_open' }, DEFAULT: { refused: 'advance_not_active' }, LIQUIDATE: { refused: 'advance_not_in_default' } }

t.test('every event in every state: taken, or refused with the table\'s code', async (t) => {
  t.same([...ADVANCE_STATES].sort(), Object.keys(advanceMachine.states).sort(), 'ADVANCE_STATES lists the machine\'s states')
  checkMatrix(t, advanceMachine, advanceRefusals, states, events, {
    active: { REPAY: { to: 'repaid' }, DEFAULT: { to: 'defaulted' }, LIQUIDATE: { refused: 'advance_not_in_default' } },
    defaulted: { REPAY: { to: 'repaid' }, DEFAULT: { refused: 'advance_not_active' }, LIQUIDATE: { to: 'liquidated' } },
    repaid: finalRow,
    liquidated: finalRow,
    // Live: it takes repayments of what the recovery left (the full terms are not the next payment on that).
    shortfall: { REPAY: { refused: 'repayment_mismatch' }, DEFAULT: { refused: 'advance_not_active' }, LIQUIDATE: { refused: 'advance_closed' } },
  })
})

t.test('LIQUIDATE of an active advance: refused through its due second, taken from the next one (it defaults as past due)', async (t) => {
  // The contract's rule (liquidate: block.timestamp > dueAt, dueAt in whole seconds): the due millisecond and the
  // rest of its second are not past due yet.
  t.equal(step(advanceMachine, active, liquidate(0n, DUE - 1)), undefined, 'one ms before the due time')
  t.equal(step(advanceMachine, active, liquidate(0n, DUE)), undefined, 'at the due time')
  t.equal(step(advanceMachine, active, liquidate(0n, DUE + 999)), undefined, 'the last ms of the due second')
  t.equal(advanceRefusals.LIQUIDATE.code, 'advance_not_in_default')
  const past = DUE + 1000
  const due = { defaultReason: 'past_due', defaultedAtMs: past }
  t.match(step(advanceMachine, active, liquidate(0n, past)), { value: 'liquidated', context: { ...due, recovery: recovery(0n), endedAtMs: past } })
  t.match(step(advanceMachine, active, liquidate(2n, past)), { value: 'shortfall', context: { ...due, recovery: recovery(2n), endedAtMs: null } })
})

t.test('LIQUIDATE ends liquidated when fully recovered, in shortfall otherwise', async (t) => {
  t.match(step(advanceMachine, defaulted, liquidate(0n, T0 + 5)), { value: 'liquidated', context: { recovery: recovery(0n), endedAtMs: T0 + 5 } })
  t.match(step(advanceMachine, defaulted, liquidate(1n, T0 + 5)), { value: 'shortfall', context: { recovery: recovery(1n), endedAtMs: null } })
})

t.test('a shortfall stays live: repayments of what the recovery left are counted, the last one ends it repaid', async (t) => {
  const shortfall = states['shortfall'] as Snap
  t.equal(shortfall.status, 'active', 'not final: the borrower still owes')
  // It owes 2 to the lender and 1 to the reserve: the lender's part first, as the contract's repay splits it.
  t.equal(step(advanceMachine, shortfall, repay(paid(0n, 1n, 2n, 0n, 20))), undefined, 'the reserve is not paid before the lender')
  const first = paid(1n, 0n, 1n, 1n, 21)
  const after = step(advanceMachine, shortfall, repay(first, T0 + 7))
  t.match(after, { value: 'shortfall', context: { lenderOwedAtomic: 1n, reserveOwedAtomic: 1n, endedAtMs: null } })
  const last = paid(1n, 1n, 0n, 0n, 22)
  t.match(step(advanceMachine, after as Snap, repay(last, T0 + 8)), {
    value: 'repaid', status: 'done', context: { lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, repayments: [first, last], recovery: recovery(3n), endedAtMs: T0 + 8 },
  })
})

t.test('each action writes what its event carries', async (t) => {
  t.same(defaulted.context, { ...active.context, defaultReason: 'job_failed', defaultedAtMs: T0 })
  t.same((states['repaid'] as Snap).context, { ...active.context, repayments: [repayment], lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, endedAtMs: T0 })
  t.same((states['liquidated'] as Snap).context, { ...defaulted.context, recovery: recovery(0n), lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, endedAtMs: T0 })
  t.same((states['shortfall'] as Snap).context, { ...defaulted.context, recovery: recovery(3n), lenderOwedAtomic: 2n, reserveOwedAtomic: 1n, endedAtMs: null })
  // Collateral 1007 of 1009 + 1 owed: the lender's part first, so 2 stay owed to the lender and the reserve's 1.
  t.match((states['shortfall'] as Snap).context, { lenderOwedAtomic: 2n, reserveOwedAtomic: 1n })
})

t.test('after a recovery the advance owes what the contract leaves: the reserve subrogated for what it paid', async (t) => {
  const r: RecoveryRecord = { ...recovery(0n), fromCollateralAtomic: 500n, fromBackingAtomic: 300n, fromReserveAtomic: 200n, shortfallAtomic: 10n }
  t.match(step(advanceMachine, defaulted, { type: 'LIQUIDATE', recovery: r, nowMs: T0 }), {
    value: 'shortfall', context: { lenderOwedAtomic: 1009n - 500n - 300n - 200n, reserveOwedAtomic: 1n + 200n },
  })
})

t.test('a recovery the insurance reserve helped pay leaves the advance owing the reserve what it paid', async (t) => {
  // 800 of collateral to the lender, 209 from the reserve: the lender is whole; the reserve's own share (1) was never
  // paid and nobody covered it (the contract's shortfall), and the reserve is subrogated for its 209.
  const r: RecoveryRecord = { ...recovery(0n), fromCollateralAtomic: 800n, fromReserveAtomic: 209n, shortfallAtomic: 1n }
  t.match(step(advanceMachine, defaulted, { type: 'LIQUIDATE', recovery: r, nowMs: T0 }), {
    value: 'shortfall', context: { lenderOwedAtomic: 0n, reserveOwedAtomic: 210n, endedAtMs: null },
  })
  // No reserve share in the terms: the contract's shortfall is 0, yet the borrower owes the reserve its 209.
  const noShare = run(advanceMachine, start(advanceMachine, { ...input, feeAtomic: 9n, insuranceAtomic: 0n, reserveOwedAtomic: 0n }), { type: 'DEFAULT', reason: 'job_failed', nowMs: T0 })
  const covered: RecoveryRecord = { ...r, owedAtomic: 1009n, shortfallAtomic: 0n }
  t.match(step(advanceMachine, noShare, { type: 'LIQUIDATE', recovery: covered, nowMs: T0 }), {
    value: 'shortfall', context: { lenderOwedAtomic: 0n, reserveOwedAtomic: 209n, endedAtMs: null },
  }, 'no shortfall, still live: it owes the reserve')
})

t.test('REPAY of any amount: a partial payment is counted and the advance stays where it was; the last one repays it', async (t) => {
  const first = paid(400n, 0n, 609n, 1n, 10)
  for (const [name, from] of [['active', active], ['defaulted', defaulted]] as const) {
    const after = step(advanceMachine, from, repay(first, T0 + 1))
    t.match(after, { value: name, context: { lenderOwedAtomic: 609n, reserveOwedAtomic: 1n, repayments: [first], endedAtMs: null } }, `${name}: stays ${name}, owes less`)
    const second = paid(609n, 0n, 0n, 1n, 11)
    const lenderPaid = step(advanceMachine, after as Snap, repay(second, T0 + 2))
    t.match(lenderPaid, { value: name, context: { lenderOwedAtomic: 0n, reserveOwedAtomic: 1n, repayments: [first, second] } }, `${name}: the reserve's share is still owed`)
    const last = paid(0n, 1n, 0n, 0n, 12)
    t.match(step(advanceMachine, lenderPaid as Snap, repay(last, T0 + 3)), {
      value: 'repaid', context: { lenderOwedAtomic: 0n, reserveOwedAtomic: 0n, repayments: [first, second, last], endedAtMs: T0 + 3 },
    }, `${name}: repaid once nothing is owed`)
  }
  // Lender and reserve in one payment (what the contract does with an amount over the lender's part).
  t.match(step(advanceMachine, active, repay(paid(1009n, 1n, 0n, 0n))), { value: 'repaid' })
})

t.test('REPAY that is not the next payment on what is owed is refused (repayment_mismatch), nothing changes', async (t) => {
  t.equal(advanceRefusals.REPAY.guarded, 'repayment_mismatch')
  const refusedIn = (snap: Snap, r: RepaymentRecord, why: string) => {
    t.equal(step(advanceMachine, snap, repay(r)), undefined, why)
  }
  refusedIn(active, paid(1010n, 0n, 0n, 1n), 'more than the lender is owed')
  refusedIn(active, paid(1009n, 2n, 0n, 0n), "more than the reserve's share")
  refusedIn(active, paid(100n, 1n, 909n, 0n), "the reserve's share before the lender is paid")
  refusedIn(active, paid(0n, 0n, 1009n, 1n), 'nothing paid')
  refusedIn(active, paid(100n, 0n, 900n, 1n), 'after values that do not follow (an earlier payment not counted)')
  refusedIn(active, paid(1009n, 0n, 0n, 0n), "claims nothing owed while the reserve's share is")
  refusedIn(defaulted, paid(1010n, 0n, 0n, 1n), 'defaulted: more than owed')
})
