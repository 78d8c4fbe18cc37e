// The domain's wire schemas: request bodies (spec section 2 plus the shapes DESIGN decides) and response bodies.
// Response schemas mirror the engine's views through `Wire<T>` (src/api/wire.ts): the route handlers return
// `toWire(view)` typed against these, so a field added on one side and not the other fails the type check, and the
// tests validate every response they see against this document.
import Type from 'typebox'
import { ADVANCE_STATES, JOB_FAILURE_REASONS, JOB_STATES, LEASE_END_REASONS, LEASE_STATES, OFFER_END_REASONS, OFFER_STATES, REPAYMENTS_LISTED_MAX } from '../../machines/index.ts'
import { ID_PATTERNS, FORMAT_PATTERNS } from '../engine/ids.ts'
import { Address, AssetSymbol, Atomic, atomicAtMost, atomicDescribed, Bps, Bytes32, IsoTime, IsoTimeInput, JobId, NetworkSlug, Seconds, StrictObject } from './common.ts'
import { ChainSteps, LeaseAuthorization, UnsignedTransaction, WalletAction } from './schemas-chain.ts'
import { HEALTH_DIFFERENCES_MAX, NetworkReconciliationWire } from './reconciliation.ts'
import { OPERATOR_REPAIR_AGE_DEGRADED_MS, OPERATOR_REPAIR_BACKOFF_MAX_MS } from '../service/operator-repair-bounds.ts'

/**
 * 2^128-1: the most liquidity one lender may register. Far above any token supply, and it keeps every total the
 * service adds up (liquidity over all lenders) within the 2^256-1 of the Atomic schema.
 */
export const LIQUIDITY_ATOMIC_MAX = (1n << 128n) - 1n

// Re-exported: their schemas live with the API's shared shapes (common.ts) and what agents sign (schemas-chain.ts).
export { AssetSymbol, NetworkSlug } from './common.ts'
export { ChainSteps, LeaseAuthorization, UnsignedTransaction, WalletAction } from './schemas-chain.ts'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const RiskBand = Type.Union([Type.Literal('A'), Type.Literal('B'), Type.Literal('C')], { description: 'Risk band: A (best), B, C.' })
export const OfferId = Type.String({ pattern: ID_PATTERNS.offer, description: 'Offer identifier minted by the service.' })
export const AdvanceId = Type.String({ pattern: ID_PATTERNS.advance, description: 'Advance identifier minted by the service.' })
export const SourceId = Type.String({ pattern: ID_PATTERNS.source, description: 'Backing source identifier chosen by the caller.' })
const Label = (description: string, maxLength = 200) => Type.String({ minLength: 1, maxLength, description })
const Domain = Type.String({ pattern: '^(?=.{1,253}$)([A-Za-z0-9-]{1,63}\\.)*[A-Za-z0-9-]{1,63}$', description: 'Domain name.' })

// ---------------------------------------------------------------------------------------------------- requests

const SupplierAddresses = Type.Record(
  NetworkSlug,
  Type.Array(Address, { minItems: 1, maxItems: 16 }),
  { minProperties: 1, maxProperties: 16, additionalProperties: false, description: 'Payout addresses per network slug; the first is the default when a credit request names none.' },
)

/** PUT /suppliers/{domain}: the entry an operator sets (the domain is the path's). */
export const SupplierPut = StrictObject(
  { name: Label('Supplier name.'), addresses: SupplierAddresses },
  { description: 'A supplier directory entry: its name and its payout addresses per network. Never a lender, a session key or the credit contract.' },
)

export const SupplierDomain = { ...Domain, description: 'Supplier domain (case-insensitive; stored in lower case).' }

/** An ERC-8004 agent: its Identity Registry on a configured network and its token id. */
export const Erc8004Agent = StrictObject(
  {
    network: NetworkSlug,
    registry: Address,
    agentId: atomicAtMost(2n ** 256n - 1n, 'The agent\'s id (ERC-721 token id, a uint256) as a decimal string.', '2^256-1'),
  },
  { description: 'An ERC-8004 agent; registry is the network\'s identityRegistry in the catalog.' },
)

export const LenderRegistration = StrictObject(
  {
    availableLiquidityAtomic: atomicAtMost(LIQUIDITY_ATOMIC_MAX, 'Liquidity the lender offers, in the smallest unit of the asset, as a decimal string, at most 2^128-1.', '2^128-1'),
    asset: AssetSymbol,
    assets: Type.Optional(Type.Record(NetworkSlug, AssetSymbol, { description: 'Asset per network slug; networks not named use `asset`.', additionalProperties: false })),
    networks: Type.Array(NetworkSlug, { minItems: 1, maxItems: 16, uniqueItems: true }),
    minFeeBps: Bps,
    maxDurationSeconds: Type.Integer({ minimum: 1, maximum: 10 * 365 * 24 * 3600, description: 'Longest advance the lender funds, seconds.' }),
    acceptedRiskBands: Type.Array(RiskBand, { minItems: 1, maxItems: 3, uniqueItems: true }),
    agent: Type.Optional(Erc8004Agent),
  },
  { description: 'Lender policy (spec 2.1). The session wallet is the signed-in address. With `agent`, the signed-in wallet must be that ERC-8004 agent\'s wallet, owner or approved operator (read on chain), and the initial reputation comes from its trusted feedback.' },
)

