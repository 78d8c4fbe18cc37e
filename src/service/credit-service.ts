// The application layer between HTTP and the engine. Each operation: turn chain proofs and attestations into verified
// facts (the only awaits before the command), run ONE engine command with the caller's address (the engine decides
// who may act, as it decides every other refusal), and enqueue its changes to the store in the same synchronous
// section, so that commits reach the disk in the order the engine applied them. The caller gets the result only
// once the commit is durable. Where a proof must be checked against live terms, the engine's plan query gives them
// (and refuses what the command would refuse) before any await.
//
// This file is the service's surface, one line per operation naming the module that owns it:
//   core.ts               the shared part: dependencies, the run-and-commit path, proofs, reads of live and final actors
//   lenders.ts            registration and session keys, wallet actions, withdrawals, lease authorizations
//   borrowers.ts          backing sources, jobs and collateral (their chain proofs), credit requests
//   reports.ts            reported supplier payments and repayments, and their receipts
//   chain-observation.ts  the chain follower's consumer and its health
//   operator-commands.ts  settlement, failure and liquidation: the operator's transaction first, then the record
// Matching, dispatch (and its ticker) and the supplier directory are one command each, here.
import { getAddress, type Address, type Hex } from 'viem'
import {
  advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot, recoveryAmounts, repaymentReceiptOf, supplierPaymentOnClosedOffer, type Engine,
  type ChainEventFact, type ChainObservationOutcome, type PastLeaseOf,
} from '../engine/engine.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import type {
  AdvanceView, Change, CollateralPosition, CreditRequestInput, DispatchOutcome, EngineResult, JobSettlementReceipt, JobView, LeaseView,
  LenderRecord, LenderView, LiquidationReceipt, MatchOutcome, OfferView, PassportEvent, RegisterLenderInput, RegisterSourceInput, RepaymentReceipt,
  SourceRecord, SupplierInput, SupplierRecord, UnderwritingDecision,
} from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import { findToken, UnknownAssetError, UnknownNetworkError, type NetworkConfig } from '../chain/config.ts'
import { jobKey } from '../chain/ids.ts'
import {
  ContractRevertError,
  findEarlierOperatorTx,
  OperatorUnavailableError,
  sendFailJob,
  sendLiquidate,
  sendSettleJob,
  type EarlierOperatorTx,
  type OperatorReceipt,
} from '../chain/operator.ts'
import { ChainRpcError, ProofRefusedError } from '../chain/proofs.ts'
import { verifyFacilityEvent, type FacilityFactOf } from '../chain/proofs-v2.ts'
import { facilityFact, type FacilityEventName } from '../chain/events-v2.ts'
import type { ChainBatch, ChainFollower } from '../chain/follower.ts'
import type { WalletWatcher } from '../chain/watcher.ts'
import { DurableFeed, type DurableListener } from './durable-feed.ts'
import { LeaseDelivery, type DeliveredLease } from './lease-delivery.ts'
import { StoreOverloadedError, type RecordWrite, type Store, type StoredResponse } from '../store/index.ts'
import { AttestationExpiredError, AttestationInvalidError, verifyBackingAttestation } from '../chain/attestation.ts'
import { BorrowerConsentError, verifyBorrowerConsent } from '../chain/consent.ts'
import type { ServiceConfig } from '../app/config.ts'
import type { Mutation } from './mutation.ts'
import { KeyedMutex } from './mutex.ts'
import { isSessionKeyRecord, newSessionKey, type SessionKeyRecord } from './session-keys.ts'
import { walletActions, type WalletAction } from './wallet-actions.ts'
import type { PassportBook, PassportFact } from '../passport/book.ts'
import type { SignedPassportEvent } from '../passport/passport.ts'
import { refusedWith, ServiceCore, valueOf } from './core.ts'
import * as lenders from './lenders.ts'
import * as borrowers from './borrowers.ts'
import * as reports from './reports.ts'
import * as chainObservation from './chain-observation.ts'

