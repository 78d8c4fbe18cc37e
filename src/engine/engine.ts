// The credit engine: one writer that owns every live actor (job, offer, lease, advance) and the records (lenders,
// backing sources, borrowers, insurance reserves). Each command validates first, then applies, then hands back the
// snapshots it changed. It never reads the clock (`nowMs` comes from the caller) and never does I/O.
import {
  createActor, initialTransition, transition, type Actor, type AnyActor, type AnyMachineSnapshot, type AnyStateMachine, type EventFromLogic, type Snapshot,
} from 'xstate'
import {
  advanceMachine, jobMachine, leaseMachine, leaseRefusals, machines, offerMachine, refusalCode, refusals, RISK_BANDS, statesTaking,
  offerRefusals,
  type AdvanceInput, type LeaseContext, type LeaseInput, type OfferContext, type OfferInput, type RecoveryRecord, type RepaymentRecord,
  type SourceRef,
} from '../../machines/index.ts'
import { entryFor, MatchingBook, reposition, type BookEntry } from './book.ts'
import { recordTransition, restoreHistory, withBornFinalHistory, withHistory } from './history.ts'
import { resolveConfig, type EngineConfig } from './config.ts'
import { ID_PATTERNS, ID_PREFIXES } from './ids.ts'
import { IndexedMinHeap } from './schedule.ts'
import type { ExecutedTx, RepaidFact, SupplierPaymentFact, WalletView } from './ports.ts'
import {
  applyBps, clampBps, coverageBps, eligibleFee, feeAtomic, insuranceAtomic, isActiveLender, lenderRepaymentAtomic, minBig, planRecovery, riskBand,
} from './rules.ts'
import type {
  ActorKind, Address, AdvanceView, BorrowerExposure, BorrowerRecord, Change, CollateralPosition, CreateJobInput, CreditRequestInput,
  CreditState, DeclineReason, DispatchOutcome, EngineError, EngineResult, ErrorClass, JobSettlementPlan,
  JobSettlementReceipt, JobView, LeaseView, LenderRecord, LiquidationInput, LiquidationPlan, LiquidationReceipt,
  MatchOutcome, MetaRecord, OfferView, PassportEvent, SuspensionLiftedEvent, PostCollateralInput, RegisterLenderInput, RegisterSourceInput,
  RepaymentPlan, RepaymentReceipt, ReserveRecord, SourceRecord, SupplierPaymentTerms, UnderwritingDecision,
} from './types.ts'

type JobActor = Actor<typeof jobMachine>
type OfferActor = Actor<typeof offerMachine>
type LeaseActor = Actor<typeof leaseMachine>
type AdvanceActor = Actor<typeof advanceMachine>
type AnyLive = JobActor | OfferActor | LeaseActor | AdvanceActor
type LiveOf<K extends ActorKind> = Actor<(typeof machines)[K]>
type EventOf<K extends ActorKind> = EventFromLogic<(typeof machines)[K]>

/** A machine's answer to one event: taken (from one state to another), or refused with the code of its table. */
type Answer = { accepted: true; from: string; to: string } | { accepted: false; code: string; state: string }

/** The states in which a job still takes new drawings (COMMIT): underwriting declines the others as closed. */
const JOB_OPEN_STATES: ReadonlySet<string> = new Set(statesTaking(jobMachine, 'COMMIT'))

const ID_FIELDS = { job: 'jobId', offer: 'offerId', lease: 'leaseId', advance: 'advanceId' } as const
const idOf = (kind: ActorKind, context: Record<string, unknown>): string => context[ID_FIELDS[kind]] as string

/** A stored snapshot as the store hands it back for a restart. */
export interface StoredSnapshot {
  kind: Change['kind']
  id: string
  record: unknown
  final?: boolean
}

const JOB_ID = new RegExp(ID_PATTERNS.job)
const SOURCE_ID = new RegExp(ID_PATTERNS.source)

/** A scheduled lease or offer: when it is due and its id's sequence, the tie-break that keeps the order deterministic. */
interface Due {
  id: string
  seq: number
  atMs: number
}

const dueId = (d: Due): string => d.id
const byDueThenSeq = (a: Due, b: Due): number => a.atMs - b.atMs || a.seq - b.seq
const bySeq = (a: Due, b: Due): number => a.seq - b.seq

/** createActor(machine, { snapshot }): the restored actor continues exactly where the persisted one stopped. */
function restoreActor<M extends AnyStateMachine>(machine: M, snapshot: unknown): Actor<M> {
  const actor = createActor(machine as AnyStateMachine, { snapshot: snapshot as Snapshot<unknown> }).start()
  restoreHistory(actor, snapshot)
  return actor as unknown as Actor<M>
}

/**
 * XState's persisted snapshot carries `output: undefined` (and `error: undefined`) until an actor is done; the seam
 * promises JSON-like records (src/README.md), so absent values are dropped rather than stored as `undefined`.
 */
function persisted(snapshot: unknown): unknown {
  // Copied without the absent keys rather than deleted from a copy: `delete` would turn the record into a slow
  // dictionary object, and every record is encoded and checked by the store after this.
  const source = snapshot as Record<string, unknown>
  const record: Record<string, unknown> = {}
  for (const key in source) {
    const value = source[key]
    if (value !== undefined) record[key] = value
  }
  return record
}

function fail(errorClass: ErrorClass, code: string, message: string): { ok: false; error: EngineError } {
  return { ok: false, error: { code, class: errorClass, message } }
}

/** Who may act is the engine's rule: the caller is not the actor the command needs. */
function forbidden(message: string): { ok: false; error: EngineError } {
  return fail('forbidden', 'forbidden', message)
}

/** A payment report against a lease in `state`: refused with the lease machine's code for PAY there. */
function leaseRefusal(state: 'expired' | 'paid', message: string): { ok: false; error: EngineError } {
  return fail('conflict', refusalCode(leaseMachine, leaseRefusals, state, 'PAY'), message)
}

/**
 * Why a payment report on an offer that reached a final state (it left memory; the caller reads it from the store)
 * is refused: the reporting lender's latest lease there answers PAY (lease_expired, lease_not_live), or there is none.
 */
export function supplierPaymentOnClosedOffer(offer: OfferView, leaseOf: (leaseId: string) => LeaseView | undefined, lender: Address): EngineError {
  for (const leaseId of [...offer.leaseIds].reverse()) {
    const lease = leaseOf(leaseId)
    if (lease === undefined || !sameAddress(lease.lender, lender)) continue
    // A lease outlives its offer only between the offer's end and the commit that ends the lease with it.
    if (lease.state === 'leased') return { class: 'conflict', code: 'offer_closed', message: `offer ${offer.offerId} has reached a final state` }
    return leaseRefusal(lease.state, `the lease ${lease.leaseId} of offer ${offer.offerId} is ${lease.state}`).error
  }
  return { class: 'conflict', code: 'no_lease', message: `offer ${offer.offerId} has no lease to lender ${lender}` }
}

/** A lender's session wallet on one network for one asset. */
function walletKey(lender: string, network: string, asset: string): string {
  return `${lender}\u0000${network}\u0000${asset}`
}

function bookKey(network: string, asset: string): string {
  return `${network}\u0000${asset}`
}

function reserveId(network: string, asset: string): string {
  return `reserve:${network}:${asset}`
}

function seqOf(id: string): number {
  return Number(id.slice(id.indexOf('_') + 1))
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}

function isBps(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 10_000
}

/** View of an actor snapshot, live or stored: its context plus its state. */
function viewOf<V>(snapshot: { value: unknown; context: unknown }): V {
  return { ...(snapshot.context as object), state: snapshot.value } as V
}

/** A lease's view leaves out its report grace: the API publishes the deadline, the grace is the catalog's rule. */
function leaseView(snapshot: { value: unknown; context: unknown }): LeaseView {
  const { reportGraceMs: _grace, ...context } = snapshot.context as LeaseContext
  return { ...context, state: snapshot.value } as LeaseView
}

/** The amounts of a liquidation plan's recovery steps, by name (a step the plan does not take recovers nothing). */
export function recoveryAmounts(plan: LiquidationPlan): { fromRevenueAtomic: bigint; fromCollateralAtomic: bigint; fromBackingAtomic: bigint; fromReserveAtomic: bigint } {
  const amountOf = (step: string): bigint => plan.steps.find((s) => s.step === step)?.amountAtomic ?? 0n
  return {
    fromRevenueAtomic: amountOf('source_revenue'), fromCollateralAtomic: amountOf('collateral'),
    fromBackingAtomic: amountOf('backing_liquidation'), fromReserveAtomic: amountOf('insurance_reserve'),
  }
}

/** The recovery an executed liquidation records: the plan's steps, by name. */
function recoveryOf(plan: LiquidationPlan, network: string, txHash: `0x${string}`): RecoveryRecord {
  return { network, txHash, owedAtomic: plan.owedAtomic, ...recoveryAmounts(plan), shortfallAtomic: plan.shortfallAtomic }
}

/** A lender one matching attempt leases to, and its fee. */
interface Candidate {
  lender: LenderRecord
  fee: bigint
}

export const jobViewFromSnapshot = (record: unknown): JobView => viewOf<JobView>(record as never)
export const offerViewFromSnapshot = (record: unknown): OfferView => viewOf<OfferView>(record as never)
export const leaseViewFromSnapshot = (record: unknown): LeaseView => leaseView(record as never)
export const advanceViewFromSnapshot = (record: unknown): AdvanceView => viewOf<AdvanceView>(record as never)

/** One page of a list in registration order; `nextAfterSeq` is set when more may follow. */
export interface RegistrationPage<T> {
  items: T[]
  nextAfterSeq: number | undefined
}

function registrationPage<K, T extends { registrationSeq: number }>(
  order: readonly K[],
  get: (key: K) => T,
  afterSeq: number,
  limit: number,
  scanMax: number,
  accept: (item: T) => boolean,
): RegistrationPage<T> {
  // First position whose sequence is after `afterSeq` (order is sorted by sequence).
  let low = 0
  let high = order.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (get(order[mid] as K).registrationSeq <= afterSeq) low = mid + 1
    else high = mid
  }
  const items: T[] = []
  let index = low
  let lastSeq = afterSeq
  for (; index < order.length && items.length < limit && index - low < scanMax; index++) {
    const item = get(order[index] as K)
    lastSeq = item.registrationSeq
    if (accept(item)) items.push({ ...item })
  }
  return { items, nextAfterSeq: index < order.length ? lastSeq : undefined }
}

export class Engine {
  readonly config: EngineConfig
  private readonly wallets: WalletView

  private meta: MetaRecord = { offerSeq: 0, leaseSeq: 0, advanceSeq: 0, lenderSeq: 0, sourceSeq: 0 }
  private readonly lenders = new Map<Address, LenderRecord>()
  private readonly lenderBySession = new Map<Address, Address>()
  private readonly sources = new Map<string, SourceRecord>()
  // Registration order, for paged lists: lenders and sources are only ever added, in sequence order.
  private readonly lenderOrder: Address[] = []
  private readonly sourceOrder: string[] = []
  private readonly borrowers = new Map<Address, BorrowerRecord>()
  private readonly reserves = new Map<string, ReserveRecord>()

  // Live actors. Ids are minted in increasing sequence and restored in that order, so iteration order is the same
  // in a fresh and in a restored engine.
  private readonly jobs = new Map<string, JobActor>()
  private readonly offers = new Map<string, OfferActor>()
  private readonly leases = new Map<string, LeaseActor>()
  private readonly advances = new Map<string, AdvanceActor>()

