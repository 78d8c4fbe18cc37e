// A job's commands: creation by its client or borrower, collateral from its borrower, settlement at completion and
// failure, each checking who may act, sending the job machine its event (the machine decides) and applying what follows
// to the job's advances and offers. Called by engine.ts, which keeps the public surface.
import { isJobFailureReason, JOB_FAILURE_REASONS, jobMachine, type JobFailureReason, type TxProof } from '../../machines/index.ts'
import { expect, refused, send, startActor, wouldTake } from './actors.ts'
import { advanceDefaulted, applyRepayment, paymentInFull } from './advances.ts'
import { borrowerOf, suspend } from './borrowers.ts'
import { drain, touch, touchBorn } from './changes.ts'
import { keccak256, stringToBytes, type Hex } from 'viem'
import { fail, forbidden } from './errors.ts'
import { ID_PATTERNS } from './ids.ts'
import { sameAddress } from './keys.ts'
import { offerCommitmentAtomic } from './capacity.ts'
import { declineOffer } from './matching.ts'
import { jobSettlement } from './plans.ts'
import { isJobId } from './registration.ts'
import * as reputation from './reputation.ts'
import { isClientOrOperator } from './roles.ts'
import type { AdvanceActor, EngineState, JobActor } from './state.ts'
import type { ExecutedTx } from './ports.ts'
import type {
  Address, CollateralFact, CollateralPosition, CreateJobInput, EngineError, EngineResult, JobSettlementPlan, JobSettlementReceipt, JobView, PassportEvent,
  PostCollateralInput, RepaymentReceipt,
} from './types.ts'
import { viewOf } from './views.ts'

/**
 * `postedCollateral`: the job's CollateralPosted facts mined before the job was registered (its borrower may post as
 * soon as the client funded), which the chain follower could not apply to a job the service did not know yet.
 */
export function createJob(
  s: EngineState,
  input: CreateJobInput & { caller: Address; postedCollateral?: readonly CollateralFact[] },
  nowMs: number,
): EngineResult<JobView> {
  const refused = jobCreationRefusal(s, input, nowMs)
  if (refused) return refused
  const { jobId, client, borrower, network, asset, receivableAtomic, dueAtMs, funding } = input
  const jobKey = input.jobKey.toLowerCase() as Hex
  for (const posted of input.postedCollateral ?? []) {
    const invalid = invalidCollateral(borrower, posted)
    if (invalid) return invalid
  }
  const actor = startActor(jobMachine, { jobId, client, borrower, network, asset, receivableAtomic, dueAtMs, createdAtMs: nowMs, funding, jobKey }, s.actorRoot)
  touchBorn(s, 'job', jobId)
  s.jobs.set(input.jobId, actor)
  s.jobIdByKey?.set(jobKey, jobId)
  for (const posted of input.postedCollateral ?? []) expect(s, 'job', actor, { type: 'COLLATERAL_POSTED', amountAtomic: posted.amountAtomic, nowMs })
  borrowerOf(s, input.borrower)
  return drain(s, viewOf<JobView>(actor.getSnapshot()))
}

type JobCreationTerms = Pick<CreateJobInput, 'jobId' | 'client' | 'borrower' | 'receivableAtomic' | 'dueAtMs'> & { caller: Address }

/** Why the job cannot be created now (who asks, its id, its terms), or undefined. */
function jobCreationRefusal(s: EngineState, input: JobCreationTerms, nowMs: number): { ok: false; error: EngineError } | undefined {
  if (!sameAddress(input.caller, input.client) && !sameAddress(input.caller, input.borrower)) {
    return forbidden('a job is created by its client (the funder) or its borrower')
  }
  if (!isJobId(input.jobId)) return fail('invalid', 'invalid_job_id', `jobId must match ${ID_PATTERNS.job}`)
  if (s.jobs.has(input.jobId)) return fail('conflict', 'job_exists', `job ${input.jobId} exists`)
  if (input.receivableAtomic <= 0n) return fail('invalid', 'invalid_amount', 'receivableAtomic must be > 0')
  if (!Number.isInteger(input.dueAtMs) || input.dueAtMs <= nowMs) return fail('invalid', 'job_past_due', 'dueAt must be in the future')
  return undefined
}

/**
 * Whether createJob would take these terms now, asked before the registration's chain reads (the borrower's consent
 * by ERC-1271, the reclaim window, the collateral postings): a stranger's registration, or one of a job already
 * registered, must not cost the service those reads. createJob checks again in its own command.
 */
