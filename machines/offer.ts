// Offer: an approved underwriting decision waiting for, leased to, or funded by a lender. A declined decision does
// not create an offer actor: it is returned to the caller with its reasons and nothing is stored.
import { assign, setup } from 'xstate'
import type { Address, SourceRef } from './types.ts'

export type RiskBand = 'A' | 'B' | 'C'
export type OfferEndReason = 'stale' | 'leases_exhausted' | 'borrower_suspended' | 'source_closed'

export interface OfferInput {
  offerId: string
  borrower: Address
  network: string
  asset: string
  productType: string
  amountAtomic: bigint
  maximumFeeAtomic: bigint
  purpose: string
  supplier: string
  supplierDomain: string
  supplierAddress: Address
  source: SourceRef
  riskBand: RiskBand
  durationSeconds: number
  dueAtMs: number
  createdAtMs: number
  expiresAtMs: number
}

export interface OfferContext extends OfferInput {
  /** Every lease this offer has had, oldest first (bounded by the engine's leasesPerOfferMax). */
  leaseIds: string[]
  /** Lenders whose lease for this offer ended unpaid: never leased this offer again. */
  excludedLenders: Address[]
  currentLeaseId: string | null
  advanceId: string | null
  endReason: OfferEndReason | null
  endedAtMs: number | null
}

export type OfferEvent =
  | { type: 'LEASE'; leaseId: string; lender: Address; nowMs: number }
  | { type: 'LEASE_REFUSED'; leaseId: string; lender: Address; nowMs: number }
  | { type: 'LEASE_ENDED'; leaseId: string; lender: Address; nowMs: number }
  | { type: 'FUND'; advanceId: string; nowMs: number }
  | { type: 'EXPIRE'; reason: 'stale' | 'leases_exhausted'; nowMs: number }
  | { type: 'DECLINE'; reason: 'borrower_suspended' | 'source_closed'; nowMs: number }

export const offerMachine = setup({
  types: {
    input: {} as OfferInput,
    context: {} as OfferContext,
    events: {} as OfferEvent,
  },
  actions: {
    startLease: assign(({ context, event }) => {
      if (event.type !== 'LEASE') return {}
      return { currentLeaseId: event.leaseId, leaseIds: [...context.leaseIds, event.leaseId] }
    }),
    // A lease refused at once (insufficient balance) never becomes current: the offer stays waiting.
    recordRefusedLease: assign(({ context, event }) => {
      if (event.type !== 'LEASE_REFUSED') return {}
      return {
        leaseIds: [...context.leaseIds, event.leaseId],
        excludedLenders: [...context.excludedLenders, event.lender],
      }
    }),
    endLease: assign(({ context, event }) => {
      if (event.type !== 'LEASE_ENDED') return {}
      return { currentLeaseId: null, excludedLenders: [...context.excludedLenders, event.lender] }
    }),
    recordFunding: assign(({ event }) => {
      if (event.type !== 'FUND') return {}
      return { advanceId: event.advanceId, endedAtMs: event.nowMs }
    }),
    recordEnd: assign(({ event }) => {
      if (event.type !== 'EXPIRE' && event.type !== 'DECLINE') return {}
      return { endReason: event.reason, endedAtMs: event.nowMs, currentLeaseId: null }
    }),
  },
  guards: {
    isCurrentLease: ({ context, event }) => 'leaseId' in event && event.leaseId === context.currentLeaseId,
    // Stale means the offer TTL has passed; an offer that used up its leases may end before that.
    mayExpire: ({ context, event }) =>
      event.type === 'EXPIRE' && (event.reason === 'leases_exhausted' || event.nowMs >= context.expiresAtMs),
  },
}).createMachine({
  id: 'offer',
  context: ({ input }) => ({
    ...input,
    leaseIds: [],
    excludedLenders: [],
    currentLeaseId: null,
    advanceId: null,
    endReason: null,
    endedAtMs: null,
  }),
  initial: 'offered',
  states: {
    offered: {
      on: {
        LEASE: { target: 'leased', actions: 'startLease' },
        LEASE_REFUSED: { actions: 'recordRefusedLease' },
        EXPIRE: { guard: 'mayExpire', target: 'expired', actions: 'recordEnd' },
        DECLINE: { target: 'declined', actions: 'recordEnd' },
      },
    },
    leased: {
      on: {
        LEASE_ENDED: { guard: 'isCurrentLease', target: 'offered', actions: 'endLease' },
        FUND: { target: 'funded', actions: 'recordFunding' },
        DECLINE: { target: 'declined', actions: 'recordEnd' },
      },
    },
    funded: { type: 'final' },
    expired: { type: 'final' },
    declined: { type: 'final' },
  },
})
