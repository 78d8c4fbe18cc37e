// Advance: created only by a verified supplier payment. It carries what is still owed (the contract's terms at payment:
// the lender's part, then the reserve's share); each repayment, of any amount, reduces it, and the advance ends repaid
// once nothing is owed (Repaid facts, or the job's settlement, which pays everything). Otherwise it is liquidated:
// once defaulted (its job failed), or straight from active once it is past its due time (it defaults as it is
// liquidated). A liquidation after which nothing is owed ends it (liquidated); one that left something owed does not
// (state `shortfall`): a shortfall nobody covered, and what the insurance reserve paid, for which it is subrogated.
// The borrower still owes that (the lender's part first, then the reserve's), the contract still takes repayments of
// it, and the advance ends repaid once they have paid it all.
import { setup } from 'xstate'
import { assign } from './assign.ts'
import type { RefusalTable } from './refusals.ts'
import type { Address, SourceRef, StatesOf, TxProof } from './types.ts'

export const ADVANCE_STATES = ['active', 'defaulted', 'repaid', 'liquidated', 'shortfall'] as const

/**
 * The first time (ms) at which an advance due at `dueAtMs` is past due: the contract liquidates it once
 * block.timestamp > dueAt, with dueAt = floor(dueAtMs / 1000), so a whole second after a due time in whole seconds.
 * Before, the engine counted it past due at dueAtMs itself, and for up to a second let a liquidation through that the
 * contract refused (409 contract_not_defaulted; outsider21).
 */
export function pastDueAtMs(dueAtMs: number): number {
  return (Math.floor(dueAtMs / 1000) + 1) * 1000
}

/** Whether an advance due at `dueAtMs` is past due at `nowMs` (pastDueAtMs), as the contract's liquidate judges it. */
export function isPastDueAt(dueAtMs: number, nowMs: number): boolean {
  return nowMs >= pastDueAtMs(dueAtMs)
}
export type AdvanceState = (typeof ADVANCE_STATES)[number]

export interface AdvanceInput {
  advanceId: string
  /** The advance's key on chain: its offer's offerKey (one advance per offer). */
  advanceKey: `0x${string}`
  offerId: string
  leaseId: string
  lender: Address
  payer: Address
  borrower: Address
  source: SourceRef
  network: string
  asset: string
  principalAtomic: bigint
  feeAtomic: bigint
  /** Part of the fee that goes to the insurance reserve when the advance is repaid (the authorization's reserveShare). */
  insuranceAtomic: bigint
  /** Still owed to the lender: principal + fee - insuranceAtomic at payment, as the contract records it. */
  lenderOwedAtomic: bigint
  /** Still owed to the insurance reserve: insuranceAtomic at payment. */
  reserveOwedAtomic: bigint
  supplierAddress: Address
  payment: TxProof
  fundedAtMs: number
  dueAtMs: number
  /**
   * Present when the token refused the supplier at paySupplier: the principal is held in the credit contract for the
   * supplier (PaymentHeld), claimable by anyone's claimHeld(asset, supplier) once the token accepts it. Absent otherwise
   * (every advance before it was recorded, too).
   */
  supplierPaymentHeld?: true
}

export interface RepaymentRecord {
  kind: 'repaid' | 'job_settlement'
  network: string
  txHash: `0x${string}`
  logIndex: number | null
  payer: Address | null
  lenderAmountAtomic: bigint
  reserveAmountAtomic: bigint
  /** What the contract says is still owed after this payment (Repaid's lenderOwed and reserveOwed). */
  lenderOwedAfterAtomic: bigint
  reserveOwedAfterAtomic: bigint
}

export interface RecoveryRecord {
  network: string
  txHash: `0x${string}`
  owedAtomic: bigint
  fromRevenueAtomic: bigint
  fromCollateralAtomic: bigint
  fromBackingAtomic: bigint
  fromReserveAtomic: bigint
  shortfallAtomic: bigint
}