export function planJobCreation(s: EngineState, input: JobCreationTerms, nowMs: number): EngineResult<null> {
  return jobCreationRefusal(s, input, nowMs) ?? { ok: true, value: null, changes: [] }
}

/** Who may post collateral on the job, and what its proof must show (the CollateralPosted of the job's borrower). */
export function planCollateral(s: EngineState, input: { jobId: string; caller: Address }): EngineResult<{ network: string; asset: string; borrower: Address; jobKey: Hex }> {
  const job = s.jobs.get(input.jobId)
  if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
  const j = job.getSnapshot().context
  if (!sameAddress(input.caller, j.borrower)) return forbidden('collateral is posted by the job\'s borrower')
  return { ok: true, value: { network: j.network, asset: j.asset, borrower: j.borrower, jobKey: j.jobKey }, changes: [] }
}

export function postCollateral(s: EngineState, input: PostCollateralInput & { caller: Address }, nowMs: number): EngineResult<CollateralPosition> {
  const planned = planCollateral(s, input)
  if (!planned.ok) return planned
  const applied = applyCollateral(s, s.jobs.get(input.jobId) as JobActor, input, nowMs)
  return applied.ok ? drain(s, applied.value) : applied
}

/**
 * A verified CollateralPosted adds to the job's collateral, whoever reports it (its borrower's report, or the chain
 * follower, which applies every one of the contract's): the contract took the tokens, so the job holds them. The
 * contract takes collateral only from the job's borrower and only while the job is open there, which a job failed
 * in the engine may still have been when the posting was mined (the follower reads at the network's confirmations).
 */
export function applyCollateral(s: EngineState, job: JobActor, fact: CollateralFact, nowMs: number): { ok: true; value: CollateralPosition } | { ok: false; error: EngineError } {
  const j = job.getSnapshot().context
  const invalid = invalidCollateral(j.borrower, fact)
  if (invalid) return invalid
  const posted = send(s, 'job', job, { type: 'COLLATERAL_POSTED', amountAtomic: fact.amountAtomic, nowMs })
  if (!posted.accepted) return refused('job', j.jobId, posted)
  return { ok: true, value: positionOf(job, fact) }
}

/** The same answer as the posting's first application, changing nothing: the job counts it already. */
export function reportedCollateral(s: EngineState, input: PostCollateralInput & { caller: Address }): EngineResult<CollateralPosition> {
  const planned = planCollateral(s, input)
  if (!planned.ok) return planned
  return { ok: true, value: positionOf(s.jobs.get(input.jobId) as JobActor, input), changes: [] }
}

function positionOf(job: JobActor, fact: CollateralFact): CollateralPosition {
  const ctx = job.getSnapshot().context
  return {
    jobId: ctx.jobId, borrower: ctx.borrower, network: ctx.network, asset: ctx.asset, amountAtomic: fact.amountAtomic,
    totalCollateralAtomic: ctx.collateralAtomic, proof: fact.proof,
  }
}

/** The live job whose on-chain key is `key` (the one it was funded under, lower case), if any (the index is built at the first lookup, see EngineState). */
export function jobIdOfKey(s: EngineState, key: string): string | undefined {
  if (s.jobIdByKey === undefined) {
    s.jobIdByKey = new Map()
    for (const [jobId, job] of s.jobs) s.jobIdByKey.set(job.getSnapshot().context.jobKey, jobId)
  }
  return s.jobIdByKey.get(key)
}

function invalidCollateral(borrower: Address, fact: CollateralFact): { ok: false; error: EngineError } | undefined {
  if (!sameAddress(borrower, fact.borrower)) return fail('forbidden', 'not_job_borrower', 'collateral must be posted by the job borrower')
  if (fact.amountAtomic <= 0n) return fail('invalid', 'invalid_amount', 'amountAtomic must be > 0')
  return undefined
}

/**
 * Per-advance lender amounts and the reserve amount of the job's settlement transaction. `mined`: the settlement is on
 * chain already (its record is what is planned), so a leased offer on the job does not refuse it (jobSettlement).
 */
