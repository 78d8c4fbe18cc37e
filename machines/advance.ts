// Advance: created only by a verified supplier payment. It ends repaid (a Repaid fact or the job's settlement), or
// liquidated (fully recovered) or closed with a recorded shortfall: once defaulted (its job failed), or straight from
// active once it is past its due time (it defaults as it is liquidated).
import { assign, setup } from 'xstate'
import type { RefusalTable } from './refusals.ts'
import type { Address, SourceRef, StatesOf, TxProof } from './types.ts'

export const ADVANCE_STATES = ['active', 'defaulted', 'repaid', 'liquidated', 'shortfall'] as const
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
  /** Part of the fee that goes to the insurance reserve when the advance is repaid. */
  insuranceAtomic: bigint
  supplierAddress: Address
  payment: TxProof
  fundedAtMs: number
  dueAtMs: number
}

export interface RepaymentRecord {
  kind: 'repaid' | 'job_settlement'
  network: string
  txHash: `0x${string}`
  logIndex: number | null
  payer: Address | null
  lenderAmountAtomic: bigint
  reserveAmountAtomic: bigint
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

export interface AdvanceContext extends AdvanceInput {
  defaultReason: string | null
  defaultedAtMs: number | null
  repayment: RepaymentRecord | null
  recovery: RecoveryRecord | null
  endedAtMs: number | null
}

export type AdvanceEvent =
  | { type: 'REPAY'; repayment: RepaymentRecord; nowMs: number }
  | { type: 'DEFAULT'; reason: string; nowMs: number }
  | { type: 'LIQUIDATE'; recovery: RecoveryRecord; nowMs: number }

/** What the advance answers when it refuses an event (see machines/refusals.ts). */
export const advanceRefusals: RefusalTable<AdvanceEvent> = {
  REPAY: { code: 'advance_not_open' },
  DEFAULT: { code: 'advance_not_active' },
  LIQUIDATE: { code: 'advance_not_in_default' },
}

export const advanceMachine = setup({
  types: {
    input: {} as AdvanceInput,
    context: {} as AdvanceContext,
    events: {} as AdvanceEvent,
  },
  actions: {
    recordRepayment: assign((_, params: { repayment: RepaymentRecord; nowMs: number }) => ({
      repayment: params.repayment,
      endedAtMs: params.nowMs,
    })),
    recordDefault: assign((_, params: { reason: string; nowMs: number }) => ({ defaultReason: params.reason, defaultedAtMs: params.nowMs })),
    recordPastDue: assign(({ event }) => ({ defaultReason: 'past_due', defaultedAtMs: event.nowMs })),
    recordRecovery: assign((_, params: { recovery: RecoveryRecord; nowMs: number }) => ({ recovery: params.recovery, endedAtMs: params.nowMs })),
  },
  guards: {
    isFullyRecovered: (_, params: { recovery: RecoveryRecord }) => params.recovery.shortfallAtomic === 0n,
    // Due means the due time has come: at dueAtMs the advance may be liquidated.
    isPastDue: ({ context, event }) => event.nowMs >= context.dueAtMs,
    isPastDueAndFullyRecovered: ({ context, event }, params: { recovery: RecoveryRecord }) =>
      event.nowMs >= context.dueAtMs && params.recovery.shortfallAtomic === 0n,
  },
}).createMachine({
  id: 'advance',
  context: ({ input }) => ({
    ...input,
    defaultReason: null,
    defaultedAtMs: null,
    repayment: null,
    recovery: null,
    endedAtMs: null,
  }),
  initial: 'active',
  states: {
    active: {
      on: {
        REPAY: { target: 'repaid', actions: { type: 'recordRepayment', params: ({ event }) => event } },
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
        REPAY: { target: 'repaid', actions: { type: 'recordRepayment', params: ({ event }) => event } },
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
    shortfall: { type: 'final' },
  },
})

// The state list above is this machine's: the type checker refuses a state added to one and not the other.
export const advanceStatesChecked: StatesOf<typeof advanceMachine, AdvanceState> = true
