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
import type { Address } from 'viem'
import type { DispatchOutcome, DispatchTally, MatchOutcome, RepaymentReceipt, SupplierInput, SupplierRecord } from '../engine/types.ts'
import type { ChainObservationOutcome } from '../engine/engine.ts'
import type { ChainBatch } from '../chain/follower.ts'
import type { RecordWrite, StoredResponse } from '../store/index.ts'
import type { Mutation } from './mutation.ts'
import { refusedWith, ServiceCore } from './core.ts'
import * as lenders from './lenders.ts'
import * as borrowers from './borrowers.ts'
import * as reports from './reports.ts'
import * as chainObservation from './chain-observation.ts'
import * as operatorCommands from './operator-commands.ts'
import { periodic, type Periodic, type PeriodicTurns } from './periodic.ts'

/** Dispatch commands waiting for their commits at once while a backlog drains (startTicker). */
export const TICKS_IN_FLIGHT_MAX = 16
/** The event loop's time a turn gives dispatch commands while a backlog drains, a few bounded commands (startTicker). */
export const TICK_TURN_BUDGET_MS = 1
/** The most a turn gives dispatch commands while the ticker is behind (startTicker): its budget doubles up to this. */
export const TICK_TURN_BUDGET_MAX_MS = 8
/** The most dispatch commands waiting for their commits while the ticker is behind (startTicker): doubles up to this. */
export const TICKS_IN_FLIGHT_BEHIND_MAX = 64

export type { SessionKeyRecord, SpendPolicy } from './session-keys.ts'
export type { Mutation } from './mutation.ts'
export type { ServiceDeps } from './core.ts'
export type { FailedJob } from './operator-commands.ts'

/** An operation of a concept module, bound to the service it takes as its first parameter. */
type Bound<F> = F extends (service: ServiceCore, ...args: infer A) => infer R ? (...args: A) => R : never

export class CreditService extends ServiceCore {
  // ------------------------------------------------------------------------------------------------ lenders.ts
  readonly registerLender: Bound<typeof lenders.registerLender> = (...args) => lenders.registerLender(this, ...args)
  readonly rotateSessionKey: Bound<typeof lenders.rotateSessionKey> = (...args) => lenders.rotateSessionKey(this, ...args)
  readonly sessionKeys: Bound<typeof lenders.sessionKeys> = (...args) => lenders.sessionKeys(this, ...args)
  readonly pendingActions: Bound<typeof lenders.pendingActions> = (...args) => lenders.pendingActions(this, ...args)
  readonly walletActions: Bound<typeof lenders.walletActions> = (...args) => lenders.walletActions(this, ...args)
  readonly walletReadingsSettled: Bound<typeof lenders.walletReadingsSettled> = (...args) => lenders.walletReadingsSettled(this, ...args)
  readonly withdrawLiquidity: Bound<typeof lenders.withdrawLiquidity> = (...args) => lenders.withdrawLiquidity(this, ...args)
  readonly leaseAuthorization: Bound<typeof lenders.leaseAuthorization> = (...args) => lenders.leaseAuthorization(this, ...args)

  // ------------------------------------------------------------------------------------------------ borrowers.ts
  readonly registerSource: Bound<typeof borrowers.registerSource> = (...args) => borrowers.registerSource(this, ...args)
  readonly createJob: Bound<typeof borrowers.createJob> = (...args) => borrowers.createJob(this, ...args)
  readonly postCollateral: Bound<typeof borrowers.postCollateral> = (...args) => borrowers.postCollateral(this, ...args)
  readonly requestCredit: Bound<typeof borrowers.requestCredit> = (...args) => borrowers.requestCredit(this, ...args)

  // ------------------------------------------------------------------------------------------------ reports.ts
  readonly recordSupplierPayment: Bound<typeof reports.recordSupplierPayment> = (...args) => reports.recordSupplierPayment(this, ...args)
  /** Counted after a liquidation mined before it and not recorded yet (OperatorRepairs, below). */
  readonly repay = (mutation: Mutation<RepaymentReceipt>, caller: Address, client: string, advanceId: string, body: { txHash: string }): Promise<StoredResponse> =>
    reports.repay(this, this.operatorRepairs, mutation, caller, client, advanceId, body)

  // ------------------------------------------------------------------------------------------------ chain-observation.ts
  /** Operator transactions the follower saw mined and no request recorded, recorded by the service itself. */
  readonly operatorRepairs = new operatorCommands.OperatorRepairs(this)
  readonly observeChain = (batch: ChainBatch, cursor: RecordWrite): Promise<ChainObservationOutcome | null> =>
    chainObservation.observeChain(this, this.operatorRepairs, batch, cursor)
  readonly followerHealth: Bound<typeof chainObservation.followerHealth> = (...args) => chainObservation.followerHealth(this, ...args)