export function planJobSettlement(s: EngineState, input: { jobId: string; caller: Address; mined?: boolean }): EngineResult<JobSettlementPlan> {
  const { jobId } = input
  const job = s.jobs.get(jobId)
  if (!job) return fail('not_found', 'job_not_found', `job ${jobId} is not live`)
  if (!isClientOrOperator(s, job, input.caller)) return forbidden('a job is completed by its client or an operator')
  // A query sends nothing: it asks the machine whether it would take COMPLETE now.
  const open = wouldTake('job', job, { type: 'COMPLETE', settlement: { network: '', txHash: '0x' }, nowMs: 0 })
  if (!open.accepted) return refused('job', jobId, open)
  const planned = jobSettlement(s, job, input.mined === true)
  if (!planned.ok) return planned
  return { ok: true, value: planned.value, changes: [] }
}

/** Whether failJob would be taken now (who asks, the job's state), before the operator's failJob is sent on chain. */
export function planJobFailure(s: EngineState, input: FailureInput): EngineResult<{ jobId: string; network: string; funding: TxProof; jobKey: Hex; openAdvances: number }> {
  const job = s.jobs.get(input.jobId)
  if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
  if (!isClientOrOperator(s, job, input.caller)) return forbidden('a job is failed by its client or an operator')
  const reserved = reservedReason(input)
  if (reserved !== undefined) return reserved
  const open = wouldTake('job', job, { type: 'FAIL', reason: 'other', releasedAtomic: 0n, nowMs: 0 })
  if (!open.accepted) return refused('job', input.jobId, open)
  const j = job.getSnapshot().context
  // openAdvances: the job's advances neither repaid in full nor liquidated, as counted here (the contract's `unresolved`).
  return { ok: true, value: { jobId: j.jobId, network: j.network, funding: j.funding, jobKey: j.jobKey, openAdvances: j.advanceIds.length }, changes: [] }
}

/** Apply the executed settleJob transaction: every open advance on the job is repaid and the job completes. */
export function completeJob(s: EngineState, input: { jobId: string; caller: Address } & ExecutedTx, nowMs: number): EngineResult<JobSettlementReceipt> {
  const job = s.jobs.get(input.jobId)
  if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
  if (!isClientOrOperator(s, job, input.caller)) return forbidden('a job is completed by its client or an operator')
  // The settlement is mined: an offer leased since it was planned (a request matched meanwhile) cannot hold it up.
  const planned = jobSettlement(s, job, true)
  if (!planned.ok) return planned
  const plan = planned.value
  const completed = send(s, 'job', job, { type: 'COMPLETE', settlement: { network: input.network, txHash: input.txHash }, nowMs })
  if (!completed.accepted) return refused('job', input.jobId, completed)
  // The job's offers end with it: a waiting one is declined, a leased one is closing (its lease can no longer be paid
  // and ends at its deadline without a penalty); the completed job committed nothing any more, so their capacity is
  // not given back to it.
  for (const offer of [...s.offers.values()]) {
    const o = offer.getSnapshot().context
    if (o.source.kind === 'job' && o.source.id === plan.jobId) declineOffer(s, offer, 'source_closed', nowMs, false)
  }
  const receipts: RepaymentReceipt[] = []
  for (const item of plan.advances) {
    const advance = s.advances.get(item.advanceId) as AdvanceActor
    const a = advance.getSnapshot().context
    // The settlement pays what each advance still owes (a partially repaid one, only the rest).
    const repayment = paymentInFull(a, { kind: 'job_settlement', network: input.network, txHash: input.txHash, logIndex: null, payer: null })
    expect(s, 'advance', advance, { type: 'REPAY', repayment, nowMs })
    receipts.push(applyRepayment(s, a, repayment))
  }
  return drain(s, { ...plan, txHash: input.txHash, receipts })
}

/**
 * The capacity the job's waiting offers hold (offerCommitmentAtomic): what its FAIL gives back at once, for failJob and
 * reclaimJob alike; a leased offer keeps its own until its lease ends.
 */
function waitingCommitmentAtomic(s: EngineState, jobId: string): bigint {
  let committed = 0n
  for (const offer of s.offers.values()) {
    const snap = offer.getSnapshot()
    const o = snap.context
    if (o.source.kind === 'job' && o.source.id === jobId && snap.matches('offered')) committed += offerCommitmentAtomic(o)
  }
  return committed
}

/**
 * The reason a job ended by its client's or its borrower's reclaimJob on chain carries (JobView.failureReason), and only such a job:
 * reconciliation expects a Reclaimed job on chain from it and the API says "reclaimed", so /fail refuses it.
 */
