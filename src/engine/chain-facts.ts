// Facts of the chain (design-engine-9-10.md, "Chain as the source of truth"): the supplier payment that the lender's
// report and the chain follower both apply (one function: a report adds only its caller's checks), and the follower's
// batch as one command: its events in order, then the network's observed chain time, which expires the leases whose
// deadline it is past (and their offers, when it is past their TTL too). Payment, not the report, counts: a
// SupplierPaid mined by a lease's deadline is in a batch at or before the one whose chain time passes that deadline, so
// it is applied before the lease could expire. For the same reason a lease left live past its deadline (a batch whose
// change budget ran out before its turn) is safe: no payment under it can come any more, and dispatch times it out
// next, in the same order.
import type { OfferContext } from '../../machines/index.ts'
import { refused, send } from './actors.ts'
import { touch } from './changes.ts'
import { applyRepaidFact, openAdvance } from './advances.ts'
import type { EngineConfig } from './config.ts'
import { chainTimeOf, dueLeaseOf, ended, LEASE_TIME_OUT_CHANGES_MAX, roomFor, type Ended } from './dispatch.ts'
import { fail } from './errors.ts'
import { ID_PREFIXES } from './ids.ts'
import { compareCodeUnits, sameAddress } from './keys.ts'
import { deployForAdvance, lenderChanged, lenderOf, repositionLender, reserveForLease } from './ledger.ts'
import { cancelLease, payLease, timeOutLease } from './leases.ts'
import type { RepaidFact, SupplierPaymentFact } from './ports.ts'
import type { EngineState, JobActor, LeaseActor, OfferActor } from './state.ts'
import { applyCollateral, jobIdOfKey, reclaimJob, type ReclaimedJob } from './jobs.ts'
import type { Address, AdvanceView, CollateralFact, HeldPaymentRecord, CollateralPosition, EngineError, LeaseView, LenderRecord, OfferView, RepaymentReceipt } from './types.ts'
import { leaseView, offerView } from './views.ts'

/**
 * The most changes one event of a follower's batch adds to its command (observeChain; an actor or record counts once
 * per command). A SupplierPaid paid under an ended lease (fundOffer): the offer, its current lease cancelled and that
 * lease's lender, the paying lender, the engine's id sequences (meta), the new advance, its job or backing source
 * (the fee not charged goes back to it), and the borrower when the job had defaulted: 8 (paid under the current
 * lease: 7). A Repaid (applyRepaidFact): the advance, its lender, the
 * reserve, the borrower and the advance's job or backing source: 5. A CollateralPosted (applyCollateral): its job, 1.
 * A JobReclaimed makes more (its job and each of its offers, see jobReclaimedChangesMax) and counts as several
 * events (chainEventWeight). A PaymentHeld or HeldPaymentClaimed (applyHeldFact): its held-payment record, 1. Any
 * other event: none. The service adds at most 3
 * record writes per event (the used proof, a repayment's passport event and head) and the cursor, fewer than its
 * changes, and the change budget is at most the store's record writes per commit (src/app/app.ts checkChangeBudget).
 */
export const CHAIN_EVENT_CHANGES_MAX = 8

/**
 * The most changes a JobReclaimed makes (reclaimJob): its job, and each of its live offers declined or closing, which
 * are at most the borrower's (liveOffersPerBorrowerMax).
 */
export function jobReclaimedChangesMax(config: Pick<EngineConfig, 'liveOffersPerBorrowerMax'>): number {
  return 1 + config.liveOffersPerBorrowerMax
}

/**
 * How many events of the batch budget (chainEventsPerBatchMax, each CHAIN_EVENT_CHANGES_MAX changes) one event of
 * `name` takes: a JobReclaimed as many as its changes need, any other event one. The follower cuts its range by this
 * weight, so a batch's command stays within changesPerCommandMax whatever its events.
 */
export function chainEventWeight(config: Pick<EngineConfig, 'liveOffersPerBorrowerMax'>, name: string): number {
  return name === 'JobReclaimed' ? Math.ceil(jobReclaimedChangesMax(config) / CHAIN_EVENT_CHANGES_MAX) : 1
}

/**
 * The events one follower batch may carry (the follower cuts its range at a block boundary to stay within it), so that
 * the batch's command never makes more than changesPerCommandMax changes. The lease time-outs that follow the events
 * need no share of it: they take only the room the events left (timeOutDueLeases), and dispatch goes on with the rest.
 */
