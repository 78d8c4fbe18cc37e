// The four actor kinds of the engine, by the name their snapshots and diagrams carry, with their refusal tables.
import { ADVANCE_STATES, advanceMachine, advanceRefusals } from './advance.ts'
import { isJobFailureReason, JOB_FAILURE_REASONS, JOB_STATES, jobMachine, jobRefusals } from './job.ts'
import { LEASE_END_REASONS, LEASE_STATES, leaseMachine, leaseRefusals } from './lease.ts'
import { OFFER_END_REASONS, OFFER_STATES, offerMachine, offerRefusals, RISK_BANDS } from './offer.ts'
import type { Refusal } from './refusals.ts'

export { advanceMachine, isJobFailureReason, jobMachine, leaseMachine, offerMachine }
export { advanceRefusals, jobRefusals, leaseRefusals, offerRefusals }
export { ADVANCE_STATES, JOB_FAILURE_REASONS, JOB_STATES, LEASE_STATES, OFFER_STATES, LEASE_END_REASONS, OFFER_END_REASONS, RISK_BANDS }
export { REPAYMENTS_LISTED_MAX, isPastDueAt, pastDueAtMs } from './advance.ts'
export { isPastDeadline, leaseOverAtChainMs } from './lease.ts'
export { offerContextCopy } from './offer.ts'
export { refusalCode, statesTaking, type Refusal, type RefusalTable } from './refusals.ts'
export type * from './advance.ts'
export type * from './job.ts'
export type * from './lease.ts'
export type * from './offer.ts'
export type * from './types.ts'

export const machines = {
  job: jobMachine,
  offer: offerMachine,
  lease: leaseMachine,
  advance: advanceMachine,
} as const

export type ActorKind = keyof typeof machines

/** Each kind's refusal table, by the kind's name. */
export const refusals: { readonly [K in ActorKind]: Readonly<Record<string, Refusal>> } = {
  job: jobRefusals,
  offer: offerRefusals,
  lease: leaseRefusals,
  advance: advanceRefusals,
}