  private readonly books = new Map<string, MatchingBook>()
  private readonly bookEntries = new Map<Address, { entry: BookEntry; books: MatchingBook[] }>()
  /**
   * Lenders out of every book (issue 10, hole 2) until the wallet watcher reports their session wallet changed
   * (`walletChanged`): registered but never seen funded, or refused once for insufficient balance. So a lender who
   * risks nothing costs matching nothing. In memory only: after a restart every lender starts parked and the
   * watcher's first read of its wallet brings the funded ones back.
   */
  private readonly parked = new Set<Address>()
  /** Live offers per borrower (issue 10, hole 6: bounded by liveOffersPerBorrowerMax). */
  private readonly liveOffersOf = new Map<Address, number>()
  /** Suspended borrowers, for dispatch to lift those due (a small set: only borrowers of failed jobs). */
  private readonly suspended = new Set<Address>()
  private readonly liveLeasesByLender = new Map<Address, Set<string>>()
  /**
   * Principal of the live leases per (lender, network, asset): what the lender's session wallet has already promised.
   * Matching reads it in O(1) instead of walking the lender's live leases, whose number grows with rate x TTL.
   */
  private readonly walletReserved = new Map<string, bigint>()
  /**
   * Timers of dispatch, so that a call touches only what is due plus at most offersDispatchedPerCallMax waiting
   * offers, instead of every live lease and offer (their number grows with rate x TTL). Live leases by the time they
   * expire (expiresAtMs + leaseReportGraceMs, then lease sequence: the order dispatch expires them in); offers
   * waiting for a lender (state offered) by expiresAtMs, and by creation sequence (the order dispatch matches them
   * in). Kept current where leases start and end (addLiveLease, dropLiveLease) and offers change (sendOffer).
   */
  private readonly leaseExpiries = new IndexedMinHeap<Due>(dueId, byDueThenSeq)
  private readonly offerExpiries = new IndexedMinHeap<Due>(dueId, byDueThenSeq)
  private readonly waitingOffers = new IndexedMinHeap<Due>(dueId, bySeq)

  /** What the running command changed, by `${kind}:${id}`; resolved to Changes when the command commits. */
  private pending = new Map<string, Change | { kind: Change['kind']; id: string }>()

  constructor(config: Partial<EngineConfig>, wallets: WalletView, initialSnapshots?: Iterable<StoredSnapshot>) {
    this.config = resolveConfig(config)
    this.wallets = wallets
    if (initialSnapshots) this.restore(initialSnapshots)
  }

  // ===================================================================================================== commands

  registerLender(input: RegisterLenderInput, nowMs: number): EngineResult<LenderRecord> {
    if (this.lenders.has(input.address)) return fail('conflict', 'lender_exists', `lender ${input.address} is registered`)
    if (this.lenderBySession.has(input.sessionAddress) || this.lenders.has(input.sessionAddress)) {
      return fail('conflict', 'session_in_use', 'the session address belongs to another lender')
    }
    if (input.availableLiquidityAtomic <= 0n) return fail('invalid', 'invalid_liquidity', 'availableLiquidityAtomic must be positive')
    if (!isBps(input.minFeeBps)) return fail('invalid', 'invalid_bps', 'minFeeBps must be an integer in 0..10000')
    for (const [name, value] of [['reputationBps', input.reputationBps], ['reliabilityBps', input.reliabilityBps]] as const) {
      if (value !== undefined && !isBps(value)) return fail('invalid', 'invalid_bps', `${name} must be an integer in 0..10000`)
    }
    if (!Number.isInteger(input.maxDurationSeconds) || input.maxDurationSeconds < 1) {
      return fail('invalid', 'invalid_duration', 'maxDurationSeconds must be a positive integer')
    }
    const networks = [...new Set(input.networks)]
    if (networks.length === 0 || networks.length > this.config.networksPerLenderMax) {
      return fail('invalid', 'invalid_networks', `networks must list 1..${this.config.networksPerLenderMax} networks`)
    }
    const strayNetwork = Object.keys(input.assets ?? {}).find((network) => !networks.includes(network))
    if (strayNetwork !== undefined) return fail('invalid', 'asset_network_not_supported', `assets names ${strayNetwork}, which is not in networks`)
    const bands = [...new Set(input.acceptedRiskBands)]
    if (bands.length === 0 || !bands.every((b) => (RISK_BANDS as readonly string[]).includes(b))) {
      return fail('invalid', 'invalid_risk_band', `acceptedRiskBands must be a non-empty subset of ${RISK_BANDS.join(', ')}`)
    }
    const assets: Record<string, string> = {}
    for (const network of networks) assets[network] = input.assets?.[network] ?? input.asset

    this.meta.lenderSeq += 1
    const lender: LenderRecord = {
      address: input.address,
      sessionAddress: input.sessionAddress,
      asset: input.asset,
      assets,
      networks,
      askBps: input.minFeeBps,
      maxDurationSeconds: input.maxDurationSeconds,
      acceptedRiskBands: RISK_BANDS.filter((b) => bands.includes(b)),
      registeredAtomic: input.availableLiquidityAtomic,
      availableAtomic: input.availableLiquidityAtomic,
      reservedAtomic: 0n,
      deployedAtomic: 0n,
      feesEarnedAtomic: 0n,
      lossesAtomic: 0n,
      reputationBps: input.reputationBps ?? this.config.lenderReputationInitialBps,
      reliabilityBps: input.reliabilityBps ?? this.config.lenderReliabilityInitialBps,
      registrationSeq: this.meta.lenderSeq,
      registeredAtMs: nowMs,
      leasesGranted: 0,
      leasesPaid: 0,
      leasesExpired: 0,
      advancesRepaid: 0,
      advancesDefaulted: 0,
    }
    this.addLender(lender)
    this.touch('meta', 'engine')
    this.touch('lender', lender.address)
    return this.drain({ ...lender })
  }

  /**
   * After an unclean stop: every id sequence jumps to the next multiple of `step` (2^32), so an id minted in memory
   * and lost with the crash (its commit never reached the disk) is never minted again for something else.
   */
  advanceSequences(step = 2 ** 32): EngineResult<MetaRecord> {
    const next = (seq: number) => (Math.floor(seq / step) + 1) * step
    this.meta = {
      offerSeq: next(this.meta.offerSeq),
      leaseSeq: next(this.meta.leaseSeq),
      advanceSeq: next(this.meta.advanceSeq),
      lenderSeq: next(this.meta.lenderSeq),
      sourceSeq: next(this.meta.sourceSeq),
    }
    this.touch('meta', 'engine')
    return this.drain({ ...this.meta })
  }

  registerSource(input: RegisterSourceInput & { caller: Address }, nowMs: number): EngineResult<SourceRecord> {
    if (!sameAddress(input.agent, input.caller)) return forbidden('a backing source is registered by its agent: sign in as the body\'s agent')
    if (!SOURCE_ID.test(input.sourceId) || JOB_ID.test(input.sourceId)) {
      return fail('invalid', 'invalid_source_id', 'sourceId must match ^[A-Za-z0-9_.:-]{1,128}$ and not look like a job id')
    }
    if (this.sources.has(input.sourceId)) return fail('conflict', 'source_exists', `source ${input.sourceId} is registered`)
    if (input.valueAtomic <= 0n || input.liquidationValueAtomic < 0n) {
      return fail('invalid', 'invalid_amount', 'valueAtomic must be > 0 and liquidationValueAtomic >= 0')
    }
    if (!isBps(input.advanceRateBps)) return fail('invalid', 'invalid_bps', 'advanceRateBps must be an integer in 0..10000')
    if (!Number.isSafeInteger(input.validUntilMs)) return fail('invalid', 'invalid_time', 'validUntilMs must be an integer epoch time')

    this.meta.sourceSeq += 1
    const source: SourceRecord = {
      sourceId: input.sourceId,
      productType: input.productType,
      agent: input.agent,
      valueAtomic: input.valueAtomic,
      liquidationValueAtomic: input.liquidationValueAtomic,
      advanceRateBps: input.advanceRateBps,
      evidenceId: input.evidenceId,
      validUntilMs: input.validUntilMs,
      committedAtomic: 0n,
      backingUsedAtomic: 0n,
      registrationSeq: this.meta.sourceSeq,
      registeredAtMs: nowMs,
    }
    this.sources.set(source.sourceId, source)
    this.sourceOrder.push(source.sourceId)
    this.borrowerOf(input.agent)
    this.touch('meta', 'engine')
    this.touch('source', source.sourceId)
    return this.drain({ ...source })
  }

  createJob(input: CreateJobInput & { caller: Address }, nowMs: number): EngineResult<JobView> {
    if (!sameAddress(input.caller, input.client) && !sameAddress(input.caller, input.borrower)) {
      return forbidden('a job is created by its client (the funder) or its borrower')
    }
    if (!JOB_ID.test(input.jobId)) return fail('invalid', 'invalid_job_id', 'jobId must match ^job_[A-Za-z0-9_-]{1,64}$')
    if (this.jobs.has(input.jobId)) return fail('conflict', 'job_exists', `job ${input.jobId} exists`)
    if (input.receivableAtomic <= 0n) return fail('invalid', 'invalid_amount', 'receivableAtomic must be > 0')
    if (!Number.isInteger(input.dueAtMs) || input.dueAtMs <= nowMs) return fail('invalid', 'job_past_due', 'dueAtMs must be in the future')

    const actor = createActor(jobMachine, {
      input: {
        jobId: input.jobId,
        client: input.client,
        borrower: input.borrower,
        network: input.network,
        asset: input.asset,
        receivableAtomic: input.receivableAtomic,
        dueAtMs: input.dueAtMs,
        createdAtMs: nowMs,
        funding: input.funding,
      },
    }).start()
    this.jobs.set(input.jobId, actor)
    this.borrowerOf(input.borrower)
    this.touch('job', input.jobId)
    return this.drain(viewOf<JobView>(actor.getSnapshot()))
  }

  /** Who may post collateral on the job, and what its proof must show (the CollateralPosted of the job's borrower). */
  planCollateral(input: { jobId: string; caller: Address }): EngineResult<{ network: string; asset: string; borrower: Address }> {
    const job = this.jobs.get(input.jobId)
    if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
    const j = job.getSnapshot().context
    if (!sameAddress(input.caller, j.borrower)) return forbidden('collateral is posted by the job\'s borrower')
    return { ok: true, value: { network: j.network, asset: j.asset, borrower: j.borrower }, changes: [] }
  }

  postCollateral(input: PostCollateralInput & { caller: Address }, nowMs: number): EngineResult<CollateralPosition> {
    const planned = this.planCollateral(input)
    if (!planned.ok) return planned
    const job = this.jobs.get(input.jobId) as JobActor
    if (!sameAddress(job.getSnapshot().context.borrower, input.borrower)) {
      return fail('forbidden', 'not_job_borrower', 'collateral must be posted by the job borrower')
    }
    if (input.amountAtomic <= 0n) return fail('invalid', 'invalid_amount', 'amountAtomic must be > 0')

    const posted = this.send('job', job, { type: 'COLLATERAL_POSTED', amountAtomic: input.amountAtomic, nowMs })
    if (!posted.accepted) return this.refused('job', input.jobId, posted)
    const ctx = job.getSnapshot().context
    return this.drain({
      jobId: ctx.jobId,
      borrower: ctx.borrower,
      network: ctx.network,
      asset: ctx.asset,
      amountAtomic: input.amountAtomic,
      totalCollateralAtomic: ctx.collateralAtomic,
      proof: input.proof,
    })
  }

