// Underwriting of a credit request: the reasons to decline, the source's remaining capacity, the risk band, and
// the offer an approval opens.
import { jobMachine, offerMachine, statesTaking, type OfferContext, type OfferInput, type SourceRef } from '../../machines/index.ts'
import { countOffer, startActor } from './actors.ts'
import { provenRepaidAtomic } from './borrowers.ts'
import { commitCapacity, offerCommitmentAtomic } from './capacity.ts'
import { touch, touchBorn } from './changes.ts'
import { leaseDeadlineBaseMs, networkClockMs, scheduleOffer } from './dispatch.ts'
import { ID_PREFIXES } from './ids.ts'
import { sameAddress } from './keys.ts'
import { applyBps, coverageBps, minBig, riskBand } from './rules.ts'
import type { EngineState, JobActor } from './state.ts'
import { supplierOf } from './suppliers.ts'
import type { Address, BorrowerRecord, CreditRequestInput, DeclineReason, OfferView, RiskBand, SourceRecord } from './types.ts'
import { offerView } from './views.ts'

/** The states in which a job still takes new drawings (COMMIT): underwriting declines the others as closed. */
const JOB_OPEN_STATES: ReadonlySet<string> = new Set(statesTaking(jobMachine, 'COMMIT'))

/** What a source offers a request: its remaining capacity, the value behind it, and the advance's term. */
interface SourceTerms {
  source: SourceRef
  capacityAtomic: bigint
  valueAtomic: bigint
  /**
   * Of the value, what secures the advance whatever becomes of the source: a job's collateral (its client may fail
   * the job and have the escrow back), a backing source's whole value.
   */
  securedAtomic: bigint
  durationSeconds: number
  dueAtMs: number
  /**
   * When the source stops taking new credit (creditUntilMs): the advance's due time less the minimum credit period,
   * or a backing source's attestation expiry if that comes first.
   */
  creditUntilMs: number
}

/** The decision on a request whose source exists: declined when `reasons` is not empty. */
export interface Underwriting extends SourceTerms {
  reasons: DeclineReason[]
  coverageBps: number
  riskBand: RiskBand
  /** The verified supplier the principal goes to (set whenever the decision is approved). */
  supplierAddress: Address | undefined
}

/** Decide a credit request against its repayment source (a live job, else a backing source), changing nothing. */
export function underwrite(s: EngineState, input: CreditRequestInput, job: JobActor | undefined, backing: SourceRecord | undefined, nowMs: number): Underwriting {
  const reasons: DeclineReason[] = []
  const borrower = s.borrowers.get(input.agent)
  if (borrower?.suspended) reasons.push({ code: 'borrower_suspended', message: 'the borrower is suspended after a failed job' })
  const supplier = supplierOf(s, input, job?.getSnapshot().context.client)
  reasons.push(...supplier.reasons)
  const terms = job ? jobTerms(input, job, reasons, s, nowMs) : backingTerms(input, backing as SourceRecord, reasons, s, nowMs)
  if (terms.capacityAtomic < 0n) terms.capacityAtomic = 0n
  // On a job the fee counts with the principal (capacity.ts): what the advance can come to owe must fit in what the
  // job's settlement can pay.
  // The three fields it reads, not `{ ...input, source }`: a spread that adds a key takes V8's slow path (issue 11).
  if (offerCommitmentAtomic({ source: terms.source, amountAtomic: input.amountAtomic, maximumFeeAtomic: input.maximumFeeAtomic }) > terms.capacityAtomic) {
    reasons.push({ code: 'over_capacity', message: `the request exceeds the source's remaining capacity of ${terms.capacityAtomic}` })
  }
  // A receivable secures an advance against its client not paying, not against the job failing (the client has its
  // escrow back): a client and a borrower of one party would otherwise take band A credit on an escrow they take back.
  // So the band counts it only when what the collateral leaves unsecured of the amount is within what the borrower has
  // proven it repays on the asset (its repaid principal less what its advances and live offers on jobs still owe or
  // ask); else the band reads only what secures the advance whatever happens. (A backing source's whole value secures
  // it: nothing to look up.)
  const counted = terms.valueAtomic === terms.securedAtomic || input.amountAtomic - terms.securedAtomic <= provenRoomAtomic(s, borrower, input)
  const coverage = coverageBps(counted ? terms.valueAtomic : terms.securedAtomic, 0n, input.amountAtomic)
  const band = riskBand(coverage, borrower?.advancesDefaulted ?? 0, s.config)
  // Field by field: a spread of the terms that adds the decision's keys takes V8's slow path (see views.ts).
  return {
    source: terms.source, capacityAtomic: terms.capacityAtomic, valueAtomic: terms.valueAtomic, securedAtomic: terms.securedAtomic, durationSeconds: terms.durationSeconds,
    dueAtMs: terms.dueAtMs, creditUntilMs: terms.creditUntilMs, reasons, coverageBps: coverage, riskBand: band, supplierAddress: supplier.address,
  }
}

