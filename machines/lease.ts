// Lease: one offer leased to one lender for a short time. The lender's session key must pay the supplier before
// `expiresAtMs` (the paySupplier deadline on chain); a payment made in time may still be reported during
// `reportGraceMs` after it, and only then does TIME_OUT (sent by dispatch) end the lease. A lease whose wallet cannot
// pay is refused at once (INSUFFICIENT_BALANCE), and a lease whose offer is withdrawn is cancelled (CANCEL).
import { assign, setup } from 'xstate'
import type { RefusalTable } from './refusals.ts'
import type { Address, StatesOf, TxProof } from './types.ts'

export const LEASE_STATES = ['leased', 'paid', 'expired'] as const
export type LeaseState = (typeof LEASE_STATES)[number]
export const LEASE_END_REASONS = ['timeout', 'insufficient_balance', 'offer_closed'] as const
export type LeaseEndReason = (typeof LEASE_END_REASONS)[number]

export interface LeaseInput {
  leaseId: string
  offerId: string
  lender: Address
  payer: Address
  network: string
  asset: string
  amountAtomic: bigint
  feeAtomic: bigint
  supplierAddress: Address
  createdAtMs: number
  /** The paySupplier deadline. */
  expiresAtMs: number
  /** How long after the deadline a timely payment may still be reported, fixed when the lease is granted. */
  reportGraceMs: number
}

export interface LeaseContext extends LeaseInput {
  endReason: LeaseEndReason | null
  endedAtMs: number | null
  payment: TxProof | null
}

export type LeaseEvent =
  | { type: 'PAY'; payment: TxProof; nowMs: number }
  | { type: 'TIME_OUT'; nowMs: number }
  | { type: 'INSUFFICIENT_BALANCE'; nowMs: number }
  | { type: 'CANCEL'; nowMs: number }

/** What the lease answers when it refuses an event (see machines/refusals.ts). */
export const leaseRefusals: RefusalTable<LeaseEvent> = {
  // A report of a payment after the lease expired is rejected as such (spec section 3), not as "not live".
  PAY: { code: 'lease_not_live', states: { expired: 'lease_expired' } },
  TIME_OUT: { code: 'lease_not_live', guarded: 'lease_not_due' },
  INSUFFICIENT_BALANCE: { code: 'lease_not_live' },
  CANCEL: { code: 'lease_not_live' },
}

export const leaseMachine = setup({
  types: {
    input: {} as LeaseInput,
    context: {} as LeaseContext,
    events: {} as LeaseEvent,
  },
  actions: {
    recordPayment: assign((_, params: { payment: TxProof; nowMs: number }) => ({ payment: params.payment, endedAtMs: params.nowMs })),
    recordTimeout: assign(({ event }) => ({ endReason: 'timeout' as const, endedAtMs: event.nowMs })),
    recordInsufficientBalance: assign(({ event }) => ({
      endReason: 'insufficient_balance' as const,
      endedAtMs: event.nowMs,
    })),
    recordCancel: assign(({ event }) => ({ endReason: 'offer_closed' as const, endedAtMs: event.nowMs })),
  },
  guards: {
    // The engine's clock is the caller's `nowMs`; a lease ends exactly when its report grace after the deadline ends.
    isPastReportGrace: ({ context, event }) => event.nowMs >= context.expiresAtMs + context.reportGraceMs,
  },
}).createMachine({
  id: 'lease',
  context: ({ input }) => ({ ...input, endReason: null, endedAtMs: null, payment: null }),
  initial: 'leased',
  states: {
    leased: {
      on: {
        PAY: { target: 'paid', actions: { type: 'recordPayment', params: ({ event }) => event } },
        TIME_OUT: { guard: 'isPastReportGrace', target: 'expired', actions: 'recordTimeout' },
        INSUFFICIENT_BALANCE: { target: 'expired', actions: 'recordInsufficientBalance' },
        CANCEL: { target: 'expired', actions: 'recordCancel' },
      },
    },
    paid: { type: 'final' },
    expired: { type: 'final' },
  },
})

// The state list above is this machine's: the type checker refuses a state added to one and not the other.
export const leaseStatesChecked: StatesOf<typeof leaseMachine, LeaseState> = true
