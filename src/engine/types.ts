// The engine's seam: results, errors, changes, records and views (see src/README.md, "Engine seam").
import type {
  ActorKind, Address, AdvanceContext, AdvanceState, JobContext, JobFailureReason, JobInput, JobState, LeaseContext, LeaseState, OfferContext,
  OfferState, RiskBand, TxProof,
} from '../../machines/index.ts'

export type { ActorKind, Address, RiskBand, TxProof }

export type ErrorClass = 'invalid' | 'not_found' | 'conflict' | 'forbidden'

export interface EngineError {
  /** Stable snake_case code. */
  code: string
  /** HTTP-ish class: invalid 400, not_found 404, conflict 409, forbidden 403. */
  class: ErrorClass
  message: string
}

export type RecordKind = 'lender' | 'source' | 'borrower' | 'reserve' | 'supplier' | 'held' | 'meta'

/** One persisted thing a command changed. `final` actors were evicted from memory; reads of them go to the store. */
export interface Change {
  kind: ActorKind | RecordKind
  id: string
  record: unknown
  final: boolean
  /**
   * A live actor's change whose actor was live before the command (started by an earlier one, or restored): the
   * store already lists it live and writes no live-index entry for it. Absent for a new actor and for records.
   */
  alreadyLive?: true
  /** The command removed the record (never an actor's): `record` is null and the store deletes its snapshot. */
  removed?: true
}

export type EngineResult<T> = { ok: true; value: T; changes: Change[] } | { ok: false; error: EngineError }

// ---- records (persisted as-is; bigints allowed) ----

export interface LenderRecord {
  address: Address
  sessionAddress: Address
  asset: string
  /** network slug -> asset symbol used on it */
  assets: Record<string, string>
  networks: string[]
  /** The lender's ask rate (spec: minFeeBps). */
  askBps: number
  maxDurationSeconds: number
  acceptedRiskBands: RiskBand[]
  registeredAtomic: bigint
  /**
   * What the lender's policy lets the service lend now. Every view shows min(this, what the session wallet can pay
   * beyond its live leases) instead (views.ts lenderView); matching checks both.
   */
  availableAtomic: bigint
  reservedAtomic: bigint
  deployedAtomic: bigint
  feesEarnedAtomic: bigint
  lossesAtomic: bigint
  /** Capital the lender took out of lending (POST /lenders/{address}/withdraw), for good. */
  withdrawnAtomic: bigint
  /**
   * Withdrawn but still in a live lease or an open advance: what comes back of them (a lease ending unpaid, a
   * repayment, a recovery) goes to the withdrawal first, never back to available.
   */
  withdrawalPendingAtomic: bigint
  reputationBps: number
  reliabilityBps: number
  /**
   * Since when the lender is inactive, on the commands' clock: when its reliability crossed below
   * `lenderReliabilityMinBps`, its last lease left unpaid below it, or the grant of its probation lease; null while
   * active. `lenderProbationSeconds` after it the lender may be granted one lease at the minimum (rules.ts
   * isEligibleLender). Null below the minimum happens only after the minimum was raised: the registration counts.
   */
  inactiveSinceMs: number | null
  /**
   * Probation leases the lender left unpaid in a row since its last paid lease: each doubles the wait before the next
   * one (rules.ts probationWaitMs), counted until the wait reaches `lenderProbationMaxSeconds`.
   */
  probationMisses: number
  /** Registration order: the last tie-breaker of matching. */
  registrationSeq: number
  registeredAtMs: number
  leasesGranted: number
  leasesPaid: number
  leasesExpired: number
  advancesRepaid: number
  advancesDefaulted: number
  /**
   * The lender's last lease outcomes, oldest first, at most `lenderUptimeWindowLeases`: `P` paid in time, `M` expired
   * unpaid (refusals for insufficient balance and cancelled leases are not outcomes). Its uptime is the share of P.
   */
  recentLeaseOutcomes: string
}

/**
 * A lender as every view shows it: availableAtomic is what the service can lend now, min(the policy's, what the
 * session wallet can pay beyond its live leases); policyAvailableAtomic is the record's.
 */
export interface LenderView extends Omit<LenderRecord, 'inactiveSinceMs' | 'probationMisses'> {
  policyAvailableAtomic: bigint
  /** Share of recentLeaseOutcomes paid in time (bps); null before the first outcome. */
  uptimeBps: number | null
}

/** A registered backing source: what was registered, and what the engine has drawn on it since. */
export interface SourceRecord extends RegisterSourceInput {
  /** Principal of live offers and open advances drawn on this source. */
  committedAtomic: bigint
  /** Hard liquidation value already used by recoveries. */
  backingUsedAtomic: bigint
  registrationSeq: number
  registeredAtMs: number
}