export const BackingSourceRegistration = StrictObject(
  {
    sourceId: SourceId,
    productType: Type.Union([Type.Literal('asset-backed'), Type.Literal('subscription'), Type.Literal('earnings')]),
    agent: Address,
    valueAtomic: Atomic,
    liquidationValueAtomic: Atomic,
    advanceRateBps: Bps,
    evidenceId: Type.String({
      pattern: '^0x[0-9a-fA-F]{130}$',
      description: 'EIP-712 signature of a configured attester over the source, validUntil and the service it is for (domain "agent-credit backing attestation" v3, type BackingSource; service is the catalog\'s attestation.service, the host this deployment is reached at; see the catalog). One signed for another deployment, or in version 2 (no service), is attestation_invalid.',
    }),
    validUntil: Type.String({
      format: 'date-time',
      description: 'Expiry of the attestation (signed as unix seconds, uint64 validUntil; fractions of a second are dropped). Must be in the future at registration; from a lease TTL (leaseTtlSeconds) before it on, the source gets no new credit (source_attestation_expired: a lease granted then would be payable after it).',
    }),
  },
  { description: 'Verified backing source (spec 2.2).' },
)

export const CreditRequest = StrictObject(
  {
    agent: Address,
    network: NetworkSlug,
    asset: AssetSymbol,
    productType: Label('Product type, e.g. asset-backed or job.', 64),
    amountAtomic: Atomic,
    purpose: Label('Purpose of the spend (free label).'),
    supplier: Label('Supplier name.'),
    supplierDomain: Domain,
    supplierAddress: Type.Optional({
      ...Address,
      description: "One of supplierDomain's addresses on the network in the supplier directory (GET /suppliers); absent: the domain's first address there.",
    }),
    repaymentSource: Type.String({ minLength: 1, maxLength: 128, description: 'A jobId or a backing sourceId of the agent.' }),
    maximumFeeAtomic: Atomic,
  },
  { description: 'Credit request (spec 2.3). supplierDomain must be in the supplier directory (GET /suppliers) and supplierAddress, when given, one of its addresses on the network; otherwise the request is declined (supplier_unknown, supplier_address_unverified, supplier_not_allowed).' },
)

export const MatchRequest = StrictObject({ offerId: OfferId }, { description: 'Match request (spec 2.6).' })

export const SupplierPaymentReport = StrictObject(
  { lender: Address, supplierPaymentId: Bytes32 },
  { description: 'Supplier-payment report (spec 2.5): the hash of the paySupplier transaction.' },
)

export const JobCreation = StrictObject(
  {
    jobId: JobId,
    network: NetworkSlug,
    asset: AssetSymbol,
    agent: Address,
    receivableAtomic: Atomic,
    dueAt: IsoTimeInput,
    fundingTxHash: Bytes32,
    borrowerConsent: Type.Optional(
      Type.String({
        pattern: '^0x([0-9a-fA-F]{2})+$',
        maxLength: 2 + 2 * 8192,
        description: 'Required when the job\'s client (not the borrower) registers it: the borrower\'s EIP-712 signature (domain "agent-credit borrower consent" v2 with the job\'s network\'s chainId and its creditContract as verifyingContract, type BorrowerConsent over jobId, network, asset, receivableAtomic, client, dueAt in unix seconds; see the catalog). A contract-wallet borrower signs as its wallet verifies (ERC-1271 isValidSignature, or ERC-6492 before deployment), checked on the job\'s network.',
      }),
    ),
  },
  { description: 'A job funded on chain: fundingTxHash is the client\'s fundJob transaction (GET /credit/jobs/{jobId}/funding-transactions).' },
)

export const CollateralPost = StrictObject(
  { amountAtomic: Atomic, txHash: Bytes32 },
  { description: 'Collateral posted on chain: txHash is the borrower\'s postCollateral transaction (GET /credit/jobs/{jobId}/collateral-transactions).' },
)

export const EmptyBody = StrictObject({}, { description: 'An empty JSON object.' })
export const RepaymentProof = StrictObject({ txHash: Bytes32 }, { description: 'A repay transaction of any amount on the credit contract (GET /credit/advances/{advanceId}/repay-transactions).' })
/** A failure's reason: a code from the published list, never free text (it is signed into the borrower's public passport). */
const FailureReason = Type.Enum([...JOB_FAILURE_REASONS], {
  description: 'Why the job failed: not_delivered, late, defective, cancelled or other. escrow_reclaimed (a job its client or its borrower reclaimed on chain: reclaimJob) and ' +
    'failed_on_chain (a failJob mined that no request of this service sent) are reserved to the service.',
})
const NoteHash = { ...Bytes32, description: 'keccak256 of the UTF-8 note the client gave with the failure; the note\'s text is never stored nor published.' }
export const JobFailure = StrictObject({
  reason: FailureReason,
  note: Type.Optional(Label('Free text for the job\'s parties (at most 500 characters). Only its keccak256 (noteHash) is kept and signed into the passport: ' +
    'the text itself is neither stored nor published, so whoever holds it can show it matches.', 500)),
})

