// The commands whose transaction the operator sends first, then records: a job's settlement (settleJob), a job's
// failure (failJob), an advance's liquidation (liquidate). Each plans in the engine, sends under a per-job or
// per-advance lock, checks what the chain did against the plan, and commits; an operator transaction a crash left
// unrecorded is found and recorded by the next attempt, or, when nobody retries, by OperatorRepairs once the chain
// follower saw it mined. Called through CreditService (credit-service.ts) by src/api/routes/credit.ts.
import { setTimeout as sleep } from 'node:timers/promises'
import { BaseError, ContractFunctionRevertedError, getAddress, type Address, type Hex } from 'viem'
import { recoveryAmounts } from '../engine/engine.ts'
import type { AdvanceView, JobSettlementPlan, JobSettlementReceipt, JobView, LiquidationPlan, LiquidationReceipt, PassportEvent } from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import {
  ChainBehindError, ContractRevertError, findEarlierOperatorTx, OperatorUnavailableError, sendFailJob, sendLiquidate, sendSettleJob, type EarlierOperatorTx, type OperatorReceipt,
} from '../chain/operator.ts'
import { creditFacilityV2Abi } from '../chain/artifacts.ts'
import { collateralPostedUpTo, TooManyPostingsError } from '../chain/posted-collateral.ts'
import { readReclaimWindow } from '../chain/reclaim-window.ts'
import { ChainRpcError } from '../chain/proofs.ts'
import type { FacilityFactOf } from '../chain/proofs-v2.ts'
import type { SignedPassportEvent } from '../passport/passport.ts'
import type { RecordCollection, RecordWrite, StoredResponse } from '../store/index.ts'
import type { FacilityFact } from '../chain/events-v2.ts'
import { FAILED_ON_CHAIN, failureNoteHash } from '../engine/jobs.ts'
import { isPastDueAt, type JobFailureReason } from '../../machines/index.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import { refusedWith, type ServiceCore } from './core.ts'
import { collateralProofUse } from './chain-observation.ts'
import { repaidPassport } from './reports.ts'
import type { Mutation } from './mutation.ts'
import { periodic, type Periodic } from './periodic.ts'
import { OPERATOR_REPAIR_AGE_DEGRADED_MS, repairRetryDelayMs } from './operator-repair-bounds.ts'

/** The /fail response: the spec's passport event, and the borrower's passport entry for it as signed. */
export type FailedJob = PassportEvent & { signed: SignedPassportEvent }

/**
 * Sends an operator transaction (settleJob, failJob, liquidate) and returns its hash and events. When the contract
 * answers that it was already done (`alreadyDone(error)`), the earlier transaction is looked up and returned: a
 * crash between an operator transaction and its commit is repaired by the next attempt. Any other refusal of the
 * contract is raised (ContractRevertError), and nothing is recorded; any other failure is the chain's (ChainRpcError).
 */
async function operatorSend(
  service: ServiceCore,
  slug: string,
  send: (clients: NetworkClients) => Promise<OperatorReceipt>,
  earlier: { alreadyDone: (error: ContractRevertError) => boolean; find: (clients: NetworkClients) => Promise<EarlierOperatorTx | undefined> },
): Promise<{ txHash: Hex; facts: OperatorReceipt['facts'] }> {
  const clients = operatorClients(service, slug)
  try {
    const receipt = await send(clients)
    // Its route records it from this receipt, before the follower may have read its block (outsider31).
    service.noteReportedAhead(slug, receipt.blockNumber, receipt.facts, true)
    return receipt
  } catch (error) {
    if (error instanceof ContractRevertError) {
      if (earlier.alreadyDone(error)) {
        const found = await earlier.find(clients).catch(() => undefined)
        if (found !== undefined) return found
      }
      throw error
    }
    if (error instanceof OperatorUnavailableError) throw error
    throw new ChainRpcError(slug, error)
  }
}

const followerCatchUpPollMs = 25

/**
 * Whether the network's chain follower has applied `blockNumber`, waiting up to the configuration's followerCatchUpMs
 * (10 s). An operator transaction acts on what the contract holds owed, which counts every repayment mined before it,
 * while the service counts an unreported one only once the follower applies it (at the network's confirmations): past
 * the transaction's block, the engine owes what the contract did. False when it has not got there in time (behind, degraded, stopped).
 */
async function followerPast(service: ServiceCore, slug: string, blockNumber: bigint): Promise<boolean> {
  const follower = service.followers.get(slug)
  const deadline = Date.now() + service.config.followerCatchUpMs
  while ((follower?.cursor?.blockNumber ?? -1n) < blockNumber) {
    if (follower === undefined || Date.now() > deadline) return false
    await sleep(followerCatchUpPollMs)
  }
  return true
}

/** The operator transaction is mined, but what it did is not countable yet: a retry records it (it finds the transaction). */
function minedNotCounted(slug: string, what: string, txHash: Hex): ChainRpcError {
  return new ChainRpcError(slug, new Error(`${what} ${txHash} is mined, but the chain follower has not yet counted the repayments mined before it; retry to record it`))
}

function operatorClients(service: ServiceCore, slug: string): NetworkClients {
  const clients = service.clientsOf(slug)
  if (clients.operator === undefined) throw new OperatorUnavailableError(slug)
  return clients
}