export interface BorrowerRecord {
  address: Address
  suspended: boolean
  suspendedAtMs: number | null
  reputationBps: number
  advancesRepaid: number
  advancesDefaulted: number
  shortfallAtomic: bigint
  /**
   * The principal the borrower has repaid (any source: its repayments and its jobs' settlements), per network then
   * asset: what it has proven it repays, which bounds the credit a job's receivable alone may secure (underwriting.ts).
   */
  repaidPrincipalAtomic: AmountsByAsset
  /** The principal its advances on jobs still owe (less what a liquidation recovered of it), per network then asset. */
  receivableOwedAtomic: AmountsByAsset
}

/** Amounts per network, then asset (each object replaced, never changed in place: a stored copy may share it). */
export type AmountsByAsset = Readonly<Record<string, Readonly<Record<string, bigint>>>>

/** A borrower's open obligations as the engine holds them (Engine.borrowerExposure). */
export interface BorrowerExposure {
  /** Advances active or defaulted, not yet repaid or liquidated. */
  openAdvances: number
  /** Of those, the ones past their due time or defaulted. */
  pastDueAdvances: number
  /** What the open advances still owe (lender's part + reserve's share) per network and asset, ordered by network then asset. */
  outstanding: Array<{ network: string; asset: string; outstandingAtomic: bigint }>
  /** Earliest creation among the borrower's live jobs, open advances and backing sources; null when none. */
  earliestActivityAtMs: number | null
}

export interface ReserveRecord {
  network: string
  asset: string
  balanceAtomic: bigint
  fundedAtomic: bigint
  paidOutAtomic: bigint
}

/**
 * What the credit contract holds for one recipient its token refused (a blacklisted lender session wallet, borrower
 * or client; README "Where every token goes"): its heldFor(token, account) on `network`, as the chain follower saw it
 * change (PaymentHeld adds, HeldPaymentClaimed, which pays all of it, brings it to 0). Kept at 0 once claimed: one
 * record per refused recipient and token, which the token's owner decides, not a caller. Id heldPaymentId().
 */
export interface HeldPaymentRecord {
  account: Address
  /** The lender whose session wallet `account` is (its repayments go there), when it is one: its stream sees the record too. */
  lender: Address | null
  network: string
  /** The token's symbol on the network; null when the network's configuration does not list the token. */
  asset: string | null
  token: Address
  amountAtomic: bigint
  /** The chain time of the block of the last PaymentHeld or HeldPaymentClaimed. */
  updatedAtMs: number
}

/**
 * A supplier of the directory (issue 9, case 2): the only addresses a principal on `network` may go to for `domain`.
 * Kept after an operator removes it (removedAtMs), so that the configuration's seed at the next start does not bring
 * it back.
 */
export interface SupplierRecord {
  /** Lower case. */
  domain: string
  name: string
  /** network slug -> payout addresses (checksummed); the first is the default when a request names none. */
  addresses: Record<string, Address[]>
  /** Who set the entry last: the configuration's seed follows the file; an operator's word is never overridden by it. */
  origin: 'config' | 'operator'
  updatedAtMs: number
  removedAtMs: number | null
}

/** A directory entry as configured or put by an operator. */
export interface SupplierInput {
  domain: string
  name: string
  addresses: Record<string, Address[]>
}

export interface MetaRecord {
  offerSeq: number
  leaseSeq: number
  advanceSeq: number
  lenderSeq: number
  sourceSeq: number
  /**
   * Per network, the chain time observed last (ms, the timestamp of the last block the chain follower committed):
   * what expires leases (src/engine/chain-facts.ts). Absent before the first observation; replaced, never mutated,
   * so a drained record keeps its value.
   */
  chainTimeMs?: Record<string, number>
}

// ---- views of actors (state + context); build them from a stored snapshot with the *ViewFromSnapshot helpers ----

export type { AdvanceState, JobState, LeaseState, OfferState }

export type JobView = JobContext & { state: JobState }
export type OfferView = OfferContext & { state: OfferState }
export type LeaseView = LeaseContext & { state: LeaseState }
export type AdvanceView = AdvanceContext & { state: AdvanceState }

// ---- command inputs ----

export interface RegisterLenderInput {
  address: Address
  sessionAddress: Address
  availableLiquidityAtomic: bigint
  asset: string
  assets?: Record<string, string>
  networks: string[]
  minFeeBps: number
  maxDurationSeconds: number
  acceptedRiskBands: string[]
  /** Initial values, e.g. from ERC-8004 identity evidence; config defaults otherwise. */
  reputationBps?: number
  reliabilityBps?: number
}