/** What the borrower has proven it repays on the request's asset, less what its live offers on jobs ask (borrowers.ts). */
function provenRoomAtomic(s: EngineState, borrower: BorrowerRecord | undefined, input: CreditRequestInput): bigint {
  const proven = borrower === undefined ? 0n : provenRepaidAtomic(borrower, input.network, input.asset)
  return proven - s.receivableOffered.get(input.agent, input.network, input.asset)
}

function nonNegative(value: bigint): bigint {
  return value < 0n ? 0n : value
}

/** A job lends against what is left of its receivable (at the job advance rate) and of its collateral, until due. */
function jobTerms(input: CreditRequestInput, job: JobActor, reasons: DeclineReason[], s: EngineState, nowMs: number): SourceTerms {
  const snap = job.getSnapshot()
  const ctx = snap.context
  if (!sameAddress(ctx.borrower, input.agent)) reasons.push({ code: 'source_not_owned', message: 'the job belongs to another borrower' })
  // Self-dealing: the client may fail its job and have the whole escrow back at once (failJob), so a borrower that is
  // its own job's client could draw on the escrow and take it back, leaving the lender to the collateral and the
  // insurance reserve. Such a job can still be completed or failed: the escrow is never stuck.
  if (sameAddress(ctx.client, input.agent)) reasons.push({ code: 'client_is_borrower', message: 'the job\'s client is the borrower: a receivable is owed by someone else' })
  if (!JOB_OPEN_STATES.has(String(snap.value))) reasons.push({ code: 'source_closed', message: `the job is ${String(snap.value)}` })
  if (nowMs >= ctx.dueAtMs) reasons.push({ code: 'job_past_due', message: 'the job is past its due time' })
  else if (!leaseFits(s, input.network, creditUntilMs(s, ctx.dueAtMs, undefined), nowMs)) {
    reasons.push({
      code: 'job_due_too_soon',
      message: `the job is due within the minimum credit period of ${s.config.creditPeriodMinMs / 1000} s plus a lease's TTL of ${s.config.leaseTtlMs / 1000} s (counted on the chain's clock when it is ahead of the service's)`,
    })
  }
  if (ctx.network !== input.network || ctx.asset !== input.asset) {
    reasons.push({ code: 'asset_mismatch', message: `the job pays ${ctx.asset} on ${ctx.network}` })
  }
  const revenueLeft = ctx.receivableAtomic - ctx.revenueUsedAtomic
  const collateralLeft = ctx.collateralAtomic - ctx.collateralUsedAtomic
  // The band reads what is left behind this request: what the job's live offers and open advances hold (amount and
  // fee) already lean on the same escrow and collateral, and a failed job's collateral pays them all. Before, each
  // request read the whole collateral: 10 of it made any number of offers of 5 band A (coverage 20000 bps), a
  // fresh borrower's party drew 20 at band A on 10 and failed the job (outsider27, collateral-counted-per-offer.ts).
  return {
    source: { kind: 'job', id: ctx.jobId },
    capacityAtomic: applyBps(revenueLeft, s.config.jobAdvanceRateBps) + collateralLeft - ctx.committedAtomic,
    valueAtomic: nonNegative(revenueLeft + collateralLeft - ctx.committedAtomic),
    securedAtomic: nonNegative(collateralLeft - ctx.committedAtomic),
    durationSeconds: Math.max(1, Math.ceil((ctx.dueAtMs - nowMs) / 1000)),
    dueAtMs: ctx.dueAtMs,
    creditUntilMs: creditUntilMs(s, ctx.dueAtMs, undefined),
  }
}

/** A backing source lends its advance rate of its value, never more than its liquidation value has left. */
function backingTerms(input: CreditRequestInput, src: SourceRecord, reasons: DeclineReason[], s: EngineState, nowMs: number): SourceTerms {
  if (!sameAddress(src.agent, input.agent)) reasons.push({ code: 'source_not_owned', message: 'the backing source belongs to another borrower' })
  // A source recorded before attestations carried an expiry has none: it counts as expired (re-attest it). One that
  // expires before a lease granted now would end counts as expired too: the remedy is the same (a fresh attestation),
  // and a lease must not be payable after nobody vouches for the valuation any more.
  if (!leaseFits(s, input.network, src.validUntilMs ?? Number.NEGATIVE_INFINITY, nowMs)) {
    reasons.push({
      code: 'source_attestation_expired',
      message: `the backing source's attestation expired, or expires within a lease's TTL of ${s.config.leaseTtlMs / 1000} s; register a fresh one under a new sourceId`,
    })
  }
  const hardLeft = src.liquidationValueAtomic - src.backingUsedAtomic
  const durationSeconds = s.config.backingDurationSecondsDefault
  const dueAtMs = nowMs + durationSeconds * 1000
  return {
    source: { kind: 'backing', id: src.sourceId },
    capacityAtomic: minBig(applyBps(src.valueAtomic, src.advanceRateBps), hardLeft) - src.committedAtomic,
    // As on a job: what the source's live offers and open advances hold is not there for this request's band.
    valueAtomic: nonNegative(src.valueAtomic - src.committedAtomic),
    securedAtomic: nonNegative(src.valueAtomic - src.committedAtomic),
    durationSeconds,
    dueAtMs,
    creditUntilMs: creditUntilMs(s, dueAtMs, src.validUntilMs ?? nowMs),
  }
}

