// The credit engine: one writer that owns every live actor (job, offer, lease, advance) and the records (lenders,
// backing sources, borrowers, insurance reserves). This file is the commands' control flow: each command checks who
// may act and what it is given, sends its events to the machines, which decide, and drains the snapshots it changed.
// What a command computes or changes lives beside it, one concept per module (src/README.md lists them); the commands
// of a job (jobs.ts), of a liquidation (liquidation.ts) and of the chain's facts (chain-facts.ts) live whole in their
// module, and this class keeps their public names. It never reads the clock (`nowMs` comes from the caller) and never
// does I/O.
import type { TxProof } from '../../machines/index.ts'
import { refused } from './actors.ts'
import { applyRepaidFact } from './advances.ts'
import { borrowerOf, liftDueSuspensions, suspend } from './borrowers.ts'
import { leastAdvanceAtomic, resolveConfig, type EngineConfig } from './config.ts'
import { drain, touch } from './changes.ts'
import { chainTimeOf, dueCounts, ended, matchChangesMax, OFFER_EXPIRY_CHANGES_MAX, offersToDispatch, oldestOverdueMs, roomFor, timersDue, type Ended } from './dispatch.ts'
import { fundOffer, observeChain, timeOutDueLeases, type ChainObservation, type ChainObservationOutcome, type PastLeaseOf } from './chain-facts.ts'
import { fail, forbidden } from './errors.ts'
import { checkInvariants } from './invariants.ts'
import * as jobs from './jobs.ts'
import { isBps, sameAddress } from './keys.ts'
import { lenderChanged, withdrawableAtomic, withdrawLiquidity } from './ledger.ts'
import * as liquidation from './liquidation.ts'
import { isOperator } from './roles.ts'
import { addLender, expireOffer, isUntouchedLender, leaseToBestLender, OFFER_CREDIT_ENDING, park, removeLenders, replaceSession, walletChanged, whyNoLease } from './matching.ts'
import { leaseRefusal, repaymentPlan, supplierPaymentTerms } from './plans.ts'
import { invalidLender, invalidSourceId, invalidSourceTerms, lenderRecord, sourceRecord } from './registration.ts'
import * as reputation from './reputation.ts'
import * as suppliers from './suppliers.ts'
import { restore, snapshots, type StoredSnapshot } from './snapshots.ts'
import { endStaleTimers, staleTimersOf, type StaleTimer } from './stale-offers.ts'
import { EngineState } from './state.ts'
import type { ExecutedTx, OfferKeyOf, RepaidFact, SupplierPaymentFact, WalletView } from './ports.ts'
import { offerKey } from '../chain/ids.ts'
import type {
  Address, AdvanceView, BorrowerExposure, BorrowerRecord, Change, CollateralFact, CollateralPosition, CreateJobInput, CreditRequestInput,
  CreditState, DispatchOutcome, DispatchTally, EngineResult, HeldPaymentRecord, JobSettlementPlan, JobSettlementReceipt, JobView, LeaseView, LenderRecord, LenderView,
  LiquidationInput, LiquidationPlan, LiquidationReceipt, MatchOutcome, MetaRecord, OfferView, PassportEvent, PostCollateralInput,
  RegisterLenderInput, RegisterSourceInput, RepaymentPlan, RepaymentReceipt, SourceRecord, SupplierInput, SupplierPaymentTerms, SupplierRecord, SuspensionLiftedEvent,
  UnderwritingDecision,
} from './types.ts'
import { openOffer, underwrite } from './underwriting.ts'
import * as views from './views.ts'
import { leaseView, lenderView, offerView, viewOf, type RegistrationPage } from './views.ts'

// The engine's public surface keeps its names: the service and the tests import them from here.
export { advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot } from './views.ts'
export type { RegistrationPage } from './views.ts'
export { recoveryAmounts, supplierPaymentOnClosedOffer } from './plans.ts'
export { repaymentReceiptOf } from './advances.ts'
export type { StoredSnapshot } from './snapshots.ts'
export type { ChainEventFact, ChainObservation, ChainObservationOutcome, HeldPaymentFact, PastLeaseOf } from './chain-facts.ts'

/** What one dispatch's steps ended, viewed or only counted (Engine.dispatch, Engine.tick). */
interface DispatchSteps {
  expiredLeases: Ended<LeaseView>
  expiredOffers: Ended<OfferView>
  matches: Ended<MatchOutcome>
  suspensionsLifted: SuspensionLiftedEvent[]
}

const zeroKeySalt = `0x${'00'.repeat(32)}` as const
/** Offer keys with a zero salt: engine tests only (the service always passes its data directory's salt). */
const unsaltedOfferKey: OfferKeyOf = (offerId) => offerKey(zeroKeySalt, offerId)