// ---------------------------------------------------------------------------------------------------- responses

export const TxProof = StrictObject({ network: NetworkSlug, txHash: Bytes32, logIndex: Type.Integer({ minimum: 0 }) })
const ExecutedTx = StrictObject({ network: NetworkSlug, txHash: Bytes32 })
const SourceRef = StrictObject({ kind: Type.Union([Type.Literal('job'), Type.Literal('backing')]), id: Type.String() })
const NullableTime = Nullable(IsoTime)

export const Job = StrictObject({
  jobId: JobId,
  state: Type.Enum([...JOB_STATES]),
  client: Address,
  borrower: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  receivableAtomic: Atomic,
  dueAt: IsoTime,
  createdAt: IsoTime,
  funding: TxProof,
  jobKey: {
    ...Bytes32,
    description:
      "The job's key on its network's credit contract, the one its funding was made under (postCollateral and reclaimJob name the job by it): the catalog's contracts.keys rule on the job's network, or its legacy rule for a job funded under that.",
  },
  collateralAtomic: Atomic,
  committedAtomic: Atomic,
  advanceIds: Type.Array(AdvanceId),
  revenueUsedAtomic: Atomic,
  collateralUsedAtomic: Atomic,
  settlement: Nullable(ExecutedTx),
  failureReason: Nullable(FailureReason),
  failureNoteHash: Nullable(NoteHash),
  endedAt: NullableTime,
})

export const Offer = StrictObject({
  offerId: OfferId,
  offerKey: { ...Bytes32, description: "The offer's key on the credit contract (the advance's key once paid); salted, not derivable from offerId." },
  state: Type.Enum([...OFFER_STATES]),
  borrower: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  productType: Type.String(),
  amountAtomic: Atomic,
  maximumFeeAtomic: Atomic,
  purpose: Type.String(),
  supplier: Type.String(),
  supplierDomain: Type.String(),
  supplierAddress: Address,
  source: SourceRef,
  riskBand: RiskBand,
  durationSeconds: Seconds,
  dueAt: IsoTime,
  createdAt: IsoTime,
  expiresAt: Type.String({ format: 'date-time', description: 'The offer\'s TTL deadline on its network\'s chain time: the block time the chain follower had observed when the offer was created, plus offerTtlSeconds (the service clock before the network\'s first observation), or less: never later than the last instant a whole lease still fits before its source stops taking credit (its job\'s due time less the minimum credit period, or its backing source\'s attestation validUntil, less leaseTtlSeconds). It expires once the chain is observed at or past it, so an outage of the chain pauses it.' }),
  leaseIds: Type.Array(Type.String()),
  excludedLenders: Type.Array(Address),
  currentLeaseId: Nullable(Type.String()),
  advanceId: Nullable(AdvanceId),
  endReason: Nullable(Type.Enum([...OFFER_END_REASONS])),
  endedAt: NullableTime,
})

export const Lease = StrictObject({
  leaseId: Type.String(),
  state: Type.Enum([...LEASE_STATES]),
  offerId: OfferId,
  lender: Address,
  payer: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  amountAtomic: Atomic,
  feeAtomic: Atomic,
  supplierAddress: Address,
  createdAt: IsoTime,
  expiresAt: Type.String({ format: 'date-time', description: 'The paySupplier deadline (the authorization\'s, in whole seconds) on the network\'s chain time: the later of the service clock and the observed block time when the lease was granted, plus leaseTtlSeconds (the lender always gets the whole TTL), and never later than its offer\'s credit end (its job\'s due time less the minimum credit period, its backing source\'s attestation validUntil): a match is refused (offer_credit_ending) when a whole lease would end after it. The lease is over once a block past it is observed with no SupplierPaid.' }),
  endReason: Nullable(Type.Enum([...LEASE_END_REASONS])),
  endedAt: NullableTime,
  payment: Nullable(TxProof),
})

const RepaymentRecord = StrictObject({
  kind: Type.Union([Type.Literal('repaid'), Type.Literal('job_settlement')]),
  network: NetworkSlug,
  txHash: Bytes32,
  logIndex: Nullable(Type.Integer({ minimum: 0 })),
  payer: Nullable(Address),
  lenderAmountAtomic: Atomic,
  reserveAmountAtomic: Atomic,
  lenderOwedAfterAtomic: { ...Atomic, description: 'Still owed to the lender after this payment (the Repaid event\'s lenderOwed).' },
  reserveOwedAfterAtomic: { ...Atomic, description: 'The reserve\'s share still owed after this payment.' },
})