  /** Underwrite a credit request: a declined decision changes nothing; an approved one creates an offer. */
  requestCredit(input: CreditRequestInput & { caller: Address }, nowMs: number): EngineResult<UnderwritingDecision> {
    if (!sameAddress(input.agent, input.caller)) return forbidden('credit is requested by the borrower agent itself: sign in as the body\'s agent')
    if (input.amountAtomic <= 0n) return fail('invalid', 'invalid_amount', 'amountAtomic must be > 0')
    if ((this.liveOffersOf.get(input.agent) ?? 0) >= this.config.liveOffersPerBorrowerMax) {
      return fail('conflict', 'live_offers_limit', `the borrower holds ${this.config.liveOffersPerBorrowerMax} live offers, the most allowed; wait until one is funded, expires or is declined`)
    }
    if (input.maximumFeeAtomic < 0n) return fail('invalid', 'invalid_amount', 'maximumFeeAtomic must be >= 0')
    if (sameAddress(input.supplierAddress, input.agent)) {
      return fail('invalid', 'supplier_is_borrower', 'the supplier is paid, never the borrower')
    }
    const job = this.jobs.get(input.repaymentSource)
    const backing = job ? undefined : this.sources.get(input.repaymentSource)
    if (!job && !backing) return fail('not_found', 'repayment_source_not_found', `no live job or backing source ${input.repaymentSource}`)

    const reasons: DeclineReason[] = []
    const borrower = this.borrowers.get(input.agent)
    if (borrower?.suspended) reasons.push({ code: 'borrower_suspended', message: 'the borrower is suspended after a failed job' })

    let capacityAtomic: bigint
    let valueAtomic: bigint
    let durationSeconds: number
    let dueAtMs: number
    let source: SourceRef
    if (job) {
      const snap = job.getSnapshot()
      const ctx = snap.context
      source = { kind: 'job', id: ctx.jobId }
      if (!sameAddress(ctx.borrower, input.agent)) reasons.push({ code: 'source_not_owned', message: 'the job belongs to another borrower' })
      if (!JOB_OPEN_STATES.has(String(snap.value))) reasons.push({ code: 'source_closed', message: `the job is ${String(snap.value)}` })
      if (nowMs >= ctx.dueAtMs) reasons.push({ code: 'job_past_due', message: 'the job is past its due time' })
      if (ctx.network !== input.network || ctx.asset !== input.asset) {
        reasons.push({ code: 'asset_mismatch', message: `the job pays ${ctx.asset} on ${ctx.network}` })
      }
      const revenueLeft = ctx.receivableAtomic - ctx.revenueUsedAtomic
      const collateralLeft = ctx.collateralAtomic - ctx.collateralUsedAtomic
      capacityAtomic = applyBps(revenueLeft, this.config.jobAdvanceRateBps) + collateralLeft - ctx.committedAtomic
      valueAtomic = revenueLeft + collateralLeft
      durationSeconds = Math.max(1, Math.ceil((ctx.dueAtMs - nowMs) / 1000))
      dueAtMs = ctx.dueAtMs
    } else {
      const src = backing as SourceRecord
      source = { kind: 'backing', id: src.sourceId }
      if (!sameAddress(src.agent, input.agent)) reasons.push({ code: 'source_not_owned', message: 'the backing source belongs to another borrower' })
      // A source recorded before attestations carried an expiry has none: it counts as expired (re-attest it).
      if (!(nowMs < (src.validUntilMs ?? Number.NEGATIVE_INFINITY))) {
        reasons.push({ code: 'source_attestation_expired', message: 'the backing source\'s attestation expired; register a fresh one under a new sourceId' })
      }
      const hardLeft = src.liquidationValueAtomic - src.backingUsedAtomic
      capacityAtomic = minBig(applyBps(src.valueAtomic, src.advanceRateBps), hardLeft) - src.committedAtomic
      valueAtomic = src.valueAtomic
      durationSeconds = this.config.backingDurationSecondsDefault
      dueAtMs = nowMs + durationSeconds * 1000
    }
    if (capacityAtomic < 0n) capacityAtomic = 0n
    if (input.amountAtomic > capacityAtomic) {
      reasons.push({ code: 'over_capacity', message: `amount exceeds the source's remaining capacity of ${capacityAtomic}` })
    }
    const coverage = coverageBps(valueAtomic, 0n, input.amountAtomic)
    const band = riskBand(coverage, borrower?.advancesDefaulted ?? 0, this.config)

    if (reasons.length > 0) {
      return this.drain({ decision: 'declined', reasons, capacityAtomic, coverageBps: coverage, riskBand: band, durationSeconds, offer: null })
    }

    this.meta.offerSeq += 1
    const offerInput: OfferInput = {
      offerId: `${ID_PREFIXES.offer}${this.meta.offerSeq}`,
      borrower: input.agent,
      network: input.network,
      asset: input.asset,
      productType: input.productType,
      amountAtomic: input.amountAtomic,
      maximumFeeAtomic: input.maximumFeeAtomic,
      purpose: input.purpose,
      supplier: input.supplier,
      supplierDomain: input.supplierDomain,
      supplierAddress: input.supplierAddress,
      source,
      riskBand: band,
      durationSeconds,
      dueAtMs,
      createdAtMs: nowMs,
      expiresAtMs: nowMs + this.config.offerTtlMs,
    }
    const offer = createActor(offerMachine, { input: offerInput }).start()
    this.offers.set(offerInput.offerId, offer)
    this.countOffer(offerInput.borrower, 1)
    this.scheduleOffer(offer)
    this.touch('offer', offerInput.offerId)
    this.touch('meta', 'engine')
    this.commitCapacity(source, input.amountAtomic, nowMs)
    return this.drain({
      decision: 'approved', reasons, capacityAtomic, coverageBps: coverage, riskBand: band, durationSeconds,
      offer: viewOf<OfferView>(offer.getSnapshot()),
    })
  }

  /** Lease the offer to the cheapest eligible lender whose wallet can pay. */
  matchOffer(input: { offerId: string; caller: Address }, nowMs: number): EngineResult<MatchOutcome> {
    const offer = this.offers.get(input.offerId)
    if (!offer) return fail('not_found', 'offer_not_found', `offer ${input.offerId} is not live`)
    if (!sameAddress(input.caller, offer.getSnapshot().context.borrower)) return forbidden('an offer is matched by its borrower')
    const outcome = this.leaseToBestLender(offer, nowMs)
    if ('accepted' in outcome) return this.refused('offer', input.offerId, outcome)
    return this.drain(outcome)
  }

  /** Expire stale leases (their offers go back to matching), then expire stale offers and match the waiting ones. */
  dispatch(nowMs: number): EngineResult<DispatchOutcome> {
    const outcome: DispatchOutcome = { expiredLeases: [], expiredOffers: [], matches: [], suspensionsLifted: [] }
    for (const lease of this.dueLeases(nowMs)) outcome.expiredLeases.push(this.timeOutLease(lease, nowMs))
    outcome.suspensionsLifted = this.liftDueSuspensions(nowMs)

    for (const { offer, due } of this.offersToDispatch(nowMs)) {
      // The schedule says the offer's TTL is over; the offer machine's guard agrees, or this throws.
      if (due) {
        outcome.expiredOffers.push(this.expireOffer(offer, 'stale', nowMs))
        continue
      }
      const match = this.leaseToBestLender(offer, nowMs)
      if ('accepted' in match) throw new Error(`invariant: waiting offer ${offer.id} refused matching (${match.code})`)
      if (match.offerExpired) outcome.expiredOffers.push(match.offer)
      if (match.lease || match.refusedLeases.length > 0) outcome.matches.push(match)
    }
    return this.drain(outcome)
  }

  /** A verified supplier payment funds the offer: the lease is paid and the advance is created. */
  /**
   * What the reporting lender's payment on the offer must show: the terms of the live lease it holds. A lender whose
   * lease there ended unpaid learns that it expired; one that never held one, that it has none.
   */
  planSupplierPayment(input: { offerId: string; lender: Address; caller: Address }): EngineResult<SupplierPaymentTerms> {
    if (!sameAddress(input.lender, input.caller)) {
      return forbidden('a supplier payment is reported by the lender that paid: sign in as the body\'s lender')
    }
    const offer = this.offers.get(input.offerId)
    if (!offer) return fail('not_found', 'offer_not_found', `offer ${input.offerId} is not live`)
    const o = offer.getSnapshot().context
    const held = o.currentLeaseId ? this.leases.get(o.currentLeaseId)?.getSnapshot().context : undefined
    if (held && sameAddress(held.lender, input.lender)) {
      const { leaseId, network, asset, payer, supplierAddress, amountAtomic } = held
      return { ok: true, value: { offerId: o.offerId, leaseId, network, asset, payer, supplierAddress, amountAtomic }, changes: [] }
    }
    // An ended lease left memory; that it ended unpaid is on the offer (excluded lenders), and it ended expired.
    if (o.excludedLenders.some((l) => sameAddress(l, input.lender))) return leaseRefusal('expired', `the lease of ${input.lender} on offer ${o.offerId} expired`)
    return fail('conflict', 'no_lease', `offer ${o.offerId} has no lease to lender ${input.lender}`)
  }

  recordSupplierPayment(fact: SupplierPaymentFact & { caller: Address }, nowMs: number): EngineResult<AdvanceView> {
    const offer = this.offers.get(fact.offerId)
    if (!offer) return fail('not_found', 'offer_not_found', `offer ${fact.offerId} is not live`)
    const o = offer.getSnapshot().context
    const lenderAddress = this.lenderBySession.get(fact.payer) ?? (this.lenders.has(fact.payer) ? fact.payer : undefined)
    if (!lenderAddress) return fail('forbidden', 'lease_not_held', 'the payer is not a registered lender')
    if (!sameAddress(lenderAddress, fact.caller)) {
      return forbidden('a supplier payment is reported by the lender that paid: sign in as the body\'s lender')
    }
    if (o.excludedLenders.includes(lenderAddress)) return leaseRefusal('expired', `the lease of ${lenderAddress} on offer ${o.offerId} expired`)
    const lease = o.currentLeaseId ? this.leases.get(o.currentLeaseId) : undefined
    if (lease && lease.getSnapshot().context.lender !== lenderAddress) {
      return fail('forbidden', 'lease_not_held', `offer ${o.offerId} is leased to another lender`)
    }
    if (fact.network !== o.network || fact.asset !== o.asset) return fail('invalid', 'payment_mismatch', 'the payment is on another network or asset')
    if (!sameAddress(fact.supplier, o.supplierAddress)) return fail('invalid', 'payment_mismatch', "the payment did not go to the offer's supplier")
    if (fact.amountAtomic !== o.amountAtomic) return fail('invalid', 'payment_mismatch', `the payment must be exactly ${o.amountAtomic}`)

    // The offer decides whether it can be funded now (it must be leased); its advance id is taken once it agrees.
    const advanceId = `${ID_PREFIXES.advance}${this.meta.advanceSeq + 1}`
    const funded = this.send('offer', offer, { type: 'FUND', advanceId, nowMs })
    if (!funded.accepted) return this.refused('offer', o.offerId, funded)
    if (!lease) throw new Error(`invariant: offer ${o.offerId} was funded without a live lease`)
    const l = lease.getSnapshot().context
    const payment = { network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex }
    this.expect('lease', lease, { type: 'PAY', payment, nowMs })
    this.dropLiveLease(l)
    const lender = this.lenderOf(l.lender)
    lender.reservedAtomic -= l.amountAtomic
    lender.deployedAtomic += l.amountAtomic
    lender.leasesPaid += 1
    lender.reliabilityBps = clampBps(lender.reliabilityBps + this.config.lenderReliabilityPaidRewardBps)
    this.lenderChanged(lender)

    this.meta.advanceSeq += 1
    this.touch('meta', 'engine')
    const advanceInput: AdvanceInput = {
      advanceId,
      offerId: o.offerId,
      leaseId: l.leaseId,
      lender: l.lender,
      payer: fact.payer,
      borrower: o.borrower,
      source: o.source,
      network: o.network,
      asset: o.asset,
      principalAtomic: o.amountAtomic,
      feeAtomic: l.feeAtomic,
      insuranceAtomic: insuranceAtomic(l.feeAtomic, this.config.insuranceShareBps),
      supplierAddress: o.supplierAddress,
      payment,
      fundedAtMs: nowMs,
      dueAtMs: o.dueAtMs,
    }
    const advance = createActor(advanceMachine, { input: advanceInput }).start()
    this.advances.set(advanceInput.advanceId, advance)
    this.touch('advance', advanceInput.advanceId)
    if (o.source.kind === 'job') {
      const job = this.jobs.get(o.source.id)
      if (job) this.expect('job', job, { type: 'ADVANCE_OPENED', advanceId: advanceInput.advanceId, nowMs })
    }
    return this.drain(viewOf<AdvanceView>(advance.getSnapshot()))
  }

