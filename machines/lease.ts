// Lease: one offer leased to one lender for a short time. The lender's session key must pay the supplier by
// `expiresAtMs` (the paySupplier deadline on chain, whole seconds, inclusive). Payment, not its report, is what counts:
// TIME_OUT carries the network's observed chain time and ends the lease only once the chain has been seen past the
// deadline (a payment mined by then was applied first, src/engine/chain-facts.ts). A lease whose wallet cannot pay is
// refused at once (INSUFFICIENT_BALANCE), and a lease whose offer is withdrawn is cancelled (CANCEL).
import { setup } from 'xstate'
import { assign } from './assign.ts'
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
  /** The paySupplier deadline (the authorization's deadline is its whole second). */
  expiresAtMs: number
}

export interface LeaseContext extends LeaseInput {
  endReason: LeaseEndReason | null
  endedAtMs: number | null
  payment: TxProof | null
}

export type LeaseEvent =
  | { type: 'PAY'; payment: TxProof; nowMs: number }
  | { type: 'TIME_OUT'; chainTimeMs: number; nowMs: number }
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

/**
 * The first chain time (ms) at which a lease of this deadline is over: the contract accepts a payment while
 * block.timestamp <= deadline, with deadline = floor(expiresAtMs / 1000).
 */
export function leaseOverAtChainMs(expiresAtMs: number): number {
  return (Math.floor(expiresAtMs / 1000) + 1) * 1000
}

/** Whether the chain, observed at `chainTimeMs`, is past the lease's deadline. */
export function isPastDeadline(expiresAtMs: number, chainTimeMs: number): boolean {
  return chainTimeMs >= leaseOverAtChainMs(expiresAtMs)
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
    // The chain's block.timestamp (whole seconds) past the deadline second: no paySupplier can be mined any more.
    isPastDeadlineOnChain: ({ context }, params: { chainTimeMs: number }) => isPastDeadline(context.expiresAtMs, params.chainTimeMs),
  },
}).createMachine({
  id: 'lease',
  // Field by field rather than `...input`, as the offer's context (machines/offer.ts says why).
  context: ({ input }) => ({
    leaseId: input.leaseId, offerId: input.offerId, lender: input.lender, payer: input.payer, network: input.network,
    asset: input.asset, amountAtomic: input.amountAtomic, feeAtomic: input.feeAtomic,
    supplierAddress: input.supplierAddress, createdAtMs: input.createdAtMs, expiresAtMs: input.expiresAtMs,
    endReason: null, endedAtMs: null, payment: null,
  }),
  initial: 'leased',
  states: {
    leased: {
      on: {
        PAY: { target: 'paid', actions: { type: 'recordPayment', params: ({ event }) => event } },
        TIME_OUT: { guard: { type: 'isPastDeadlineOnChain', params: ({ event }) => event }, target: 'expired', actions: 'recordTimeout' },
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