export async function completeJob(service: ServiceCore, mutation: Mutation<JobSettlementReceipt>, caller: Address, jobId: string): Promise<StoredResponse> {
  return service.locks.run(`job:${jobId}`, async () => {
    const plan = await settlementPlan(service, jobId, caller)
    const job = service.engine.getJob(jobId) as JobView
    const offerKeys = plan.advances.map((a) => (service.engine.getAdvance(a.advanceId) as AdvanceView).advanceKey)
    const settled = await operatorSend(service, job.network, (clients) => sendSettleJob(clients, { jobKey: job.jobKey, offerKeys }), {
      alreadyDone: (error) => error.errorName === 'JobNotOpen',
      find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobSettled', jobKey: job.jobKey }, job.funding.txHash),
    }).catch((error: unknown) => {
      // settleJob must name exactly the advances the contract holds owing: a full repayment (or a payment) mined and
      // not counted yet makes the service name one more (or one fewer) and the contract refuses it, nothing mined.
      // The follower counts it at the network's confirmations, so this is a wait, not a conflict (503, retry): before,
      // 409 contract_advance_count_mismatch told an agent its completion was refused (an outsider's finding).
      if (error instanceof ContractRevertError && error.errorName === 'AdvanceCountMismatch') {
        throw new ChainRpcError(job.network, new Error(`the contract holds a different number of ${jobId}'s advances owing than the chain follower has counted (a repayment or payment mined and not counted yet); nothing was sent, retry`))
      }
      throw error
    })
    const paid = settled.facts.find((f): f is FacilityFactOf<'JobSettled'> => f.name === 'JobSettled')
    if (paid === undefined) throw new ContractRevertError(job.network, 'settlement_differs', [], new Error(`${settled.txHash} emitted no JobSettled`))
    const differs = (p: typeof plan) =>
      paid.args.toLenders !== p.toLendersAtomic || paid.args.toReserve !== p.toReserveAtomic || paid.args.toBorrower !== p.toBorrowerAtomic
    if (differs(plan)) {
      // The escrow paid what the contract held owed, and the borrower what the contract held beyond it: a repayment or
      // a posting of collateral mined before the settlement and not counted yet (unreported, the follower still
      // behind) makes the difference, and the engine counts it once the follower is past the settlement's block. The
      // settlement is recorded then, never answered as refused.
      if (!(await followerPast(service, job.network, paid.blockNumber))) throw minedNotCounted(job.network, `the settlement of ${jobId}`, settled.txHash)
      const counted = service.live(service.engine.planJobSettlement({ jobId, caller, mined: true }), 'job', jobId)
      // The lenders and the reserve got what the service planned and the borrower more: collateral the job's
      // registration did not bring (posted before it, under a release that did not read such postings, and behind the
      // follower's cursor since), which the contract paid out. Its postings are read from the funding block and counted.
      const borrowerMore = paid.args.toLenders === counted.toLendersAtomic && paid.args.toReserve === counted.toReserveAtomic && paid.args.toBorrower > counted.toBorrowerAtomic
      if (borrowerMore) await backfillCollateral(service, job, paid.blockNumber - 1n)
      if (differs(borrowerMore ? service.live(service.engine.planJobSettlement({ jobId, caller, mined: true }), 'job', jobId) : counted)) {
        throw new ContractRevertError(job.network, 'settlement_differs', [], new Error(`the settlement of ${jobId} on chain differs from the plan`))
      }
    }
    // Each advance the settlement repaid in full is an advance_repaid passport event, as a reported Repaid is: the
    // score's repayment term reads their principals there (and, for one liquidated with a shortfall before the
    // settlement, the shortfall it repaid: the advance as it was before the settlement).
    const before = new Map<string, AdvanceView>()
    return service.apply(
      mutation,
      () => {
        // The advances the settlement pays (its shortfall ones too, which left the job's advanceIds at their liquidation).
        const paying = service.engine.planJobSettlement({ jobId, caller, mined: true })
        for (const { advanceId } of paying.ok ? paying.value.advances : []) {
          const advance = service.engine.getAdvance(advanceId)
          if (advance !== undefined) before.set(advanceId, advance)
        }
        return service.engine.completeJob({ jobId, caller, network: job.network, txHash: settled.txHash }, service.now())
      },
      (receipt) => [
        ...receipt.receipts.flatMap((repaid) =>
          repaidPassport(service, repaid, { borrower: receipt.borrower, source: { kind: 'job', id: jobId }, recovery: before.get(repaid.advanceId)?.recovery ?? null })),
        ...failureIntentEndedOps(service, jobId),
      ],
    )
  })
}

/**
 * The completion's plan. An offer leased on the job holds it (its lease may still be paid, and the settlement must pay
 * that advance too), unless the job is settled on chain already: an earlier attempt's settleJob, mined and never
 * recorded (a crash, a lost receipt), after which no lease on the job can be paid; then the plan is that settlement's,
 * and the attempt records it. Before, such a retry was refused while a lease granted since was live, and that lease
 * expired at its lender's cost (an adversary's finding, test/api/adversary-settlement-race.test.ts).
 */
async function settlementPlan(service: ServiceCore, jobId: string, caller: Address): Promise<JobSettlementPlan> {
  const planned = service.engine.planJobSettlement({ jobId, caller })
  if (planned.ok || planned.error.code !== 'job_has_leased_offer') return service.live(planned, 'job', jobId)
  const job = service.engine.getJob(jobId) as JobView
  const onChain = await readReclaimWindow(service.clientsOf(job.network), service.network(job.network).creditContract, job.jobKey)
  return service.live(service.engine.planJobSettlement({ jobId, caller, mined: onChain.status === 'settled' }), 'job', jobId)
}

/**
 * Counts the job's CollateralPosted events from its funding block to `toBlock` (the job still open there) that no path
 * counted yet, each with its proof, one command each. The contract's collateral at `toBlock` must equal what the
 * postings read sum to less what liquidations used (collateralPostedUpTo), and at most collateralPostingsPerJobMax
 * uncounted ones are counted, as at registration.
 */
async function backfillCollateral(service: ServiceCore, job: JobView, toBlock: bigint): Promise<void> {
  const clients = service.clientsOf(job.network)
  let fundedAtBlock: bigint
  try {
    fundedAtBlock = (await clients.publicClient.getTransactionReceipt({ hash: job.funding.txHash })).blockNumber
  } catch (error) {
    throw new ChainRpcError(job.network, error)
  }
  // Liquidations of the job's advances past due took collateral from the open job: the engine counted each (the
  // follower is past the settlement, and a liquidation is recorded only once counted), so the job's used collateral is
  // what the contract's postings no longer hold.
  const read = await collateralPostedUpTo(clients, service.network(job.network).creditContract, {
    jobKey: job.jobKey, fromBlock: fundedAtBlock, toBlock, heldBefore: 0n, usedBefore: (service.engine.getJob(job.jobId) ?? job).collateralUsedAtomic,
  })
  // The settlement was mined in the next block, so the job was open here; a provider that answers otherwise is retried.
  if (!read.open) throw new ChainRpcError(job.network, new Error(`job ${job.jobId} is not open on chain at block ${toBlock}, before its settlement`))
  // Postings counted already (reported, applied by the follower, brought by the registration) are not counted again,
  // nor counted toward the bound: only the commands this request runs are bounded.
  const uncounted = read.postings.filter((posting) => !service.store.proofs.has(posting.proofKey))
  if (uncounted.length > service.config.collateralPostingsPerJobMax) {
    throw new TooManyPostingsError(`job ${job.jobId} has more than ${service.config.collateralPostingsPerJobMax} collateral postings on chain the service never counted; its settlement cannot be recorded`)
  }
  for (const posting of uncounted) {
    // Counted meanwhile (a report of it, while this request awaited the previous command): once is enough.
    if (service.store.proofs.has(posting.proofKey)) continue
    const input = {
      jobId: job.jobId, caller: job.borrower, borrower: getAddress(posting.args.borrower), amountAtomic: posting.args.amount,
      proof: { network: job.network, txHash: posting.txHash, logIndex: posting.logIndex },
    }
    const proof = service.useProof(posting, collateralProofUse(job.jobId))
    await service.run(null, () => service.engine.postCollateral(input, service.now()), () => [proof])
  }
}

