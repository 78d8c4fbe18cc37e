// What readers see: views of actor snapshots (live or stored), pages in registration order, and the read-only
// summaries (a borrower's exposure, the engine's totals).
import { isPastDueAt, offerContextCopy, type LeaseContext, type LeaseState, type OfferContext, type OfferState } from '../../machines/index.ts'
import { compareCodeUnits, reserveId, seqOf } from './keys.ts'
import { uptimeBps } from './reputation.ts'
import { isActiveLender } from './rules.ts'
import type { EngineState, LeaseActor } from './state.ts'
import type { Address, AdvanceView, BorrowerExposure, CreditState, HeldPaymentRecord, JobView, LeaseView, LenderRecord, LenderView, OfferView } from './types.ts'

/** View of an actor snapshot, live or stored: its context plus its state. */
export function viewOf<V>(snapshot: { value: unknown; context: unknown }): V {
  return { ...(snapshot.context as object), state: snapshot.value } as V
}

// The views of live offers and leases, built on every match, time-out and expiry, are not spreads: a spread that adds a
// key (`state`) takes V8's slow path, about 1.3 µs for a lease's view in a loop against 30 ns field by field. The type
// checker refuses a field left out; test/engine/actors.test.ts checks them against viewOf through each machine's life,
// key order included.

/** The view of a live offer's snapshot (or one that just ended): its context copied in one literal, then its state. */
export function offerView(snapshot: { value: OfferState; context: OfferContext }): OfferView {
  const view = offerContextCopy(snapshot.context) as OfferView
  view.state = snapshot.value
  return view
}

/** The view of a live lease's snapshot (or one that just ended, or was born final). */
export function leaseView(snapshot: { value: LeaseState; context: LeaseContext }): LeaseView {
  const c = snapshot.context
  return {
    leaseId: c.leaseId, offerId: c.offerId, lender: c.lender, payer: c.payer, network: c.network, asset: c.asset,
    amountAtomic: c.amountAtomic, feeAtomic: c.feeAtomic, supplierAddress: c.supplierAddress, createdAtMs: c.createdAtMs,
    expiresAtMs: c.expiresAtMs, endReason: c.endReason, endedAtMs: c.endedAtMs, payment: c.payment, state: snapshot.value,
  }
}

/** A stored lease's view: its context and state (a final lease stored before lease version 4 still names a report grace). */
function storedLeaseView(snapshot: { value: unknown; context: unknown }): LeaseView {
  const stored = snapshot.context as LeaseContext & { reportGraceMs?: number }
  // Only an old stored lease has the field: the others are copied once, not once to drop it and again to add the state.
  if (!('reportGraceMs' in stored)) return { ...stored, state: snapshot.value } as LeaseView
  const { reportGraceMs: _grace, ...context } = stored
  return { ...context, state: snapshot.value } as LeaseView
}

export const jobViewFromSnapshot = (record: unknown): JobView => viewOf<JobView>(record as never)
export const offerViewFromSnapshot = (record: unknown): OfferView => viewOf<OfferView>(record as never)
export const leaseViewFromSnapshot = (record: unknown): LeaseView => storedLeaseView(record as never)
export const advanceViewFromSnapshot = (record: unknown): AdvanceView => viewOf<AdvanceView>(record as never)

/** One page of a list in registration order; `nextAfterSeq` is set when more may follow. */
export interface RegistrationPage<T> {
  items: T[]
  nextAfterSeq: number | undefined
}