  /** What a full repayment of the advance must pay: the lender's amount and the reserve's share. */
  planRepayment(advanceId: string): EngineResult<RepaymentPlan> {
    const advance = this.advances.get(advanceId)
    if (!advance) return fail('not_found', 'advance_not_found', `advance ${advanceId} is not live`)
    const a = advance.getSnapshot().context
    return {
      ok: true,
      changes: [],
      value: {
        advanceId, network: a.network, asset: a.asset, lender: a.lender,
        amountAtomic: lenderRepaymentAtomic(a),
        reserveAmountAtomic: a.insuranceAtomic,
      },
    }
  }

  /** A verified Repaid fact closes the advance. Only a full repayment (exactly the plan's amounts) is accepted. */
  repayAdvance(fact: RepaidFact, nowMs: number): EngineResult<RepaymentReceipt> {
    const advance = this.advances.get(fact.advanceId)
    if (!advance) return fail('not_found', 'advance_not_found', `advance ${fact.advanceId} is not live`)
    const a = advance.getSnapshot().context
    if (fact.network !== a.network || fact.lender !== a.lender) {
      return fail('invalid', 'repayment_mismatch', "the repayment is on another network or to another lender")
    }
    const lenderAmount = lenderRepaymentAtomic(a)
    if (fact.amountAtomic !== lenderAmount || fact.reserveAmountAtomic !== a.insuranceAtomic) {
      return fail('invalid', 'repayment_amount_mismatch', `a repayment pays exactly ${lenderAmount} to the lender and ${a.insuranceAtomic} to the reserve`)
    }
    const repayment: RepaymentRecord = {
      kind: 'repaid', network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex, payer: fact.payer,
      lenderAmountAtomic: lenderAmount, reserveAmountAtomic: a.insuranceAtomic,
    }
    const repaid = this.send('advance', advance, { type: 'REPAY', repayment, nowMs })
    if (!repaid.accepted) return this.refused('advance', a.advanceId, repaid)
    const receipt = this.applyRepayment(a, repayment)
    if (a.source.kind === 'job') {
      const job = this.jobs.get(a.source.id)
      if (job) {
        this.expect('job', job, {
          type: 'ADVANCE_CLOSED', advanceId: a.advanceId, principalAtomic: a.principalAtomic,
          revenueUsedAtomic: 0n, collateralUsedAtomic: 0n, nowMs,
        })
      }
    } else {
      this.releaseBacking(a.source.id, a.principalAtomic, 0n)
    }
    return this.drain(receipt)
  }

  /** Per-advance lender amounts and the reserve amount of the job's settlement transaction. */
  planJobSettlement(input: { jobId: string; caller: Address }): EngineResult<JobSettlementPlan> {
    const { jobId } = input
    const job = this.jobs.get(jobId)
    if (!job) return fail('not_found', 'job_not_found', `job ${jobId} is not live`)
    if (!this.isClientOrOperator(job, input.caller)) return forbidden('a job is completed by its client or an operator')
    // A query sends nothing: it asks the machine whether it would take COMPLETE now.
    const open = this.wouldTake('job', job, { type: 'COMPLETE', settlement: { network: '', txHash: '0x' }, nowMs: 0 })
    if (!open.accepted) return this.refused('job', jobId, open)
    const planned = this.jobSettlement(job)
    if (!planned.ok) return planned
    return { ok: true, value: planned.value, changes: [] }
  }

  /** Apply the executed settleJob transaction: every open advance on the job is repaid and the job completes. */
  completeJob(input: { jobId: string; caller: Address } & ExecutedTx, nowMs: number): EngineResult<JobSettlementReceipt> {
    const job = this.jobs.get(input.jobId)
    if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
    if (!this.isClientOrOperator(job, input.caller)) return forbidden('a job is completed by its client or an operator')
    const planned = this.jobSettlement(job)
    if (!planned.ok) return planned
    const plan = planned.value
    const completed = this.send('job', job, { type: 'COMPLETE', settlement: { network: input.network, txHash: input.txHash }, nowMs })
    if (!completed.accepted) return this.refused('job', input.jobId, completed)
    const receipts: RepaymentReceipt[] = []
    for (const item of plan.advances) {
      const advance = this.advances.get(item.advanceId) as AdvanceActor
      const repayment: RepaymentRecord = {
        kind: 'job_settlement', network: input.network, txHash: input.txHash, logIndex: null, payer: null,
        lenderAmountAtomic: item.amountAtomic, reserveAmountAtomic: item.reserveAmountAtomic,
      }
      this.expect('advance', advance, { type: 'REPAY', repayment, nowMs })
      receipts.push(this.applyRepayment(advance.getSnapshot().context, repayment))
    }
    return this.drain({ ...plan, txHash: input.txHash, receipts })
  }

  /**
   * Suspensions whose time has come: at least borrowerSuspensionMinSeconds since the suspension, and nothing owed on a
   * defaulted advance (none of the borrower's advances is still defaulted). Each lift is a passport event.
   */
  private liftDueSuspensions(nowMs: number): SuspensionLiftedEvent[] {
    const lifted: SuspensionLiftedEvent[] = []
    const minMs = this.config.borrowerSuspensionMinSeconds * 1000
    for (const address of this.suspended) {
      const borrower = this.borrowers.get(address)
      if (borrower === undefined || !borrower.suspended) {
        this.suspended.delete(address)
        continue
      }
      const since = borrower.suspendedAtMs ?? 0
      if (nowMs < since + minMs) continue
      if (this.owesOnDefault(address)) continue
      borrower.suspended = false
      borrower.suspendedAtMs = null
      this.suspended.delete(address)
      this.touch('borrower', address)
      lifted.push({ type: 'suspension_lifted', borrower: address, suspendedAtMs: since, atMs: nowMs, borrowerReputationBps: borrower.reputationBps })
    }
    return lifted
  }

  /** Whether one of the borrower's live advances is defaulted (or in shortfall): money is still owed on a default. */
  private owesOnDefault(borrower: Address): boolean {
    for (const advance of this.advances.values()) {
      const snap = advance.getSnapshot()
      if (snap.context.borrower === borrower && (snap.matches('defaulted') || String(snap.value) === 'shortfall')) return true
    }
    return false
  }

  /** Fail a job: suspend its borrower, withdraw the borrower's live offers, default the job's open advances. */
  failJob(input: { jobId: string; reason: string; caller: Address }, nowMs: number): EngineResult<PassportEvent> {
    const job = this.jobs.get(input.jobId)
    if (!job) return fail('not_found', 'job_not_found', `job ${input.jobId} is not live`)
    if (!this.isClientOrOperator(job, input.caller)) return forbidden('a job is failed by its client or an operator')
    const j = job.getSnapshot().context
    // The job's live offers are withdrawn with it: the failure itself releases the capacity they hold on the job.
    let releasedAtomic = 0n
    for (const offer of this.offers.values()) {
      const o = offer.getSnapshot().context
      if (o.source.kind === 'job' && o.source.id === j.jobId) releasedAtomic += o.amountAtomic
    }
    const failed = this.send('job', job, { type: 'FAIL', reason: input.reason, releasedAtomic, nowMs })
    if (!failed.accepted) return this.refused('job', input.jobId, failed)

    const borrower = this.borrowerOf(j.borrower)
    borrower.suspended = true
    borrower.suspendedAtMs = nowMs
    this.suspended.add(borrower.address)
    borrower.reputationBps = clampBps(borrower.reputationBps - this.config.borrowerReputationFailurePenaltyBps)
    this.touch('borrower', borrower.address)

    const declinedOfferIds: string[] = []
    for (const offer of [...this.offers.values()]) {
      const o = offer.getSnapshot().context
      if (o.borrower !== j.borrower) continue
      const onThisJob = o.source.kind === 'job' && o.source.id === j.jobId
      this.declineOffer(offer, 'borrower_suspended', nowMs, !onThisJob)
      declinedOfferIds.push(o.offerId)
    }
    const defaultedAdvanceIds = [...j.advanceIds]
    let outstandingPrincipalAtomic = 0n
    for (const advanceId of defaultedAdvanceIds) {
      const advance = this.advances.get(advanceId) as AdvanceActor
      outstandingPrincipalAtomic += advance.getSnapshot().context.principalAtomic
      this.defaultAdvance(advance, 'job_failed', nowMs)
    }
    return this.drain({
      type: 'job_failed', jobId: j.jobId, borrower: j.borrower, client: j.client, reason: input.reason, atMs: nowMs,
      borrowerSuspended: true, borrowerReputationBps: borrower.reputationBps, defaultedAdvanceIds,
      outstandingPrincipalAtomic, declinedOfferIds,
    })
  }

  /** Recovery amounts, step by step, for a defaulted (or past-due) advance. */
  planLiquidation(input: { advanceId: string; caller: Address }, nowMs: number): EngineResult<LiquidationPlan> {
    const { advanceId } = input
    const advance = this.advances.get(advanceId)
    if (!advance) return fail('not_found', 'advance_not_found', `advance ${advanceId} is not live`)
    if (!this.isLenderOrOperator(advance, input.caller)) return forbidden('an advance is liquidated by its lender or an operator')
    const plan = this.liquidationPlan(advance)
    // A query sends nothing: it asks the machine whether it would take LIQUIDATE now (defaulted, or past due).
    const due = this.wouldTake('advance', advance, { type: 'LIQUIDATE', recovery: recoveryOf(plan, '', '0x'), nowMs })
    if (!due.accepted) return this.refused('advance', advanceId, due)
    return { ok: true, value: plan, changes: [] }
  }

  /** Apply the executed liquidate transaction: recover in order, record the shortfall and its penalty. */
  liquidate(input: LiquidationInput & { caller: Address }, nowMs: number): EngineResult<LiquidationReceipt> {
    const advance = this.advances.get(input.advanceId)
    if (!advance) return fail('not_found', 'advance_not_found', `advance ${input.advanceId} is not live`)
    if (!this.isLenderOrOperator(advance, input.caller)) return forbidden('an advance is liquidated by its lender or an operator')
    const plan = this.liquidationPlan(advance)
    const recovery = recoveryOf(plan, input.network, input.txHash)
    const fromRevenue = recovery.fromRevenueAtomic
    const fromCollateral = recovery.fromCollateralAtomic
    const fromBacking = recovery.fromBackingAtomic
    const fromReserve = recovery.fromReserveAtomic
    if ((input.fromRevenueAtomic !== undefined && input.fromRevenueAtomic !== fromRevenue) ||
      (input.fromCollateralAtomic !== undefined && input.fromCollateralAtomic !== fromCollateral) ||
      (input.fromReserveAtomic !== undefined && input.fromReserveAtomic !== fromReserve)) {
      return fail('conflict', 'plan_changed', 'the executed amounts differ from the current liquidation plan')
    }
    if (plan.recoveredAtomic + plan.shortfallAtomic !== plan.owedAtomic || plan.recoveredAtomic > plan.owedAtomic) {
      throw new Error('invariant: recovery steps must sum to what is owed')
    }

    const a = advance.getSnapshot().context
    // The advance decides: a defaulted one is liquidated, an active one only once past due (it defaults now).
    const liquidated = this.send('advance', advance, { type: 'LIQUIDATE', recovery, nowMs })
    if (!liquidated.accepted) return this.refused('advance', input.advanceId, liquidated)
    if (liquidated.from === 'active') this.advanceDefaulted(a)

    const lender = this.lenderOf(a.lender)
    lender.deployedAtomic -= a.principalAtomic
    lender.availableAtomic += plan.recoveredAtomic
    if (plan.recoveredAtomic >= a.principalAtomic) lender.feesEarnedAtomic += plan.recoveredAtomic - a.principalAtomic
    else lender.lossesAtomic += a.principalAtomic - plan.recoveredAtomic
    this.lenderChanged(lender)

    if (fromReserve > 0n) {
      const reserve = this.reserveOf(a.network, a.asset)
      reserve.balanceAtomic -= fromReserve
      reserve.paidOutAtomic += fromReserve
    }
    const borrower = this.borrowerOf(a.borrower)
    if (plan.shortfallAtomic > 0n) {
      borrower.shortfallAtomic += plan.shortfallAtomic
      borrower.reputationBps = clampBps(borrower.reputationBps - this.config.borrowerReputationShortfallPenaltyBps)
      this.touch('borrower', borrower.address)
    }
    if (a.source.kind === 'job') {
      const job = this.jobs.get(a.source.id)
      if (job) {
        this.expect('job', job, {
          type: 'ADVANCE_CLOSED', advanceId: a.advanceId, principalAtomic: a.principalAtomic,
          revenueUsedAtomic: fromRevenue, collateralUsedAtomic: fromCollateral, nowMs,
        })
      }
    } else {
      this.releaseBacking(a.source.id, a.principalAtomic, fromBacking)
    }
    return this.drain({ ...plan, txHash: input.txHash, borrowerReputationBps: borrower.reputationBps })
  }