/** Dispatch's `unobserved` when every network's chain is followed. */
const NO_NETWORKS: ReadonlySet<string> = new Set()

export class Engine {
  readonly config: EngineConfig
  private readonly state: EngineState
  /** The last dispatch stopped at its change budget with steps left: the next call goes on with them. */
  #dispatchStopped = false

  /**
   * `offerKeyOf` gives each new offer its on-chain key; the service passes offerKey(the data directory's salt, id).
   * The default (a zero salt) is for engine tests that never touch a chain.
   */
  constructor(config: Partial<EngineConfig>, wallets: WalletView, initialSnapshots?: Iterable<StoredSnapshot>, offerKeyOf: OfferKeyOf = unsaltedOfferKey) {
    this.config = resolveConfig(config)
    this.state = new EngineState(this.config, wallets, offerKeyOf)
    if (initialSnapshots) restore(this.state, initialSnapshots)
  }

  // ===================================================================================================== commands

  registerLender(input: RegisterLenderInput, nowMs: number): EngineResult<LenderView> {
    const s = this.state
    if (s.lenders.has(input.address)) return fail('conflict', 'lender_exists', `lender ${input.address} is registered`)
    if (s.lenderBySession.has(input.sessionAddress) || s.lenders.has(input.sessionAddress)) {
      return fail('conflict', 'session_in_use', 'the session address belongs to another lender')
    }
    const invalid = invalidLender(input, this.config)
    if (invalid) return invalid
    s.meta.lenderSeq += 1
    const lender = lenderRecord(input, this.config, s.meta.lenderSeq, nowMs)
    addLender(s, lender)
    touch(s, 'meta', 'engine')
    touch(s, 'lender', lender.address)
    return drain(s, lenderView(s, lender))
  }

  /**
   * Removes the lenders among `addresses` that did nothing but register (never leased, nothing lent, earned or
   * withdrawn): the service's sweep of registrations whose session wallet never became able to lend
   * (src/service/lenders.ts). A lender that is not untouched by the time this runs is kept. Returns the removed ones.
   */
  removeLenders(addresses: readonly Address[]): EngineResult<Address[]> {
    const removed = removeLenders(this.state, addresses)
    return drain(this.state, removed)
  }

  /**
   * The lender's registration takes a new session wallet (the service's rotation of a session key whose private half
   * the lender never got: src/service/lenders.ts). Only the lender, and only while it did nothing but register
   * (isUntouchedLender): a lease, an advance or a pending withdrawal names the session wallet it was made with. And
   * only a registration made after `registeredAfterMs` (the service's lenderUnfundedTtlSeconds ago): an older one is
   * the unfunded-lender sweep's, which looks at each registration once (removed, the wallet may register again).
   */
  replaceLenderSession(input: { lender: Address; caller: Address; sessionAddress: Address; registeredAfterMs: number }): EngineResult<LenderView> {
    const s = this.state
    const lender = s.lenders.get(input.lender)
    if (!lender) return fail('not_found', 'lender_not_found', `lender ${input.lender} is not registered`)
    if (!sameAddress(lender.address, input.caller)) return forbidden('a lender replaces its own session key: sign in as the lender')
    if (!isUntouchedLender(s, lender)) {
      return fail('conflict', 'session_key_not_replaceable', 'the lender has leased, lent or earned, or a withdrawal is pending: its session key stays (a lease, an advance or a withdrawal names its session wallet)')
    }
    if (lender.registeredAtMs <= input.registeredAfterMs) {
      return fail('conflict', 'session_key_not_replaceable', 'the registration is older than lenderUnfundedTtlSeconds: its session key stays (a registration whose wallet never became able to lend is removed by then, and the wallet may register again)')
    }
    if (s.lenderBySession.has(input.sessionAddress) || s.lenders.has(input.sessionAddress)) {
      return fail('conflict', 'session_in_use', 'the session address belongs to another lender')
    }
    replaceSession(s, lender, input.sessionAddress)
    touch(s, 'lender', lender.address)
    return drain(s, lenderView(s, lender))
  }

  /**
   * The lender lowers what the service may lend by `amountAtomic` (issue 9, case 6): the available part at once, the
   * rest (what live leases and open advances hold) as it comes back. Live leases keep their reservations, so a lease
   * in flight can still be paid. A lender left with nothing available is out of the books. The tokens stay in the
   * session wallet until its key sends them back (the service publishes that transfer).
   */
  withdrawLiquidity(input: { lender: Address; amountAtomic: bigint; caller: Address }, _nowMs: number): EngineResult<LenderView> {
    const s = this.state
    const lender = s.lenders.get(input.lender)
    if (!lender) return fail('not_found', 'lender_not_found', `lender ${input.lender} is not registered`)
    if (!sameAddress(lender.address, input.caller)) return forbidden('a lender withdraws its own liquidity: sign in as the lender')
    if (input.amountAtomic <= 0n) return fail('invalid', 'invalid_amount', 'amountAtomic must be > 0')
    const most = withdrawableAtomic(lender)
    if (input.amountAtomic > most) {
      return fail('conflict', 'withdrawal_exceeds_liquidity', `the lender can withdraw at most ${most}: policyAvailableAtomic + reservedAtomic + deployedAtomic + lossesAtomic - withdrawalPendingAtomic (its profile's policyAvailableAtomic, not the wallet-capped availableAtomic)`)
    }
    withdrawLiquidity(lender, input.amountAtomic)
    if (lender.availableAtomic === 0n) park(s, lender)
    lenderChanged(s, lender)
    return drain(s, lenderView(s, lender))
  }