const RecoveryRecord = StrictObject({
  network: NetworkSlug,
  txHash: Bytes32,
  owedAtomic: Atomic,
  fromRevenueAtomic: Atomic,
  fromCollateralAtomic: Atomic,
  fromBackingAtomic: Atomic,
  fromReserveAtomic: Atomic,
  shortfallAtomic: Atomic,
})

export const Advance = StrictObject({
  advanceId: AdvanceId,
  advanceKey: { ...Bytes32, description: "The advance's key on the credit contract (its offer's offerKey), which repay names; see the catalog's contracts.keys." },
  state: Type.Enum([...ADVANCE_STATES], {
    description: 'repaid and liquidated are final; shortfall: liquidated with something still owed (the shortfall, and what the insurance reserve paid), still taking repay (GET /credit/advances/{advanceId}/repay-transactions) until it is repaid.',
  }),
  offerId: OfferId,
  leaseId: Type.String(),
  lender: Address,
  payer: Address,
  borrower: Address,
  source: SourceRef,
  network: NetworkSlug,
  asset: AssetSymbol,
  principalAtomic: Atomic,
  feeAtomic: Atomic,
  insuranceAtomic: Atomic,
  lenderOwedAtomic: { ...Atomic, description: 'Still owed to the lender: principal + fee - insuranceAtomic, less what repayments paid it.' },
  reserveOwedAtomic: { ...Atomic, description: "The insurance reserve's share still owed (paid once the lender's part is)." },
  supplierAddress: Address,
  payment: TxProof,
  supplierPaymentHeld: Type.Optional(Type.Literal(true, {
    description: 'Present when the token refused the supplier at paySupplier (e.g. a blacklisted address): the supplier was not paid; the principal is held in the credit contract for it (event PaymentHeld in the payment transaction), and any wallet may send claimHeld(asset, supplierAddress) once the token accepts the supplier (GET /credit/held-payments/{supplierAddress} shows the amount still waiting and the unsigned claim). The advance is owed all the same: the borrower chose the supplier.',
  })),
  fundedAt: IsoTime,
  dueAt: IsoTime,
  defaultReason: Nullable(Type.String()),
  defaultedAt: NullableTime,
  repayments: Type.Array(RepaymentRecord, { maxItems: REPAYMENTS_LISTED_MAX, description: `The latest payments counted (at most ${REPAYMENTS_LISTED_MAX}), in chain order; the advance is repaid when nothing is owed.` }),
  earlierRepayments: Type.Optional(StrictObject({
    count: Type.Integer({ minimum: 1 }),
    lenderAmountAtomic: Atomic,
    reserveAmountAtomic: Atomic,
  }, { description: 'The repayments counted before those listed, summed: present once an advance has had more than the list holds.' })),
  recovery: Nullable(RecoveryRecord),
  endedAt: NullableTime,
})

/** What a lender has lent and how it behaved: part of its profile and of its wallet view. */
const LenderActivityFields = {
  availableAtomic: { ...Atomic, description: 'What the service can lend now: min(policyAvailableAtomic, what the session wallet can pay (min(balance, allowance to the credit contract)) beyond its live leases), summed over the lender\'s networks.' },
  policyAvailableAtomic: { ...Atomic, description: 'What the lender\'s policy alone would lend: registered + fees earned - losses - withdrawn, less what is reserved or deployed.' },
  reservedAtomic: Atomic,
  deployedAtomic: Atomic,
  feesEarnedAtomic: Atomic,
  lossesAtomic: Atomic,
  withdrawnAtomic: { ...Atomic, description: 'Capital the lender took out of lending (POST /lenders/{address}/withdraw).' },
  withdrawalPendingAtomic: { ...Atomic, description: 'Withdrawn but still in live leases, open advances or losses (a shortfall advance may still be repaid): it leaves as they come back, and is never lent again.' },
  leasesGranted: Type.Integer({ minimum: 0 }),
  leasesPaid: Type.Integer({ minimum: 0 }),
  leasesExpired: Type.Integer({ minimum: 0 }),
  advancesRepaid: Type.Integer({ minimum: 0 }),
  advancesDefaulted: Type.Integer({ minimum: 0 }),
}

export const LenderProfile = StrictObject({
  address: Address,
  sessionAddress: Address,
  asset: AssetSymbol,
  assets: Type.Record(NetworkSlug, AssetSymbol, { additionalProperties: false }),
  networks: Type.Array(NetworkSlug),
  askBps: Bps,
  maxDurationSeconds: Seconds,
  acceptedRiskBands: Type.Array(RiskBand),
  registeredAtomic: Atomic,
  ...LenderActivityFields,
  reputationBps: Bps,
  reliabilityBps: Bps,
  recentLeaseOutcomes: Type.String({ pattern: '^[PM]*$', maxLength: 1000, description: 'The last lease outcomes, oldest first (at most lenderUptimeWindowLeases, 20): P paid in time, M expired unpaid.' }),
  uptimeBps: Type.Union([Bps, Type.Null()], { description: 'Share of recentLeaseOutcomes paid in time (bps); null before the first outcome.' }),
  registrationSeq: Type.Integer({ minimum: 0 }),
  registeredAt: IsoTime,
})