  /** One uptime observation of a lender (bps of the period it was reachable) moves its reliability towards it. */
  recordLenderUptime(input: { lender: Address; uptimeBps: number }, _nowMs: number): EngineResult<LenderRecord> {
    const lender = this.lenders.get(input.lender)
    if (!lender) return fail('not_found', 'lender_not_found', `lender ${input.lender} is not registered`)
    if (!isBps(input.uptimeBps)) return fail('invalid', 'invalid_bps', 'uptimeBps must be an integer in 0..10000')
    const w = this.config.lenderReliabilityUptimeWeightBps
    lender.reliabilityBps = clampBps(Math.floor((lender.reliabilityBps * (10_000 - w) + input.uptimeBps * w) / 10_000))
    this.lenderChanged(lender)
    return this.drain({ ...lender })
  }

  // ======================================================================================================== reads

  getJob(jobId: string): JobView | undefined {
    const actor = this.jobs.get(jobId)
    return actor && viewOf<JobView>(actor.getSnapshot())
  }

  getOffer(offerId: string): OfferView | undefined {
    const actor = this.offers.get(offerId)
    return actor && viewOf<OfferView>(actor.getSnapshot())
  }

  getLease(leaseId: string): LeaseView | undefined {
    const actor = this.leases.get(leaseId)
    return actor && leaseView(actor.getSnapshot())
  }

  getAdvance(advanceId: string): AdvanceView | undefined {
    const actor = this.advances.get(advanceId)
    return actor && viewOf<AdvanceView>(actor.getSnapshot())
  }

  getLender(address: Address): LenderRecord | undefined {
    const lender = this.lenders.get(address) ?? this.lenders.get(this.lenderBySession.get(address) as Address)
    return lender && { ...lender }
  }

  getSource(sourceId: string): SourceRecord | undefined {
    const source = this.sources.get(sourceId)
    return source && { ...source }
  }

  getBorrower(address: Address): BorrowerRecord | undefined {
    const borrower = this.borrowers.get(address)
    return borrower && { ...borrower }
  }

  /**
   * What a borrower owes now and since when the service knows it, read from live actors and records only (final
   * actors have left memory): its open advances (active or defaulted), those past due or defaulted, principal + fee
   * outstanding per network and asset, and the earliest creation among its live jobs, open advances and backing
   * sources. O(live jobs + live advances + sources): a read for the paid credit score, not for a hot path.
   */
  borrowerExposure(address: Address, nowMs: number): BorrowerExposure {
    let openAdvances = 0
    let pastDueAdvances = 0
    let earliestAtMs: number | null = null
    const seen = (atMs: number) => (earliestAtMs = earliestAtMs === null || atMs < earliestAtMs ? atMs : earliestAtMs)
    const outstanding = new Map<string, { network: string; asset: string; outstandingAtomic: bigint }>()
    for (const actor of this.advances.values()) {
      const snapshot = actor.getSnapshot()
      const a = snapshot.context
      if (a.borrower !== address) continue
      openAdvances += 1
      if (snapshot.value === 'defaulted' || a.dueAtMs <= nowMs) pastDueAdvances += 1
      seen(a.fundedAtMs)
      const key = reserveId(a.network, a.asset)
      const entry = outstanding.get(key) ?? { network: a.network, asset: a.asset, outstandingAtomic: 0n }
      entry.outstandingAtomic += a.principalAtomic + a.feeAtomic
      outstanding.set(key, entry)
    }
    for (const actor of this.jobs.values()) {
      const j = actor.getSnapshot().context
      if (j.borrower === address) seen(j.createdAtMs)
    }
    for (const source of this.sources.values()) if (source.agent === address) seen(source.registeredAtMs)
    const byKey = [...outstanding.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v)
    return { openAdvances, pastDueAdvances, outstanding: byKey, earliestActivityAtMs: earliestAtMs }
  }

  /**
   * A page of lenders in registration order: those after `afterSeq` that `accept` takes, at most `limit`, looking
   * at no more than `scanMax` of them. O(log n + scanned), never O(all lenders): the list routes call it per request.
   */
  lendersPage(afterSeq: number, limit: number, scanMax: number, accept: (lender: LenderRecord) => boolean = () => true): RegistrationPage<LenderRecord> {
    return registrationPage(this.lenderOrder, (address) => this.lenders.get(address) as LenderRecord, afterSeq, limit, scanMax, accept)
  }

  /** A page of backing sources in registration order (see `lendersPage`). */
  sourcesPage(afterSeq: number, limit: number): RegistrationPage<SourceRecord> {
    return registrationPage(this.sourceOrder, (id) => this.sources.get(id) as SourceRecord, afterSeq, limit, limit, () => true)
  }

  /** Live leases of a lender (by lender or session address), oldest first: what its wallet should pay now. */
  liveLeasesOf(address: Address): LeaseView[] {
    const lenderAddress = this.lenders.has(address) ? address : this.lenderBySession.get(address)
    const ids = lenderAddress ? [...(this.liveLeasesByLender.get(lenderAddress) ?? [])] : []
    return ids.sort((a, b) => seqOf(a) - seqOf(b)).map((id) => this.getLease(id) as LeaseView)
  }

  creditState(): CreditState {
    const totals = { registeredAtomic: 0n, availableAtomic: 0n, reservedAtomic: 0n, deployedAtomic: 0n, feesEarnedAtomic: 0n, lossesAtomic: 0n }
    let activeLenders = 0
    for (const l of this.lenders.values()) {
      totals.registeredAtomic += l.registeredAtomic
      totals.availableAtomic += l.availableAtomic
      totals.reservedAtomic += l.reservedAtomic
      totals.deployedAtomic += l.deployedAtomic
      totals.feesEarnedAtomic += l.feesEarnedAtomic
      totals.lossesAtomic += l.lossesAtomic
      if (isActiveLender(l, this.config)) activeLenders += 1
    }
    let suspendedBorrowers = 0
    for (const b of this.borrowers.values()) if (b.suspended) suspendedBorrowers += 1
    return {
      counts: {
        lenders: this.lenders.size, activeLenders, sources: this.sources.size, borrowers: this.borrowers.size,
        suspendedBorrowers, liveJobs: this.jobs.size, liveOffers: this.offers.size, liveLeases: this.leases.size,
        liveAdvances: this.advances.size,
      },
      totals,
      reserves: [...this.reserves.values()].sort((a, b) => reserveId(a.network, a.asset).localeCompare(reserveId(b.network, b.asset))).map((r) => ({ ...r })),
    }
  }

  /** Every live actor snapshot and every record, as the store would hold them (final: false). */
  snapshots(): Change[] {
    // Sorted by kind, then id (sequence order for minted ids), so a fresh and a restored engine list the same.
    const out: Change[] = [{ kind: 'meta', id: 'engine', record: { ...this.meta }, final: false }]
    const byId = (a: Change, b: Change): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    const bySeq = (a: Change, b: Change): number => seqOf(a.id) - seqOf(b.id)
    const lenders = [...this.lenders.values()].sort((a, b) => a.registrationSeq - b.registrationSeq)
    for (const l of lenders) out.push({ kind: 'lender', id: l.address, record: { ...l }, final: false })
    const sources = [...this.sources.values()].sort((a, b) => a.registrationSeq - b.registrationSeq)
    for (const s of sources) out.push({ kind: 'source', id: s.sourceId, record: { ...s }, final: false })
    const records: Change[] = []
    for (const b of this.borrowers.values()) records.push({ kind: 'borrower', id: b.address, record: { ...b }, final: false })
    out.push(...records.sort(byId))
    records.length = 0
    for (const [id, r] of this.reserves) records.push({ kind: 'reserve', id, record: { ...r }, final: false })
    out.push(...records.sort(byId))
    for (const [kind, map] of this.actorMaps()) {
      const actors: Change[] = []
      for (const [id, actor] of map) actors.push({ kind, id, record: withHistory(persisted(actor.getPersistedSnapshot()), actor), final: false })
      out.push(...actors.sort(kind === 'job' ? byId : bySeq))
    }
    return out
  }

  // =================================================================================================== invariants