/**
 * `mined`: the repair of a failJob mined and never recorded (OperatorRepairs): recorded with the reason, note hash and
 * caller of the request that sent it (its FailureIntent), or, when no request of this service sent it, failed_on_chain.
 */
export async function failJob(
  service: ServiceCore, mutation: Mutation<FailedJob>, caller: Address, jobId: string, body: { reason: JobFailureReason; note?: string; mined?: boolean },
): Promise<StoredResponse> {
  return service.locks.run(`job:${jobId}`, async () => {
    const failures = failureRecordsOf(service)
    const mined = body.mined === true
    const intent = mined ? failures.intent(jobId) : undefined
    // The client's note is free text: only its hash is kept and signed, so nobody's text enters another's passport.
    const noteHash = intent !== undefined ? intent.noteHash ?? undefined : body.note === undefined ? undefined : failureNoteHash(body.note)
    // The repair is authorized as the job's client: the intent's caller is only recorded (its failure entry), since an
    // operator that sent a failJob may have left the configuration by the time its repair runs (a key rotated after a
    // crash), and refusing it would leave the job open here for ever while the chain has failed it (review28).
    const input = { jobId, reason: intent?.reason ?? body.reason, noteHash, caller, mined }
    const requestedBy = intent?.caller ?? caller
    const planned = service.engine.planJobFailure(input)
    if (!planned.ok && !mined && (planned.error.code === 'job_not_open' || planned.error.code === 'job_not_found')) {
      // The job failed already: a retry of the request recorded (by its first attempt after a lost answer, or by the
      // repair of its mined failJob) answers that failure as recorded, as its first attempt would have.
      const recorded = failures.answerFor(service, input)
      if (recorded !== undefined) {
        await service.store.commit({})
        return mutation.encode(recorded)
      }
    }
    const plan = service.live(planned, 'job', jobId)
    // Durable before the failJob is sent: what the request asked, for the repair of a failJob it never records.
    if (!mined) await failures.intend(input)
    // On chain first: the client's escrow goes back at once and the job's outstanding authorizations stop working.
    const failed = await operatorSend(service, plan.network, (clients) => sendFailJob(clients, { jobKey: plan.jobKey }), {
      alreadyDone: (error) => error.errorName === 'JobNotOpen',
      find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobFailed', jobKey: plan.jobKey }, plan.funding.txHash),
    }).catch(async (error: unknown) => {
      // The contract refused it, or no operator sends here: nothing was done, nothing for a repair to record. Not when
      // it refused a job no longer open whose earlier failJob was not found: that may be this request's own, mined
      // from an attempt whose answer was lost, and the lookup failed (an RPC error, eth_getLogs refused): its repair
      // needs the intent (review28; before, it recorded failed_on_chain). A job that ended otherwise on chain deletes it
      // in the commit of its end: its settlement's record, or its reclaim's (failureIntentEndedOps).
      // Nor when the "refusal" is an RPC's error that viem reads as a revert (a provider's -32603 internal error, no
      // revert data) met by a retry whose earlier failJob may be pending or mined: before review30 that deleted the
      // intent, and the repair then recorded failed_on_chain instead of the client's reason.
      const notOpen = error instanceof ContractRevertError && error.errorName === 'JobNotOpen'
      const refused = (error instanceof ContractRevertError && refusedByContract(error)) || error instanceof OperatorUnavailableError
      if (refused && !mined && !notOpen) await failures.forget(jobId)
      throw error
    })
    await failureCountable(service, plan, failed)
    try {
      // The spec's /fail response is this event's content, with the passport's signed copy (which adds the failJob
      // transaction) beside it: signed in the command's synchronous section, written in the same commit, with the
      // failure's entry (a retry's answer) and the intent's deletion.
      let writes: RecordWrite[] = []
      return await service.apply(
        mutation,
        () => {
          const result = service.engine.failJob(input, service.now())
          if (!result.ok) return result
          const event = result.value
          const recorded = service.passport.record([{ agent: event.borrower, kind: 'job_failed', details: { ...event, type: undefined, borrower: undefined, atMs: undefined, noteHash: event.noteHash ?? undefined, txHash: failed.txHash } }], service.now())
          const signed = recorded.events[0] as SignedPassportEvent
          writes = [...recorded.writes, ...failures.recordedOps(jobId, signed, event.atMs, requestedBy)]
          return { ...result, value: { ...event, signed } }
        },
        () => writes,
      )
    } catch (error) {
      throw refusedWith(error, 'job_not_found') ? service.missing('job', jobId) : error
    }
  })
}

/**
 * Whether the contract itself refused the operator call, nothing done: its simulation reverted with the contract's
 * revert data (a custom error, Error(string), a panic), or its transaction was mined reverted at each attempt (send in
 * src/chain/operator.ts, whose error has no viem cause). Not a revert without data: viem reads an RPC error coded
 * -32603 (internal error, which providers answer for their own failures) as a revert whatever its message, and nothing
 * then says what the chain did.
 */
function refusedByContract(error: ContractRevertError): boolean {
  if (!(error.cause instanceof BaseError)) return error.errorName === 'reverted'
  const reverted = error.cause.walk((e) => e instanceof ContractFunctionRevertedError)
  return reverted instanceof ContractFunctionRevertedError && reverted.data !== undefined
}

/**
 * What a /fail asked, stored durably before its failJob is sent and deleted in the commit that records the failure:
 * the repair of a failJob mined and never recorded (a SIGKILL between the two, a lost receipt, a 503 while the follower
 * lagged, and nobody retried) records the request's reason, note hash and caller instead of failed_on_chain (before,
 * the client's reason was lost: money26, after outsider23). One commit more per /fail, a rare request off the hot path;
 * settlements and liquidations keep none (their repair records what the chain did, nothing of a caller's is lost).
 * Keyed by job: a later /fail of the same job before the failJob is mined replaces it (its retry records its own).
 */
interface FailureIntent {
  reason: JobFailureReason
  noteHash: Hex | null
  caller: Address
}

/** The passport entry of a recorded failure (its agent's sequence), the failure's time and who asked: a retry's answer. */
interface FailureEntry {
  agent: Address
  sequence: number
  atMs: number
  caller: Address
}

const isHex32 = (x: unknown) => typeof x === 'string' && /^0x[0-9a-fA-F]{64}$/.test(x)
const isAddressText = (x: unknown) => typeof x === 'string' && /^0x[0-9a-fA-F]{40}$/.test(x)

function isFailureIntent(value: unknown): value is FailureIntent {
  const v = value as Record<string, unknown>
  return typeof v === 'object' && v !== null && typeof v.reason === 'string' && (v.noteHash === null || isHex32(v.noteHash)) && isAddressText(v.caller)
}

function isFailureEntry(value: unknown): value is FailureEntry {
  const v = value as Record<string, unknown>
  return typeof v === 'object' && v !== null && isAddressText(v.agent) && Number.isSafeInteger(v.sequence) && Number.isSafeInteger(v.atMs) && isAddressText(v.caller)
}