export function registrationPage<K, T extends { registrationSeq: number }>(
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

/**
 * What the lender's session wallet can still pay on one network: min(balance, allowance to the credit contract) as
 * the watcher last read it, less the principal of its live leases there (already promised). Matching checks an
 * offer against it; every lender view adds it up.
 */
export function walletFreeAtomic(s: EngineState, lender: LenderRecord, network: string, asset: string): bigint {
  const spendable = s.wallets.spendableAtomic(network, asset, lender.sessionAddress)
  const promised = s.walletReserved.get(lender.address, network, asset)
  return spendable > promised ? spendable - promised : 0n
}

/** Principal of the lender's live leases on one network and asset: what its session wallet must keep for them. */
export function walletReservedAtomic(s: EngineState, lender: Address, network: string, asset: string): bigint {
  return s.walletReserved.get(lender, network, asset)
}

/**
 * A lender as every view shows it (issue 9, case 6): available is never more than its session wallets can pay
 * beyond their live leases, so nobody reads as available what the chain would refuse.
 */
export function lenderView(s: EngineState, lender: LenderRecord): LenderView {
  let payable = 0n
  for (const network of lender.networks) payable += walletFreeAtomic(s, lender, network, lender.assets[network] as string)
  const available = lender.availableAtomic < payable ? lender.availableAtomic : payable
  // The probation clock and its misses are the engine's, not part of the published profile.
  const { inactiveSinceMs: _clock, probationMisses: _misses, ...shown } = lender
  return { ...shown, availableAtomic: available, policyAvailableAtomic: lender.availableAtomic, uptimeBps: uptimeBps(lender) }
}

/**
 * What the credit contracts hold for any of `accounts` (a lender's wallet and session wallet, a borrower, a client),
 * amounts above 0 only (a claimed one reads 0 and is left out), per account by network then token: copies.
 */
export function heldPaymentsOf(s: EngineState, accounts: readonly Address[]): HeldPaymentRecord[] {
  const out: HeldPaymentRecord[] = []
  for (const account of accounts) {
    for (const id of s.heldPaymentIdsOf.get(account) ?? []) {
      const record = s.heldPayments.get(id) as HeldPaymentRecord
      if (record.amountAtomic > 0n) out.push({ ...record })
    }
  }
  return out
}

/** Live leases of a lender (by lender or session address), oldest first: what its wallet should pay now. */
export function liveLeasesOf(s: EngineState, address: Address): LeaseView[] {
  const lenderAddress = s.lenders.has(address) ? address : s.lenderBySession.get(address)
  const ids = lenderAddress ? [...(s.liveLeasesByLender.get(lenderAddress) ?? [])] : []
  return ids.sort((a, b) => seqOf(a) - seqOf(b)).map((id) => leaseView((s.leases.get(id) as LeaseActor).getSnapshot()))
}

/**
 * What a borrower owes now and since when the service knows it, read from live actors and records only (final
 * actors have left memory): its open advances (active or defaulted), those past due (as liquidation counts it,
 * isPastDueAt) or defaulted, what they still
 * owe per network and asset (after partial repayments), and the earliest creation among its live jobs, open advances and backing
 * sources. O(live jobs + live advances + sources): a read for the paid credit score, not for a hot path.
 */
export function borrowerExposure(s: EngineState, address: Address, nowMs: number): BorrowerExposure {
  let openAdvances = 0
  let pastDueAdvances = 0
  let earliestAtMs: number | null = null
  const seen = (atMs: number) => (earliestAtMs = earliestAtMs === null || atMs < earliestAtMs ? atMs : earliestAtMs)
  const outstanding = new Map<string, { network: string; asset: string; outstandingAtomic: bigint }>()
  for (const actor of s.advances.values()) {
    const snapshot = actor.getSnapshot()
    const a = snapshot.context
    if (a.borrower !== address) continue
    openAdvances += 1
    if (snapshot.value === 'defaulted' || isPastDueAt(a.dueAtMs, nowMs)) pastDueAdvances += 1
    seen(a.fundedAtMs)
    const key = reserveId(a.network, a.asset)
    const entry = outstanding.get(key) ?? { network: a.network, asset: a.asset, outstandingAtomic: 0n }
    entry.outstandingAtomic += a.lenderOwedAtomic + a.reserveOwedAtomic
    outstanding.set(key, entry)
  }
  for (const actor of s.jobs.values()) {
    const j = actor.getSnapshot().context
    if (j.borrower === address) seen(j.createdAtMs)
  }
  for (const source of s.sources.values()) if (source.agent === address) seen(source.registeredAtMs)
  const byKey = [...outstanding.entries()].sort(([a], [b]) => compareCodeUnits(a, b)).map(([, v]) => v)
  return { openAdvances, pastDueAdvances, outstanding: byKey, earliestActivityAtMs: earliestAtMs }
}

/** Counts and liquidity totals over every record and live actor, and the reserves in id order. */
export function creditState(s: EngineState): CreditState {
  const totals = {
    registeredAtomic: 0n, availableAtomic: 0n, policyAvailableAtomic: 0n, reservedAtomic: 0n, deployedAtomic: 0n, feesEarnedAtomic: 0n,
    lossesAtomic: 0n, withdrawnAtomic: 0n,
  }
  let activeLenders = 0
  for (const l of s.lenders.values()) {
    totals.registeredAtomic += l.registeredAtomic
    totals.availableAtomic += lenderView(s, l).availableAtomic
    totals.policyAvailableAtomic += l.availableAtomic
    totals.withdrawnAtomic += l.withdrawnAtomic
    totals.reservedAtomic += l.reservedAtomic
    totals.deployedAtomic += l.deployedAtomic
    totals.feesEarnedAtomic += l.feesEarnedAtomic
    totals.lossesAtomic += l.lossesAtomic
    if (isActiveLender(l, s.config)) activeLenders += 1
  }
  let suspendedBorrowers = 0
  for (const b of s.borrowers.values()) if (b.suspended) suspendedBorrowers += 1
  return {
    counts: {
      lenders: s.lenders.size, activeLenders, sources: s.sources.size, borrowers: s.borrowers.size,
      suspendedBorrowers, liveJobs: s.jobs.size, liveOffers: s.offers.size, liveLeases: s.leases.size,
      liveAdvances: s.advances.size,
    },
    totals,
    reserves: [...s.reserves.values()].sort((a, b) => compareCodeUnits(reserveId(a.network, a.asset), reserveId(b.network, b.asset))).map((r) => ({ ...r })),
  }
}