  /** Throws when any money or lifecycle invariant of DESIGN section 4 does not hold. */
  checkInvariants(): void {
    if (this.lenderOrder.length !== this.lenders.size || this.sourceOrder.length !== this.sources.size) throw new Error('invariant: registration order out of step with the records')
    const reservedByLender = new Map<Address, bigint>()
    const leasesByOffer = new Map<string, number>()
    const reservedByWallet = new Map<string, bigint>()
    for (const [id, lease] of this.leases) {
      const snap = lease.getSnapshot()
      if (!snap.matches('leased')) throw new Error(`invariant: lease ${id} is final but still in memory`)
      const l = snap.context
      reservedByLender.set(l.lender, (reservedByLender.get(l.lender) ?? 0n) + l.amountAtomic)
      const wallet = walletKey(l.lender, l.network, l.asset)
      reservedByWallet.set(wallet, (reservedByWallet.get(wallet) ?? 0n) + l.amountAtomic)
      leasesByOffer.set(l.offerId, (leasesByOffer.get(l.offerId) ?? 0) + 1)
      const offer = this.offers.get(l.offerId)
      if (!offer || offer.getSnapshot().context.currentLeaseId !== id) throw new Error(`invariant: live lease ${id} is not its offer's current lease`)
      if (!this.liveLeasesByLender.get(l.lender)?.has(id)) throw new Error(`invariant: lease ${id} missing from its lender's index`)
    }
    for (const [id, count] of leasesByOffer) if (count > 1) throw new Error(`invariant: offer ${id} has ${count} live leases`)
    this.checkSchedules()
    if (reservedByWallet.size !== this.walletReserved.size || [...reservedByWallet].some(([k, v]) => this.walletReserved.get(k) !== v)) {
      throw new Error('invariant: the per-wallet reservations differ from the live leases')
    }
    const committed = new Map<string, bigint>()
    const addCommitted = (src: SourceRef, amount: bigint): void => {
      const key = `${src.kind}:${src.id}`
      committed.set(key, (committed.get(key) ?? 0n) + amount)
    }
    for (const [id, offer] of this.offers) {
      const snap = offer.getSnapshot()
      const o = snap.context
      if (snap.status !== 'active') throw new Error(`invariant: offer ${id} is final but still in memory`)
      if (snap.matches('leased') !== (o.currentLeaseId !== null && this.leases.has(o.currentLeaseId))) {
        throw new Error(`invariant: offer ${id} state ${String(snap.value)} disagrees with its lease`)
      }
      if (o.leaseIds.length > this.config.leasesPerOfferMax) throw new Error(`invariant: offer ${id} exceeded leasesPerOfferMax`)
      addCommitted(o.source, o.amountAtomic)
    }
    const deployedByLender = new Map<Address, bigint>()
    for (const [id, advance] of this.advances) {
      const snap = advance.getSnapshot()
      const a = snap.context
      if (snap.status !== 'active') throw new Error(`invariant: advance ${id} is final but still in memory`)
      if (!a.payment || !/^0x[0-9a-fA-F]{64}$/.test(a.payment.txHash)) throw new Error(`invariant: advance ${id} has no verified payment`)
      if (this.leases.has(a.leaseId) || this.offers.has(a.offerId)) throw new Error(`invariant: advance ${id} while its lease or offer is live`)
      deployedByLender.set(a.lender, (deployedByLender.get(a.lender) ?? 0n) + a.principalAtomic)
      addCommitted(a.source, a.principalAtomic)
    }
    for (const l of this.lenders.values()) {
      if (l.availableAtomic < 0n || l.reservedAtomic < 0n || l.deployedAtomic < 0n) throw new Error(`invariant: negative liquidity of ${l.address}`)
      if (l.availableAtomic + l.reservedAtomic + l.deployedAtomic !== l.registeredAtomic + l.feesEarnedAtomic - l.lossesAtomic) {
        throw new Error(`invariant: liquidity of ${l.address} does not add up`)
      }
      if (l.reservedAtomic !== (reservedByLender.get(l.address) ?? 0n)) throw new Error(`invariant: reserved of ${l.address} != its live leases`)
      if (l.deployedAtomic !== (deployedByLender.get(l.address) ?? 0n)) throw new Error(`invariant: deployed of ${l.address} != its open advances`)
      if (!isBps(l.reputationBps) || !isBps(l.reliabilityBps)) throw new Error(`invariant: reputation of ${l.address} out of range`)
    }
    for (const [id, job] of this.jobs) {
      const j = job.getSnapshot().context
      if (j.committedAtomic !== (committed.get(`job:${id}`) ?? 0n)) throw new Error(`invariant: job ${id} committed capacity mismatch`)
      if (j.revenueUsedAtomic > j.receivableAtomic || j.collateralUsedAtomic > j.collateralAtomic) throw new Error(`invariant: job ${id} over-used`)
      for (const advanceId of j.advanceIds) if (!this.advances.has(advanceId)) throw new Error(`invariant: job ${id} lists closed advance ${advanceId}`)
    }
    for (const [id, s] of this.sources) {
      if (s.committedAtomic !== (committed.get(`backing:${id}`) ?? 0n)) throw new Error(`invariant: source ${id} committed capacity mismatch`)
      if (s.backingUsedAtomic > s.liquidationValueAtomic) throw new Error(`invariant: source ${id} backing over-used`)
    }
    for (const r of this.reserves.values()) {
      if (r.balanceAtomic < 0n || r.balanceAtomic !== r.fundedAtomic - r.paidOutAtomic) throw new Error(`invariant: reserve ${r.network}/${r.asset} does not add up`)
    }
    for (const b of this.borrowers.values()) if (!isBps(b.reputationBps)) throw new Error(`invariant: reputation of ${b.address} out of range`)
    const offersOf = new Map<Address, number>()
    for (const offer of this.offers.values()) {
      const b = offer.getSnapshot().context.borrower
      offersOf.set(b, (offersOf.get(b) ?? 0) + 1)
    }
    if (offersOf.size !== this.liveOffersOf.size || [...offersOf].some(([b, n]) => this.liveOffersOf.get(b) !== n)) {
      throw new Error('invariant: live offers per borrower are miscounted')
    }
    for (const [address, { entry, books }] of this.bookEntries) {
      if (entry.lender !== this.lenders.get(address)) throw new Error(`invariant: book entry of ${address} is stale`)
      if (entry.availableAtomic !== entry.lender.availableAtomic || entry.reputationBps !== entry.lender.reputationBps) {
        throw new Error(`invariant: book key of ${address} is stale`)
      }
      if (books.length !== (this.parked.has(address) ? 0 : entry.lender.networks.length)) throw new Error(`invariant: ${address} is not in each of its books, or parked and in one`)
    }
  }

  /** Dispatch's schedules hold exactly the live leases at their expiry and the live offers waiting for a lender. */
  private checkSchedules(): void {
    this.leaseExpiries.check('lease expiry schedule')
    this.offerExpiries.check('offer expiry schedule')
    this.waitingOffers.check('waiting offers')
    if (this.leaseExpiries.size !== this.leases.size) throw new Error('invariant: the lease expiry schedule differs from the live leases')
    for (const [id, lease] of this.leases) {
      const l = lease.getSnapshot().context
      const due = this.leaseExpiries.get(id)
      if (!due || due.atMs !== l.expiresAtMs + l.reportGraceMs || due.seq !== seqOf(id)) {
        throw new Error(`invariant: lease ${id} is not scheduled at its expiry`)
      }
    }
    let waiting = 0
    for (const [id, offer] of this.offers) {
      const snap = offer.getSnapshot()
      if (!snap.matches('offered')) continue
      waiting += 1
      const due = this.offerExpiries.get(id)
      if (!this.waitingOffers.has(id) || !due || due.atMs !== snap.context.expiresAtMs || due.seq !== seqOf(id)) {
        throw new Error(`invariant: waiting offer ${id} is not scheduled at its expiry`)
      }
    }
    if (this.waitingOffers.size !== waiting || this.offerExpiries.size !== waiting) {
      throw new Error('invariant: the waiting-offer schedules hold offers that are not waiting for a lender')
    }
  }

  // ==================================================================================================== internals

  /** Live leases past expiresAtMs + leaseReportGraceMs, in expiry order (expiresAtMs, then lease sequence). */
  private dueLeases(nowMs: number): LeaseActor[] {
    const due: LeaseActor[] = []
    // Collected before any is timed out: timing out unschedules the lease, and the walk needs the heap unchanged.
    for (const d of this.leaseExpiries.ascending()) {
      if (d.atMs > nowMs) break
      due.push(this.leases.get(d.id) as LeaseActor)
    }
    return due
  }

  /**
   * The waiting offers dispatch acts on, in creation sequence: every stale one (it expires whatever the limit) and
   * the first offersDispatchedPerCallMax of the others (each is matched). No dispatch step moves another offer into
   * or out of the waiting state, so the list is fixed before the first one is acted on.
   */
  private offersToDispatch(nowMs: number): { offer: OfferActor; due: boolean }[] {
    const chosen: Due[] = []
    for (const d of this.offerExpiries.ascending()) {
      if (d.atMs > nowMs) break
      chosen.push(d)
    }
    const stale = chosen.length
    let matchable = 0
    for (const d of this.waitingOffers.ascending()) {
      if (matchable >= this.config.offersDispatchedPerCallMax) break
      if (d.atMs <= nowMs) continue
      chosen.push(d)
      matchable += 1
    }
    // The stale ones came in expiry order; dispatch acts in creation sequence, as the lease timeouts left them.
    if (stale > 0) chosen.sort(bySeq)
    return chosen.map((d) => ({ offer: this.offers.get(d.id) as OfferActor, due: d.atMs <= nowMs }))
  }

  /**
   * One matching attempt. The walk of the book picks the lenders without changing anything (matching.ts); then the
   * offer machine, sent the attempt's first event, decides whether the offer may be matched now: a stale offer
   * refuses a lease (it expires instead), an offer not waiting for a lender refuses every event of matching (the
   * answer carries the code). The events after the first are the machine's to take: same offer, same instant.
   */
  private leaseToBestLender(offer: OfferActor, nowMs: number): MatchOutcome | Extract<Answer, { accepted: false }> {
    const o = offer.getSnapshot().context
    const walk = this.walkBook(o)
    const refusedLeases: LeaseView[] = []
    // Refusals (insufficient balance) are not the offer's events: they use up none of its leases (issue 10, hole 2).
    // They are recorded once the offer took the attempt's event, or waits; each refused lender is parked.
    const recordRefusals = (): void => {
      for (const { lender, fee } of walk.refused) {
        refusedLeases.push(this.refuseLease(o, lender, fee, nowMs))
        this.park(lender)
      }
    }
    if (walk.granted) {
      const { lender, fee } = walk.granted
      // The granted lease takes the id after the refused ones.
      const leaseId = `${ID_PREFIXES.lease}${this.meta.leaseSeq + 1 + walk.refused.length}`
      const answer = this.send('offer', offer, { type: 'LEASE', leaseId, lender: lender.address, nowMs })
      if (!answer.accepted) return this.notMatched(offer, answer, nowMs)
      recordRefusals()
      const granted = this.grantLease(o, lender, fee, nowMs)
      return { offer: viewOf<OfferView>(offer.getSnapshot()), lease: granted, refusedLeases, offerExpired: false }
    }
    // Out of leases, or nothing to lease: the offer decides whether it waits (its expiry is not due), is stale, or
    // cannot be matched at all.
    const answer = this.send('offer', offer, { type: 'EXPIRE', reason: walk.outOfLeases ? 'leases_exhausted' : 'stale', nowMs })
    if (!answer.accepted) {
      if (answer.code !== offerRefusals.EXPIRE.guarded) return this.notMatched(offer, answer, nowMs)
      recordRefusals()
      return { offer: viewOf<OfferView>(offer.getSnapshot()), lease: null, refusedLeases, offerExpired: false }
    }
    this.releaseCapacity(o.source, o.amountAtomic, nowMs)
    return { offer: viewOf<OfferView>(offer.getSnapshot()), lease: null, refusedLeases, offerExpired: true }
  }

  /** The offer refused the attempt's first event: it waits, it is stale (and expires now), or it is a conflict. */
  private notMatched(offer: OfferActor, answer: Extract<Answer, { accepted: false }>, nowMs: number): MatchOutcome | Extract<Answer, { accepted: false }> {
    if (answer.code === offerRefusals.EXPIRE.guarded) {
      return { offer: viewOf<OfferView>(offer.getSnapshot()), lease: null, refusedLeases: [], offerExpired: false }
    }
    if (answer.code === offerRefusals.LEASE.guarded) {
      return { offer: this.expireOffer(offer, 'stale', nowMs), lease: null, refusedLeases: [], offerExpired: true }
    }
    return answer
  }

  /**
   * The lenders one matching attempt leases to, in book order, without changing anything: those whose wallet cannot
   * pay (each gets a lease refused at once, which is not one of the offer's leases) and the first whose wallet can.
   */
  private walkBook(o: OfferContext): { refused: Candidate[]; granted: Candidate | null; outOfLeases: boolean } {
    const refused: Candidate[] = []
    const book = this.books.get(bookKey(o.network, o.asset))
    const leasesLeft = this.config.leasesPerOfferMax - o.leaseIds.length
    if (book && leasesLeft > 0) {
      const scanMax = this.config.lendersScannedPerMatchMax
      let scanned = 0
      for (const entry of book.entries) {
        if (scanned >= scanMax) break
        scanned += 1
        // Asks only rise along the book: once this ask prices the fee above the maximum, no later lender fits.
        if (feeAtomic(o.amountAtomic, entry.askBps) > o.maximumFeeAtomic) break
        const lender = entry.lender
        const fee = eligibleFee(lender, o, this.config.lenderReliabilityMinBps)
        if (fee === null || o.excludedLenders.includes(lender.address)) continue
        if (!this.walletCovers(lender, o.network, o.asset, o.amountAtomic)) {
          refused.push({ lender, fee })
          continue
        }
        return { refused, granted: { lender, fee }, outOfLeases: false }
      }
    }
    return { refused, granted: null, outOfLeases: leasesLeft <= 0 }
  }

  /** The lender's wallet must cover this payment on top of its other live leases on the same network and asset. */
  private walletCovers(lender: LenderRecord, network: string, asset: string, amountAtomic: bigint): boolean {
    const spendable = this.wallets.spendableAtomic(network, asset, lender.sessionAddress)
    const promised = this.walletReserved.get(walletKey(lender.address, network, asset)) ?? 0n
    return spendable - promised >= amountAtomic
  }