export interface RegisterSourceInput {
  sourceId: string
  productType: string
  agent: Address
  valueAtomic: bigint
  liquidationValueAtomic: bigint
  advanceRateBps: number
  evidenceId: string
  /** The attestation's expiry (whole seconds): from then on the source gets no new credit. */
  validUntilMs: number
}

/** A funded job to create: the job machine's input but its creation time, which the command's `nowMs` gives. */
export type CreateJobInput = Omit<JobInput, 'createdAtMs'>

/** A verified CollateralPosted of a job: who posted it (the event's borrower), how much, and its transaction. */
export interface CollateralFact {
  borrower: Address
  amountAtomic: bigint
  proof: TxProof
}

export interface PostCollateralInput extends CollateralFact {
  jobId: string
}

export interface CreditRequestInput {
  agent: Address
  network: string
  asset: string
  productType: string
  amountAtomic: bigint
  purpose: string
  supplier: string
  supplierDomain: string
  /** Must be one of the directory's addresses of supplierDomain on `network`; absent: the first of them. */
  supplierAddress?: Address | undefined
  repaymentSource: string
  maximumFeeAtomic: bigint
}

export interface DeclineReason {
  code:
    | 'borrower_suspended' | 'source_not_owned' | 'client_is_borrower' | 'source_closed' | 'source_attestation_expired' | 'job_past_due' | 'job_due_too_soon' | 'asset_mismatch' | 'over_capacity'
    | 'supplier_unknown' | 'supplier_address_unverified' | 'supplier_not_allowed'
  message: string
}

export interface UnderwritingDecision {
  decision: 'approved' | 'declined'
  reasons: DeclineReason[]
  capacityAtomic: bigint
  coverageBps: number
  /** The band the request would get, reported also when declined. */
  riskBand: RiskBand
  durationSeconds: number
  offer: OfferView | null
}

export interface MatchOutcome {
  offer: OfferView
  /** The live lease granted, or null when no eligible lender was found (the offer keeps waiting). */
  lease: LeaseView | null
  /** Leases that expired at once because the lender's wallet could not pay. */
  refusedLeases: LeaseView[]
  /** Set when the offer expired instead: it ran out of leases (leasesPerOfferMax) or was stale. */
  offerExpired: boolean
  /**
   * Why no lease was made: set on `POST /credit/match`'s answer when lease is null (matching.ts whyNoLease), never on
   * a leased one nor in dispatch's matches (nothing is computed on those paths).
   */
  noLease?: NoLease
}

/** Why a match made no lease (matching.ts whyNoLease); the codes are stable. */
export type NoLeaseReason =
  | 'offer_expired' | 'no_funded_lender' | 'scan_bound_reached' | 'lenders_busy' | 'fee_above_maximum'
  | 'risk_band_not_accepted' | 'duration_not_offered' | 'amount_above_liquidity' | 'lenders_excluded'

/** The book's first lenders a match looked at, counted by why each was passed over (each counted once, first rule it failed). */
export interface LendersPassedOver {
  feeAboveMaximum: number
  riskBandNotAccepted: number
  durationNotOffered: number
  amountAboveLiquidity: number
  excluded: number
  busy: number
}

export interface NoLease {
  reason: NoLeaseReason
  detail: string
  /** Lenders in the book of the offer's network and asset (those whose session wallet holds the least advance). */
  lendersInBook: number
  /** How many of them, cheapest first, were looked at (at most lendersScannedPerMatchMax). */
  lendersScanned: number
  passedOver: LendersPassedOver
}

export interface DispatchOutcome {
  expiredLeases: LeaseView[]
  expiredOffers: OfferView[]
  matches: MatchOutcome[]
  /** Passport events of the suspensions this dispatch lifted. */
  suspensionsLifted: SuspensionLiftedEvent[]
}

/**
 * The dispatch ticker's outcome (Engine.tick): the same steps as DispatchOutcome's, counted instead of viewed, since
 * nobody reads the ticker's views; the lifted suspensions in full (each is a passport event the service writes).
 */
export interface DispatchTally {
  expiredLeases: number
  expiredOffers: number
  matches: number
  suspensionsLifted: SuspensionLiftedEvent[]
}

/** The way back from a failed job (issue 10, hole 3): a passport event, like the suspension itself. */
export interface SuspensionLiftedEvent {
  type: 'suspension_lifted'
  borrower: Address
  suspendedAtMs: number
  atMs: number
  borrowerReputationBps: number
}

