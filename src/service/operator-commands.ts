// The commands whose transaction the operator sends first, then records: a job's settlement (settleJob), a job's
// failure (failJob), an advance's liquidation (liquidate). Each plans in the engine, sends under a per-job or
// per-advance lock, checks what the chain did against the plan, and commits; an operator transaction a crash left
// unrecorded is found and recorded by the next attempt. Called through CreditService (credit-service.ts) by
// src/api/routes/credit.ts.
import { setTimeout as sleep } from 'node:timers/promises'
import { getAddress, type Address, type Hex } from 'viem'
import { recoveryAmounts } from '../engine/engine.ts'
import type { AdvanceView, JobSettlementPlan, JobSettlementReceipt, JobView, LiquidationReceipt, PassportEvent } from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import {
  ContractRevertError, findEarlierOperatorTx, OperatorUnavailableError, sendFailJob, sendLiquidate, sendSettleJob, type EarlierOperatorTx, type OperatorReceipt,
} from '../chain/operator.ts'
import { jobKey } from '../chain/ids.ts'
import { collateralPostedUpTo, TooManyPostingsError } from '../chain/posted-collateral.ts'
import { readReclaimWindow } from '../chain/reclaim-window.ts'
import { ChainRpcError } from '../chain/proofs.ts'
import type { FacilityFactOf } from '../chain/proofs-v2.ts'
import type { SignedPassportEvent } from '../passport/passport.ts'
import type { RecordWrite, StoredResponse } from '../store/index.ts'
import { refusedWith, type ServiceCore } from './core.ts'
import { collateralProofUse } from './chain-observation.ts'
import type { Mutation } from './mutation.ts'

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
    return await send(clients)
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

/** How long a request waits for the chain follower to count what was mined before its operator transaction. */
const followerCatchUpMs = 10_000
const followerCatchUpPollMs = 25

/**
 * Whether the network's chain follower has applied `blockNumber`, waiting up to followerCatchUpMs. An operator
 * transaction acts on what the contract holds owed, which counts every repayment mined before it, while the service
 * counts an unreported one only once the follower applies it (at the network's confirmations): past the transaction's
 * block, the engine owes what the contract did. False when it has not got there in time (behind, degraded, stopped).
 */
async function followerPast(service: ServiceCore, slug: string, blockNumber: bigint): Promise<boolean> {
  const follower = service.followers.get(slug)
  const deadline = Date.now() + followerCatchUpMs
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
    const settled = await operatorSend(service, job.network, (clients) => sendSettleJob(clients, { jobId, offerKeys }), {
      alreadyDone: (error) => error.errorName === 'JobNotOpen',
      find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobSettled', jobId }, job.funding.txHash),
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
    return service.apply(mutation, () => service.engine.completeJob({ jobId, caller, network: job.network, txHash: settled.txHash }, service.now()))
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
  const onChain = await readReclaimWindow(service.clientsOf(job.network), service.network(job.network).creditContract, jobKey(jobId))
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
    jobKey: jobKey(job.jobId), fromBlock: fundedAtBlock, toBlock, heldBefore: 0n, usedBefore: (service.engine.getJob(job.jobId) ?? job).collateralUsedAtomic,
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

export async function failJob(service: ServiceCore, mutation: Mutation<FailedJob>, caller: Address, jobId: string, body: { reason: string }): Promise<StoredResponse> {
  return service.locks.run(`job:${jobId}`, async () => {
    const plan = service.live(service.engine.planJobFailure({ jobId, reason: body.reason, caller }), 'job', jobId)
    // On chain first: the client's escrow goes back at once and the job's outstanding authorizations stop working.
    const failed = await operatorSend(service, plan.network, (clients) => sendFailJob(clients, { jobId }), {
      alreadyDone: (error) => error.errorName === 'JobNotOpen',
      find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobFailed', jobId }, plan.funding.txHash),
    })
    try {
      // The spec's /fail response is this event's content, with the passport's signed copy (which adds the failJob
      // transaction) beside it: signed in the command's synchronous section, written in the same commit.
      let writes: RecordWrite[] = []
      return await service.apply(
        mutation,
        () => {
          const result = service.engine.failJob({ jobId, reason: body.reason, caller }, service.now())
          if (!result.ok) return result
          const event = result.value
          const recorded = service.passport.record([{ agent: event.borrower, kind: 'job_failed', details: { ...event, type: undefined, borrower: undefined, atMs: undefined, txHash: failed.txHash } }], service.now())
          writes = recorded.writes
          return { ...result, value: { ...event, signed: recorded.events[0] as SignedPassportEvent } }
        },
        () => writes,
      )
    } catch (error) {
      throw refusedWith(error, 'job_not_found') ? service.missing('job', jobId) : error
    }
  })
}

export async function liquidate(service: ServiceCore, mutation: Mutation<LiquidationReceipt>, caller: Address, advanceId: string): Promise<StoredResponse> {
  return service.locks.run(`advance:${advanceId}`, async () => {
    const plan = service.live(service.engine.planLiquidation({ advanceId, caller }, service.now()), 'advance', advanceId)
    const advance = service.engine.getAdvance(advanceId) as AdvanceView
    // The contract computes the recovery (collateral, backing, reserve, shortfall); the backing it cannot see is
    // the engine's, bounded by the attested liquidation value left.
    const { fromBackingAtomic } = recoveryAmounts(plan)
    const liquidated = await operatorSend(service, 
      advance.network,
      (clients) => sendLiquidate(clients, { offerKey: advance.advanceKey, backingCoveredAtomic: fromBackingAtomic }),
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
  })
}