export const SpendPolicy = StrictObject({
  assets: Type.Record(NetworkSlug, AssetSymbol, { additionalProperties: false }),
  perPaymentCapAtomic: Atomic,
  totalCapAtomic: Atomic,
  allowedContracts: Type.Record(NetworkSlug, Address, { additionalProperties: false }),
  expiresAt: IsoTime,
})

export const LenderRegistrationResult = StrictObject({
  lender: LenderProfile,
  sessionKey: StrictObject({
    address: Address,
    privateKey: Nullable(Bytes32),
    note: Type.String(),
  }),
  spendPolicy: SpendPolicy,
  fundingAddresses: Type.Array(StrictObject({ network: NetworkSlug, asset: AssetSymbol, token: Address, address: Address })),
  setupTransactions: Type.Array(UnsignedTransaction),
})

export const BackingSource = StrictObject({
  sourceId: SourceId,
  productType: Type.String(),
  agent: Address,
  valueAtomic: Atomic,
  liquidationValueAtomic: Atomic,
  advanceRateBps: Bps,
  evidenceId: Type.String(),
  validUntil: IsoTime,
  committedAtomic: Atomic,
  backingUsedAtomic: Atomic,
  registrationSeq: Type.Integer({ minimum: 0 }),
  registeredAt: IsoTime,
})

export const CollateralPosition = StrictObject({
  jobId: JobId,
  borrower: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  amountAtomic: Atomic,
  totalCollateralAtomic: Atomic,
  proof: TxProof,
})

export const Supplier = StrictObject(
  {
    domain: Type.String(),
    name: Type.String(),
    addresses: SupplierAddresses,
    origin: Type.Union([Type.Literal('config'), Type.Literal('operator')], { description: 'Who set the entry last: the configuration (seeded at start-up) or an operator.' }),
    updatedAt: IsoTime,
    removedAt: Nullable(IsoTime),
  },
  { description: 'A supplier directory entry: a credit request naming domain may pay only one of its addresses on the request\'s network.' },
)

export const UnderwritingDecision = StrictObject({
  decision: Type.Union([Type.Literal('approved'), Type.Literal('declined')]),
  reasons: Type.Array(
    StrictObject({
      code: Type.Enum([
        'borrower_suspended', 'source_not_owned', 'client_is_borrower', 'source_closed', 'source_attestation_expired', 'job_past_due', 'job_due_too_soon', 'asset_mismatch',
        'over_capacity', 'supplier_unknown', 'supplier_address_unverified', 'supplier_not_allowed',
      ]),
      message: Type.String(),
    }),
  ),
  capacityAtomic: Atomic,
  coverageBps: Type.Integer({ minimum: 0, description: 'What secures the amount, in bps of it: the source\'s value (a job: receivable and collateral left; only the collateral when what it leaves unsecured of the amount exceeds the principal the borrower has repaid on the asset, less what its advances and live offers on jobs owe and ask), read for the risk band.' }),
  riskBand: RiskBand,
  durationSeconds: Seconds,
  offer: Nullable(Offer),
})

const Lenders = (description: string) => Type.Integer({ minimum: 0, description })

export const NoLease = StrictObject(
  {
    reason: Type.Enum(
      ['offer_expired', 'no_funded_lender', 'scan_bound_reached', 'lenders_busy', 'fee_above_maximum', 'risk_band_not_accepted', 'duration_not_offered', 'amount_above_liquidity', 'lenders_excluded'],
      {
        description:
          'offer_expired: the offer expired (past its expiresAt or out of leases), request credit again. no_funded_lender: no lender is in the book of the offer\'s network and asset (none registered for it, or none whose session wallet holds the least advance). ' +
          'scan_bound_reached: the match looked at lendersScannedPerMatchMax lenders without one that takes the offer; the next attempt (a match or dispatch) resumes after them. ' +
          'lenders_busy: a lender takes the terms but is busy now (its wallet\'s funds promised to its live leases, its allowance of live leases held, or its probation not over). ' +
          'Otherwise the rule that passed over the most lenders looked at: fee_above_maximum (their ask prices the fee above maximumFeeAtomic), risk_band_not_accepted, duration_not_offered (their maxDurationSeconds is shorter than the offer\'s durationSeconds), ' +
          'amount_above_liquidity (less available liquidity than amountAtomic), lenders_excluded (the borrower\'s or the job client\'s own wallets, the supplier, or lenders that left a lease of the offer unpaid). ' +
          'Except offer_expired, the offer keeps waiting and is leased in the background once a lender takes it.',
      },
    ),
    detail: Type.String({ description: 'The reason in words, with what to do.' }),
    lendersInBook: Lenders('Lenders in the book of the offer\'s network and asset (those whose session wallet holds the least advance).'),
    lendersScanned: Lenders('How many of them were looked at, cheapest ask first: at most lendersScannedPerMatchMax (0 when the offer expired).'),
    passedOver: StrictObject(
      {
        feeAboveMaximum: Lenders('Ask prices the fee above maximumFeeAtomic.'),
        riskBandNotAccepted: Lenders('Does not accept the offer\'s riskBand.'),
        durationNotOffered: Lenders('maxDurationSeconds shorter than the offer\'s durationSeconds.'),
        amountAboveLiquidity: Lenders('Less available liquidity than amountAtomic.'),
        excluded: Lenders('May not lend on this offer (a party to it, or left a lease of it unpaid).'),
        busy: Lenders('Takes the terms but is busy now.'),
      },
      { description: 'The lenders looked at, each counted by the first of these rules that passed it over.' },
    ),
  },
  { description: 'Why no lease was made: present on POST /credit/match\'s answer when lease is null, absent when a lease was made and in dispatch\'s matches.' },
)