export function chainEventsPerBatchMax(config: Pick<EngineConfig, 'changesPerCommandMax'>): number {
  const events = Math.floor(config.changesPerCommandMax / CHAIN_EVENT_CHANGES_MAX)
  if (events < 1) throw new RangeError(`engine config changesPerCommandMax must be at least ${CHAIN_EVENT_CHANGES_MAX}: one chain event must fit in a command`)
  return events
}

/** An ended lease read back from the store (final leases leave memory): for a payment under an old authorization. */
export type PastLeaseOf = (leaseId: string) => { leaseId: string; lender: Address; feeAtomic: bigint; state: string } | undefined

/** One event of the credit contract as the engine takes it: the service decoded it and mapped its token to a symbol. */
export type ChainEventFact =
  | ({ kind: 'supplier_paid'; offerKey: string; proofKey: string } & Omit<SupplierPaymentFact, 'offerId'>)
  | ({ kind: 'repaid'; advanceKey: string; proofKey: string } & Omit<RepaidFact, 'advanceId'>)
  | ({ kind: 'collateral_posted'; jobKey: string; asset: string; proofKey: string } & CollateralFact)
  | { kind: 'job_reclaimed'; jobKey: string; proofKey: string; escrowRefundedAtomic: bigint; collateralReleasedAtomic: bigint }
  | HeldPaymentFact
  | { kind: 'other'; name: string; proofKey: string }

/** What the chain follower observed of one network: blocks up to toBlock (inclusive) and their events, in order. */
export interface ChainObservation {
  network: string
  toBlock: bigint
  toBlockHash: string
  /** The timestamp of toBlock: the network's observed chain time from this batch on. */
  toBlockTimeMs: number
  events: ChainEventFact[]
}

export interface ChainObservationOutcome {
  network: string
  toBlock: bigint
  chainTimeMs: number
  /** Advances the batch's SupplierPaid events opened. */
  advances: AdvanceView[]
  /** Proof keys of the SupplierPaid facts applied, one per advance: their used-proof records go in the batch's commit. */
  appliedProofKeys: string[]
  /** Repaid facts applied (of any amount), with their proof keys (used-proof records in the same commit). */
  repayments: { proofKey: string; receipt: RepaymentReceipt }[]
  /** CollateralPosted facts applied to their jobs, with their proof keys (used-proof records in the same commit). */
  collateral: { proofKey: string; position: CollateralPosition }[]
  /**
   * JobReclaimed facts applied (the job failed, escrow_reclaimed), with their proof keys (used-proof records in the same
   * commit) and the collateral the contract released beyond what the job had counted (counted on the job with it).
   */
  reclaimed: ReclaimedJob[]
  /** Facts the engine did not apply, and why (an offer already funded by its report, an event another part applies). */
  ignored: { proofKey: string; reason: string }[]
  /** What the contract holds for refused recipients after the batch's PaymentHeld and HeldPaymentClaimed, in order. */
  heldPayments: HeldPaymentRecord[]
  /** Leases whose deadline the observed chain time is past, unpaid. */
  expiredLeases: LeaseView[]
  /** Offers of those leases that expired with them: the chain time was at or past their TTL too. */
  expiredOffers: OfferView[]
}

/**
 * A verified SupplierPaid funds the offer: the lease is paid and the advance is created, whatever the engine's lease
 * state (the contract accepted the payment under the service's authorization, so it was timely). The payer's lease
 * is the current one (the usual case), or an ended one (`pastLease`: a lease a release before chain-time expiry timed
 * out on wall time): then the offer's current lease, another lender's, is cancelled without penalty, since its
 * authorization can no longer be used (the contract refuses a second payment of an offer). The fact's offer is
 * `offer`: a follower's event (named by the offer's key) is passed as it is, not copied with the offer id added.
 */
