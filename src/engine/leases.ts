// Leases from birth to end: the index of live leases (per lender, per wallet, in dispatch's schedule), granting,
// refusing at once, paying, timing out and cancelling, each with its ledger and track-record side.
import { initialTransition, transition } from 'xstate'
import { leaseMachine, type LeaseInput, type OfferContext, type TxProof } from '../../machines/index.ts'
import { expect, startActor } from './actors.ts'
import { persisted, recordFinal, touch, touchBorn } from './changes.ts'
import { leaseDeadlineBaseMs, scheduleLease, unscheduleLease } from './dispatch.ts'
import { ID_PREFIXES } from './ids.ts'
import { deployForAdvance, lenderChanged, lenderOf, releaseFromLease, reserveForLease } from './ledger.ts'
import * as reputation from './reputation.ts'
import type { EngineState, LeaseActor, OfferActor } from './state.ts'
import type { LeaseView, LenderRecord } from './types.ts'
import { leaseView } from './views.ts'
import { withBornFinalHistory } from './history.ts'
import { offerCommitmentAtomic, releaseCapacity } from './capacity.ts'
import { offerCreditUntilMs } from './underwriting.ts'

/** A live lease enters its lender's index, dispatch's schedule and its wallet's promised total. */
export function addLiveLease(s: EngineState, l: LeaseInput): void {
  let live = s.liveLeasesByLender.get(l.lender)
  if (!live) s.liveLeasesByLender.set(l.lender, (live = new Set()))
  live.add(l.leaseId)
  scheduleLease(s, l)
  s.walletReserved.add(l.lender, l.network, l.asset, l.amountAtomic)
}

function dropLiveLease(s: EngineState, l: LeaseInput): void {
  const live = s.liveLeasesByLender.get(l.lender)
  live?.delete(l.leaseId)
  if (live && live.size === 0) s.liveLeasesByLender.delete(l.lender)
  unscheduleLease(s, l)
  s.walletReserved.add(l.lender, l.network, l.asset, -l.amountAtomic)
}

/**
 * The next lease id and the terms of a lease of the offer to the lender at this fee; `creditUntilMs` is the offer's
 * credit end (offerCreditUntilMs), passed by a caller that already read it.
 */
function leaseInput(s: EngineState, o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number, creditUntilMs: number): LeaseInput {
  s.meta.leaseSeq += 1
  touch(s, 'meta', 'engine')
  return {
    leaseId: `${ID_PREFIXES.lease}${s.meta.leaseSeq}`,
    offerId: o.offerId,
    lender: lender.address,
    payer: lender.sessionAddress,
    network: o.network,
    asset: o.asset,
    amountAtomic: o.amountAtomic,
    feeAtomic: fee,
    supplierAddress: o.supplierAddress,
    createdAtMs: nowMs,
    // The whole TTL: matching grants a lease only while it ends by the offer's credit end (matching.ts
    // leaseToBestLender), so the min() never binds. It stays as a guard: a payment after the credit end (a job's due
    // time less the minimum credit period) would fund an advance due (nearly) at once, which its lender could
    // liquidate before the borrower could repay.
    expiresAtMs: Math.min(leaseDeadlineBaseMs(s, o.network, nowMs) + s.config.leaseTtlMs, creditUntilMs),
  }
}

export function grantLease(s: EngineState, o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number, creditUntilMs: number): LeaseView {
  const input = leaseInput(s, o, lender, fee, nowMs, creditUntilMs)
  const lease = startActor(leaseMachine, input, s.actorRoot)
  touchBorn(s, 'lease', input.leaseId)
  s.leases.set(input.leaseId, lease)
  addLiveLease(s, input)
  reserveForLease(lender, input.amountAtomic)
  reputation.leaseGranted(lender, s.config, nowMs)
  lenderChanged(s, lender)
  return leaseView(lease.getSnapshot())
}

/**
 * A lease that expires at once (insufficient balance) is born final: it is computed with XState's pure transition
 * functions instead of a live actor, because actor creation is the hot cost and this actor would be evicted at once.
 */