  // ------------------------------------------------------------------------------------------------ operator-commands.ts
  readonly completeJob: Bound<typeof operatorCommands.completeJob> = (...args) => operatorCommands.completeJob(this, ...args)
  readonly failJob: Bound<typeof operatorCommands.failJob> = (...args) => operatorCommands.failJob(this, ...args)
  /** Repayments the follower held behind this liquidation follow it as soon as it is recorded (OperatorRepairs). */
  readonly liquidate: Bound<typeof operatorCommands.liquidate> = async (...args) => {
    // The job's older advances first: their bands counted on its collateral first (outsider28).
    for (const senior of await operatorCommands.liquidateSeniors(this, args[1], args[2])) await this.operatorRepairs.countHeldOf(senior)
    const response = await operatorCommands.liquidate(this, ...args)
    await this.operatorRepairs.countHeldOf(args[2])
    return response
  }

  // ------------------------------------------------------------------------------------------------ commands of one line

  /**
   * The dispatch ticker: the same command as POST /credit/dispatch (counted, not viewed: Engine.tick), through the same
   * run-and-commit path as a request, with nobody to answer.
   */
  async tick(): Promise<void> {
    await this.run<DispatchTally>(null, () => this.engine.tick(this.now(), this.unobservedNetworks()), (outcome) => this.#liftedPassport(outcome))
  }

  /**
   * Runs the ticker every `intervalMs` (periodic.ts), and again on the next turn of the event loop while the engine has
   * dispatch work due (a call or a chain follower's batch stopped at its change budget, an offer or lease due): bounded
   * commands for at most TICK_TURN_BUDGET_MS of each turn, so requests interleave with the catching up, and up to
   * TICKS_IN_FLIGHT_MAX of them waiting for their commits at once. One at a time, a backlog drained one command per
   * group transaction: 32 time-outs per transaction, about 1,000 a second under the load mix, fewer than the 2 timer
   * steps (a lease's time-out, its offer's expiry) of each of the 2,000 pairs a second that mix reaches, so offers
   * outlived their TTL and borrowers hit live_offers_limit; one command per turn was still behind, with dozens of
   * requests in each turn. While the oldest due lease or offer is overdue by more than an interval
   * (Engine.dispatchOverdueMs: the runs the interval starts have not reached it), each turn doubles the budget up to
   * TICK_TURN_BUDGET_MAX_MS and the commands in flight up to TICKS_IN_FLIGHT_BEHIND_MAX; the first turn it is not, both
   * are back at the base. On a quiet machine the load mix never gets there at saturation (README "Bounded work per
   * command"), so the half-rate tail keeps its 1 ms turns. `wake` asks for a run now (a follower's batch left leases
   * due); a tick that failed (the store full) waits for the interval.
   */
  startTicker(intervalMs: number, onError: (error: unknown) => void, turnBudgetMs = TICK_TURN_BUDGET_MS): Periodic {
    this.#ticker = periodic(intervalMs, () => this.tick(), onError, {
      dueAgain: () => this.engine.dispatchDue(this.now()), inFlightMax: TICKS_IN_FLIGHT_MAX, turnBudgetMs,
      turnBudgetMaxMs: Math.max(turnBudgetMs, TICK_TURN_BUDGET_MAX_MS), inFlightBehindMax: TICKS_IN_FLIGHT_BEHIND_MAX,
      // Behind: the oldest due lease or offer has waited more than an interval, through the runs the interval starts.
      behind: () => this.engine.dispatchOverdueMs(this.now()) > intervalMs,
    })
    return this.#ticker
  }

  #ticker: Periodic | undefined

  /** The ticker's turns so far (periodic.ts turns: how many had a grown budget), for a bench's reading; null before it starts. */
  tickerTurns(): PeriodicTurns | null {
    return this.#ticker?.turns() ?? null
  }

  /** Dispatch lifts due suspensions: each lift is a passport event of its borrower. */
  #liftedPassport(outcome: Pick<DispatchOutcome, 'suspensionsLifted'>): RecordWrite[] {
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
    // The offer's view (a copy) is taken only when a network's chain is not observed: the match path is a hot one and
    // reads no chain.
    if (this.anyNetworkUnobserved()) {
      const network = this.engine.getOffer(offerId)?.network
      if (network !== undefined) this.refuseUnobservedNetwork(network)
    }
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
    return this.apply(mutation, () => this.engine.dispatch(this.now(), this.unobservedNetworks()), (outcome) => this.#liftedPassport(outcome))
  }
}