export type { SessionKeyRecord, SpendPolicy } from './session-keys.ts'
export type { Mutation } from './mutation.ts'
export type { ServiceDeps } from './core.ts'

/** The /fail response: the spec's passport event, and the borrower's passport entry for it as signed. */
export type FailedJob = PassportEvent & { signed: SignedPassportEvent }

/** An operation of a concept module, bound to the service it takes as its first parameter. */
type Bound<F> = F extends (service: ServiceCore, ...args: infer A) => infer R ? (...args: A) => R : never

export class CreditService extends ServiceCore {
  // ------------------------------------------------------------------------------------------------ lenders.ts
  readonly registerLender: Bound<typeof lenders.registerLender> = (...args) => lenders.registerLender(this, ...args)
  readonly sessionKeys: Bound<typeof lenders.sessionKeys> = (...args) => lenders.sessionKeys(this, ...args)
  readonly pendingActions: Bound<typeof lenders.pendingActions> = (...args) => lenders.pendingActions(this, ...args)
  readonly walletActions: Bound<typeof lenders.walletActions> = (...args) => lenders.walletActions(this, ...args)
  readonly withdrawLiquidity: Bound<typeof lenders.withdrawLiquidity> = (...args) => lenders.withdrawLiquidity(this, ...args)
  readonly leaseAuthorization: Bound<typeof lenders.leaseAuthorization> = (...args) => lenders.leaseAuthorization(this, ...args)

  // ------------------------------------------------------------------------------------------------ borrowers.ts
  readonly registerSource: Bound<typeof borrowers.registerSource> = (...args) => borrowers.registerSource(this, ...args)
  readonly createJob: Bound<typeof borrowers.createJob> = (...args) => borrowers.createJob(this, ...args)
  readonly postCollateral: Bound<typeof borrowers.postCollateral> = (...args) => borrowers.postCollateral(this, ...args)
  readonly requestCredit: Bound<typeof borrowers.requestCredit> = (...args) => borrowers.requestCredit(this, ...args)

  // ------------------------------------------------------------------------------------------------ reports.ts
  readonly recordSupplierPayment: Bound<typeof reports.recordSupplierPayment> = (...args) => reports.recordSupplierPayment(this, ...args)
  readonly repay: Bound<typeof reports.repay> = (...args) => reports.repay(this, ...args)

  // ------------------------------------------------------------------------------------------------ chain-observation.ts
  readonly observeChain: Bound<typeof chainObservation.observeChain> = (...args) => chainObservation.observeChain(this, ...args)
  readonly followerHealth: Bound<typeof chainObservation.followerHealth> = (...args) => chainObservation.followerHealth(this, ...args)

  // ------------------------------------------------------------------------------------------------ commands of one line

  /**
   * The dispatch ticker: the same command as POST /credit/dispatch, through the same run-and-commit path as a request,
   * with nobody to answer.
   */
  async tick(): Promise<void> {
    await this.run<DispatchOutcome>(null, () => this.engine.dispatch(this.now()), (outcome) => this.#liftedPassport(outcome))
  }

  /** Dispatch lifts due suspensions: each lift is a passport event of its borrower. */
  #liftedPassport(outcome: DispatchOutcome): RecordWrite[] {
    return this.passportWrites(outcome.suspensionsLifted.map((lift) => ({
      agent: lift.borrower, kind: 'suspension_lifted', details: { suspendedAtMs: lift.suspendedAtMs, borrowerReputationBps: lift.borrowerReputationBps },
    })))
  }

  // ------------------------------------------------------------------------------------------------ supplier directory

  async putSupplier(mutation: Mutation<SupplierRecord>, caller: Address, domain: string, body: Omit<SupplierInput, 'domain'>): Promise<StoredResponse> {
    for (const slug of Object.keys(body.addresses)) this.network(slug)
    return this.apply(mutation, () => this.engine.putSupplier({ ...body, domain, caller }, this.now()))
  }

  async removeSupplier(mutation: Mutation<SupplierRecord>, caller: Address, domain: string): Promise<StoredResponse> {
    return this.apply(mutation, () => this.engine.removeSupplier({ domain, caller }, this.now()))
  }