export function fundOffer(
  s: EngineState,
  offer: OfferActor,
  lenderAddress: Address,
  fact: Omit<SupplierPaymentFact, 'offerId'>,
  nowMs: number,
  pastLease?: PastLeaseOf,
): { ok: true; value: AdvanceView } | { ok: false; error: EngineError } {
  const o = offer.getSnapshot().context
  if (fact.network !== o.network || fact.asset !== o.asset) return fail('invalid', 'payment_mismatch', 'the payment is on another network or asset')
  if (!sameAddress(fact.supplier, o.supplierAddress)) return fail('invalid', 'payment_mismatch', "the payment did not go to the offer's supplier")
  if (fact.amountAtomic !== o.amountAtomic) return fail('invalid', 'payment_mismatch', `the payment must be exactly ${o.amountAtomic}`)
  const current = o.currentLeaseId ? s.leases.get(o.currentLeaseId) : undefined
  const held = current && current.getSnapshot().context.lender === lenderAddress ? current : undefined
  const ended = held ? undefined : endedLeaseOf(o, lenderAddress, pastLease)
  if (!held && !ended) return fail('conflict', 'no_lease', `offer ${o.offerId} has no lease to lender ${lenderAddress}`)

  // The offer decides whether it can be funded now; its advance id is taken once it agrees.
  const funded = send(s, 'offer', offer, { type: 'FUND', advanceId: `${ID_PREFIXES.advance}${s.meta.advanceSeq + 1}`, nowMs })
  if (!funded.accepted) return refused('offer', o.offerId, funded)
  const payment = { network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex }
  const supplierPaymentHeld = fact.supplierPaymentHeld === true
  if (held) return { ok: true, value: openAdvance(s, o, payLease(s, held, payment, nowMs), fact.payer, payment, nowMs, supplierPaymentHeld) }

  const terms = ended as NonNullable<typeof ended>
  if (current) cancelLease(s, current as LeaseActor, nowMs)
  // The ended lease gave its reservation back when it was timed out: the principal is deployed from available.
  const lender = lenderOf(s, lenderAddress)
  reserveForLease(lender, o.amountAtomic)
  deployForAdvance(lender, o.amountAtomic)
  lenderChanged(s, lender)
  return { ok: true, value: openAdvance(s, o, { leaseId: terms.leaseId, lender: lenderAddress, feeAtomic: terms.feeAtomic }, fact.payer, payment, nowMs, supplierPaymentHeld) }
}

/**
 * A Repaid event as the fact of its advance: a literal, not `{ ...fact, advanceId }` after a rest copy (a spread with
 * a key added takes V8's slow path, about 1 µs per chain event: issue 11).
 */
function repaidFact(event: Omit<RepaidFact, 'advanceId'>, advanceId: string): RepaidFact {
  return {
    network: event.network, txHash: event.txHash, logIndex: event.logIndex, advanceId, lender: event.lender, payer: event.payer,
    amountAtomic: event.amountAtomic, reserveAmountAtomic: event.reserveAmountAtomic, lenderOwedAtomic: event.lenderOwedAtomic,
    reserveOwedAtomic: event.reserveOwedAtomic,
  }
}

/** The lender's latest lease on the offer, ended unpaid (read back from the store). */
function endedLeaseOf(o: OfferContext, lender: Address, pastLease: PastLeaseOf | undefined) {
  if (!pastLease || !o.excludedLenders.includes(lender)) return undefined
  for (const leaseId of [...o.leaseIds].reverse()) {
    const lease = pastLease(leaseId)
    if (lease && lease.lender === lender && lease.state === 'expired') return lease
  }
  return undefined
}