  private leaseInput(o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number): LeaseInput {
    this.meta.leaseSeq += 1
    this.touch('meta', 'engine')
    return {
      leaseId: `${ID_PREFIXES.lease}${this.meta.leaseSeq}`,
      offerId: o.offerId,
      lender: lender.address,
      payer: lender.sessionAddress,
      network: o.network,
      asset: o.asset,
      amountAtomic: o.amountAtomic,
      feeAtomic: fee,
      supplierAddress: o.supplierAddress,
      createdAtMs: nowMs,
      expiresAtMs: nowMs + this.config.leaseTtlMs,
      reportGraceMs: this.config.leaseReportGraceMs,
    }
  }

  private grantLease(o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number): LeaseView {
    const input = this.leaseInput(o, lender, fee, nowMs)
    const lease = createActor(leaseMachine, { input }).start()
    this.leases.set(input.leaseId, lease)
    this.touch('lease', input.leaseId)
    this.addLiveLease(input)
    lender.availableAtomic -= input.amountAtomic
    lender.reservedAtomic += input.amountAtomic
    lender.leasesGranted += 1
    this.lenderChanged(lender)
    return leaseView(lease.getSnapshot())
  }

  /**
   * A lease that expires at once (insufficient balance) is born final: it is computed with XState's pure transition
   * functions instead of a live actor, because actor creation is the hot cost and this actor would be evicted at once.
   */
  private refuseLease(o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number): LeaseView {
    const input = this.leaseInput(o, lender, fee, nowMs)
    const [initial] = initialTransition(leaseMachine, input)
    const [expired] = transition(leaseMachine, initial, { type: 'INSUFFICIENT_BALANCE', nowMs })
    if (expired === initial) throw new Error(`invariant: lease ${input.leaseId} refused INSUFFICIENT_BALANCE`)
    this.pending.set(`lease:${input.leaseId}`, {
      kind: 'lease', id: input.leaseId, record: withBornFinalHistory(persisted(leaseMachine.getPersistedSnapshot(expired)), 'lease', 'INSUFFICIENT_BALANCE'), final: true,
    })
    return leaseView(expired)
  }

  private timeOutLease(lease: LeaseActor, nowMs: number): LeaseView {
    const l = lease.getSnapshot().context
    // The schedule says the report grace is over; the lease machine's guard agrees, or this throws.
    this.expect('lease', lease, { type: 'TIME_OUT', nowMs })
    this.releaseLease(l)
    const lender = this.lenderOf(l.lender)
    lender.leasesExpired += 1
    lender.reliabilityBps = clampBps(lender.reliabilityBps - this.config.lenderReliabilityMissPenaltyBps)
    lender.reputationBps = clampBps(lender.reputationBps - this.config.lenderReputationMissPenaltyBps)
    this.lenderChanged(lender)
    const offer = this.offers.get(l.offerId) as OfferActor
    this.expect('offer', offer, { type: 'LEASE_ENDED', leaseId: l.leaseId, lender: l.lender, nowMs })
    return leaseView(lease.getSnapshot())
  }

  /** Give a lease's reserved liquidity back to its lender. */
  private releaseLease(l: LeaseInput): void {
    this.dropLiveLease(l)
    const lender = this.lenderOf(l.lender)
    lender.reservedAtomic -= l.amountAtomic
    lender.availableAtomic += l.amountAtomic
    this.lenderChanged(lender)
  }

  private addLiveLease(l: LeaseInput): void {
    let live = this.liveLeasesByLender.get(l.lender)
    if (!live) this.liveLeasesByLender.set(l.lender, (live = new Set()))
    live.add(l.leaseId)
    this.leaseExpiries.push({ id: l.leaseId, seq: seqOf(l.leaseId), atMs: l.expiresAtMs + l.reportGraceMs })
    const key = walletKey(l.lender, l.network, l.asset)
    this.walletReserved.set(key, (this.walletReserved.get(key) ?? 0n) + l.amountAtomic)
  }

  private dropLiveLease(l: LeaseInput): void {
    const live = this.liveLeasesByLender.get(l.lender)
    live?.delete(l.leaseId)
    if (live && live.size === 0) this.liveLeasesByLender.delete(l.lender)
    this.leaseExpiries.delete(l.leaseId)
    const key = walletKey(l.lender, l.network, l.asset)
    const left = (this.walletReserved.get(key) ?? 0n) - l.amountAtomic
    if (left === 0n) this.walletReserved.delete(key)
    else this.walletReserved.set(key, left)
  }

  private expireOffer(offer: OfferActor, reason: 'stale' | 'leases_exhausted', nowMs: number): OfferView {
    const o = offer.getSnapshot().context
    this.expect('offer', offer, { type: 'EXPIRE', reason, nowMs })
    this.releaseCapacity(o.source, o.amountAtomic, nowMs)
    return viewOf<OfferView>(offer.getSnapshot())
  }

  /**
   * Withdraw an offer; its live lease (if any) is cancelled without a reliability penalty: the lender did no wrong.
   * `releaseCapacity` is false when the source already released it (a failing job releases its offers' capacity).
   */
  private declineOffer(offer: OfferActor, reason: 'borrower_suspended' | 'source_closed', nowMs: number, releaseCapacity = true): void {
    const o = offer.getSnapshot().context
    const lease = o.currentLeaseId ? this.leases.get(o.currentLeaseId) : undefined
    if (lease) {
      const l = lease.getSnapshot().context
      this.expect('lease', lease, { type: 'CANCEL', nowMs })
      this.releaseLease(l)
    }
    this.expect('offer', offer, { type: 'DECLINE', reason, nowMs })
    if (releaseCapacity) this.releaseCapacity(o.source, o.amountAtomic, nowMs)
  }

  private defaultAdvance(advance: AdvanceActor, reason: string, nowMs: number): void {
    this.expect('advance', advance, { type: 'DEFAULT', reason, nowMs })
    this.advanceDefaulted(advance.getSnapshot().context)
  }

  /** What a default costs the borrower's and the lender's records. */
  private advanceDefaulted(a: AdvanceInput): void {
    const borrower = this.borrowerOf(a.borrower)
    borrower.advancesDefaulted += 1
    this.touch('borrower', borrower.address)
    const lender = this.lenderOf(a.lender)
    lender.advancesDefaulted += 1
    lender.reputationBps = clampBps(lender.reputationBps - this.config.lenderReputationDefaultPenaltyBps)
    this.lenderChanged(lender)
  }

  private commitCapacity(source: SourceRef, amountAtomic: bigint, nowMs: number): void {
    if (source.kind === 'job') {
      this.expect('job', this.jobs.get(source.id) as JobActor, { type: 'COMMIT', amountAtomic, nowMs })
    } else {
      const s = this.sources.get(source.id) as SourceRecord
      s.committedAtomic += amountAtomic
      this.touch('source', s.sourceId)
    }
  }

  private releaseCapacity(source: SourceRef, amountAtomic: bigint, nowMs: number): void {
    if (source.kind === 'job') {
      const job = this.jobs.get(source.id)
      if (job) this.expect('job', job, { type: 'RELEASE', amountAtomic, nowMs })
    } else {
      this.releaseBacking(source.id, amountAtomic, 0n)
    }
  }

  private releaseBacking(sourceId: string, principalAtomic: bigint, backingUsedAtomic: bigint): void {
    const s = this.sources.get(sourceId)
    if (!s) return
    s.committedAtomic -= principalAtomic
    s.backingUsedAtomic += backingUsedAtomic
    this.touch('source', sourceId)
  }

  /** The ledger and reputation side of a repayment the advance machine has taken (REPAY). */
  private applyRepayment(a: AdvanceInput, repayment: RepaymentRecord): RepaymentReceipt {
    const lenderFee = repayment.lenderAmountAtomic - a.principalAtomic
    const lender = this.lenderOf(a.lender)
    lender.deployedAtomic -= a.principalAtomic
    lender.availableAtomic += repayment.lenderAmountAtomic
    lender.feesEarnedAtomic += lenderFee
    lender.advancesRepaid += 1
    lender.reputationBps = clampBps(lender.reputationBps + this.config.lenderReputationRepaidRewardBps)
    this.lenderChanged(lender)
    if (repayment.reserveAmountAtomic > 0n) {
      const reserve = this.reserveOf(a.network, a.asset)
      reserve.balanceAtomic += repayment.reserveAmountAtomic
      reserve.fundedAtomic += repayment.reserveAmountAtomic
    }
    const borrower = this.borrowerOf(a.borrower)
    borrower.advancesRepaid += 1
    borrower.reputationBps = clampBps(borrower.reputationBps + this.config.borrowerReputationRepaidRewardBps)
    this.touch('borrower', borrower.address)
    return {
      advanceId: a.advanceId, lender: a.lender, network: a.network, asset: a.asset, principalAtomic: a.principalAtomic,
      feeAtomic: a.feeAtomic, lenderAmountAtomic: repayment.lenderAmountAtomic,
      reserveAmountAtomic: repayment.reserveAmountAtomic, txHash: repayment.txHash,
    }
  }

  /** What settling the job pays: each open advance in full, then the reserve share; or why it cannot be settled. */
  private jobSettlement(job: JobActor): { ok: true; value: JobSettlementPlan } | { ok: false; error: EngineError } {
    const j = job.getSnapshot().context
    for (const offer of this.offers.values()) {
      const src = offer.getSnapshot().context.source
      if (src.kind === 'job' && src.id === j.jobId) return fail('conflict', 'job_has_live_offers', 'the job has offers not yet funded or expired')
    }
    const advances: JobSettlementPlan['advances'] = []
    let toLenders = 0n
    let toReserve = 0n
    for (const advanceId of j.advanceIds) {
      const a = (this.advances.get(advanceId) as AdvanceActor).getSnapshot().context
      const amount = lenderRepaymentAtomic(a)
      advances.push({ advanceId, lender: a.lender, amountAtomic: amount, reserveAmountAtomic: a.insuranceAtomic })
      toLenders += amount
      toReserve += a.insuranceAtomic
    }
    const held = j.receivableAtomic - j.revenueUsedAtomic + j.collateralAtomic - j.collateralUsedAtomic
    if (toLenders + toReserve > held) {
      return fail('conflict', 'settlement_underfunded', 'the escrow and collateral do not cover the advances; liquidate instead')
    }
    return {
      ok: true,
      value: {
        jobId: j.jobId, network: j.network, asset: j.asset, borrower: j.borrower, advances,
        toLendersAtomic: toLenders, toReserveAtomic: toReserve, toBorrowerAtomic: held - toLenders - toReserve,
      },
    }
  }

  /** What recovering the advance would take now, step by step; whether it may be liquidated is the machine's say. */
  private liquidationPlan(advance: AdvanceActor): LiquidationPlan {
    const a = advance.getSnapshot().context
    let revenue = 0n
    let collateral = 0n
    let backing = 0n
    if (a.source.kind === 'job') {
      const job = this.jobs.get(a.source.id)
      if (job) {
        const j = job.getSnapshot().context
        revenue = j.receivableAtomic - j.revenueUsedAtomic
        collateral = j.collateralAtomic - j.collateralUsedAtomic
      }
    } else {
      const s = this.sources.get(a.source.id)
      if (s) backing = s.liquidationValueAtomic - s.backingUsedAtomic
    }
    const reserve = this.reserves.get(reserveId(a.network, a.asset))?.balanceAtomic ?? 0n
    const owed = a.principalAtomic + a.feeAtomic
    const recovery = planRecovery(owed, { revenueAtomic: revenue, collateralAtomic: collateral, backingAtomic: backing, reserveAtomic: reserve })
    return {
      advanceId: a.advanceId, jobId: a.source.kind === 'job' ? a.source.id : null, sourceId: a.source.kind === 'backing' ? a.source.id : null,
      lender: a.lender, borrower: a.borrower, network: a.network, asset: a.asset, owedAtomic: owed, ...recovery,
    }
  }

  // ---- records and indexes

  private addLender(lender: LenderRecord): void {
    this.lenders.set(lender.address, lender)
    this.lenderOrder.push(lender.address)
    this.lenderBySession.set(lender.sessionAddress, lender.address)
    this.bookEntries.set(lender.address, { entry: entryFor(lender), books: [] })
    this.parked.add(lender.address)
    if (this.walletFunded(lender)) this.unpark(lender)
  }