/**
 * The most payments an advance lists (`repayments`, the latest, in chain order). The contract takes a repayment of any
 * amount from anyone, so a stranger repaying 1 atomic unit at a time, for gas alone, made the list (and every write and
 * read of the advance, and every copy the next payment made) grow without bound. What is counted is bounded; nothing
 * counted is lost: the earlier payments are summed in `earlierRepayments`.
 */
export const REPAYMENTS_LISTED_MAX = 32

/** The payments an advance no longer lists, summed (each a `repaid` one: a settlement pays in full, so it is the last). */
export interface EarlierRepayments {
  count: number
  lenderAmountAtomic: bigint
  reserveAmountAtomic: bigint
}

export interface AdvanceContext extends AdvanceInput {
  defaultReason: string | null
  defaultedAtMs: number | null
  /** The latest payments counted (at most REPAYMENTS_LISTED_MAX), in chain order. */
  repayments: RepaymentRecord[]
  /** The payments counted before those, summed; absent until there are any. */
  earlierRepayments?: EarlierRepayments
  recovery: RecoveryRecord | null
  endedAtMs: number | null
}

export type AdvanceEvent =
  | { type: 'REPAY'; repayment: RepaymentRecord; nowMs: number }
  | { type: 'DEFAULT'; reason: string; nowMs: number }
  | { type: 'LIQUIDATE'; recovery: RecoveryRecord; nowMs: number }

/** What the advance answers when it refuses an event (see machines/refusals.ts). */
export const advanceRefusals: RefusalTable<AdvanceEvent> = {
  // A REPAY the advance's state takes but whose amounts are not the next payment on what it owes: more than owed, or
  // "after" values that disagree (a payment reported before an earlier one, or terms the engine does not hold).
  REPAY: { code: 'advance_not_open', guarded: 'repayment_mismatch' },
  DEFAULT: { code: 'advance_not_active' },
  // A shortfall advance is live for its repayments, but its liquidation is done: as for a final one, advance_closed.
  LIQUIDATE: { code: 'advance_not_in_default', states: { shortfall: 'advance_closed' } },
}

/** Whether `r` is the next payment on what `owed` still owes, as the contract splits one (see the guard). */
export function isNextPayment(owed: { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint }, r: RepaymentRecord): boolean {
  const { lenderAmountAtomic: toLender, reserveAmountAtomic: toReserve } = r
  if (toLender < 0n || toReserve < 0n || toLender + toReserve === 0n) return false
  if (toLender > owed.lenderOwedAtomic || toReserve > owed.reserveOwedAtomic) return false
  if (toReserve > 0n && toLender !== owed.lenderOwedAtomic) return false
  return r.lenderOwedAfterAtomic === owed.lenderOwedAtomic - toLender && r.reserveOwedAfterAtomic === owed.reserveOwedAtomic - toReserve
}

/**
 * What the advance still owes after a recovery, as the contract's liquidate leaves it: tokens from the source
 * (revenue, collateral) paid the lender's part first, then the reserve's share; backing and the reserve paid the
 * lender's part; the reserve is subrogated for what it paid (the borrower owes it to the reserve now).
 */
export function owedAfterRecovery(
  owed: { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint },
  r: Pick<RecoveryRecord, 'fromRevenueAtomic' | 'fromCollateralAtomic' | 'fromBackingAtomic' | 'fromReserveAtomic'>,
): { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint } {
  const tokens = r.fromRevenueAtomic + r.fromCollateralAtomic
  const tokensToLender = tokens < owed.lenderOwedAtomic ? tokens : owed.lenderOwedAtomic
  return {
    lenderOwedAtomic: owed.lenderOwedAtomic - tokensToLender - r.fromBackingAtomic - r.fromReserveAtomic,
    reserveOwedAtomic: owed.reserveOwedAtomic - (tokens - tokensToLender) + r.fromReserveAtomic,
  }
}