  /**
   * The configuration's suppliers at start-up (each address on every network the service runs, unless the entry
   * names its networks), committed before the service answers anything.
   */
  async seedSuppliers(entries: readonly SupplierInput[]): Promise<void> {
    for (const entry of entries) for (const slug of Object.keys(entry.addresses)) this.network(slug)
    await this.run(null, () => this.engine.seedSuppliers(entries, this.now()), () => [])
  }

  async match(mutation: Mutation<MatchOutcome>, caller: Address, offerId: string): Promise<StoredResponse> {
    try {
      return await this.apply(mutation, () => this.engine.matchOffer({ offerId, caller }, this.now()))
    } catch (error) {
      if (refusedWith(error, 'offer_not_found')) throw this.missing('offer', offerId)
      // Dispatch (the ticker or any caller) may have leased the offer already: the match asked for exists, answer
      // it, but only once the commit that created it is durable (an empty commit queues behind it), or a crash could
      // lose a lease this answer acknowledged.
      const offer = refusedWith(error, 'offer_not_offered') && this.engine.getOffer(offerId)
      const lease = offer && offer.currentLeaseId !== null ? this.engine.getLease(offer.currentLeaseId) : undefined
      if (!offer || lease === undefined) throw error
      await this.store.commit({})
      return mutation.encode({ offer, lease, refusedLeases: [], offerExpired: false })
    }
  }

  async dispatch(mutation: Mutation<DispatchOutcome>): Promise<StoredResponse> {
    return this.apply(mutation, () => this.engine.dispatch(this.now()), (outcome) => this.#liftedPassport(outcome))
  }

  /**
   * Sends an operator transaction (settleJob, failJob, liquidate) and returns its hash and events. When the contract
   * answers that it was already done (`alreadyDone(error)`), the earlier transaction is looked up and returned: a
   * crash between an operator transaction and its commit is repaired by the next attempt. Any other refusal of the
   * contract is raised (ContractRevertError), and nothing is recorded; any other failure is the chain's (ChainRpcError).
   */
  async #operatorSend(
    slug: string,
    send: (clients: NetworkClients) => Promise<OperatorReceipt>,
    earlier: { alreadyDone: (error: ContractRevertError) => boolean; find: (clients: NetworkClients) => Promise<EarlierOperatorTx | undefined> },
  ): Promise<{ txHash: Hex; facts: OperatorReceipt['facts'] }> {
    const clients = this.#operatorClients(slug)
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

  #operatorClients(slug: string): NetworkClients {
    const clients = this.clientsOf(slug)
    if (clients.operator === undefined) throw new OperatorUnavailableError(slug)
    return clients
  }

