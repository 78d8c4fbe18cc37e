// The four actor kinds of the engine, by the name their snapshots and diagrams carry.
import { advanceMachine } from './advance.ts'
import { jobMachine } from './job.ts'
import { leaseMachine } from './lease.ts'
import { offerMachine } from './offer.ts'

export { advanceMachine, jobMachine, leaseMachine, offerMachine }
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