export function refuseLease(s: EngineState, o: OfferContext, lender: LenderRecord, fee: bigint, nowMs: number): LeaseView {
  const input = leaseInput(s, o, lender, fee, nowMs, offerCreditUntilMs(s, o))
  const [initial] = initialTransition(leaseMachine, input)
  const [expired] = transition(leaseMachine, initial, { type: 'INSUFFICIENT_BALANCE', nowMs })
  if (expired === initial) throw new Error(`invariant: lease ${input.leaseId} refused INSUFFICIENT_BALANCE`)
  recordFinal(s, { kind: 'lease', id: input.leaseId, record: withBornFinalHistory(persisted(leaseMachine.getPersistedSnapshot(expired)), 'lease', 'INSUFFICIENT_BALANCE'), final: true })
  return leaseView(expired)
}

/** The lender paid the supplier (its offer took FUND): the lease ends paid and its principal is deployed. */
export function payLease(s: EngineState, lease: LeaseActor, payment: TxProof, nowMs: number): LeaseInput {
  const l = lease.getSnapshot().context
  expect(s, 'lease', lease, { type: 'PAY', payment, nowMs })
  dropLiveLease(s, l)
  const lender = lenderOf(s, l.lender)
  deployForAdvance(lender, l.amountAtomic)
  reputation.leasePaid(lender, s.config, nowMs)
  lenderChanged(s, lender)
  return l
}

/**
 * The network's chain was observed past the lease's deadline with no SupplierPaid for it: it expires unpaid, the
 * lender pays for it, the offer goes on, or, when that chain time is at or past the offer's own TTL (the clock and
 * comparison of its expiry pass), expires in the same transition and gives its capacity back. The lease of a closing
 * offer (withdrawn under it) ends without a penalty instead, as a cancelled one (the lender was told not to pay), and
 * its offer ends declined, giving its capacity back. The lender's record is recorded changed now; its book entry is
 * moved by the caller, once per lender of its pass (`moved` collects them, ledger.ts repositionLender). Answers the
 * offer when it expired with the lease (its caller counts it among the expired offers), else undefined.
 */
export function timeOutLease(s: EngineState, lease: LeaseActor, chainTimeMs: number, nowMs: number, moved: Set<LenderRecord>): OfferActor | undefined {
  const l = lease.getSnapshot().context
  const offer = s.offers.get(l.offerId) as OfferActor
  const ended = { type: 'LEASE_ENDED', leaseId: l.leaseId, lender: l.lender, chainTimeMs, nowMs } as const
  // The offer machine is flat: its state value is the state's name.
  if (offer.getSnapshot().value === 'closing') {
    // The schedule says the chain is past the deadline: the authorization can no longer be paid.
    cancelLease(s, lease, nowMs)
    expect(s, 'offer', offer, ended)
    const o = offer.getSnapshot().context
    releaseCapacity(s, o.source, offerCommitmentAtomic(o), nowMs)
    return undefined
  }
  // The schedule says the chain is past the deadline; the lease machine's guard agrees, or this throws.
  expect(s, 'lease', lease, { type: 'TIME_OUT', chainTimeMs, nowMs })
  // The lender's liquidity and reputation both change: its book entry moves once, after the pass, to where all its
  // time-outs put it.
  const lender = releaseLease(s, l)
  reputation.leaseMissed(lender, l.createdAtMs, s.config, nowMs)
  touch(s, 'lender', lender.address)
  moved.add(lender)
  expect(s, 'offer', offer, ended)
  const after = offer.getSnapshot()
  if (after.value !== 'expired') return undefined
  releaseCapacity(s, after.context.source, offerCommitmentAtomic(after.context), nowMs)
  return offer
}

/**
 * The offer is withdrawn under the lease: it is cancelled without a penalty, the lender did no wrong (a probation
 * lease is given back: reputation.ts leaseCancelled).
 */
export function cancelLease(s: EngineState, lease: LeaseActor, nowMs: number): void {
  const l = lease.getSnapshot().context
  expect(s, 'lease', lease, { type: 'CANCEL', nowMs })
  const lender = releaseLease(s, l)
  reputation.leaseCancelled(lender, l.createdAtMs, s.config)
  lenderChanged(s, lender)
}

/** Give a lease's reserved liquidity back to its lender, whose record and book entry the caller updates (lenderChanged). */
function releaseLease(s: EngineState, l: LeaseInput): LenderRecord {
  dropLiveLease(s, l)
  const lender = lenderOf(s, l.lender)
  releaseFromLease(lender, l.amountAtomic)
  return lender
}