  /**
   * After an unclean stop: every id sequence jumps to the next multiple of `step` (2^32), so an id minted in memory
   * and lost with the crash (its commit never reached the disk) is never minted again for something else.
   */
  advanceSequences(step = 2 ** 32): EngineResult<MetaRecord> {
    const next = (seq: number) => (Math.floor(seq / step) + 1) * step
    const meta = this.state.meta
    this.state.meta = {
      offerSeq: next(meta.offerSeq),
      leaseSeq: next(meta.leaseSeq),
      advanceSeq: next(meta.advanceSeq),
      lenderSeq: next(meta.lenderSeq),
      sourceSeq: next(meta.sourceSeq),
      ...(meta.chainTimeMs === undefined ? {} : { chainTimeMs: meta.chainTimeMs }),
    }
    touch(this.state, 'meta', 'engine')
    return drain(this.state, { ...this.state.meta })
  }

  registerSource(input: RegisterSourceInput & { caller: Address }, nowMs: number): EngineResult<SourceRecord> {
    const s = this.state
    if (!sameAddress(input.agent, input.caller)) return forbidden('a backing source is registered by its agent: sign in as the body\'s agent')
    const invalidId = invalidSourceId(input.sourceId)
    if (invalidId) return invalidId
    if (s.sources.has(input.sourceId)) return fail('conflict', 'source_exists', `source ${input.sourceId} is registered`)
    const invalid = invalidSourceTerms(input)
    if (invalid) return invalid
    s.meta.sourceSeq += 1
    const source = sourceRecord(input, s.meta.sourceSeq, nowMs)
    s.sources.set(source.sourceId, source)
    s.sourceOrder.push(source.sourceId)
    borrowerOf(s, input.agent)
    touch(s, 'meta', 'engine')
    touch(s, 'source', source.sourceId)
    return drain(s, { ...source })
  }

  /** Whether createJob would take these terms now (who asks, the id, the amounts, the due time): a query. */
  planJobCreation(input: Pick<CreateJobInput, 'jobId' | 'client' | 'borrower' | 'receivableAtomic' | 'dueAtMs'> & { caller: Address }, nowMs: number): EngineResult<null> {
    return jobs.planJobCreation(this.state, input, nowMs)
  }

  createJob(input: CreateJobInput & { caller: Address; postedCollateral?: readonly CollateralFact[] }, nowMs: number): EngineResult<JobView> {
    return jobs.createJob(this.state, input, nowMs)
  }

  /** Who may post collateral on the job, and what its proof must show (the CollateralPosted of the job's borrower). */
  planCollateral(input: { jobId: string; caller: Address }): EngineResult<{ network: string; asset: string; borrower: Address; jobKey: `0x${string}` }> {
    return jobs.planCollateral(this.state, input)
  }

  postCollateral(input: PostCollateralInput & { caller: Address }, nowMs: number): EngineResult<CollateralPosition> {
    return jobs.postCollateral(this.state, input, nowMs)
  }

  /** A collateral report whose CollateralPosted the job already counts (the follower's, or its registration's). */
  reportedCollateral(input: PostCollateralInput & { caller: Address }): EngineResult<CollateralPosition> {
    return jobs.reportedCollateral(this.state, input)
  }

  /** The configuration's supplier directory at start-up (src/engine/suppliers.ts says what an operator's entry keeps). */
  seedSuppliers(entries: readonly SupplierInput[], nowMs: number): EngineResult<SupplierRecord[]> {
    const seeded = suppliers.seedSuppliers(this.state, entries, nowMs)
    return seeded.ok ? drain(this.state, seeded.value) : seeded
  }

  /** An operator adds or replaces a supplier's entry. */
  putSupplier(input: SupplierInput & { caller: Address }, nowMs: number): EngineResult<SupplierRecord> {
    const put = suppliers.putSupplier(this.state, input, isOperator(this.state, input.caller), nowMs)
    return put.ok ? drain(this.state, put.value) : put
  }