/**
 * The last moment a lender may pay for an advance due at `dueAtMs`: the borrower keeps at least the minimum credit
 * period to repay (a payment just before the due time would make an advance its lender liquidates a moment later,
 * a default on credit the borrower never had time to use); on a backing source also the attestation's expiry
 * (`validUntilMs`), past which nobody vouches for the valuation.
 */
function creditUntilMs(s: EngineState, dueAtMs: number, validUntilMs: number | undefined): number {
  const untilMs = dueAtMs - s.config.creditPeriodMinMs
  return validUntilMs === undefined ? untilMs : Math.min(untilMs, validUntilMs)
}

/**
 * Whether a lease granted now on the network, of the whole TTL (its deadline counts from dispatch.ts
 * leaseDeadlineBaseMs), ends before `untilMs`, the credit end: a request is approved only then, so that its offer is
 * matched with a whole lease (an outsider's finding: a lease cut short by the credit end could be unpayable on chain,
 * and its expiry cost the lender a miss; test/api/outsider19-lease-at-credit-end.test.ts).
 */
function leaseFits(s: EngineState, network: string, untilMs: number, nowMs: number): boolean {
  return leaseDeadlineBaseMs(s, network, nowMs) + s.config.leaseTtlMs < untilMs
}

/** When an offer's source stops taking its credit (creditUntilMs): a lease's deadline is never later. */
export function offerCreditUntilMs(s: EngineState, o: OfferContext): number {
  // An offer's due time is its source's (a job's due time, or its backing advance's term from the offer's creation).
  if (o.source.kind === 'job') return creditUntilMs(s, o.dueAtMs, undefined)
  return creditUntilMs(s, o.dueAtMs, s.sources.get(o.source.id)?.validUntilMs ?? o.createdAtMs)
}

/** An approved request opens an offer, waiting for a lender, and commits its amount of the source's capacity. */
export function openOffer(s: EngineState, input: CreditRequestInput, decision: Underwriting, nowMs: number): OfferView {
  if (decision.supplierAddress === undefined) throw new Error('invariant: an approved request has a verified supplier')
  s.meta.offerSeq += 1
  const offerId = `${ID_PREFIXES.offer}${s.meta.offerSeq}`
  const offerInput: OfferInput = {
    offerId,
    offerKey: s.offerKeyOf(offerId),
    borrower: input.agent,
    network: input.network,
    asset: input.asset,
    productType: input.productType,
    amountAtomic: input.amountAtomic,
    maximumFeeAtomic: input.maximumFeeAtomic,
    purpose: input.purpose,
    supplier: input.supplier,
    supplierDomain: input.supplierDomain,
    supplierAddress: decision.supplierAddress,
    source: decision.source,
    riskBand: decision.riskBand,
    durationSeconds: decision.durationSeconds,
    dueAtMs: decision.dueAtMs,
    createdAtMs: nowMs,
    // On the network's chain time (dispatch.ts networkClockMs), as leases: an outage of the chain pauses the TTL.
    // Never past the last instant a whole lease still fits before the source stops taking credit (the credit end less
    // leaseTtlMs, counted from a lease's deadline base, as underwriting's leaseFits): a lease running past a job's
    // credit end would fund an advance its lender could liquidate before the borrower could repay; one past a backing
    // source's attestation expiry would lend against a valuation nobody vouches for any more; and a lease cut short to
    // end there could be unpayable on chain, its expiry the lender's miss (an outsider's finding, outsider19).
    expiresAtMs: networkClockMs(s, input.network, nowMs) +
      Math.min(s.config.offerTtlMs, Math.max(0, decision.creditUntilMs - s.config.leaseTtlMs - leaseDeadlineBaseMs(s, input.network, nowMs))),
  }
  const offer = startActor(offerMachine, offerInput, s.actorRoot)
  touchBorn(s, 'offer', offerInput.offerId)
  s.offers.set(offerInput.offerId, offer)
  countOffer(s, offerInput, 1)
  s.offerIdByKey.set(offerInput.offerKey, offerInput.offerId)
  scheduleOffer(s, offer.getSnapshot())
  touch(s, 'meta', 'engine')
  commitCapacity(s, decision.source, offerCommitmentAtomic(offerInput), nowMs)
  return offerView(offer.getSnapshot())
}
