// Offer: an approved underwriting decision waiting for, leased to, or funded by a lender. A declined decision does
// not create an offer actor: it is returned to the caller with its reasons and nothing is stored. An offer withdrawn
// while leased is `closing`, not declined: the lease authorization the service signed stays payable on chain until its
// deadline, and a payment under it is the lender's money (design-engine-9-10.md, "leases are never cancelled while
// their authorization can still be used"); it ends declined when the lease is over unpaid, funded if it was paid.
import { and, setup } from 'xstate'
import { assign } from './assign.ts'
import type { RefusalTable } from './refusals.ts'
import type { Address, SourceRef, StatesOf } from './types.ts'

export const OFFER_STATES = ['offered', 'leased', 'closing', 'funded', 'expired', 'declined'] as const
export type OfferState = (typeof OFFER_STATES)[number]
export const RISK_BANDS = ['A', 'B', 'C'] as const
export type RiskBand = (typeof RISK_BANDS)[number]
export const OFFER_END_REASONS = ['stale', 'leases_exhausted', 'borrower_suspended', 'source_closed'] as const
export type OfferEndReason = (typeof OFFER_END_REASONS)[number]

export interface OfferInput {
  offerId: string
  /** The offer's key on chain (the advance's key once paid): salted, not guessable from offerId. */
  offerKey: `0x${string}`
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
  /**
   * The offer's TTL deadline on its network's chain time (the observed block time when it was created, plus the TTL;
   * the service clock before the network's chain time was first observed): timers pause while the chain is not seen.
   */
  expiresAtMs: number
}

export interface OfferContext extends OfferInput {
  /** Every lease this offer has had, oldest first (bounded by the engine's leasesPerOfferMax). */
  leaseIds: string[]
  /** Lenders whose lease for this offer ended unpaid: never leased this offer again. */
  excludedLenders: Address[]
  currentLeaseId: string | null
  advanceId: string | null
  /** Why it ended expired or declined; while closing, why it was withdrawn. */
  endReason: OfferEndReason | null
  endedAtMs: number | null
}

/**
 * `chainTimeMs`: the offer's network's observed chain time (the clock its TTL runs on, the one its expiry pass reads);
 * `nowMs`: the service's clock.
 */
export type OfferEvent =
  | { type: 'LEASE'; leaseId: string; lender: Address; chainTimeMs: number; nowMs: number }
  | { type: 'LEASE_REFUSED'; leaseId: string; lender: Address; chainTimeMs: number; nowMs: number }
  | { type: 'LEASE_ENDED'; leaseId: string; lender: Address; chainTimeMs: number; nowMs: number }
  | { type: 'FUND'; advanceId: string; nowMs: number }
  | { type: 'EXPIRE'; reason: 'stale' | 'leases_exhausted'; chainTimeMs: number; nowMs: number }
  | { type: 'DECLINE'; reason: 'borrower_suspended' | 'source_closed'; nowMs: number }

/** What the offer answers when it refuses an event (see machines/refusals.ts). */
export const offerRefusals: RefusalTable<OfferEvent> = {
  LEASE: { code: 'offer_not_offered', guarded: 'offer_stale' },
  LEASE_REFUSED: { code: 'offer_not_offered', guarded: 'offer_stale' },
  LEASE_ENDED: { code: 'offer_not_leased', guarded: 'lease_not_current' },
  FUND: { code: 'offer_not_leased' },
  EXPIRE: { code: 'offer_not_offered', guarded: 'offer_not_due' },
  DECLINE: { code: 'offer_closed' },
}

/**
 * A copy of an offer's context as one object literal, in the context factory's order (the offer's view starts from
 * it, src/engine/views.ts); the type checker refuses a field left out.
 */
export function offerContextCopy(c: OfferContext): OfferContext {
  return {
    offerId: c.offerId, offerKey: c.offerKey, borrower: c.borrower, network: c.network, asset: c.asset,
    productType: c.productType, amountAtomic: c.amountAtomic, maximumFeeAtomic: c.maximumFeeAtomic, purpose: c.purpose,
    supplier: c.supplier, supplierDomain: c.supplierDomain, supplierAddress: c.supplierAddress, source: c.source,
    riskBand: c.riskBand, durationSeconds: c.durationSeconds, dueAtMs: c.dueAtMs, createdAtMs: c.createdAtMs,
    expiresAtMs: c.expiresAtMs, leaseIds: c.leaseIds, excludedLenders: c.excludedLenders, currentLeaseId: c.currentLeaseId,
    advanceId: c.advanceId, endReason: c.endReason, endedAtMs: c.endedAtMs,
  }
}