  /** An operator removes a supplier: no new credit goes there; live offers keep the supplier their leases bind. */
  removeSupplier(input: { domain: string; caller: Address }, nowMs: number): EngineResult<SupplierRecord> {
    const removed = suppliers.removeSupplier(this.state, input.domain, isOperator(this.state, input.caller), nowMs)
    return removed.ok ? drain(this.state, removed.value) : removed
  }

  /**
   * Underwrite a credit request: an approved decision creates an offer; a declined one or a refusal changes nothing of
   * the request's own. A borrower at liveOffersPerBorrowerMax (or whose live offers bring its job to advancesPerJobMax)
   * has its stale offers ended first (stale-offers.ts), the
   * dispatch ticker's work done early: committed with an approved or a declined answer, never with a refusal (every
   * refusal is decided before they end).
   */
  requestCredit(input: CreditRequestInput & { caller: Address }, nowMs: number): EngineResult<UnderwritingDecision> {
    const s = this.state
    if (!sameAddress(input.agent, input.caller)) return forbidden('credit is requested by the borrower agent itself: sign in as the body\'s agent')
    if (input.amountAtomic <= 0n) return fail('invalid', 'invalid_amount', 'amountAtomic must be > 0')
    const minimum = leastAdvanceAtomic(this.config, input.network, input.asset)
    if (input.amountAtomic < minimum) {
      return fail('invalid', 'amount_below_minimum', `amountAtomic must be at least ${minimum}, the least advance in ${input.asset} on ${input.network} (the catalog's networks[].assets[].advanceMinAtomic)`)
    }
    let liveOffers = s.liveOffersOf.get(input.agent)?.size ?? 0
    // At the limit, the borrower's own offers already past their time (the ticker is bounded per turn and may be behind)
    // do not count: they are ended below, in this command, once nothing else refuses the request (a refusal changes
    // nothing). Only at the limit: below it, a request reads nothing more.
    let stale: StaleTimer[] | undefined
    if (liveOffers >= this.config.liveOffersPerBorrowerMax) {
      stale = staleTimersOf(s, input.agent, nowMs)
      liveOffers -= stale.length
      if (liveOffers >= this.config.liveOffersPerBorrowerMax) {
        return fail('conflict', 'live_offers_limit', `the borrower holds ${this.config.liveOffersPerBorrowerMax} live offers, the most allowed; wait until one is funded, expires or is declined`)
      }
    }
    if (input.maximumFeeAtomic < 0n) return fail('invalid', 'invalid_amount', 'maximumFeeAtomic must be >= 0')
    if (input.supplierAddress !== undefined && sameAddress(input.supplierAddress, input.agent)) {
      return fail('invalid', 'supplier_is_borrower', 'the supplier is paid, never the borrower')
    }
    const job = s.jobs.get(input.repaymentSource)
    const backing = job ? undefined : s.sources.get(input.repaymentSource)
    if (!job && !backing) return fail('not_found', 'repayment_source_not_found', `no live job or backing source ${input.repaymentSource}`)
    // Every advance of a job that still owes is named by its one settleJob: past advancesPerJobMax it would not fit in a
    // transaction, and the job could never be settled (the borrower's live offers may all become this job's advances).
    // Checked before underwriting, like the live offers, so that a refusal costs the least; only for the job's own
    // borrower (anyone else's request is declined, source_not_owned, whatever its offers).
    if (job) {
      const { advanceIds, borrower } = job.getSnapshot().context
      const openAdvances = advanceIds.length
      if (openAdvances + liveOffers >= this.config.advancesPerJobMax && sameAddress(borrower, input.agent)) {
        // As at the live-offer limit, its own offers past their time do not count: they end below (only at this bound).
        if (stale === undefined) {
          stale = staleTimersOf(s, input.agent, nowMs)
          liveOffers -= stale.length
        }
        if (openAdvances + liveOffers >= this.config.advancesPerJobMax) {
          return fail('conflict', 'job_advances_limit', `job ${input.repaymentSource}'s open advances (${openAdvances}) and the borrower's live offers (${liveOffers}) ` +
            `reach advancesPerJobMax (${this.config.advancesPerJobMax}), the most one settleJob can pay; wait until offers end or advances are repaid`)
        }
      }
    }

    if (stale !== undefined) {
      endStaleTimers(s, stale, nowMs)
      if ((s.liveOffersOf.get(input.agent)?.size ?? 0) !== liveOffers) throw new Error(`invariant: ${input.agent}'s stale offers did not all end`)
    }
    const decision = underwrite(s, input, job, backing, nowMs)
    const { reasons, capacityAtomic, coverageBps, riskBand, durationSeconds } = decision
    if (reasons.length > 0) {
      return drain(s, { decision: 'declined', reasons, capacityAtomic, coverageBps, riskBand, durationSeconds, offer: null })
    }
    const offer = openOffer(s, input, decision, nowMs)
    return drain(s, { decision: 'approved', reasons, capacityAtomic, coverageBps, riskBand, durationSeconds, offer })
  }