export const ESCROW_RECLAIMED: JobFailureReason = 'escrow_reclaimed'

/**
 * The reason of a job whose failJob was mined and never recorded, and sent by no /fail of this service (each stores its
 * intent, with its reason, before its failJob: src/service/operator-commands.ts FailureIntent), recorded by the
 * service's repair once the chain follower saw its JobFailed (OperatorRepairs): no reason is known, so the record says
 * only what the chain shows.
 */
export const FAILED_ON_CHAIN: JobFailureReason = 'failed_on_chain'

/**
 * What a failure keeps of the client's note (FailureInput.noteHash, JobContext.failureNoteHash): keccak256 of its UTF-8
 * text, which the note's parties can recompute; the text itself is neither kept nor published.
 */
export function failureNoteHash(note: string): Hex {
  return keccak256(stringToBytes(note))
}

/**
 * A failure of a job: who asks, its reason (a code of JOB_FAILURE_REASONS), the keccak256 of the client's note if it
 * gave one (`noteHash`: the text itself is neither kept nor published), and `mined` for the repair of a failJob mined
 * and never recorded.
 */
export type FailureInput = { jobId: string; reason: JobFailureReason; noteHash?: `0x${string}`; caller: Address; mined?: boolean }

/**
 * The reasons /fail cannot give: one not in the published list (the reason is signed into the borrower's public
 * passport, so it is never a caller's text), escrow_reclaimed always (the follower's), failed_on_chain but for a mined
 * failJob's repair.
 */
function reservedReason(input: FailureInput): { ok: false; error: EngineError } | undefined {
  if (!isJobFailureReason(input.reason)) {
    return fail('invalid', 'failure_reason_unknown', `a failure's reason is one of ${JOB_FAILURE_REASONS.join(', ')}`)
  }
  if (input.reason === ESCROW_RECLAIMED) {
    return fail('invalid', 'failure_reason_reserved', `reason ${ESCROW_RECLAIMED} is reserved to a job its client or its borrower reclaimed on chain (the chain follower records it)`)
  }
  if (input.reason === FAILED_ON_CHAIN && input.mined !== true) {
    return fail('invalid', 'failure_reason_reserved', `reason ${FAILED_ON_CHAIN} is reserved to a failJob mined and never recorded (the service records it)`)
  }
  return undefined
}

/** A job its client or its borrower reclaimed, as the follower's batch applied it (ChainObservationOutcome.reclaimed). */
export interface ReclaimedJob {
  proofKey: string
  jobId: string
  declinedOfferIds: string[]
  /** Collateral the contract held and released that the job had not counted: counted on the job by the reclaim. */
  uncountedCollateralAtomic: bigint
}

/**
 * The job's client (or its borrower, outsider29) ended the job on chain (reclaimJob, JobReclaimed): the job ends failed with reason
 * escrow_reclaimed. Its waiting offers are declined (source_closed) and a leased one is closing, as failJob leaves them;
 * the borrower's other offers stay, and the borrower is neither suspended nor penalised: the client took back its own
 * money and nobody defaulted. The contract allows it only on a job none of whose advances owes anything, so none is open
 * here (a repaid one left the job's advanceIds; its record stays repaid).
 *
 * The event's amounts are what left the contract, checked against what the job counted, as a Repaid's are: the escrow
 * must be the job's (its JobFunded) and the collateral at least the job's; otherwise it is not applied
 * (reclaim_mismatch: the follower reports it, and the reconciliation shows the job). Collateral beyond the job's count
 * was posted on chain and never counted (before its registration, under a release whose registration did not read
 * such postings): the contract held it, so it is counted on the job first, as a settlement's backfill counts it, and
 * the job's record and the reconciliation's sums equal the contract's.
 */
