// Job: a funded receivable (the client escrowed it on chain). Advances drawn against it keep it active; completion
// settles them from the escrow; failure suspends the borrower and leaves open advances to recovery.
import { setup } from 'xstate'
import { assign } from './assign.ts'
import type { RefusalTable } from './refusals.ts'
import type { Address, StatesOf, TxProof } from './types.ts'

export const JOB_STATES = ['funded', 'active', 'defaulted', 'completed', 'failed'] as const
export type JobState = (typeof JOB_STATES)[number]

/**
 * Why a job failed: a code from this fixed, published list, never the client's own text (the reason is part of the
 * borrower's signed, public passport entry). The first five are the client's (POST /credit/jobs/{jobId}/fail);
 * escrow_reclaimed (the chain follower's, a job its client reclaimed on chain) and failed_on_chain (the service's
 * repair of a failJob mined and never recorded) are reserved.
 */
export const JOB_FAILURE_REASONS = ['not_delivered', 'late', 'defective', 'cancelled', 'other', 'escrow_reclaimed', 'failed_on_chain'] as const
export type JobFailureReason = (typeof JOB_FAILURE_REASONS)[number]
const FAILURE_REASONS: ReadonlySet<string> = new Set(JOB_FAILURE_REASONS)
export const isJobFailureReason = (reason: string): reason is JobFailureReason => FAILURE_REASONS.has(reason)

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
  /**
   * The job's key on its network's credit contract, the one its funding was made under: its network's key
   * (src/chain/ids.ts jobKey), or for a job funded under the legacy rule (every job stored before per-network keys,
   * and a funding under it registered since) keccak256(utf8(jobId)).
   */
  jobKey: `0x${string}`
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
  failureReason: JobFailureReason | null
  /** keccak256 of the UTF-8 note the client gave with the failure (its text is never stored nor published), or null. */
  failureNoteHash: `0x${string}` | null
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
      /** The capacity the advance held on the job (its principal and fee, capacity.ts advanceCommitmentAtomic). */
      committedAtomic: bigint
      revenueUsedAtomic: bigint
      collateralUsedAtomic: bigint
      nowMs: number
    }
  | { type: 'COMPLETE'; settlement: { network: string; txHash: `0x${string}` }; nowMs: number }
  /** `releasedAtomic`: the capacity of the job's waiting offers (capacity.ts offerCommitmentAtomic), withdrawn with the failure. */
  | { type: 'FAIL'; reason: JobFailureReason; noteHash?: `0x${string}` | null; releasedAtomic: bigint; nowMs: number }

/** What the job answers when it refuses an event (see machines/refusals.ts). */
export const jobRefusals: RefusalTable<JobEvent> = {
  COLLATERAL_POSTED: { code: 'job_not_open' },
  COMMIT: { code: 'job_not_open' },
  RELEASE: { code: 'job_not_open' },
  ADVANCE_OPENED: { code: 'job_not_open' },
  ADVANCE_CLOSED: { code: 'job_not_open', guarded: 'advance_not_on_job' },
  COMPLETE: { code: 'job_not_open' },
  FAIL: { code: 'job_not_open' },
}

