// Job: a funded receivable (the client escrowed it on chain). Advances drawn against it keep it active; completion
// settles them from the escrow; failure suspends the borrower and leaves open advances to recovery.
import { assign, setup } from 'xstate'
import type { Address, TxProof } from './types.ts'

export interface JobInput {
  jobId: string
  client: Address
  borrower: Address
  network: string
  asset: string
  receivableAtomic: bigint
  dueAtMs: number
  createdAtMs: number
  funding: TxProof
}

export interface JobContext extends JobInput {
  collateralAtomic: bigint
  /** Principal of live offers and open advances drawn on this job. */
  committedAtomic: bigint
  /** Open advances, in the order they were funded. */
  advanceIds: string[]
  /** Escrowed receivable and collateral already paid out by liquidations. */
  revenueUsedAtomic: bigint
  collateralUsedAtomic: bigint
  settlement: { network: string; txHash: `0x${string}` } | null
  failureReason: string | null
  endedAtMs: number | null
}

export type JobEvent =
  | { type: 'COLLATERAL_POSTED'; amountAtomic: bigint; nowMs: number }
  | { type: 'COMMIT'; amountAtomic: bigint; nowMs: number }
  | { type: 'RELEASE'; amountAtomic: bigint; nowMs: number }
  | { type: 'ADVANCE_OPENED'; advanceId: string; nowMs: number }
  | {
      type: 'ADVANCE_CLOSED'
      advanceId: string
      principalAtomic: bigint
      revenueUsedAtomic: bigint
      collateralUsedAtomic: bigint
      nowMs: number
    }
  | { type: 'COMPLETE'; settlement: { network: string; txHash: `0x${string}` }; nowMs: number }
  | { type: 'FAIL'; reason: string; nowMs: number }

export const jobMachine = setup({
  types: {
    input: {} as JobInput,
    context: {} as JobContext,
    events: {} as JobEvent,
  },
  actions: {
    addCollateral: assign(({ context, event }) => {
      if (event.type !== 'COLLATERAL_POSTED') return {}
      return { collateralAtomic: context.collateralAtomic + event.amountAtomic }
    }),
    commitCapacity: assign(({ context, event }) => {
      if (event.type !== 'COMMIT') return {}
      return { committedAtomic: context.committedAtomic + event.amountAtomic }
    }),
    releaseCapacity: assign(({ context, event }) => {
      if (event.type !== 'RELEASE') return {}
      return { committedAtomic: context.committedAtomic - event.amountAtomic }
    }),
    openAdvance: assign(({ context, event }) => {
      if (event.type !== 'ADVANCE_OPENED') return {}
      return { advanceIds: [...context.advanceIds, event.advanceId] }
    }),
    closeAdvance: assign(({ context, event }) => {
      if (event.type !== 'ADVANCE_CLOSED') return {}
      return {
        advanceIds: context.advanceIds.filter((id) => id !== event.advanceId),
        committedAtomic: context.committedAtomic - event.principalAtomic,
        revenueUsedAtomic: context.revenueUsedAtomic + event.revenueUsedAtomic,
        collateralUsedAtomic: context.collateralUsedAtomic + event.collateralUsedAtomic,
      }
    }),
    recordSettlement: assign(({ event }) => {
      if (event.type !== 'COMPLETE') return {}
      return { settlement: event.settlement, advanceIds: [], committedAtomic: 0n, endedAtMs: event.nowMs }
    }),
    recordFailure: assign(({ event }) => {
      if (event.type !== 'FAIL') return {}
      return { failureReason: event.reason, endedAtMs: event.nowMs }
    }),
  },
  guards: {
    closesLastAdvance: ({ context, event }) =>
      event.type === 'ADVANCE_CLOSED' && context.advanceIds.length === 1 && context.advanceIds[0] === event.advanceId,
    isOpenAdvance: ({ context, event }) =>
      event.type === 'ADVANCE_CLOSED' && context.advanceIds.includes(event.advanceId),
  },
}).createMachine({
  id: 'job',
  context: ({ input }) => ({
    ...input,
    collateralAtomic: 0n,
    committedAtomic: 0n,
    advanceIds: [],
    revenueUsedAtomic: 0n,
    collateralUsedAtomic: 0n,
    settlement: null,
    failureReason: null,
    endedAtMs: null,
  }),
  initial: 'funded',
  states: {
    funded: {
      on: {
        COLLATERAL_POSTED: { actions: 'addCollateral' },
        COMMIT: { actions: 'commitCapacity' },
        RELEASE: { actions: 'releaseCapacity' },
        ADVANCE_OPENED: { target: 'active', actions: 'openAdvance' },
        COMPLETE: { target: 'completed', actions: 'recordSettlement' },
        FAIL: { target: 'failed', actions: 'recordFailure' },
      },
    },
    active: {
      on: {
        COLLATERAL_POSTED: { actions: 'addCollateral' },
        COMMIT: { actions: 'commitCapacity' },
        RELEASE: { actions: 'releaseCapacity' },
        ADVANCE_OPENED: { actions: 'openAdvance' },
        ADVANCE_CLOSED: [
          { guard: 'closesLastAdvance', target: 'funded', actions: 'closeAdvance' },
          { guard: 'isOpenAdvance', actions: 'closeAdvance' },
        ],
        COMPLETE: { target: 'completed', actions: 'recordSettlement' },
        FAIL: { target: 'defaulted', actions: 'recordFailure' },
      },
    },
    // Failed with advances still open: the job's escrow and collateral stay available to their recovery.
    defaulted: {
      on: {
        RELEASE: { actions: 'releaseCapacity' },
        ADVANCE_CLOSED: [
          { guard: 'closesLastAdvance', target: 'failed', actions: 'closeAdvance' },
          { guard: 'isOpenAdvance', actions: 'closeAdvance' },
        ],
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
})