/** The follower's batch of one network: see the file's comment. */
export function observeChain(s: EngineState, batch: ChainObservation, nowMs: number, pastLease?: PastLeaseOf): ChainObservationOutcome {
  const advances: AdvanceView[] = []
  const appliedProofKeys: string[] = []
  const ignored: { proofKey: string; reason: string }[] = []
  const repayments: { proofKey: string; receipt: RepaymentReceipt }[] = []
  const collateral: { proofKey: string; position: CollateralPosition }[] = []
  const reclaimed: ReclaimedJob[] = []
  const heldPayments: HeldPaymentRecord[] = []
  for (const event of batch.events) {
    if (event.kind === 'payment_held' || event.kind === 'held_payment_claimed') {
      heldPayments.push(applyHeldFact(s, batch.network, event))
      continue
    }
    if (event.kind === 'job_reclaimed') {
      // The client took its escrow back on chain. Only the job's own network's contract held it (anyone may fund the same
      // key on another network); no live job has the key: not this service's job, not registered, or it ended already.
      const job = liveJobOn(s, event.jobKey, batch.network)
      const amounts = { escrowRefundedAtomic: event.escrowRefundedAtomic, collateralReleasedAtomic: event.collateralReleasedAtomic }
      const applied = job === undefined ? fail('not_found', 'job_not_live', 'no live job has the key on this network') : reclaimJob(s, job, amounts, nowMs)
      if (applied.ok) reclaimed.push({ proofKey: event.proofKey, ...applied.value })
      else ignored.push({ proofKey: event.proofKey, reason: applied.error.code })
      continue
    }
    if (event.kind === 'collateral_posted') {
      // Posted on chain and never reported, or not yet: the contract holds it, so the job does (the same function as
      // the collateral route's). No live job has the key: it is not this service's job, or not registered yet (its
      // registration reads what was posted before it, src/service/borrowers.ts), or it ended.
      // The event itself is the CollateralFact (applyCollateral reads its borrower, amount and proof): no rest copy.
      const { jobKey, asset, proofKey } = event
      // Anyone can fund a job of the same key on another network (a key is in every fundJob's calldata, and a legacy
      // key is the same on every network), name itself its borrower and post there. Only a posting on the job's own
      // network is held by its contract.
      const job = liveJobOn(s, jobKey, batch.network)
      const applied = job === undefined
        ? fail('not_found', 'job_not_live', 'no live job has the key on this network')
        : asset !== job.getSnapshot().context.asset ? fail('invalid', 'asset_mismatch', 'collateral in another asset than the job\'s')
        : applyCollateral(s, job, event, nowMs)
      if (applied.ok) collateral.push({ proofKey, position: applied.value })
      else ignored.push({ proofKey, reason: applied.error.code })
      continue
    }
    if (event.kind === 'repaid') {
      // A repayment of any amount, by anyone, reported or not: what the advance owes goes down (the same function as
      // the repay route's). No live advance has the key: its report repaid it already, or it is not this service's.
      const { advanceKey, proofKey } = event
      const advanceId = s.advanceIdByKey.get(advanceKey)
      const applied = advanceId === undefined ? fail('not_found', 'advance_not_live', 'no live advance has the key') : applyRepaidFact(s, repaidFact(event, advanceId), nowMs)
      if (applied.ok) repayments.push({ proofKey, receipt: applied.value })
      else ignored.push({ proofKey, reason: applied.error.code })
      continue
    }
    if (event.kind !== 'supplier_paid') {
      // JobFunded is applied by its report route (createJob: the job's terms and the borrower's consent come with it);
      // AdvanceSettled, JobSettled, JobFailed, JobClosed and Liquidated confirm the service's own operator
      // transactions, applied by the route that sent them.
      ignored.push({ proofKey: event.proofKey, reason: `not_applied:${event.name}` })
      continue
    }
    const offerId = s.offerIdByKey.get(event.offerKey)
    const offer = offerId === undefined ? undefined : s.offers.get(offerId)
    // No live offer has the key: its report funded it already (the same advance), or it is not this service's offer.
    if (!offer) {
      ignored.push({ proofKey: event.proofKey, reason: 'offer_not_live' })
      continue
    }
    const lender = s.lenderBySession.get(event.payer)
    const funded = lender === undefined
      ? fail('forbidden', 'lease_not_held', 'the payer is not a registered lender')
      : fundOffer(s, offer, lender, event, nowMs, pastLease)
    if (!funded.ok) {
      // The contract accepted this payment, so the engine should have: the reconciliation check reports the gap.
      ignored.push({ proofKey: event.proofKey, reason: funded.error.code })
      continue
    }
    advances.push(funded.value)
    appliedProofKeys.push(event.proofKey)
  }

  // Chain time only moves forward (a batch never ends before the previous one; the guard keeps a restart honest).
  // It is an observation, not a change: a new chain time alone is not written (chains make blocks all the time, an
  // idle service would write every block), it rides along with the next write of the meta record. After a restart
  // the follower observes it again; until then no lease expires, which is the safe side (payment is what counts).
  const before = chainTimeOf(s, batch.network)
  if (before === undefined || batch.toBlockTimeMs > before) {
    s.meta.chainTimeMs = { ...s.meta.chainTimeMs, [batch.network]: batch.toBlockTimeMs }
  }
  const expired = ended<LeaseView>(true)
  const expiredOffers = ended<OfferView>(true)
  timeOutDueLeases(s, batch.network, nowMs, expired, expiredOffers)
  return {
    network: batch.network, toBlock: batch.toBlock, chainTimeMs: chainTimeOf(s, batch.network) as number,
    advances, appliedProofKeys, repayments, collateral, reclaimed, heldPayments, ignored, expiredLeases: expired.views as LeaseView[],
    expiredOffers: expiredOffers.views as OfferView[],
  }
}

/**
 * A PaymentHeld (the contract kept `amountAtomic` its token refused to `account`) or a HeldPaymentClaimed (anyone's
 * claimHeld paid `amountAtomic`, all of it, to `account`) of the credit contract, as the follower saw it: whoever's
 * payment it was (a lender's repayment or settlement share, a borrower's remainder, a client's refund), the engine
 * only keeps what waits for whom. A batch is applied once (its commit carries the follower's cursor), so these need no
 * used-proof record.
 */