export const jobMachine = setup({
  types: {
    input: {} as JobInput,
    context: {} as JobContext,
    events: {} as JobEvent,
  },
  actions: {
    addCollateral: assign(({ context }, params: { amountAtomic: bigint }) => ({
      collateralAtomic: context.collateralAtomic + params.amountAtomic,
    })),
    commitCapacity: assign(({ context }, params: { amountAtomic: bigint }) => ({
      committedAtomic: context.committedAtomic + params.amountAtomic,
    })),
    releaseCapacity: assign(({ context }, params: { amountAtomic: bigint }) => ({
      committedAtomic: context.committedAtomic - params.amountAtomic,
    })),
    openAdvance: assign(({ context }, params: { advanceId: string }) => ({ advanceIds: [...context.advanceIds, params.advanceId] })),
    closeAdvance: assign(
      ({ context }, params: { advanceId: string; committedAtomic: bigint; revenueUsedAtomic: bigint; collateralUsedAtomic: bigint }) => ({
        advanceIds: context.advanceIds.filter((id) => id !== params.advanceId),
        committedAtomic: context.committedAtomic - params.committedAtomic,
        revenueUsedAtomic: context.revenueUsedAtomic + params.revenueUsedAtomic,
        collateralUsedAtomic: context.collateralUsedAtomic + params.collateralUsedAtomic,
      }),
    ),
    recordSettlement: assign((_, params: { settlement: { network: string; txHash: `0x${string}` }; nowMs: number }) => ({
      settlement: params.settlement,
      advanceIds: [],
      committedAtomic: 0n,
      endedAtMs: params.nowMs,
    })),
    recordFailure: assign(({ context }, params: { reason: JobFailureReason; noteHash?: `0x${string}` | null; releasedAtomic: bigint; nowMs: number }) => ({
      failureReason: params.reason,
      failureNoteHash: params.noteHash ?? null,
      committedAtomic: context.committedAtomic - params.releasedAtomic,
      endedAtMs: params.nowMs,
    })),
  },
  guards: {
    closesLastAdvance: ({ context }, params: { advanceId: string }) =>
      context.advanceIds.length === 1 && context.advanceIds[0] === params.advanceId,
    // A failed job is over once nothing live holds its capacity: no open advance, and no closing offer (withdrawn
    // under a lease whose authorization could still be paid: a payment opens one more advance on the job).
    closesLastOfFailedJob: ({ context }, params: { advanceId: string; committedAtomic: bigint }) =>
      context.advanceIds.length === 1 && context.advanceIds[0] === params.advanceId && context.committedAtomic === params.committedAtomic,
    releasesLastOfFailedJob: ({ context }, params: { amountAtomic: bigint }) =>
      context.advanceIds.length === 0 && context.committedAtomic === params.amountAtomic,
    leavesClosingOffers: ({ context }, params: { releasedAtomic: bigint }) => context.committedAtomic > params.releasedAtomic,
    isOpenAdvance: ({ context }, params: { advanceId: string }) => context.advanceIds.includes(params.advanceId),
  },
}).createMachine({
  id: 'job',
  // Field by field rather than `...input` (as the offer's and the advance's): a spread that adds keys takes V8's slow
  // path. The keys keep the input's order (src/engine/jobs.ts createJob), and JobContext makes the type checker refuse
  // a field left out.
  context: ({ input }) => ({
    jobId: input.jobId, client: input.client, borrower: input.borrower, network: input.network, asset: input.asset,
    receivableAtomic: input.receivableAtomic, dueAtMs: input.dueAtMs, createdAtMs: input.createdAtMs, funding: input.funding, jobKey: input.jobKey,
    collateralAtomic: 0n,
    committedAtomic: 0n,
    advanceIds: [],
    revenueUsedAtomic: 0n,
    collateralUsedAtomic: 0n,
    settlement: null,
    failureReason: null,
    failureNoteHash: null,
    endedAtMs: null,
  }),
  initial: 'funded',
  states: {
    funded: {
      on: {
        COLLATERAL_POSTED: { actions: { type: 'addCollateral', params: ({ event }) => event } },
        COMMIT: { actions: { type: 'commitCapacity', params: ({ event }) => event } },
        RELEASE: { actions: { type: 'releaseCapacity', params: ({ event }) => event } },
        ADVANCE_OPENED: { target: 'active', actions: { type: 'openAdvance', params: ({ event }) => event } },
        COMPLETE: { target: 'completed', actions: { type: 'recordSettlement', params: ({ event }) => event } },
        FAIL: [
          {
            guard: { type: 'leavesClosingOffers', params: ({ event }) => event },
            target: 'defaulted',
            actions: { type: 'recordFailure', params: ({ event }) => event },
          },
          { target: 'failed', actions: { type: 'recordFailure', params: ({ event }) => event } },
        ],
      },
    },
    active: {
      on: {
        COLLATERAL_POSTED: { actions: { type: 'addCollateral', params: ({ event }) => event } },
        COMMIT: { actions: { type: 'commitCapacity', params: ({ event }) => event } },
        RELEASE: { actions: { type: 'releaseCapacity', params: ({ event }) => event } },
        ADVANCE_OPENED: { actions: { type: 'openAdvance', params: ({ event }) => event } },
        ADVANCE_CLOSED: [
          {
            guard: { type: 'closesLastAdvance', params: ({ event }) => event },
            target: 'funded',
            actions: { type: 'closeAdvance', params: ({ event }) => event },
          },
          { guard: { type: 'isOpenAdvance', params: ({ event }) => event }, actions: { type: 'closeAdvance', params: ({ event }) => event } },
        ],
        COMPLETE: { target: 'completed', actions: { type: 'recordSettlement', params: ({ event }) => event } },
        FAIL: { target: 'defaulted', actions: { type: 'recordFailure', params: ({ event }) => event } },
      },
    },
    // Failed with advances still open, or offers closing: the job's escrow and collateral stay available to their
    // recovery. A closing offer paid before its lease's deadline opens one more advance here (born defaulted), and
    // collateral posted before the failure (the contract takes it only while the job is open there) counts here when
    // the chain follower learns of it after the failure was recorded.
    defaulted: {
      on: {
        COLLATERAL_POSTED: { actions: { type: 'addCollateral', params: ({ event }) => event } },
        RELEASE: [
          {
            guard: { type: 'releasesLastOfFailedJob', params: ({ event }) => event },
            target: 'failed',
            actions: { type: 'releaseCapacity', params: ({ event }) => event },
          },
          { actions: { type: 'releaseCapacity', params: ({ event }) => event } },
        ],
        ADVANCE_OPENED: { actions: { type: 'openAdvance', params: ({ event }) => event } },
        ADVANCE_CLOSED: [
          {
            guard: { type: 'closesLastOfFailedJob', params: ({ event }) => event },
            target: 'failed',
            actions: { type: 'closeAdvance', params: ({ event }) => event },
          },
          { guard: { type: 'isOpenAdvance', params: ({ event }) => event }, actions: { type: 'closeAdvance', params: ({ event }) => event } },
        ],
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
})

// The state list above is this machine's: the type checker refuses a state added to one and not the other.
export const jobStatesChecked: StatesOf<typeof jobMachine, JobState> = true