/**
 * The deletion of the failure intent (FailureIntent) of a job that ended other than by its failure's record, for the
 * commit of its end: its settlement (completeJob, route or repair), its client's reclaimJob (the chain follower's batch,
 * src/service/chain-observation.ts). A /fail's intent is written in the synchronous section of its plan, so a job the
 * engine holds open; once it ended there no /fail writes one (the plan refuses). Nothing when it has none.
 */
export function failureIntentEndedOps(service: ServiceCore, jobId: string): RecordWrite[] {
  return failureRecordsOf(service).endedOps(jobId)
}

/**
 * The start-up's sweep of failure intents left by jobs that ended before probe28 deleted them with a reclaim (review30):
 * a store written since money26 may hold the intent of a /fail whose failJob the contract refused JobNotOpen after
 * the job's client reclaimed it, kept for ever. Run once the engine is restored and before anything is served or
 * followed: deletes, in one commit, every intent whose job the engine does not hold open (funded or active: a job
 * whose failJob may be mined and not recorded, whose repair reads the intent); returns their job ids, in key order.
 */
export async function sweepEndedFailureIntents(service: ServiceCore): Promise<string[]> {
  return failureRecordsOf(service).sweepEnded((jobId) => jobOpen(service, jobId))
}

/** Whether the engine holds the job open (funded or active): its settleJob or failJob may still be recorded. */
function jobOpen(service: ServiceCore, jobId: string): boolean {
  const state = service.engine.getJob(jobId)?.state
  return state === 'funded' || state === 'active'
}

/** The failure intents and entries of one service (its store), made at first use. */
const failureRecords = new WeakMap<ServiceCore, FailureRecords>()
function failureRecordsOf(service: ServiceCore): FailureRecords {
  let records = failureRecords.get(service)
  if (records === undefined) {
    records = new FailureRecords(service)
    failureRecords.set(service, records)
  }
  return records
}

class FailureRecords {
  readonly #service: ServiceCore
  readonly #intents: RecordCollection<FailureIntent>
  readonly #entries: RecordCollection<FailureEntry>

  constructor(service: ServiceCore) {
    this.#service = service
    this.#intents = service.store.collection<FailureIntent>('failure-intents', { version: 1, validate: isFailureIntent })
    this.#entries = service.store.collection<FailureEntry>('failure-entries', { version: 1, validate: isFailureEntry })
  }

  intent(jobId: string): FailureIntent | undefined {
    return this.#intents.get(jobId)
  }

  /** Stores the request's intent, durably, unless the same is stored already (a retry's). */
  async intend(input: { jobId: string; reason: JobFailureReason; noteHash?: Hex | undefined; caller: Address }): Promise<void> {
    const intent: FailureIntent = { reason: input.reason, noteHash: input.noteHash ?? null, caller: getAddress(input.caller) }
    const stored = this.#intents.get(input.jobId)
    if (stored !== undefined && stored.reason === intent.reason && stored.noteHash === intent.noteHash && stored.caller === intent.caller) return
    await this.#commit([this.#intents.putOp(input.jobId, intent)])
  }