function owesNothingAfter(owed: { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint }, r: RecoveryRecord): boolean {
  const after = owedAfterRecovery(owed, r)
  return after.lenderOwedAtomic === 0n && after.reserveOwedAtomic === 0n
}

/** The listed payments with `repayment` last: past REPAYMENTS_LISTED_MAX the oldest one moves into the sums. */
function listedWith(context: Pick<AdvanceContext, 'repayments' | 'earlierRepayments'>, repayment: RepaymentRecord): Pick<AdvanceContext, 'repayments' | 'earlierRepayments'> {
  if (context.repayments.length < REPAYMENTS_LISTED_MAX) return { repayments: [...context.repayments, repayment] }
  const [oldest, ...kept] = context.repayments as [RepaymentRecord, ...RepaymentRecord[]]
  const earlier = context.earlierRepayments ?? { count: 0, lenderAmountAtomic: 0n, reserveAmountAtomic: 0n }
  return {
    repayments: [...kept, repayment],
    earlierRepayments: {
      count: earlier.count + 1,
      lenderAmountAtomic: earlier.lenderAmountAtomic + oldest.lenderAmountAtomic,
      reserveAmountAtomic: earlier.reserveAmountAtomic + oldest.reserveAmountAtomic,
    },
  }
}

// The last payment ends the advance repaid; an earlier one is counted and the advance stays where it is.
const repayTransitions = [
  {
    guard: { type: 'isLastPayment', params: ({ event }: { event: { repayment: RepaymentRecord } }) => event },
    target: 'repaid',
    actions: [
      { type: 'recordRepayment', params: ({ event }: { event: { repayment: RepaymentRecord } }) => event },
      { type: 'recordEnd', params: ({ event }: { event: { nowMs: number } }) => event },
    ],
  },
  {
    guard: { type: 'isNextPayment', params: ({ event }: { event: { repayment: RepaymentRecord } }) => event },
    actions: { type: 'recordRepayment', params: ({ event }: { event: { repayment: RepaymentRecord } }) => event },
  },
] as const