export const MatchOutcome = StrictObject({
  offer: Offer,
  lease: Nullable(Lease),
  refusedLeases: Type.Array(Lease),
  offerExpired: Type.Boolean(),
  noLease: Type.Optional(NoLease),
})

export const SuspensionLiftedEvent = StrictObject(
  {
    type: Type.Literal('suspension_lifted'),
    borrower: Address,
    suspendedAt: IsoTime,
    at: IsoTime,
    borrowerReputationBps: Bps,
  },
  { description: 'Passport event: the borrower owes nothing on a defaulted advance and borrowerSuspensionMinSeconds have passed since its suspension; it may request credit again.' },
)

export const DispatchOutcome = StrictObject({
  expiredLeases: Type.Array(Lease),
  expiredOffers: Type.Array(Offer),
  matches: Type.Array(MatchOutcome),
  suspensionsLifted: Type.Array(SuspensionLiftedEvent),
})

const RepaymentReceiptFields = {
  advanceId: AdvanceId,
  lender: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  principalAtomic: Atomic,
  feeAtomic: Atomic,
  lenderAmountAtomic: { ...Atomic, description: 'What this payment paid the lender.' },
  reserveAmountAtomic: { ...Atomic, description: "What this payment paid the insurance reserve (only once the lender's part is paid)." },
  txHash: Bytes32,
  logIndex: Nullable(Type.Integer({ minimum: 0 })),
  lenderOwedAtomic: { ...Atomic, description: 'Still owed to the lender after this payment.' },
  reserveOwedAtomic: { ...Atomic, description: "The reserve's share still owed after this payment." },
  repaid: Type.Boolean({ description: 'Nothing is owed any more: the advance is repaid.' }),
}
export const RepaymentReceipt = StrictObject(RepaymentReceiptFields)

export const JobSettlementReceipt = StrictObject({
  jobId: JobId,
  network: NetworkSlug,
  asset: AssetSymbol,
  borrower: Address,
  advances: Type.Array(StrictObject({ advanceId: AdvanceId, lender: Address, amountAtomic: Atomic, reserveAmountAtomic: Atomic })),
  toLendersAtomic: Atomic,
  toReserveAtomic: Atomic,
  toBorrowerAtomic: Atomic,
  txHash: Bytes32,
  receipts: Type.Array(RepaymentReceipt),
})

const RecoveryStepName = Type.Enum(['source_revenue', 'collateral', 'backing_liquidation', 'insurance_reserve', 'shortfall'])

export const LiquidationReceipt = StrictObject({
  advanceId: AdvanceId,
  jobId: Nullable(JobId),
  sourceId: Nullable(SourceId),
  lender: Address,
  borrower: Address,
  network: NetworkSlug,
  asset: AssetSymbol,
  owedAtomic: Atomic,
  steps: Type.Array(StrictObject({ step: RecoveryStepName, amountAtomic: Atomic }), { description: 'The five recovery steps in the spec\'s order.' }),
  recoveredAtomic: Atomic,
  shortfallAtomic: Atomic,
  stoppedAt: RecoveryStepName,
  txHash: Bytes32,
  borrowerReputationBps: Bps,
})

export const SignedPassportEvent = StrictObject(
  {
    agent: Address,
    sequence: Type.Integer({ minimum: 1, description: 'Per agent: 1, 2, ...' }),
    prevHash: { ...Bytes32, description: 'The hash of the agent\'s previous event (zero for sequence 1).' },
    kind: Type.Union([Type.Literal('job_failed'), Type.Literal('advance_repaid'), Type.Literal('advance_defaulted'), Type.Literal('liquidated_with_shortfall'), Type.Literal('suspension_lifted')], { description: 'What happened (the catalog\'s passport.kinds).' }),
    issuedAtMs: Type.Integer({ minimum: 0, description: 'When the service recorded the event (unix ms), signed as uint64.' }),
    details: Type.String({ description: 'Canonical JSON (sorted keys, amounts as decimal strings) of amounts and references: job, advance, transaction hashes.' }),
    hash: { ...Bytes32, description: 'hashTypedData of the event under the catalog\'s passport domain: the next event\'s prevHash.' },
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: 'The issuer\'s EIP-712 signature (65 bytes).' }),
  },
  { description: 'A passport event as signed: the message of the catalog\'s PassportEvent type plus its hash and signature.' },
)