export type HeldPaymentFact = HeldFactOf<'payment_held'> | HeldFactOf<'held_payment_claimed'>

type HeldFactOf<K extends string> = {
  kind: K
  proofKey: string
  account: Address
  /** The network's asset symbol: only the network's own tokens are followed (src/service/chain-observation.ts). */
  asset: string
  token: Address
  amountAtomic: bigint
  blockTimeMs: number
}

/** The id of what `token`'s contract on `network` holds for `account`: `${network}:${token}:${account}` (checksummed). */
export function heldPaymentId(network: string, token: Address, account: Address): string {
  return `${network}:${token}:${account}`
}

/**
 * A held-payment record into the engine's memory (a fact's first for its recipient and token, or a restore), its id
 * in order among the recipient's (network, then token): the views list them the same before and after a restart.
 */
export function addHeldPayment(s: EngineState, id: string, record: HeldPaymentRecord): void {
  s.heldPayments.set(id, record)
  const ids = s.heldPaymentIdsOf.get(record.account)
  if (ids === undefined) s.heldPaymentIdsOf.set(record.account, [id])
  else ids.splice(ids.filter((other) => compareCodeUnits(other, id) < 0).length, 0, id)
}

/**
 * The contract's heldFor(token, account) after `fact`: a PaymentHeld adds to it, a HeldPaymentClaimed takes what it
 * paid (all of it: the contract's claimHeld pays the whole amount, so the record reads 0, as heldFor does). One change.
 */
export function applyHeldFact(s: EngineState, network: string, fact: HeldPaymentFact): HeldPaymentRecord {
  const id = heldPaymentId(network, fact.token, fact.account)
  let record = s.heldPayments.get(id)
  if (record === undefined) {
    const lender = s.lenderBySession.get(fact.account) ?? null
    record = { account: fact.account, lender, network, asset: fact.asset, token: fact.token, amountAtomic: 0n, updatedAtMs: fact.blockTimeMs }
    addHeldPayment(s, id, record)
  }
  const amountAtomic = fact.kind === 'payment_held' ? record.amountAtomic + fact.amountAtomic : record.amountAtomic - fact.amountAtomic
  // Never below 0: a claim of a payment held before this service followed the contract (not in its records).
  record.amountAtomic = amountAtomic < 0n ? 0n : amountAtomic
  record.updatedAtMs = fact.blockTimeMs
  touch(s, 'held', id)
  return { ...record }
}

/** The live job of on-chain key `jobKey` when it is on `network`. */
function liveJobOn(s: EngineState, jobKey: string, network: string): JobActor | undefined {
  const jobId = jobIdOfKey(s, jobKey)
  const job = jobId === undefined ? undefined : s.jobs.get(jobId)
  return job !== undefined && job.getSnapshot().context.network === network ? job : undefined
}

/**
 * Times out the network's live leases whose deadline its observed chain time is past, in deadline order then lease
 * sequence, while the command has room for one more time-out (changesPerCommandMax) and has taken fewer than
 * timeOutsPerCommandMax (`expired` counts the command's time-outs so far, and views them if its caller wants them;
 * `expiredOffers` the offers that expired with their lease, leases.ts timeOutLease).
 * Answers false when it stopped with leases still due: they stay live (the safe side, see the file's comment) and the
 * next dispatch goes on with them. One pass: the lenders' book entries move once each, after it (a lender with several
 * leases due moves once).
 */
export function timeOutDueLeases(s: EngineState, network: string, nowMs: number, expired: Ended<LeaseView>, expiredOffers: Ended<OfferView>): boolean {
  const moved = new Set<LenderRecord>()
  let done = true
  const schedule = s.leaseExpiries.get(network)
  const chainTimeMs = chainTimeOf(s, network)
  // Each time-out takes its lease out of the schedule, so the next due one is at the top again.
  for (let lease = dueLeaseOf(s, schedule, chainTimeMs); lease !== undefined; lease = dueLeaseOf(s, schedule, chainTimeMs)) {
    if (expired.count >= s.config.timeOutsPerCommandMax || !roomFor(s, LEASE_TIME_OUT_CHANGES_MAX)) {
      done = false
      break
    }
    const offer = timeOutLease(s, lease, chainTimeMs as number, nowMs, moved)
    expired.count += 1
    expired.views?.push(leaseView(lease.getSnapshot()))
    if (offer !== undefined) {
      expiredOffers.count += 1
      expiredOffers.views?.push(offerView(offer.getSnapshot()))
    }
  }
  for (const lender of moved) repositionLender(s, lender)
  return done
}