export const advanceMachine = setup({
  types: {
    input: {} as AdvanceInput,
    context: {} as AdvanceContext,
    events: {} as AdvanceEvent,
  },
  actions: {
    // The listed payments' update with the amounts owed written after them (the same keys in the same order as a
    // spread of it would give): a spread that adds keys takes V8's slow path, once per repayment.
    recordRepayment: assign(({ context }, params: { repayment: RepaymentRecord }) => {
      const update: Partial<AdvanceContext> = listedWith(context, params.repayment)
      update.lenderOwedAtomic = params.repayment.lenderOwedAfterAtomic
      update.reserveOwedAtomic = params.repayment.reserveOwedAfterAtomic
      return update
    }),
    recordEnd: assign((_, params: { nowMs: number }) => ({ endedAtMs: params.nowMs })),
    recordDefault: assign((_, params: { reason: string; nowMs: number }) => ({ defaultReason: params.reason, defaultedAtMs: params.nowMs })),
    recordPastDue: assign(({ event }) => ({ defaultReason: 'past_due', defaultedAtMs: event.nowMs })),
    // A shortfall has not ended the advance: only a full recovery (or the last repayment) records its end.
    recordRecovery: assign(({ context }, params: { recovery: RecoveryRecord; nowMs: number }) => ({
      recovery: params.recovery,
      ...owedAfterRecovery(context, params.recovery),
      endedAtMs: owesNothingAfter(context, params.recovery) ? params.nowMs : null,
    })),
  },
  guards: {
    // The next payment on what is owed: at most what is owed, the lender's part first (a reserve amount only once the
    // lender is paid), and the contract's "after" values are what the engine holds less the payment.
    isNextPayment: ({ context }, params: { repayment: RepaymentRecord }) => isNextPayment(context, params.repayment),
    isLastPayment: ({ context }, params: { repayment: RepaymentRecord }) =>
      isNextPayment(context, params.repayment) && params.repayment.lenderOwedAfterAtomic === 0n && params.repayment.reserveOwedAfterAtomic === 0n,
    // Fully recovered: nothing is owed after it. A recovery the insurance reserve helped pay is not, even with no
    // shortfall: the reserve is subrogated for what it paid, and the borrower owes it that.
    isFullyRecovered: ({ context }, params: { recovery: RecoveryRecord }) => owesNothingAfter(context, params.recovery),
    // Past due as the contract judges it (isPastDueAt): from the second after the due time's on.
    isPastDue: ({ context, event }) => isPastDueAt(context.dueAtMs, event.nowMs),
    isPastDueAndFullyRecovered: ({ context, event }, params: { recovery: RecoveryRecord }) =>
      isPastDueAt(context.dueAtMs, event.nowMs) && owesNothingAfter(context, params.recovery),
  },
}).createMachine({
  id: 'advance',
  // Field by field rather than `...input` (as the offer's): a spread that adds keys took V8's slow path, about 4 KB and
  // over a microsecond per advance (bench/match-request.ts's funding, issue 11). The keys keep the order of the input
  // the engine builds (src/engine/advances.ts openAdvance), and AdvanceContext makes the type checker refuse a field
  // left out. supplierPaymentHeld is set after, on the rare advance that has it: the others keep the literal's shape.
  context: ({ input }) => {
    const context: AdvanceContext = {
      advanceId: input.advanceId, advanceKey: input.advanceKey, offerId: input.offerId, leaseId: input.leaseId,
      lender: input.lender, payer: input.payer, borrower: input.borrower, source: input.source, network: input.network,
      asset: input.asset, principalAtomic: input.principalAtomic, feeAtomic: input.feeAtomic,
      insuranceAtomic: input.insuranceAtomic, supplierAddress: input.supplierAddress,
      lenderOwedAtomic: input.lenderOwedAtomic, reserveOwedAtomic: input.reserveOwedAtomic, payment: input.payment,
      fundedAtMs: input.fundedAtMs, dueAtMs: input.dueAtMs,
      defaultReason: null,
      defaultedAtMs: null,
      repayments: [],
      recovery: null,
      endedAtMs: null,
    }
    if (input.supplierPaymentHeld === true) context.supplierPaymentHeld = true
    return context
  },
  initial: 'active',
  states: {
    active: {
      on: {
        REPAY: repayTransitions,
        DEFAULT: { target: 'defaulted', actions: { type: 'recordDefault', params: ({ event }) => event } },
        LIQUIDATE: [
          {
            guard: { type: 'isPastDueAndFullyRecovered', params: ({ event }) => event },
            target: 'liquidated',
            actions: ['recordPastDue', { type: 'recordRecovery', params: ({ event }) => event }],
          },
          {
            guard: 'isPastDue',
            target: 'shortfall',
            actions: ['recordPastDue', { type: 'recordRecovery', params: ({ event }) => event }],
          },
        ],
      },
    },
    defaulted: {
      on: {
        REPAY: repayTransitions,
        LIQUIDATE: [
          {
            guard: { type: 'isFullyRecovered', params: ({ event }) => event },
            target: 'liquidated',
            actions: { type: 'recordRecovery', params: ({ event }) => event },
          },
          { target: 'shortfall', actions: { type: 'recordRecovery', params: ({ event }) => event } },
        ],
      },
    },
    repaid: { type: 'final' },
    liquidated: { type: 'final' },
    // Liquidated with something still owed: repayments of any amount reduce it; the last one ends the advance repaid.
    shortfall: {
      on: { REPAY: repayTransitions },
    },
  },
})

// The state list above is this machine's: the type checker refuses a state added to one and not the other.
export const advanceStatesChecked: StatesOf<typeof advanceMachine, AdvanceState> = true