export const PassportEvent = StrictObject({
  type: Type.Literal('job_failed'),
  jobId: JobId,
  borrower: Address,
  client: Address,
  reason: FailureReason,
  noteHash: Nullable(NoteHash),
  at: IsoTime,
  borrowerSuspended: Type.Literal(true),
  borrowerReputationBps: Bps,
  defaultedAdvanceIds: Type.Array(AdvanceId),
  outstandingPrincipalAtomic: Atomic,
  declinedOfferIds: Type.Array(OfferId, { description: 'The borrower\'s offers withdrawn: declined at once, or `closing` when leased (a lease on another job or a backing source stays payable until its deadline on chain time, one on the failed job only by a payment mined before the failJob; the offer then ends declined, or funded if paid).' }),
  signed: { ...SignedPassportEvent, description: 'This event as the borrower\'s passport records it: numbered, chained and signed by the catalog\'s passport issuer, so anyone can verify it without trusting this service (GET /passport/{address} serves the same).' },
})

export const ReserveBalance = StrictObject({
  network: NetworkSlug,
  asset: AssetSymbol,
  balanceAtomic: Atomic,
  fundedAtomic: Atomic,
  paidOutAtomic: Atomic,
})

export const CreditState = StrictObject({
  counts: StrictObject({
    lenders: Type.Integer({ minimum: 0 }),
    activeLenders: Type.Integer({ minimum: 0 }),
    sources: Type.Integer({ minimum: 0 }),
    borrowers: Type.Integer({ minimum: 0 }),
    suspendedBorrowers: Type.Integer({ minimum: 0 }),
    liveJobs: Type.Integer({ minimum: 0 }),
    liveOffers: Type.Integer({ minimum: 0 }),
    liveLeases: Type.Integer({ minimum: 0 }),
    liveAdvances: Type.Integer({ minimum: 0 }),
  }),
  totals: StrictObject({
    registeredAtomic: Atomic,
    availableAtomic: { ...Atomic, description: 'What the lenders\' session wallets can pay now within their policies (the sum of the lender views\' availableAtomic).' },
    policyAvailableAtomic: { ...Atomic, description: 'What the lenders\' policies alone would lend. available + reserved + deployed adds up with it: policyAvailable + reserved + deployed = registered + fees earned - losses - withdrawn.' },
    reservedAtomic: Atomic,
    deployedAtomic: Atomic,
    feesEarnedAtomic: Atomic,
    lossesAtomic: Atomic,
    withdrawnAtomic: Atomic,
  }),
  reserves: Type.Array(ReserveBalance),
})

export const WalletHolding = StrictObject({
  network: NetworkSlug,
  asset: AssetSymbol,
  token: Address,
  balanceAtomic: Nullable(Atomic),
  allowanceAtomic: Nullable(Atomic),
  spendableAtomic: Atomic,
  blockNumber: Nullable(Atomic),
})

export const HeldPayment = StrictObject({
  account: { ...Address, description: 'Whom the payment is for: the recipient the token refused (a lender\'s session wallet, a borrower, a job\'s client).' },
  lender: { ...Nullable(Address), description: 'The lender whose session wallet the account is, if it is one (null otherwise).' },
  network: NetworkSlug,
  asset: { ...Nullable(AssetSymbol), description: 'The token\'s symbol on the network; null for a token the network\'s configuration does not list.' },
  token: Address,
  amountAtomic: atomicDescribed('What the credit contract holds for the account in this token: its heldFor(token, account), as the chain follower last saw it (at the network\'s confirmations).'),
  updatedAt: { ...IsoTime, description: 'The chain time of the block of the last payment held or claim.' },
  claim: StrictObject({ ...UnsignedTransaction.properties }, {
    description: 'claimHeld(token, account) on the credit contract, unsigned: anyone may send it (from says the account, but any sender pays the account, never itself), and it pays the account all of it once the token accepts the account again; until then it reverts and changes nothing.',
  }),
}, { description: 'A payment the credit contract holds because its token refused the recipient (USDC\'s blacklist, a paused token): the advance counts as settled or repaid, the money waits in the contract for the account (README "Where every token goes").' })

export const LenderWallet = StrictObject({
  lender: Address,
  sessionAddress: Address,
  holdings: Type.Array(WalletHolding, { description: 'The session key\'s balance and allowance to the credit contract, per network, from the chain watcher.' }),
  activity: StrictObject({ ...LenderActivityFields, liveLeases: Type.Integer({ minimum: 0 }) }),
  heldPayments: Type.Array(HeldPayment, {
    description: 'What the credit contract holds for the lender\'s session wallet (where its repayments and settlement shares go) or its own wallet because the token refused them, per network and token, with the claimHeld to send once the token accepts the wallet; empty when nothing waits.',
  }),
})