  /** Lease the offer to the cheapest eligible lender whose wallet can pay. */
  matchOffer(input: { offerId: string; caller: Address }, nowMs: number): EngineResult<MatchOutcome> {
    const offer = this.state.offers.get(input.offerId)
    if (!offer) return fail('not_found', 'offer_not_found', `offer ${input.offerId} is not live`)
    if (!sameAddress(input.caller, offer.getSnapshot().context.borrower)) return forbidden('an offer is matched by its borrower')
    const outcome = leaseToBestLender(this.state, offer, nowMs)
    if ('accepted' in outcome && outcome.code === OFFER_CREDIT_ENDING) {
      return fail('conflict', 'offer_credit_ending', `offer ${input.offerId}: a lease of ${this.config.leaseTtlMs / 1000} s granted now would end after its credit end; it expires at its expiresAt`)
    }
    if ('accepted' in outcome) return refused('offer', input.offerId, outcome)
    if (outcome.lease === null) outcome.noLease = whyNoLease(this.state, offer, outcome.offerExpired, nowMs)
    return drain(this.state, outcome)
  }

  /**
   * Expire leases past their chain deadline (their offers go back to matching, or expire with them once past their
   * TTL), lift due suspensions, then expire stale offers and match the waiting ones; each step only while it fits in
   * the command's change budget (changesPerCommandMax), in that order, so a call that stops leaves the rest for the
   * next call in the same order. No offer of a network in `unobserved` (its chain not observed: the service passes the
   * networks whose chain follower stopped, or has failed for the health hold) is matched: a lease there could end only
   * once the chain is seen past its deadline, so it would hold the lender's capacity and the offer for as long as
   * nobody observes that chain.
   */
  dispatch(nowMs: number, unobserved: ReadonlySet<string> = NO_NETWORKS): EngineResult<DispatchOutcome> {
    const steps = this.#dispatch(nowMs, true, unobserved)
    return drain(this.state, {
      expiredLeases: steps.expiredLeases.views as LeaseView[], expiredOffers: steps.expiredOffers.views as OfferView[],
      matches: steps.matches.views as MatchOutcome[], suspensionsLifted: steps.suspensionsLifted,
    })
  }

  /**
   * The dispatch ticker's call: the same steps and changes as dispatch, counted instead of viewed (the ticker answers
   * nobody, and a view of each lease and offer it ended would be garbage at once).
   */
  tick(nowMs: number, unobserved: ReadonlySet<string> = NO_NETWORKS): EngineResult<DispatchTally> {
    const steps = this.#dispatch(nowMs, false, unobserved)
    return drain(this.state, {
      expiredLeases: steps.expiredLeases.count, expiredOffers: steps.expiredOffers.count, matches: steps.matches.count,
      suspensionsLifted: steps.suspensionsLifted,
    })
  }

  /**
   * Whether dispatch has work due now: a lease its network's chain time is past (a follower batch stops at its change
   * budget too), an offer past its TTL, or the last dispatch stopped at its budget. O(networks): the dispatch ticker
   * asks after every call and runs again at once while it is true.
   */
  dispatchDue(nowMs: number): boolean {
    return this.#dispatchStopped || timersDue(this.state, nowMs)
  }

  /**
   * How long the oldest due lease (on its network's observed chain time) or offer (past its TTL) has been due, in ms; 0
   * when nothing is due. O(networks): how far dispatch is behind, for a reading (the load mix samples it).
   */
  dispatchOverdueMs(nowMs: number): number {
    return oldestOverdueMs(this.state, nowMs)
  }

  /** How many leases and offers are due now, at most `max` of each (a bench's reading: it walks the due items). */
  dispatchDueCounts(nowMs: number, max = 100_000): { leases: number; offers: number } {
    return dueCounts(this.state, nowMs, max)
  }