export interface RepaymentReceipt {
  advanceId: string
  lender: Address
  network: string
  asset: string
  principalAtomic: bigint
  feeAtomic: bigint
  /** This payment's amounts (a repayment of any amount; the contract never takes more than is owed). */
  lenderAmountAtomic: bigint
  reserveAmountAtomic: bigint
  txHash: `0x${string}`
  /** The Repaid event's log index; null for a job settlement. */
  logIndex: number | null
  /** What the advance still owes after this payment: to the lender, and the reserve's share. */
  lenderOwedAtomic: bigint
  reserveOwedAtomic: bigint
  /** Whether nothing is owed any more (the advance is repaid). */
  repaid: boolean
}

/** What a lender's supplier payment must show to fund an offer: the terms of the live lease it holds. */
export interface SupplierPaymentTerms {
  offerId: string
  leaseId: string
  network: string
  asset: string
  payer: Address
  supplierAddress: Address
  amountAtomic: bigint
}

/** What an advance still owes now (after any partial repayments): what repaying it in full pays. */
export interface RepaymentPlan {
  advanceId: string
  network: string
  asset: string
  lender: Address
  /** Still owed to the lender. */
  amountAtomic: bigint
  /** The reserve's share still owed. */
  reserveAmountAtomic: bigint
}

export interface JobSettlementPlan {
  jobId: string
  network: string
  asset: string
  borrower: Address
  advances: { advanceId: string; lender: Address; amountAtomic: bigint; reserveAmountAtomic: bigint }[]
  toLendersAtomic: bigint
  toReserveAtomic: bigint
  toBorrowerAtomic: bigint
}

export interface JobSettlementReceipt extends JobSettlementPlan {
  txHash: `0x${string}`
  receipts: RepaymentReceipt[]
}

export type RecoveryStepName = 'source_revenue' | 'collateral' | 'backing_liquidation' | 'insurance_reserve' | 'shortfall'

export interface RecoveryStep {
  step: RecoveryStepName
  amountAtomic: bigint
}

export interface LiquidationPlan {
  advanceId: string
  jobId: string | null
  sourceId: string | null
  lender: Address
  borrower: Address
  network: string
  asset: string
  owedAtomic: bigint
  /** All five steps in the spec's order; the last is the shortfall. */
  steps: RecoveryStep[]
  recoveredAtomic: bigint
  shortfallAtomic: bigint
  /** The step at which what is owed was covered, or 'shortfall'. */
  stoppedAt: RecoveryStepName
}

export interface LiquidationInput {
  advanceId: string
  network: string
  txHash: `0x${string}`
  /** When given, the executed amounts: they must equal the engine's plan (else plan_changed). */
  fromRevenueAtomic?: bigint
  fromCollateralAtomic?: bigint
  fromReserveAtomic?: bigint
  /**
   * The amounts the contract's Liquidated event reports (CreditFacility v2 computes the recovery itself): recorded as
   * they are, instead of the engine's plan, which only predicts them. Their sum must be what the advance owes.
   */
  executed?: { fromCollateralAtomic: bigint; fromBackingAtomic: bigint; fromReserveAtomic: bigint; shortfallAtomic: bigint }
}

export interface LiquidationReceipt extends LiquidationPlan {
  txHash: `0x${string}`
  borrowerReputationBps: number
}

export interface PassportEvent {
  type: 'job_failed'
  jobId: string
  borrower: Address
  client: Address
  reason: JobFailureReason
  /** keccak256 of the UTF-8 note the client gave, or null: the note's text is never published. */
  noteHash: `0x${string}` | null
  atMs: number
  borrowerSuspended: true
  borrowerReputationBps: number
  defaultedAdvanceIds: string[]
  outstandingPrincipalAtomic: bigint
  /** The borrower's offers withdrawn: declined, or `closing` when leased (they end declined, or funded if paid in time). */
  declinedOfferIds: string[]
}

export interface CollateralPosition {
  jobId: string
  borrower: Address
  network: string
  asset: string
  amountAtomic: bigint
  totalCollateralAtomic: bigint
  proof: TxProof
}

export interface CreditState {
  counts: {
    lenders: number
    activeLenders: number
    sources: number
    borrowers: number
    suspendedBorrowers: number
    liveJobs: number
    liveOffers: number
    liveLeases: number
    liveAdvances: number
  }
  totals: {
    registeredAtomic: bigint
    /** What the lenders' session wallets can pay now, within their policies (the sum of their views' availableAtomic). */
    availableAtomic: bigint
    /** What the lenders' policies alone would lend (their records' availableAtomic). */
    policyAvailableAtomic: bigint
    reservedAtomic: bigint
    deployedAtomic: bigint
    feesEarnedAtomic: bigint
    lossesAtomic: bigint
    withdrawnAtomic: bigint
  }
  reserves: ReserveRecord[]
}