export const PendingAction = StrictObject({
  kind: Type.Literal('pay_supplier'),
  lease: Lease,
  authorization: LeaseAuthorization,
  signature: { ...Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' }), description: "The lease signer's 65-byte signature over the authorization." },
  transaction: StrictObject({ ...UnsignedTransaction.properties }, { description: 'The paySupplier call with this authorization and signature, to send from the session key before the deadline.' }),
})

export const LenderAction = Type.Union([PendingAction, WalletAction], { description: 'A pending lease to pay (pay_supplier), or a wallet action (top_up, approve, withdraw).' })

export const LiquidityWithdrawal = StrictObject({
  amountAtomic: atomicDescribed('How much less the service may lend: at most policyAvailableAtomic + reserved + deployed + losses - withdrawalPendingAtomic (the activity of GET /lenders/{address}/wallet; not its availableAtomic, which counts only what the session wallet can pay now and is less while the allowance is short, after a repayment until the approve of GET /lenders/{address}/actions is sent). What live leases, open advances and losses hold leaves as they come back.'),
})

export const LiquidityWithdrawalResult = StrictObject({
  lender: LenderProfile,
  actions: Type.Array(WalletAction, { description: 'The transfers that send back what no live lease needs (signed by the session key), as GET /lenders/{address}/actions lists them.' }),
})

export const Health = StrictObject({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  version: Type.String(),
  networks: Type.Array(StrictObject({
    network: NetworkSlug,
    chainId: Type.Integer(),
    watcher: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
    reconciliation: { ...NetworkReconciliationWire, description: `The last reconciliation of the network (at start-up or POST /operator/reconcile); at most ${HEALTH_DIFFERENCES_MAX} differences listed.` },
    follower: StrictObject({
      state: Type.Union([Type.Literal('starting'), Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('stopped')], {
        description: 'The chain follower of the credit contract: degraded while its RPC fails or answers a chain behind the follower (it retries; error says which), stopped after a condition it will not retry (error says which). Held, so that it does not flap: degraded only once the follower has failed for the health hold (the networks file\'s healthHoldMs, default three polling intervals, at least 1 s), ok again only once it has followed for as long; stopped at once.',
      }),
      block: Type.Union([Type.String({ pattern: '^(0|[1-9][0-9]*)$' }), Type.Null()], { description: 'The last block whose events are applied (null before the first).' }),
      chainTime: Type.Union([IsoTime, Type.Null()], { description: "That block's time: the observed chain time lease expiry runs on." }),
      lagBlocks: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: "The chain's head minus block (confirmations not yet reached included)." }),
      error: Type.Optional(Type.String()),
    }),
  })),
  live: StrictObject({ jobs: Type.Integer(), offers: Type.Integer(), leases: Type.Integer(), advances: Type.Integer() }),
  operatorRepairs: StrictObject({
    pending: Type.Integer({ minimum: 0, description: 'Operator transactions (settleJob, failJob, liquidate) seen mined by the chain follower and not recorded yet: the service records each itself.' }),
    oldestAgeSeconds: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `How long the oldest has waited (null: none); over ${OPERATOR_REPAIR_AGE_DEGRADED_MS / 1000} s the status is degraded.` }),
    failuresMax: Type.Integer({ minimum: 0, description: `The most failed attempts in a row of one of them; each failure doubles its wait (from the run interval, at most ${OPERATOR_REPAIR_BACKOFF_MAX_MS / 1000} s).` }),
    nextAttemptAt: Type.Union([IsoTime, Type.Null()], { description: 'When that one is tried next (null: none failed).' }),
    heldRepayments: Type.Integer({ minimum: 0, description: 'Repayments mined after a liquidation not recorded yet, counted once it is.' }),
  }, { description: 'Operator transactions mined and not yet recorded, and the repayments waiting for them.' }),
})


/** The resources of the wire, each written once in the OpenAPI document (components.schemas) and referred to. */
export const wireComponents = {
  Address, Atomic, Bps, Bytes32, IsoTime, JobId, NetworkSlug, AssetSymbol, RiskBand, OfferId, AdvanceId, SourceId,
  LenderRegistration, BackingSourceRegistration, CreditRequest, MatchRequest, SupplierPaymentReport, JobCreation, CollateralPost,
  EmptyBody, RepaymentProof, JobFailure,
  TxProof, Job, Offer, Lease, Advance, LenderProfile, UnsignedTransaction, ChainSteps, SpendPolicy, LenderRegistrationResult, BackingSource,
  CollateralPosition, UnderwritingDecision, NoLease, MatchOutcome, DispatchOutcome, RepaymentReceipt, JobSettlementReceipt, LiquidationReceipt,
  PassportEvent, ReserveBalance, CreditState, WalletHolding, HeldPayment, LenderWallet, LeaseAuthorization, PendingAction, WalletAction, LiquidityWithdrawal,
  LiquidityWithdrawalResult, Health, SupplierPut, Supplier,
} as const