  /** Whether the lender's session wallet holds anything spendable on one of its networks. */
  private walletFunded(lender: LenderRecord): boolean {
    return lender.networks.some((n) => this.wallets.spendableAtomic(n, lender.assets[n] as string, lender.sessionAddress) > 0n)
  }

  private park(lender: LenderRecord): void {
    const placed = this.bookEntries.get(lender.address)
    if (!placed || this.parked.has(lender.address)) return
    for (const book of placed.books) book.remove(placed.entry)
    placed.books = []
    this.parked.add(lender.address)
  }

  private unpark(lender: LenderRecord): void {
    const placed = this.bookEntries.get(lender.address)
    if (!placed || !this.parked.delete(lender.address)) return
    placed.entry = entryFor(lender)
    for (const network of lender.networks) {
      const key = bookKey(network, lender.assets[network] as string)
      let book = this.books.get(key)
      if (!book) this.books.set(key, (book = new MatchingBook()))
      book.insert(placed.entry)
      placed.books.push(book)
    }
  }

  /**
   * The wallet watcher saw the balance or allowance of `holder` (a session key) change: a parked lender whose wallet
   * now holds something is back in its books. Changes nothing durable. Returns whether a lender was unparked.
   */
  walletChanged(holder: Address): boolean {
    const address = this.lenderBySession.get(holder)
    const lender = address === undefined ? undefined : this.lenders.get(address)
    if (lender === undefined || !this.parked.has(lender.address) || !this.walletFunded(lender)) return false
    this.unpark(lender)
    return true
  }

  /** Whether the lender is out of the books, waiting for its wallet to change. */
  isParked(address: Address): boolean {
    return this.parked.has(address)
  }

  private lenderOf(address: Address): LenderRecord {
    const lender = this.lenders.get(address)
    if (!lender) throw new Error(`engine: lender ${address} vanished`)
    return lender
  }

  private lenderChanged(lender: LenderRecord): void {
    const placed = this.bookEntries.get(lender.address)
    if (placed) reposition(placed.entry, placed.books)
    this.touch('lender', lender.address)
  }

  private borrowerOf(address: Address): BorrowerRecord {
    let borrower = this.borrowers.get(address)
    if (!borrower) {
      borrower = {
        address, suspended: false, suspendedAtMs: null, reputationBps: this.config.borrowerReputationInitialBps,
        advancesRepaid: 0, advancesDefaulted: 0, shortfallAtomic: 0n,
      }
      this.borrowers.set(address, borrower)
      this.touch('borrower', address)
    }
    return borrower
  }

  private reserveOf(network: string, asset: string): ReserveRecord {
    const id = reserveId(network, asset)
    let reserve = this.reserves.get(id)
    if (!reserve) this.reserves.set(id, (reserve = { network, asset, balanceAtomic: 0n, fundedAtomic: 0n, paidOutAtomic: 0n }))
    this.touch('reserve', id)
    return reserve
  }

  // ---- actors and changes

  /** A job's client, or an operator of the service (config.operators). */
  private isClientOrOperator(job: JobActor, caller: Address): boolean {
    return sameAddress(job.getSnapshot().context.client, caller) || this.isOperator(caller)
  }

  /** An advance's lender, or an operator of the service. */
  private isLenderOrOperator(advance: AdvanceActor, caller: Address): boolean {
    return sameAddress(advance.getSnapshot().context.lender, caller) || this.isOperator(caller)
  }

  private isOperator(caller: Address): boolean {
    return this.config.operators.some((operator) => sameAddress(operator, caller))
  }

  /**
   * The one way an event reaches a live actor. The machine's answer is read off its snapshot: XState keeps the very
   * same snapshot object when no transition is taken, so an unchanged reference is a refusal, and the refusal's code
   * is the machine's (its table in machines/). Nothing is computed twice: no can() before the send.
   */
  private send<K extends ActorKind>(kind: K, actor: LiveOf<K>, event: EventOf<K>): Answer {
    const before = actor.getSnapshot() as AnyMachineSnapshot
    ;(actor as AnyActor).send(event)
    const after = actor.getSnapshot() as AnyMachineSnapshot
    const from = String(before.value)
    if (after === before) return { accepted: false, code: refusalCode(machines[kind], refusals[kind], from, event.type), state: from }
    recordTransition(actor as AnyActor, from, String(after.value), event)
    if (kind === 'offer') this.scheduleOffer(actor as OfferActor)
    this.noteActor(kind, idOf(kind, after.context as Record<string, unknown>), actor as AnyLive)
    return { accepted: true, from, to: String(after.value) }
  }

  /** A send whose refusal would be a bug: the engine already knows the machine takes it (a schedule, an invariant). */
  private expect<K extends ActorKind>(kind: K, actor: LiveOf<K>, event: EventOf<K>): void {
    const answer = this.send(kind, actor, event)
    if (!answer.accepted) {
      const id = idOf(kind, (actor.getSnapshot() as AnyMachineSnapshot).context as Record<string, unknown>)
      throw new Error(`invariant: ${kind} ${id} refused ${event.type} in state ${answer.state} (${answer.code})`)
    }
  }

  /**
   * Whether the machine would take `event` now, for queries that send nothing (the plans run before an operator
   * transaction). A command sends the event itself and learns the answer from it instead.
   */
  private wouldTake<K extends ActorKind>(kind: K, actor: LiveOf<K>, event: EventOf<K>): Answer {
    const snapshot = actor.getSnapshot() as AnyMachineSnapshot
    const state = String(snapshot.value)
    if (snapshot.can(event)) return { accepted: true, from: state, to: state }
    return { accepted: false, code: refusalCode(machines[kind], refusals[kind], state, event.type), state }
  }

  /** A refused event as the command's conflict: the machine's code, nothing changed. */
  private refused(kind: ActorKind, id: string, answer: Extract<Answer, { accepted: false }>): { ok: false; error: EngineError } {
    return fail('conflict', answer.code, `${kind} ${id} is ${answer.state}`)
  }

  /** An offer is in dispatch's waiting schedules exactly while it waits for a lender (state offered, not final). */
  private scheduleOffer(offer: OfferActor): void {
    const snap = offer.getSnapshot()
    const o = snap.context
    const waiting = snap.status === 'active' && snap.matches('offered')
    if (waiting === this.waitingOffers.has(o.offerId)) return
    if (waiting) {
      const due: Due = { id: o.offerId, seq: seqOf(o.offerId), atMs: o.expiresAtMs }
      this.waitingOffers.push(due)
      this.offerExpiries.push(due)
    } else {
      this.waitingOffers.delete(o.offerId)
      this.offerExpiries.delete(o.offerId)
    }
  }

  /** A final actor is persisted now, stopped and evicted; a live one is snapshotted when the command commits. */
  private noteActor(kind: ActorKind, id: string, actor: AnyLive): void {
    const key = `${kind}:${id}`
    if (actor.getSnapshot().status === 'done') {
      this.pending.set(key, { kind, id, record: withHistory(persisted(actor.getPersistedSnapshot()), actor), final: true })
      actor.stop()
      this.actorMap(kind).delete(id)
      if (kind === 'offer') this.countOffer((actor.getSnapshot().context as { borrower: Address }).borrower, -1)
    } else {
      this.pending.set(key, { kind, id })
    }
  }

  private countOffer(borrower: Address, delta: 1 | -1): void {
    const count = (this.liveOffersOf.get(borrower) ?? 0) + delta
    if (count > 0) this.liveOffersOf.set(borrower, count)
    else this.liveOffersOf.delete(borrower)
  }

  private touch(kind: Change['kind'], id: string): void {
    const key = `${kind}:${id}`
    if (!this.pending.has(key)) this.pending.set(key, { kind, id })
  }

  /** What the command changed, drained from the pending set: the store commits it. */
  private drain<T>(value: T): { ok: true; value: T; changes: Change[] } {
    const changes: Change[] = []
    for (const item of this.pending.values()) {
      changes.push('record' in item ? item : this.changeOf(item.kind, item.id))
    }
    this.pending = new Map()
    return { ok: true, value, changes }
  }

  private changeOf(kind: Change['kind'], id: string): Change {
    switch (kind) {
      case 'meta': return { kind, id, record: { ...this.meta }, final: false }
      case 'lender': return { kind, id, record: { ...this.lenderOf(id as Address) }, final: false }
      case 'source': return { kind, id, record: { ...(this.sources.get(id) as SourceRecord) }, final: false }
      case 'borrower': return { kind, id, record: { ...(this.borrowers.get(id as Address) as BorrowerRecord) }, final: false }
      case 'reserve': return { kind, id, record: { ...(this.reserves.get(id) as ReserveRecord) }, final: false }
      default: {
        const actor = this.actorMap(kind).get(id)
        if (!actor) throw new Error(`engine: ${kind} ${id} changed but is not live`)
        return { kind, id, record: withHistory(persisted(actor.getPersistedSnapshot()), actor), final: false }
      }
    }
  }

  private actorMap(kind: ActorKind): Map<string, AnyLive> {
    switch (kind) {
      case 'job': return this.jobs as Map<string, AnyLive>
      case 'offer': return this.offers as Map<string, AnyLive>
      case 'lease': return this.leases as Map<string, AnyLive>
      case 'advance': return this.advances as Map<string, AnyLive>
    }
  }

  private actorMaps(): [ActorKind, Map<string, AnyLive>][] {
    return (['job', 'offer', 'lease', 'advance'] as const).map((k) => [k, this.actorMap(k)])
  }

  // ---- restore

  /** Rebuild from stored snapshots: records first, then each live actor from its persisted snapshot, in id order. */
  private restore(snapshots: Iterable<StoredSnapshot>): void {
    const byKind = new Map<Change['kind'], StoredSnapshot[]>()
    for (const s of snapshots) {
      if (s.final) continue
      const list = byKind.get(s.kind) ?? []
      list.push(s)
      byKind.set(s.kind, list)
    }
    const list = (kind: Change['kind']): StoredSnapshot[] => byKind.get(kind) ?? []
    const meta = list('meta')[0]
    if (meta) this.meta = { ...(meta.record as MetaRecord) }
    for (const s of list('lender').map((x) => ({ ...(x.record as LenderRecord) })).sort((a, b) => a.registrationSeq - b.registrationSeq)) this.addLender(s)
    for (const s of list('source').map((x) => ({ ...(x.record as SourceRecord) })).sort((a, b) => a.registrationSeq - b.registrationSeq)) {
      this.sources.set(s.sourceId, s)
      this.sourceOrder.push(s.sourceId)
    }
    for (const s of list('borrower').map((x) => ({ ...(x.record as BorrowerRecord) })).sort((a, b) => a.address.localeCompare(b.address))) {
      this.borrowers.set(s.address, s)
      if (s.suspended) this.suspended.add(s.address)
    }
    for (const s of list('reserve').sort((a, b) => a.id.localeCompare(b.id))) this.reserves.set(s.id, { ...(s.record as ReserveRecord) })
    const byId = (kind: ActorKind) => (kind === 'job'
      ? list(kind).sort((a, b) => a.id.localeCompare(b.id))
      : list(kind).sort((a, b) => seqOf(a.id) - seqOf(b.id)))
    for (const s of byId('job')) this.jobs.set(s.id, restoreActor(jobMachine, s.record))
    for (const s of byId('offer')) {
      const offer = restoreActor(offerMachine, s.record)
      this.offers.set(s.id, offer)
      this.countOffer(offer.getSnapshot().context.borrower, 1)
      this.scheduleOffer(offer)
    }
    for (const s of byId('lease')) {
      const lease = restoreActor(leaseMachine, s.record)
      if (lease.getSnapshot().status !== 'active') continue
      this.leases.set(s.id, lease)
      this.addLiveLease(lease.getSnapshot().context)
    }
    for (const s of byId('advance')) this.advances.set(s.id, restoreActor(advanceMachine, s.record))
  }
}