export function reclaimJob(
  s: EngineState,
  job: JobActor,
  amounts: { escrowRefundedAtomic: bigint; collateralReleasedAtomic: bigint },
  nowMs: number,
): { ok: true; value: Omit<ReclaimedJob, 'proofKey'> } | { ok: false; error: EngineError } {
  const j = job.getSnapshot().context
  if (j.advanceIds.length > 0) return fail('conflict', 'job_has_advances', `job ${j.jobId} has open advances, which the contract's reclaim refuses`)
  // No advance ever: neither revenue nor collateral was used.
  const escrowAtomic = j.receivableAtomic - j.revenueUsedAtomic
  const collateralAtomic = j.collateralAtomic - j.collateralUsedAtomic
  if (amounts.escrowRefundedAtomic !== escrowAtomic || amounts.collateralReleasedAtomic < collateralAtomic) {
    return fail('conflict', 'reclaim_mismatch',
      `job ${j.jobId} holds ${escrowAtomic} of escrow and ${collateralAtomic} of collateral; the reclaim returned ${amounts.escrowRefundedAtomic} ` +
      `and ${amounts.collateralReleasedAtomic}`)
  }
  const onThisJob = [...s.offers.values()].filter((offer) => {
    const o = offer.getSnapshot().context
    return o.source.kind === 'job' && o.source.id === j.jobId && !offer.getSnapshot().matches('closing')
  })
  const uncountedCollateralAtomic = amounts.collateralReleasedAtomic - collateralAtomic
  if (uncountedCollateralAtomic > 0n) {
    const posted = send(s, 'job', job, { type: 'COLLATERAL_POSTED', amountAtomic: uncountedCollateralAtomic, nowMs })
    if (!posted.accepted) return refused('job', j.jobId, posted)
  }
  const failed = send(s, 'job', job, { type: 'FAIL', reason: ESCROW_RECLAIMED, releasedAtomic: waitingCommitmentAtomic(s, j.jobId), nowMs })
  if (!failed.accepted) return refused('job', j.jobId, failed)
  const declinedOfferIds: string[] = []
  for (const offer of onThisJob) {
    declineOffer(s, offer, 'source_closed', nowMs, false)
    declinedOfferIds.push(offer.getSnapshot().context.offerId)
  }
  return { ok: true, value: { jobId: j.jobId, declinedOfferIds, uncountedCollateralAtomic } }
}

/** Fail a job: suspend its borrower, withdraw the borrower's live offers, default the job's open advances. */
export function failJob(s: EngineState, input: FailureInput, nowMs: number): EngineResult<PassportEvent> {
  const job = s.jobs.get(input.jobId)
  if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
  if (!isClientOrOperator(s, job, input.caller)) return forbidden('a job is failed by its client or an operator')
  const reserved = reservedReason(input)
  if (reserved !== undefined) return reserved
  const j = job.getSnapshot().context
  // The job's live offers are withdrawn with it: the failure itself releases the capacity of those waiting. A leased
  // one is closing (matching.ts declineOffer) and keeps its capacity until its lease is paid or over: the job stays
  // defaulted meanwhile. (On chain, failJob makes the job's authorizations unusable from its block on.)
  const noteHash = input.noteHash ?? null
  const failed = send(s, 'job', job, { type: 'FAIL', reason: input.reason, noteHash, releasedAtomic: waitingCommitmentAtomic(s, j.jobId), nowMs })
  if (!failed.accepted) return refused('job', input.jobId, failed)

  const borrower = borrowerOf(s, j.borrower)
  suspend(s, borrower, nowMs)
  reputation.borrowerFailedJob(borrower, s.config)
  touch(s, 'borrower', borrower.address)

  const declinedOfferIds: string[] = []
  for (const offer of [...s.offers.values()]) {
    const o = offer.getSnapshot().context
    if (o.borrower !== j.borrower) continue
    const onThisJob = o.source.kind === 'job' && o.source.id === j.jobId
    if (offer.getSnapshot().matches('closing')) continue
    declineOffer(s, offer, 'borrower_suspended', nowMs, !onThisJob)
    declinedOfferIds.push(o.offerId)
  }
  const defaultedAdvanceIds = [...j.advanceIds]
  let outstandingPrincipalAtomic = 0n
  for (const advanceId of defaultedAdvanceIds) {
    const advance = s.advances.get(advanceId) as AdvanceActor
    outstandingPrincipalAtomic += advance.getSnapshot().context.principalAtomic
    expect(s, 'advance', advance, { type: 'DEFAULT', reason: 'job_failed', nowMs })
    advanceDefaulted(s, advance.getSnapshot().context)
  }
  return drain(s, {
    type: 'job_failed', jobId: j.jobId, borrower: j.borrower, client: j.client, reason: input.reason, noteHash, atMs: nowMs,
    borrowerSuspended: true, borrowerReputationBps: borrower.reputationBps, defaultedAdvanceIds,
    outstandingPrincipalAtomic, declinedOfferIds,
  })
}