  async forget(jobId: string): Promise<void> {
    if (this.#intents.has(jobId)) await this.#commit([this.#intents.deleteOp(jobId)])
  }

  /** The writes of a failure's record, in its commit: its entry, and the intent's deletion. */
  recordedOps(jobId: string, signed: SignedPassportEvent, atMs: number, caller: Address): RecordWrite[] {
    const entry = this.#entries.putOp(jobId, { agent: signed.agent, sequence: signed.sequence, atMs, caller: getAddress(caller) })
    return this.#intents.has(jobId) ? [entry, this.#intents.deleteOp(jobId)] : [entry]
  }

  /**
   * An intent left by a job that ended otherwise (settled, or reclaimed by its client: its failJob was refused unsent,
   * or never mined).
   */
  endedOps(jobId: string): RecordWrite[] {
    return this.#intents.has(jobId) ? [this.#intents.deleteOp(jobId)] : []
  }

  /** Deletes, in one commit, the intents of jobs not `open` (sweepEndedFailureIntents); their job ids. */
  async sweepEnded(open: (jobId: string) => boolean): Promise<string[]> {
    const ended = [...this.#intents.iterate()].map(({ key }) => key).filter((jobId) => !open(jobId))
    if (ended.length > 0) await this.#commit(ended.map((jobId) => this.#intents.deleteOp(jobId)))
    return ended
  }

  /**
   * The recorded failure a /fail of a job no longer open answers: the job failed with a passport entry and the request
   * is the one recorded (its caller, the job's client or an operator, its reason and its note hash). A failure recorded
   * as failed_on_chain was sent by no request of this service (each stores its intent first), and one asked by another
   * caller or with another reason or note is another request: both stay refused (409), as a job that ended otherwise.
   */
  answerFor(service: ServiceCore, input: { jobId: string; reason: JobFailureReason; noteHash?: Hex | undefined; caller: Address }): FailedJob | undefined {
    const entry = this.#entries.get(input.jobId)
    if (entry === undefined) return undefined
    const job = service.view('job', input.jobId)
    if (job === undefined) return undefined
    const caller = getAddress(input.caller)
    if (caller !== entry.caller) return undefined
    if (getAddress(job.client) !== caller && !service.engine.config.operators.some((operator) => getAddress(operator) === caller)) return undefined
    const signed = service.passport.page(entry.agent, entry.sequence - 1, 1)[0]
    if (signed === undefined || signed.kind !== 'job_failed') return undefined
    const d = JSON.parse(signed.details) as Record<string, unknown>
    if (d.jobId !== input.jobId || d.reason === FAILED_ON_CHAIN || d.reason !== input.reason || (d.noteHash ?? null) !== (input.noteHash ?? null)) return undefined
    return {
      type: 'job_failed', jobId: input.jobId, borrower: signed.agent, client: d.client as Address, reason: d.reason as JobFailureReason,
      noteHash: (d.noteHash as Hex | undefined) ?? null, atMs: entry.atMs, borrowerSuspended: true, borrowerReputationBps: d.borrowerReputationBps as number,
      defaultedAdvanceIds: d.defaultedAdvanceIds as string[], outstandingPrincipalAtomic: BigInt(d.outstandingPrincipalAtomic as string),
      declinedOfferIds: d.declinedOfferIds as string[], signed,
    }
  }

  async #commit(writes: RecordWrite[]): Promise<void> {
    await this.#service.run(null, () => ({ ok: true, value: undefined, changes: [] }), () => writes)
  }
}

/**
 * The failure defaults the job's open advances as the engine counts them; the contract's failJob left unresolved what
 * it held unresolved when mined (neither repaid in full nor liquidated). A repayment mined before the failJob and not
 * counted yet (the follower counts an unreported one at the network's confirmations) would make the engine default an
 * advance the chain holds repaid, and sign that default in the borrower's passport (an outsider's finding: a client may
 * wait for the borrower's repayment to fail the job in that window). When the counts differ at the failJob's block, the
 * failure waits for the follower to pass that block, or is refused to be retried (503; the retry finds the mined
 * failJob). One chain read, on this path only when the engine counts an open advance.
 */
async function failureCountable(
  service: ServiceCore, plan: { jobId: string; network: string; openAdvances: number }, failed: { txHash: Hex; facts: OperatorReceipt['facts'] },
): Promise<void> {
  if (plan.openAdvances === 0) return
  const event = failed.facts.find((f): f is FacilityFactOf<'JobFailed'> => f.name === 'JobFailed')
  if (event === undefined) throw new ContractRevertError(plan.network, 'no_job_failed_event', [], new Error(`${failed.txHash} emitted no JobFailed`))
  const clients = operatorClients(service, plan.network)
  let unresolved: bigint
  try {
    const job = await clients.publicClient.readContract({
      address: clients.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [event.args.jobKey], blockNumber: event.blockNumber,
    })
    unresolved = job.unresolved
  } catch (error) {
    throw new ChainRpcError(plan.network, error)
  }
  if (unresolved === BigInt(plan.openAdvances) || (await followerPast(service, plan.network, event.blockNumber))) return
  throw minedNotCounted(plan.network, `the failure of ${plan.jobId}`, failed.txHash)
}

/**
 * Liquidates, oldest first, the job's older advances that may be liquidated now (Engine.seniorLiquidations), each as
 * its own lender's request with nobody to answer, before the caller's liquidation of `advanceId`: the contract takes
 * the job's collateral for whichever advance is liquidated first, and the earlier advances' risk bands counted on it
 * first (outsider28). Returns the advances it liquidated. Nothing when the caller may not liquidate `advanceId` now.
 * One that no longer may be once its turn comes (its lender's own request, or another later advance's, liquidated it
 * meanwhile; a repayment counted paid it off), or that the contract finds owing nothing or liquidated already (a
 * repayment or its liquidation mined and not counted yet: it takes no more collateral), is passed over: before, the
 * caller's request failed on that advance's refusal, naming it (review32). Any other failure (the chain behind or
 * unavailable) fails the caller's request, nothing of it recorded: its retry liquidates the older ones first again.
 */
export async function liquidateSeniors(service: ServiceCore, caller: Address, advanceId: string): Promise<string[]> {
  const done: string[] = []
  for (const senior of service.engine.seniorLiquidations({ advanceId, caller }, service.now())) {
    const liquidated = await service.locks.run(`advance:${senior.advanceId}`, async () => {
      const plan = service.engine.planLiquidation({ advanceId: senior.advanceId, caller: senior.lender }, service.now())
      if (!plan.ok) return false
      return liquidateLocked(service, { ticket: undefined, encode: () => unanswered }, senior.lender, senior.advanceId, plan.value).then(() => true, (error: unknown) => {
        if (error instanceof ContractRevertError && (error.errorName === 'NothingOwed' || error.errorName === 'AlreadyLiquidated')) return false
        throw error
      })
    })
    if (liquidated) done.push(senior.advanceId)
  }
  return done
}

export async function liquidate(service: ServiceCore, mutation: Mutation<LiquidationReceipt>, caller: Address, advanceId: string): Promise<StoredResponse> {
  return service.locks.run(`advance:${advanceId}`, async () =>
    liquidateLocked(service, mutation, caller, advanceId, service.live(service.engine.planLiquidation({ advanceId, caller }, service.now()), 'advance', advanceId)))
}

/** The liquidation of an advance the caller may liquidate now (`plan`), under the advance's lock. */
async function liquidateLocked(
  service: ServiceCore, mutation: Mutation<LiquidationReceipt>, caller: Address, advanceId: string, plan: LiquidationPlan,
): Promise<StoredResponse> {
  const advance = service.engine.getAdvance(advanceId) as AdvanceView
  // The contract computes the recovery (collateral, backing, reserve, shortfall); the backing it cannot see is
  // the engine's, bounded by the attested liquidation value left.
  const { fromBackingAtomic } = recoveryAmounts(plan)
  const liquidated = await operatorSend(service,
    advance.network,
    (clients) => sendLiquidate(clients, { offerKey: advance.advanceKey, backingCoveredAtomic: fromBackingAtomic }).catch((error: unknown) => {
      // The engine judged the advance past due by the service's clock (planLiquidation); the simulation, at the
      // latest block, by that block's time: until a block after the due second is mined the contract answers
      // NotDefaulted(offerKey, dueAt, now). Not a refusal: the same request succeeds a block later (503, retry;
      // before, 409 contract_not_defaulted, review23's finding).
      if (error instanceof ContractRevertError && error.errorName === 'NotDefaulted') {
        const [, dueAt, chainSeconds] = error.errorArgs as readonly [unknown, bigint, bigint]
        if (BigInt(Math.floor(service.now() / 1000)) > dueAt) {
          throw new ChainBehindError(advance.network, `its latest block's time (${chainSeconds}) is not past the advance's due second (${dueAt}); the contract liquidates it from a later block on`)
        }
      }
      throw error
    }),
    {
      // A liquidation that recovered everything owed (from collateral, or collateral and backing) leaves nothing
      // owed: the contract answers a second one NothingOwed before AlreadyLiquidated. Only a Liquidated event found
      // counts as done; an advance repaid in full instead has none, and its refusal stands.
      alreadyDone: (error) => error.errorName === 'AlreadyLiquidated' || error.errorName === 'NothingOwed',
      find: (clients) => findEarlierOperatorTx(clients, { eventName: 'Liquidated', offerKey: advance.advanceKey }, advance.payment.txHash),
    },
  )
  const event = liquidated.facts.find((f): f is FacilityFactOf<'Liquidated'> => f.name === 'Liquidated')
  if (event === undefined) throw new ContractRevertError(advance.network, 'no_liquidated_event', [], new Error(`${liquidated.txHash} emitted no Liquidated`))
  // The contract recovered what it held owed (its steps sum to it) from the collateral it held: a repayment mined
  // before the liquidation and not counted yet makes the engine's owed larger, and a posting of collateral not
  // counted yet its collateral smaller, until the follower is past the liquidation's block.
  const owedOnChain = event.args.fromCollateral + event.args.fromBacking + event.args.fromReserve + event.args.shortfall
  const counted = service.engine.getAdvance(advanceId) ?? advance
  const uncounted = counted.lenderOwedAtomic + counted.reserveOwedAtomic !== owedOnChain || recoveryAmounts(plan).fromCollateralAtomic < event.args.fromCollateral
  if (uncounted && !(await followerPast(service, advance.network, event.blockNumber))) {
    throw minedNotCounted(advance.network, `the liquidation of ${advanceId}`, liquidated.txHash)
  }
  const executed = {
    fromCollateralAtomic: event.args.fromCollateral, fromBackingAtomic: event.args.fromBacking,
    fromReserveAtomic: event.args.fromReserve, shortfallAtomic: event.args.shortfall,
  }
  return service.apply(
    mutation,
    () => service.engine.liquidate({ advanceId, caller, network: advance.network, txHash: liquidated.txHash, executed }, service.now()),
    // Either way the borrower defaulted (it did not repay; its collateral, backing or the reserve paid): a liquidation
    // that recovered everything is `advance_defaulted`, one that left a debt unpaid `liquidated_with_shortfall`.
    (receipt) => service.passportWrites([{
      agent: receipt.borrower,
      kind: receipt.shortfallAtomic === 0n ? 'advance_defaulted' : 'liquidated_with_shortfall',
      details: {
        advanceId, jobId: receipt.jobId, sourceId: receipt.sourceId, network: receipt.network, asset: receipt.asset, owedAtomic: receipt.owedAtomic,
        recoveredAtomic: receipt.recoveredAtomic, shortfallAtomic: receipt.shortfallAtomic, txHash: receipt.txHash,
      },
    }]),
  )
}

/**
 * An operator transaction the chain follower saw mined for a job or advance the engine still held open: a settleJob,
 * failJob or liquidate whose request never recorded it (a crash between the two, a lost receipt, an answer 503 while
 * the follower lagged) and that nobody may retry. Stored by the follower's batch commit, deleted once recorded.
 */
export type OperatorRepair = { kind: 'settled' | 'failed'; jobId: string } | { kind: 'liquidated'; advanceId: string }

/** A repair's failed attempts in a row and when the next may run (service clock), stored by the repair's key. */
type RepairFailures = { count: number; nextAtMs: number }

function isRepairFailures(value: unknown): value is RepairFailures {
  const v = value as Record<string, unknown>
  return typeof v === 'object' && v !== null && Number.isSafeInteger(v.count) && (v.count as number) > 0 && Number.isSafeInteger(v.nextAtMs)
}

function isOperatorRepair(value: unknown): value is OperatorRepair {
  const v = value as Record<string, unknown>
  return typeof v === 'object' && v !== null &&
    (((v.kind === 'settled' || v.kind === 'failed') && typeof v.jobId === 'string') || (v.kind === 'liquidated' && typeof v.advanceId === 'string'))
}

/** What a repair answers: nobody asked, so nothing is shown (and no Idempotency-Key is completed). */
const unanswered: StoredResponse = { status: 200, body: null }

/**
 * A Repaid the chain follower saw mined after a liquidation of its advance that the service has not recorded yet (the
 * repair of that liquidation is pending): it is counted after the liquidation, in chain order, never before it. Before,
 * the engine counted it against the advance as it was before the liquidation (when the figures happened to follow on,
 * and the liquidation's record then failed for ever: its steps no longer summed to what the engine held owed) or
 * dropped it as a mismatch (when the reserve paid in the liquidation): either way the books lacked tokens the contract
 * had moved. Amounts are decimal strings (the record's encoding), the key orders an advance's repayments by block and log.
 */
export interface HeldRepayment {
  advanceId: string
  proofKey: string
  network: string
  txHash: Hex
  logIndex: number
  payer: Address
  lender: Address
  amountAtomic: string
  reserveAmountAtomic: string
  lenderOwedAtomic: string
  reserveOwedAtomic: string
}

function isHeldRepayment(value: unknown): value is HeldRepayment {
  const v = value as Record<string, unknown>
  const atomic = (x: unknown) => typeof x === 'string' && /^(0|[1-9][0-9]{0,77})$/.test(x)
  return typeof v === 'object' && v !== null && typeof v.advanceId === 'string' && typeof v.proofKey === 'string' && typeof v.network === 'string' &&
    typeof v.txHash === 'string' && Number.isSafeInteger(v.logIndex) && typeof v.payer === 'string' && typeof v.lender === 'string' &&
    atomic(v.amountAtomic) && atomic(v.reserveAmountAtomic) && atomic(v.lenderOwedAtomic) && atomic(v.reserveOwedAtomic)
}

/** Chain order within an advance: zero-padded block number and log index, after the advance id. */
function heldKey(advanceId: string, blockNumber: bigint, logIndex: number): string {
  return `${advanceId}:${blockNumber.toString().padStart(20, '0')}:${logIndex.toString().padStart(10, '0')}`
}

/** What /health shows of the repairs: how many wait, for how long the oldest, and the repayments held behind them. */
export interface OperatorRepairStatus {
  pending: number
  oldestAgeSeconds: number | null
  /** Failed attempts in a row of the repair that failed most, and when it is tried next (null: none failed). */
  failuresMax: number
  nextAttemptAtMs: number | null
  heldRepayments: number
  /** The oldest has waited longer than OPERATOR_REPAIR_AGE_DEGRADED_MS. */
  degraded: boolean
}

/**
 * Records the operator transactions the chain follower saw mined and the service never recorded, by the route's own
 * find-and-record path (completeJob, failJob, liquidate): the contract refuses the repeat, the earlier transaction is
 * found by its event, checked against the plan and recorded with the route's records (passport entries included).
 * Under the job's or advance's lock, like the route, so a client's retry and the repair record it once: whichever
 * comes second finds it no longer open. Repayments mined after a liquidation it has not recorded wait for it
 * (HeldRepayment) and are counted once it is.
 *
 * Design (operator-repair branch): the follower queues, it never records. The queue is the store's `operator-repairs`
 * collection, written in the follower's batch commit (so a crash after it loses no repair, and a start resumes them)
 * and keyed by job or advance (so bounded by what the engine holds open, and a repair queued twice is one). A run,
 * outside the follower's batch (recording may wait for the follower: followerPast), tries each in turn, one at a
 * time; one that fails (the RPC, the follower behind, the engine not yet agreeing that an advance is due) is tried
 * again after a delay that doubles with each failure in a row, up to OPERATOR_REPAIR_BACKOFF_MAX_MS, and /health shows
 * the pending ones. The failures are stored too (`operator-repair-failures`, one commit per failed attempt, deleted
 * with the repair): a restart keeps each repair's wait instead of trying every one at once, at every restart of a
 * service that crash-loops (each attempt may send an operator transaction). A failure's repair records the reason,
 * note hash and caller of the /fail that sent it, from the intent that request stored before its failJob
 * (FailureIntent: one commit more per /fail, a rare request), or failed_on_chain when no request of this service sent
 * it; settlements and liquidations store none (their records are what the chain did, nothing of a caller's).
 */
export class OperatorRepairs {
  readonly #service: ServiceCore
  readonly #records: RecordCollection<OperatorRepair>
  readonly #held: RecordCollection<HeldRepayment>
  /** Failed attempts in a row per repair key, and when the next may run (service clock): #failureRecords in memory. */
  readonly #failures = new Map<string, RepairFailures>()
  readonly #failureRecords: RecordCollection<RepairFailures>
  #intervalMs = 0
  /** A batch stored a repair since the last run began (or the service started): run now rather than an interval later. */
  #due = true
  #periodic: Periodic | undefined
  #running: Promise<void> = Promise.resolve()