  async completeJob(mutation: Mutation<JobSettlementReceipt>, caller: Address, jobId: string): Promise<StoredResponse> {
    return this.locks.run(`job:${jobId}`, async () => {
      const plan = this.live(this.engine.planJobSettlement({ jobId, caller }), 'job', jobId)
      const job = this.engine.getJob(jobId) as JobView
      const offerKeys = plan.advances.map((a) => (this.engine.getAdvance(a.advanceId) as AdvanceView).advanceKey)
      const settled = await this.#operatorSend(job.network, (clients) => sendSettleJob(clients, { jobId, offerKeys }), {
        alreadyDone: (error) => error.errorName === 'JobNotOpen',
        find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobSettled', jobId }, job.funding.txHash),
      })
      const paid = settled.facts.find((f): f is FacilityFactOf<'JobSettled'> => f.name === 'JobSettled')
      if (paid === undefined || paid.args.toLenders !== plan.toLendersAtomic || paid.args.toReserve !== plan.toReserveAtomic) {
        throw new ContractRevertError(job.network, 'settlement_differs', [], new Error(`the settlement of ${jobId} on chain differs from the plan`))
      }
      return this.apply(mutation, () => this.engine.completeJob({ jobId, caller, network: job.network, txHash: settled.txHash }, this.now()))
    })
  }

  async failJob(mutation: Mutation<FailedJob>, caller: Address, jobId: string, body: { reason: string }): Promise<StoredResponse> {
    return this.locks.run(`job:${jobId}`, async () => {
      const plan = this.live(this.engine.planJobFailure({ jobId, caller }), 'job', jobId)
      // On chain first: the client's escrow goes back at once and the job's outstanding authorizations stop working.
      const failed = await this.#operatorSend(plan.network, (clients) => sendFailJob(clients, { jobId }), {
        alreadyDone: (error) => error.errorName === 'JobNotOpen',
        find: (clients) => findEarlierOperatorTx(clients, { eventName: 'JobFailed', jobId }, plan.funding.txHash),
      })
      try {
        // The spec's /fail response is this event's content, with the passport's signed copy (which adds the failJob
        // transaction) beside it: signed in the command's synchronous section, written in the same commit.
        let writes: RecordWrite[] = []
        return await this.apply(
          mutation,
          () => {
            const result = this.engine.failJob({ jobId, reason: body.reason, caller }, this.now())
            if (!result.ok) return result
            const event = result.value
            const recorded = this.passport.record([{ agent: event.borrower, kind: 'job_failed', details: { ...event, type: undefined, borrower: undefined, atMs: undefined, txHash: failed.txHash } }], this.now())
            writes = recorded.writes
            return { ...result, value: { ...event, signed: recorded.events[0] as SignedPassportEvent } }
          },
          () => writes,
        )
      } catch (error) {
        throw refusedWith(error, 'job_not_found') ? this.missing('job', jobId) : error
      }
    })
  }

  async liquidate(mutation: Mutation<LiquidationReceipt>, caller: Address, advanceId: string): Promise<StoredResponse> {
    return this.locks.run(`advance:${advanceId}`, async () => {
      const plan = this.live(this.engine.planLiquidation({ advanceId, caller }, this.now()), 'advance', advanceId)
      const advance = this.engine.getAdvance(advanceId) as AdvanceView
      // The contract computes the recovery (collateral, backing, reserve, shortfall); the backing it cannot see is
      // the engine's, bounded by the attested liquidation value left.
      const { fromBackingAtomic } = recoveryAmounts(plan)
      const liquidated = await this.#operatorSend(
        advance.network,
        (clients) => sendLiquidate(clients, { offerKey: advance.advanceKey, backingCoveredAtomic: fromBackingAtomic }),
        {
          alreadyDone: (error) => error.errorName === 'AlreadyLiquidated',
          find: (clients) => findEarlierOperatorTx(clients, { eventName: 'Liquidated', offerKey: advance.advanceKey }, advance.payment.txHash),
        },
      )
      const event = liquidated.facts.find((f): f is FacilityFactOf<'Liquidated'> => f.name === 'Liquidated')
      if (event === undefined) throw new ContractRevertError(advance.network, 'no_liquidated_event', [], new Error(`${liquidated.txHash} emitted no Liquidated`))
      const executed = {
        fromCollateralAtomic: event.args.fromCollateral, fromBackingAtomic: event.args.fromBacking,
        fromReserveAtomic: event.args.fromReserve, shortfallAtomic: event.args.shortfall,
      }
      return this.apply(
        mutation,
        () => this.engine.liquidate({ advanceId, caller, network: advance.network, txHash: liquidated.txHash, executed }, this.now()),
        // A liquidation that recovered everything leaves the borrower owing nothing; a shortfall is a debt unpaid.
        (receipt) => receipt.shortfallAtomic === 0n ? [] : this.passportWrites([{
          agent: receipt.borrower,
          kind: 'liquidated_with_shortfall',
          details: {
            advanceId, jobId: receipt.jobId, sourceId: receipt.sourceId, network: receipt.network, asset: receipt.asset, owedAtomic: receipt.owedAtomic,
            recoveredAtomic: receipt.recoveredAtomic, shortfallAtomic: receipt.shortfallAtomic, txHash: receipt.txHash,
          },
        }]),
      )
    })
  }
}