export const offerMachine = setup({
  types: {
    input: {} as OfferInput,
    context: {} as OfferContext,
    events: {} as OfferEvent,
  },
  actions: {
    startLease: assign(({ context }, params: { leaseId: string }) => ({
      currentLeaseId: params.leaseId,
      leaseIds: [...context.leaseIds, params.leaseId],
    })),
    // A lease refused at once (insufficient balance) never becomes current: the offer stays waiting.
    recordRefusedLease: assign(({ context }, params: { leaseId: string; lender: Address }) => ({
      leaseIds: [...context.leaseIds, params.leaseId],
      excludedLenders: [...context.excludedLenders, params.lender],
    })),
    endLease: assign(({ context }, params: { lender: Address }) => ({
      currentLeaseId: null,
      excludedLenders: [...context.excludedLenders, params.lender],
    })),
    // The lease ended at or after the offer's expiry instant: what endLease and then an EXPIRE (stale) would write,
    // in one assign (a second one would copy the 24-key context again).
    endLeaseStale: assign(({ context }, params: { lender: Address; nowMs: number }) => ({
      currentLeaseId: null,
      excludedLenders: [...context.excludedLenders, params.lender],
      endReason: 'stale' as const,
      endedAtMs: params.nowMs,
    })),
    // A closing offer paid after all is funded: the withdrawal's reason no longer describes how it ended.
    recordFunding: assign((_, params: { advanceId: string; nowMs: number }) => ({ advanceId: params.advanceId, endedAtMs: params.nowMs, endReason: null })),
    recordClosing: assign((_, params: { reason: OfferEndReason }) => ({ endReason: params.reason })),
    recordClosed: assign((_, params: { nowMs: number }) => ({ endedAtMs: params.nowMs, currentLeaseId: null })),
    recordEnd: assign((_, params: { reason: OfferEndReason; nowMs: number }) => ({
      endReason: params.reason,
      endedAtMs: params.nowMs,
      currentLeaseId: null,
    })),
  },
  guards: {
    isCurrentLease: ({ context, event }) => event.type === 'LEASE_ENDED' && event.leaseId === context.currentLeaseId,
    // The offer TTL, on the network's chain time: a lender may take the offer before its expiry instant, from then on
    // it is stale.
    isFresh: ({ context, event }) => 'chainTimeMs' in event && event.chainTimeMs < context.expiresAtMs,
    isStale: ({ context, event }) => 'chainTimeMs' in event && event.chainTimeMs >= context.expiresAtMs,
    // The engine's limit of leases per offer was reached: the offer may end before its TTL.
    isOutOfLeases: (_, params: { reason: 'stale' | 'leases_exhausted' }) => params.reason === 'leases_exhausted',
  },
}).createMachine({
  id: 'offer',
  // Field by field rather than `...input`: V8 copied the spread far slower here (in the profile of
  // bench/match-request.ts, about 12 % of requestCredit's CPU spread, under 2 % field by field); the keys keep the
  // input's order, and OfferContext makes the type checker refuse a field left out.
  context: ({ input }) => ({
    offerId: input.offerId, offerKey: input.offerKey, borrower: input.borrower, network: input.network, asset: input.asset,
    productType: input.productType, amountAtomic: input.amountAtomic, maximumFeeAtomic: input.maximumFeeAtomic,
    purpose: input.purpose, supplier: input.supplier, supplierDomain: input.supplierDomain,
    supplierAddress: input.supplierAddress, source: input.source, riskBand: input.riskBand,
    durationSeconds: input.durationSeconds, dueAtMs: input.dueAtMs, createdAtMs: input.createdAtMs, expiresAtMs: input.expiresAtMs,
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
        LEASE: { guard: 'isFresh', target: 'leased', actions: { type: 'startLease', params: ({ event }) => event } },
        LEASE_REFUSED: { guard: 'isFresh', actions: { type: 'recordRefusedLease', params: ({ event }) => event } },
        // A stale offer ends stale, whatever the caller asked: staleness is this machine's rule.
        EXPIRE: [
          { guard: 'isStale', target: 'expired', actions: { type: 'recordEnd', params: ({ event }) => ({ reason: 'stale', nowMs: event.nowMs }) } },
          {
            guard: { type: 'isOutOfLeases', params: ({ event }) => event },
            target: 'expired',
            actions: { type: 'recordEnd', params: ({ event }) => event },
          },
        ],
        DECLINE: { target: 'declined', actions: { type: 'recordEnd', params: ({ event }) => event } },
        // A payment seen on chain under an earlier lease's authorization (its lease was timed out by a release that
        // expired leases on wall time): the contract only accepts a timely payment, so the offer is funded.
        FUND: { target: 'funded', actions: { type: 'recordFunding', params: ({ event }) => event } },
      },
    },
    leased: {
      on: {
        // A lease ended at or after the offer's expiry instant (the same comparison as EXPIRE's isStale): the offer
        // could only wait to expire, so it expires now, one transition instead of LEASE_ENDED then EXPIRE.
        LEASE_ENDED: [
          {
            guard: and(['isCurrentLease', 'isStale']),
            target: 'expired',
            actions: { type: 'endLeaseStale', params: ({ event }) => event },
          },
          {
            guard: 'isCurrentLease',
            target: 'offered',
            actions: { type: 'endLease', params: ({ event }) => event },
          },
        ],
        FUND: { target: 'funded', actions: { type: 'recordFunding', params: ({ event }) => event } },
        // Withdrawn under a lease whose authorization can still be paid: the lease lives on to its deadline.
        DECLINE: { target: 'closing', actions: { type: 'recordClosing', params: ({ event }) => event } },
      },
    },
    // Withdrawn, waiting for its lease to be paid or to be over on chain time: never leased or expired again.
    closing: {
      on: {
        LEASE_ENDED: {
          guard: 'isCurrentLease',
          target: 'declined',
          actions: { type: 'recordClosed', params: ({ event }) => event },
        },
        FUND: { target: 'funded', actions: { type: 'recordFunding', params: ({ event }) => event } },
      },
    },
    funded: { type: 'final' },
    expired: { type: 'final' },
    declined: { type: 'final' },
  },
})

// The state list above is this machine's: the type checker refuses a state added to one and not the other.
export const offerStatesChecked: StatesOf<typeof offerMachine, OfferState> = true
