// Shared value types of the machines. Machines import nothing but xstate and these types, so they stay pure.
import type { AnyStateMachine, StateValueFrom } from 'xstate'

/** An EVM address, checksummed by the caller. */
export type Address = `0x${string}`

/** A verified on-chain fact: a transaction and, where an event proves it, the log index of that event. */
export interface TxProof {
  network: string
  txHash: `0x${string}`
  logIndex: number
}

/** The repayment source an offer or advance draws on. */
export interface SourceRef {
  kind: 'job' | 'backing'
  id: string
}

/** `true` exactly when `States` lists the states of the (flat) machine `M`, no more and no fewer. */
export type StatesOf<M extends AnyStateMachine, States extends string> = [StateValueFrom<M>] extends [States]
  ? [States] extends [StateValueFrom<M>]
    ? true
    : never
  : never