  constructor(service: ServiceCore) {
    this.#service = service
    this.#records = service.store.collection<OperatorRepair>('operator-repairs', { version: 1, validate: isOperatorRepair })
    this.#held = service.store.collection<HeldRepayment>('held-repayments', { version: 1, validate: isHeldRepayment })
    this.#failureRecords = service.store.collection<RepairFailures>('operator-repair-failures', { version: 1, validate: isRepairFailures })
    for (const { key, value } of this.#failureRecords.iterate()) this.#failures.set(key, value)
  }

  /**
   * The repair records of a batch's settleJob, failJob and liquidate events whose job or advance the engine holds
   * open: called in the batch command's synchronous section, after the command (which ignores those events), so they
   * go in the same commit as the follower's cursor.
   */
  found(facts: readonly FacilityFact[]): RecordWrite[] {
    const writes: RecordWrite[] = []
    for (const fact of facts) {
      const repair = this.#repairOf(fact)
      if (repair === undefined || !this.#open(repair)) continue
      const key = repairKey(repair)
      if (this.#records.has(key)) continue
      writes.push(this.#records.putOp(key, repair))
    }
    return writes
  }

  /**
   * The batch's Repaid facts that must wait for a liquidation of their advance mined before them and not recorded
   * (its Liquidated earlier in the batch, or its repair stored by an earlier one), with their held records: called
   * in the batch command's synchronous section, before the command, which is given the others only.
   */
  hold(facts: readonly FacilityFact[]): { proofKeys: Set<string>; writes: RecordWrite[] } {
    const liquidating = new Set<string>()
    const proofKeys = new Set<string>()
    const writes: RecordWrite[] = []
    for (const fact of facts) {
      const repair = this.#repairOf(fact)
      if (fact.name === 'Liquidated') {
        if (repair?.kind === 'liquidated' && this.#open(repair)) liquidating.add(repair.advanceId)
        continue
      }
      if (fact.name !== 'Repaid' || this.#service.store.proofs.has(fact.proofKey)) continue
      const advanceId = this.#liveAdvanceOf(fact)
      if (advanceId === undefined || (!this.liquidationUnrecorded(advanceId) && !liquidating.has(advanceId))) continue
      proofKeys.add(fact.proofKey)
      const { payer, lender, toLender, toReserve, lenderOwed, reserveOwed } = fact.args
      writes.push(this.#held.putOp(heldKey(advanceId, fact.blockNumber, fact.logIndex), {
        advanceId, proofKey: fact.proofKey, network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex, payer: getAddress(payer), lender: getAddress(lender),
        amountAtomic: toLender.toString(), reserveAmountAtomic: toReserve.toString(), lenderOwedAtomic: lenderOwed.toString(), reserveOwedAtomic: reserveOwed.toString(),
      }))
    }
    return { proofKeys, writes }
  }

  /** Whether the advance's liquidation was seen mined (its repair is stored) and the engine has not recorded it yet. */
  liquidationUnrecorded(advanceId: string): boolean {
    const repair: OperatorRepair = { kind: 'liquidated', advanceId }
    return this.#open(repair) && this.#records.has(repairKey(repair))
  }

  /**
   * A reported Repaid is counted now unless a liquidation of its advance may be mined before it and not recorded:
   * possible once the advance may be liquidated on chain (its job failed, or past due at the repayment's block). Then
   * the report waits for the follower to pass the repayment's block (it sees every liquidation before it) and is
   * refused, to be retried, while that liquidation's repair is pending (the repayment is counted after it, by the
   * follower's held record). Throws ChainRpcError (503, retry).
   */
  async awaitCountable(advance: AdvanceView, fact: FacilityFactOf<'Repaid'>): Promise<void> {
    const service = this.#service
    const liquidable = advance.state === 'defaulted' || isPastDueAt(advance.dueAtMs, fact.blockTimeMs)
    if (!liquidable || !this.#open({ kind: 'liquidated', advanceId: advance.advanceId })) return
    if (!(await followerPast(service, advance.network, fact.blockNumber))) {
      throw new ChainRpcError(advance.network, new Error(`the chain follower has not yet reached the repayment's block ${fact.blockNumber}; retry to record it`))
    }
    if (this.liquidationUnrecorded(advance.advanceId)) {
      throw new ChainRpcError(advance.network, new Error(`advance ${advance.advanceId} was liquidated on chain before this repayment and that is not recorded yet; retry to record it`))
    }
  }

  /** The repairs stored and not yet done, in key order. */
  pending(): OperatorRepair[] {
    return [...this.#records.iterate()].map(({ value }) => value)
  }

  /** The repayments held behind an unrecorded liquidation, in chain order per advance. */
  heldRepayments(): HeldRepayment[] {
    return [...this.#held.iterate()].map(({ value }) => value)
  }

  status(): OperatorRepairStatus {
    const nowMs = this.#service.now()
    let pending = 0
    let oldestStoredAtMs: number | null = null
    let failuresMax = 0
    let nextAttemptAtMs: number | null = null
    for (const { key, entry } of this.#records.iterate()) {
      pending += 1
      if (oldestStoredAtMs === null || entry.updatedAtMs < oldestStoredAtMs) oldestStoredAtMs = entry.updatedAtMs
      const failures = this.#failures.get(key)
      if (failures !== undefined && failures.count > failuresMax) {
        failuresMax = failures.count
        nextAttemptAtMs = failures.nextAtMs
      }
    }
    let heldRepayments = 0
    for (const _ of this.#held.iterate()) heldRepayments += 1
    const ageMs = oldestStoredAtMs === null ? null : Math.max(0, nowMs - oldestStoredAtMs)
    return {
      pending, oldestAgeSeconds: ageMs === null ? null : Math.floor(ageMs / 1000), failuresMax, nextAttemptAtMs, heldRepayments,
      degraded: ageMs !== null && ageMs > OPERATOR_REPAIR_AGE_DEGRADED_MS,
    }
  }

  /**
   * Counts the repayments held behind the advance's liquidation, which its route has just recorded: at once, whether
   * or not repairs run. One that fails stays for the repair run, which reports it.
   */
  async countHeldOf(advanceId: string): Promise<void> {
    for (const { key, value } of [...this.#held.iterate(`${advanceId}:`)]) {
      try {
        await this.#countHeld(key, value, false)
      } catch {
        return
      }
    }
  }

  /** Runs the stored repairs now: a batch stored one (called once its commit is durable, so that the run reads it). */
  wake(): void {
    this.#due = true
    this.#periodic?.wake()
  }

  /**
   * Runs the stored repairs at once (those a crash left too) and every `intervalMs`, each when its back-off allows;
   * `onError` hears each failed attempt (with its repair or held repayment) and a run that failed (the store without
   * room to delete a done one).
   */
  start(intervalMs: number, onError: (error: unknown, repair?: OperatorRepair | HeldRepayment) => void): { stop: () => Promise<void> } {
    this.#intervalMs = intervalMs
    this.#periodic = periodic(intervalMs, () => (this.#running = this.#runAll(onError)), onError, { dueAgain: () => this.#due })
    this.#periodic.wake()
    return {
      stop: async () => {
        this.#periodic?.stop()
        // A run that failed was reported to onError already.
        await this.#running.catch(() => {})
      },
    }
  }

  async #runAll(onError: (error: unknown, repair?: OperatorRepair | HeldRepayment) => void): Promise<void> {
    this.#due = false
    for (const { key, value: repair } of [...this.#records.iterate()]) {
      const failures = this.#failures.get(key)
      if (failures !== undefined && this.#service.now() < failures.nextAtMs && this.#open(repair)) continue
      if (this.#open(repair)) {
        try {
          await this.#record(repair)
        } catch (error) {
          // Recorded meanwhile by a retry of the route (the lock's other holder): no failure, the record goes below.
          if (this.#open(repair)) {
            const count = (failures?.count ?? 0) + 1
            const next = { count, nextAtMs: this.#service.now() + repairRetryDelayMs(count, this.#intervalMs) }
            this.#failures.set(key, next)
            onError(error, repair)
            await this.#commit([this.#failureRecords.putOp(key, next)])
            continue
          }
        }
      }
      const failureRecord = this.#failures.delete(key) ? [this.#failureRecords.deleteOp(key)] : []
      await this.#commit([this.#records.deleteOp(key), ...failureRecord])
    }
    for (const { key, value: held } of [...this.#held.iterate()]) {
      // Its liquidation is still unrecorded (its repair failed this run, or waits for its back-off).
      if (this.#open({ kind: 'liquidated', advanceId: held.advanceId })) continue
      try {
        await this.#countHeld(key, held, true)
      } catch (error) {
        onError(error, held)
      }
    }
  }

  /**
   * Counts a held repayment once its advance's liquidation is recorded, as the repay route would (its proof, and the
   * passport entry when it repays the advance), and deletes the held record in the same commit. Counted meanwhile by
   * a report: only the record goes. Refused by the engine (the figures do not follow on even after the liquidation):
   * with `dropRefused` (the repair run, which reports the refusal) the record goes too, and the reconciliation shows
   * the difference.
   */
  async #countHeld(key: string, held: HeldRepayment, dropRefused: boolean): Promise<void> {
    const service = this.#service
    const drop = () => this.#commit([this.#held.deleteOp(key)])
    await service.locks.run(`advance:${held.advanceId}`, async () => {
      if (service.store.proofs.has(held.proofKey)) return drop()
      const advance = service.engine.getAdvance(held.advanceId)
      const fact = {
        network: held.network, txHash: held.txHash, logIndex: held.logIndex, advanceId: held.advanceId, payer: held.payer, lender: held.lender,
        amountAtomic: BigInt(held.amountAtomic), reserveAmountAtomic: BigInt(held.reserveAmountAtomic),
        lenderOwedAtomic: BigInt(held.lenderOwedAtomic), reserveOwedAtomic: BigInt(held.reserveOwedAtomic),
      }
      try {
        await service.run(
          null,
          () => service.engine.repayAdvance(fact, service.now()),
          (receipt) => [service.useProof(held, `advance:${held.advanceId}`), ...repaidPassport(service, receipt, advance), this.#held.deleteOp(key)],
        )
      } catch (error) {
        if (dropRefused && error instanceof EngineRefusedError) await drop()
        throw error
      }
    })
  }

  /** Record writes of the repairs alone (a done one's deletion, a failure's count), in a commit of their own. */
  async #commit(writes: RecordWrite[]): Promise<void> {
    await this.#service.run(null, () => ({ ok: true, value: undefined, changes: [] }), () => writes)
  }

  /** The route's find-and-record path, as the job's client or the advance's lender (whom the engine always admits). */
  async #record(repair: OperatorRepair): Promise<void> {
    const service = this.#service
    if (repair.kind === 'liquidated') {
      const advance = service.engine.getAdvance(repair.advanceId) as AdvanceView
      await liquidate(service, { ticket: undefined, encode: () => unanswered }, advance.lender, repair.advanceId)
      return
    }
    const job = service.engine.getJob(repair.jobId) as JobView
    if (repair.kind === 'settled') await completeJob(service, { ticket: undefined, encode: () => unanswered }, job.client, repair.jobId)
    // The reason, note hash and caller of the request that sent it, when its intent is stored; else failed_on_chain.
    else await failJob(service, { ticket: undefined, encode: () => unanswered }, job.client, repair.jobId, { reason: FAILED_ON_CHAIN, mined: true })
  }

  /** The live advance a Repaid names on its own network. */
  #liveAdvanceOf(fact: FacilityFactOf<'Repaid'>): string | undefined {
    const advance = this.#service.engine.advanceByKey(fact.args.offerKey)
    return advance !== undefined && advance.network === fact.network ? advance.advanceId : undefined
  }

  #repairOf(fact: FacilityFact): OperatorRepair | undefined {
    const engine = this.#service.engine
    const onNetwork = <V extends { network: string }>(view: V | undefined) => (view !== undefined && view.network === fact.network ? view : undefined)
    if (fact.name === 'JobSettled' || fact.name === 'JobFailed') {
      const job = onNetwork(engine.jobByKey(fact.args.jobKey))
      return job === undefined ? undefined : { kind: fact.name === 'JobSettled' ? 'settled' : 'failed', jobId: job.jobId }
    }
    if (fact.name !== 'Liquidated') return undefined
    const advance = onNetwork(engine.advanceByKey(fact.args.offerKey))
    return advance === undefined ? undefined : { kind: 'liquidated', advanceId: advance.advanceId }
  }

  /** Whether the engine still holds the repair's job or advance where its operator transaction found it. */
  #open(repair: OperatorRepair): boolean {
    if (repair.kind === 'liquidated') {
      const state = this.#service.engine.getAdvance(repair.advanceId)?.state
      return state === 'active' || state === 'defaulted'
    }
    return jobOpen(this.#service, repair.jobId)
  }
}

function repairKey(repair: OperatorRepair): string {
  return repair.kind === 'liquidated' ? `advance:${repair.advanceId}` : `job:${repair.jobId}`
}