  /** Dispatch's steps (see dispatch), viewing what they ended or only counting it; notes whether work was left. */
  #dispatch(nowMs: number, withViews: boolean, unobserved: ReadonlySet<string>): DispatchSteps {
    const steps: DispatchSteps = { expiredLeases: ended(withViews), expiredOffers: ended(withViews), matches: ended(withViews), suspensionsLifted: [] }
    this.#dispatchStopped = !this.#dispatchSteps(steps, nowMs, unobserved)
    return steps
  }

  /** Dispatch's steps: false when the change budget stopped them with work left. */
  #dispatchSteps(steps: DispatchSteps, nowMs: number, unobserved: ReadonlySet<string>): boolean {
    const s = this.state
    // Leases expire on their network's observed chain time, never on `nowMs`: observeChain expires them as the chain
    // passes their deadline, so this finds one when a batch ran out of change budget, or a lease was granted past its
    // deadline already (a chain ahead of the service's clock).
    for (const network of s.leaseExpiries.keys()) {
      if (!timeOutDueLeases(s, network, nowMs, steps.expiredLeases, steps.expiredOffers)) return false
    }
    if (!liftDueSuspensions(s, nowMs, steps.suspensionsLifted)) return false

    for (const { offer, due } of offersToDispatch(s, nowMs, unobserved)) {
      if (!roomFor(s, due ? OFFER_EXPIRY_CHANGES_MAX : matchChangesMax(this.config))) return false
      // The schedule says the offer's TTL is over; the offer machine's guard agrees, or this throws.
      if (due) {
        expireOffer(s, offer, 'stale', nowMs)
        steps.expiredOffers.count += 1
        steps.expiredOffers.views?.push(offerView(offer.getSnapshot()))
        continue
      }
      const match = leaseToBestLender(s, offer, nowMs)
      // No whole lease fits before its credit end, its expiry not due yet on chain time: it waits for that expiry.
      if ('accepted' in match && match.code === OFFER_CREDIT_ENDING) continue
      if ('accepted' in match) throw new Error(`invariant: waiting offer ${offer.id} refused matching (${match.code})`)
      if (match.offerExpired) {
        steps.expiredOffers.count += 1
        steps.expiredOffers.views?.push(match.offer)
      }
      if (match.lease || match.refusedLeases.length > 0) {
        steps.matches.count += 1
        steps.matches.views?.push(match)
      }
    }
    return true
  }

  /**
   * What the reporting lender's payment on the offer must show: the terms of the live lease it holds. A lender whose
   * lease there ended unpaid learns that it expired; one that never held one, that it has none.
   */
  planSupplierPayment(input: { offerId: string; lender: Address; caller: Address }): EngineResult<SupplierPaymentTerms> {
    const terms = supplierPaymentTerms(this.state, input)
    return terms.ok ? { ok: true, value: terms.value, changes: [] } : terms
  }

  /** A verified supplier payment funds the offer: the lease is paid and the advance is created. */
  recordSupplierPayment(fact: SupplierPaymentFact & { caller: Address }, nowMs: number): EngineResult<AdvanceView> {
    const s = this.state
    const offer = s.offers.get(fact.offerId)
    if (!offer) return fail('not_found', 'offer_not_found', `offer ${fact.offerId} is not live`)
    const o = offer.getSnapshot().context
    const lenderAddress = s.lenderBySession.get(fact.payer) ?? (s.lenders.has(fact.payer) ? fact.payer : undefined)
    if (!lenderAddress) return fail('forbidden', 'lease_not_held', 'the payer is not a registered lender')
    if (!sameAddress(lenderAddress, fact.caller)) {
      return forbidden('a supplier payment is reported by the lender that paid: sign in as the body\'s lender')
    }
    if (o.excludedLenders.includes(lenderAddress)) return leaseRefusal('expired', `the lease of ${lenderAddress} on offer ${o.offerId} expired`)
    const lease = o.currentLeaseId ? s.leases.get(o.currentLeaseId) : undefined
    if (lease && lease.getSnapshot().context.lender !== lenderAddress) {
      return fail('forbidden', 'lease_not_held', `offer ${o.offerId} is leased to another lender`)
    }
    // The reporter holds the lease (checked above): the same funding as the chain follower's (chain-facts.ts).
    const funded = fundOffer(s, offer, lenderAddress, fact, nowMs)
    return funded.ok ? drain(s, funded.value) : funded
  }

  /**
   * The chain follower's batch of one network (chain-facts.ts): each SupplierPaid of a live offer funds it exactly as
   * its report would, then the network's observed chain time moves to the batch's end and expires the leases whose
   * deadline it is past, as many as the change budget leaves room for (dispatch expires the rest). `pastLease` reads an ended lease back from the store (a payment under an old authorization).
   */
  observeChain(batch: ChainObservation, nowMs: number, pastLease?: PastLeaseOf): EngineResult<ChainObservationOutcome> {
    return drain(this.state, observeChain(this.state, batch, nowMs, pastLease))
  }

  /** The network's observed chain time (ms), or undefined before its first observation. */
  chainTimeMs(network: string): number | undefined {
    return chainTimeOf(this.state, network)
  }

  /** What the advance still owes: the lender's part and the reserve's share (what repay(advanceKey, total) pays now). */
  planRepayment(advanceId: string): EngineResult<RepaymentPlan> {
    const advance = this.state.advances.get(advanceId)
    if (!advance) return fail('not_found', 'advance_not_found', `advance ${advanceId} is not live`)
    return { ok: true, changes: [], value: repaymentPlan(advance.getSnapshot().context) }
  }

  /**
   * A verified Repaid fact of any amount reduces what the advance owes (applyRepaidFact); the advance is repaid, and
   * closes on its source, when nothing is owed any more. The same fact again answers the same receipt.
   */
  repayAdvance(fact: RepaidFact, nowMs: number): EngineResult<RepaymentReceipt> {
    const applied = applyRepaidFact(this.state, fact, nowMs)
    return applied.ok ? drain(this.state, applied.value) : applied
  }

  /** Per-advance lender amounts and the reserve amount of the job's settlement transaction. */
  planJobSettlement(input: { jobId: string; caller: Address; mined?: boolean }): EngineResult<JobSettlementPlan> {
    return jobs.planJobSettlement(this.state, input)
  }

  /** Whether failJob would be taken now (who asks, the job's state), before the operator's failJob is sent on chain. */
  planJobFailure(input: jobs.FailureInput): EngineResult<{ jobId: string; network: string; funding: TxProof; jobKey: `0x${string}`; openAdvances: number }> {
    return jobs.planJobFailure(this.state, input)
  }

  /** Apply the executed settleJob transaction: every open advance on the job is repaid and the job completes. */
  completeJob(input: { jobId: string; caller: Address } & ExecutedTx, nowMs: number): EngineResult<JobSettlementReceipt> {
    return jobs.completeJob(this.state, input, nowMs)
  }

  /** Fail a job: suspend its borrower, withdraw the borrower's live offers, default the job's open advances. */
  failJob(input: jobs.FailureInput, nowMs: number): EngineResult<PassportEvent> {
    return jobs.failJob(this.state, input, nowMs)
  }

  /** Recovery amounts, step by step, for a defaulted (or past-due) advance. */
  planLiquidation(input: { advanceId: string; caller: Address }, nowMs: number): EngineResult<LiquidationPlan> {
    return liquidation.planLiquidation(this.state, input, nowMs)
  }

  /** The job's older advances to liquidate before this one, oldest first (outsider28; see liquidation.ts). */
  seniorLiquidations(input: { advanceId: string; caller: Address }, nowMs: number): { advanceId: string; lender: Address }[] {
    return liquidation.seniorLiquidations(this.state, input, nowMs)
  }

  /** Apply the executed liquidate transaction: recover in order, record the shortfall and its penalty. */
  liquidate(input: LiquidationInput & { caller: Address }, nowMs: number): EngineResult<LiquidationReceipt> {
    return liquidation.liquidate(this.state, input, nowMs)
  }

  /** One uptime observation of a lender (bps of the period it was reachable) moves its reliability towards it. */
  recordLenderUptime(input: { lender: Address; uptimeBps: number }, nowMs: number): EngineResult<LenderRecord> {
    const lender = this.state.lenders.get(input.lender)
    if (!lender) return fail('not_found', 'lender_not_found', `lender ${input.lender} is not registered`)
    if (!isBps(input.uptimeBps)) return fail('invalid', 'invalid_bps', 'uptimeBps must be an integer in 0..10000')
    reputation.lenderUptime(lender, input.uptimeBps, this.config, nowMs)
    lenderChanged(this.state, lender)
    return drain(this.state, { ...lender })
  }

  /**
   * Evidence the lender's reputation was initialised from no longer counts (its ERC-8004 agent moved to another
   * holder, src/reputation): the offset it contributed is taken back, and the books reorder.
   */
  withdrawLenderEvidence(input: { lender: Address; offsetBps: number }, _nowMs: number): EngineResult<LenderRecord> {
    const lender = this.state.lenders.get(input.lender)
    if (!lender) return fail('not_found', 'lender_not_found', `lender ${input.lender} is not registered`)
    if (!Number.isInteger(input.offsetBps) || Math.abs(input.offsetBps) > 10_000) return fail('invalid', 'invalid_bps', 'offsetBps must be an integer in -10000..10000')
    reputation.evidenceWithdrawn(lender, input.offsetBps)
    lenderChanged(this.state, lender)
    return drain(this.state, { ...lender })
  }

  /**
   * The wallet watcher saw the balance or allowance of `holder` (a session key) change: a parked lender whose wallet
   * now pays the least advance (matching.ts walletFunded) is back in its books. Changes nothing durable. Returns
   * whether a lender was unparked.
   */
  walletChanged(holder: Address): boolean {
    return walletChanged(this.state, holder)
  }

  /** Whether the lender did nothing but register (removeLenders would take it). */
  isUntouchedLender(address: Address): boolean {
    const lender = this.state.lenders.get(address)
    return lender !== undefined && isUntouchedLender(this.state, lender)
  }

  /** Lenders out of the books (parked): registrations whose wallet was never seen holding anything, among others. */
  parkedLenderCount(): number {
    return this.state.parked.size
  }

  /** Whether the lender is out of the books, waiting for its wallet to change. */
  isParked(address: Address): boolean {
    return this.state.parked.has(address)
  }

  // ======================================================================================================== reads

  /** The ids of the live jobs or advances (those created in a commit still in flight included). */
  liveIds(kind: 'job' | 'advance'): IterableIterator<string> {
    return (kind === 'job' ? this.state.jobs : this.state.advances).keys()
  }

  getJob(jobId: string): JobView | undefined {
    const actor = this.state.jobs.get(jobId)
    return actor && viewOf<JobView>(actor.getSnapshot())
  }

  getOffer(offerId: string): OfferView | undefined {
    const actor = this.state.offers.get(offerId)
    return actor && offerView(actor.getSnapshot())
  }

  getLease(leaseId: string): LeaseView | undefined {
    const actor = this.state.leases.get(leaseId)
    return actor && leaseView(actor.getSnapshot())
  }

  /** The live job whose on-chain key is `jobKey` (a JobSettled or JobFailed event names it so). */
  jobByKey(jobKey: string): JobView | undefined {
    const jobId = jobs.jobIdOfKey(this.state, jobKey)
    return jobId === undefined ? undefined : this.getJob(jobId)
  }

  /** The live advance whose on-chain key is `advanceKey` (a Repaid event names it so). */
  advanceByKey(advanceKey: string): AdvanceView | undefined {
    const advanceId = this.state.advanceIdByKey.get(advanceKey)
    return advanceId === undefined ? undefined : this.getAdvance(advanceId)
  }

  getAdvance(advanceId: string): AdvanceView | undefined {
    const actor = this.state.advances.get(advanceId)
    return actor && viewOf<AdvanceView>(actor.getSnapshot())
  }

  /** A lender (by lender or session address) as every view shows it: available within what its wallets can pay. */
  getLender(address: Address): LenderView | undefined {
    const lender = this.state.lenders.get(address) ?? this.state.lenders.get(this.state.lenderBySession.get(address) as Address)
    return lender && lenderView(this.state, lender)
  }

  /** What the credit contracts hold for any of `accounts` (views.ts heldPaymentsOf): above 0 only. */
  heldPayments(accounts: readonly Address[]): HeldPaymentRecord[] {
    return views.heldPaymentsOf(this.state, accounts)
  }

  /** Principal of the lender's live leases on a network and asset: what its session wallet must keep for them. */
  walletReservedAtomic(lender: Address, network: string, asset: string): bigint {
    return views.walletReservedAtomic(this.state, lender, network, asset)
  }

  getSource(sourceId: string): SourceRecord | undefined {
    const source = this.state.sources.get(sourceId)
    return source && { ...source }
  }

  getBorrower(address: Address): BorrowerRecord | undefined {
    const borrower = this.state.borrowers.get(address)
    return borrower && { ...borrower }
  }

  /** What a borrower owes now and since when the service knows it (views.ts): for the paid credit score. */
  borrowerExposure(address: Address, nowMs: number): BorrowerExposure {
    return views.borrowerExposure(this.state, address, nowMs)
  }

  /**
   * A page of lenders in registration order: those after `afterSeq` that `accept` takes, at most `limit`, looking
   * at no more than `scanMax` of them. O(log n + scanned), never O(all lenders): the list routes call it per request.
   */
  lendersPage(afterSeq: number, limit: number, scanMax: number, accept: (lender: LenderRecord) => boolean = () => true): RegistrationPage<LenderView> {
    const page = views.registrationPage(this.state.lenderOrder, (address) => this.state.lenders.get(address) as LenderRecord, afterSeq, limit, scanMax, accept)
    return { items: page.items.map((lender) => lenderView(this.state, lender)), nextAfterSeq: page.nextAfterSeq }
  }

  /** A page of backing sources in registration order (see `lendersPage`). */
  sourcesPage(afterSeq: number, limit: number): RegistrationPage<SourceRecord> {
    return views.registrationPage(this.state.sourceOrder, (id) => this.state.sources.get(id) as SourceRecord, afterSeq, limit, limit, () => true)
  }

  /** Live leases of a lender (by lender or session address), oldest first: what its wallet should pay now. */
  liveLeasesOf(address: Address): LeaseView[] {
    return views.liveLeasesOf(this.state, address)
  }

  /** The live supplier directory, by domain. */
  supplierDirectory(): SupplierRecord[] {
    return suppliers.directory(this.state)
  }

  creditState(): CreditState {
    return views.creditState(this.state)
  }

  /** Every live actor snapshot and every record, as the store would hold them (final: false). */
  snapshots(): Change[] {
    return snapshots(this.state)
  }

  /** Throws when any money or lifecycle invariant of DESIGN section 4 does not hold (invariants.ts). */
  checkInvariants(): void {
    checkInvariants(this.state)
  }
}
