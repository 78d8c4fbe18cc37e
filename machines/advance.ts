// Advance: created only by a verified supplier payment. It ends repaid (a Repaid fact or the job's settlement), or
// defaulted and then liquidated (fully recovered) or closed with a recorded shortfall.
import { assign, setup } from 'xstate'
import type { Address, SourceRef, TxProof } from './types.ts'

export interface AdvanceInput {
  advanceId: string
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

export const advanceMachine = setup({
  types: {
    input: {} as AdvanceInput,
    context: {} as AdvanceContext,
    events: {} as AdvanceEvent,
  },
  actions: {
    recordRepayment: assign(({ event }) => {
      if (event.type !== 'REPAY') return {}
      return { repayment: event.repayment, endedAtMs: event.nowMs }
    }),
    recordDefault: assign(({ event }) => {
      if (event.type !== 'DEFAULT') return {}
      return { defaultReason: event.reason, defaultedAtMs: event.nowMs }
    }),
    recordRecovery: assign(({ event }) => {
      if (event.type !== 'LIQUIDATE') return {}
      return { recovery: event.recovery, endedAtMs: event.nowMs }
    }),
  },
  guards: {
    isFullyRecovered: ({ event }) => event.type === 'LIQUIDATE' && event.recovery.shortfallAtomic === 0n,
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
        REPAY: { target: 'repaid', actions: 'recordRepayment' },
        DEFAULT: { target: 'defaulted', actions: 'recordDefault' },
      },
    },
    defaulted: {
      on: {
        REPAY: { target: 'repaid', actions: 'recordRepayment' },
        LIQUIDATE: [
          { guard: 'isFullyRecovered', target: 'liquidated', actions: 'recordRecovery' },
          { target: 'shortfall', actions: 'recordRecovery' },
        ],
      },
    },
    repaid: { type: 'final' },
    liquidated: { type: 'final' },
    shortfall: { type: 'final' },
  },
})
