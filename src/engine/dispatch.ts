// Dispatch's schedules: when live leases expire and which offers wait for a lender, kept current as actors change.
import { seqOf } from './keys.ts'
import type { EngineState, LeaseActor, OfferActor } from './state.ts'
import { leaseOverAtChainMs, type LeaseInput } from '../../machines/index.ts'

/** A scheduled lease or offer: when it is due and its id's sequence, the tie-break that keeps the order deterministic. */
export interface Due {
  id: string
  seq: number
  atMs: number
}

export const dueId = (d: Due): string => d.id
export const byDueThenSeq = (a: Due, b: Due): number => a.atMs - b.atMs || a.seq - b.seq
export const bySeq = (a: Due, b: Due): number => a.seq - b.seq

/** An offer is in dispatch's waiting schedules exactly while it waits for a lender (state offered, not final). */
export function scheduleOffer(s: EngineState, offer: OfferActor): void {
  const snap = offer.getSnapshot()
  const o = snap.context
  const waiting = snap.status === 'active' && snap.matches('offered')
  if (waiting === s.waitingOffers.has(o.offerId)) return
  if (waiting) {
    const due: Due = { id: o.offerId, seq: seqOf(o.offerId), atMs: o.expiresAtMs }
    s.waitingOffers.push(due)
    s.offerExpiries.push(due)
  } else {
    s.waitingOffers.delete(o.offerId)
    s.offerExpiries.delete(o.offerId)
  }
}

/**
 * A live lease is due once its network's chain is observed past its deadline (the lease machine's
 * `isPastDeadlineOnChain`): the schedule is per network, keyed by the first chain time at which it is over.
 */
export function scheduleLease(s: EngineState, l: LeaseInput): void {
  s.leaseSchedule(l.network).push({ id: l.leaseId, seq: seqOf(l.leaseId), atMs: leaseOverAtChainMs(l.expiresAtMs) })
}

export function unscheduleLease(s: EngineState, l: LeaseInput): void {
  s.leaseExpiries.get(l.network)?.delete(l.leaseId)
}

/** The chain time observed last on the network, or undefined before the first observation. */
export function chainTimeOf(s: EngineState, network: string): number | undefined {
  return s.meta.chainTimeMs?.[network]
}

/** Live leases of the network whose deadline its observed chain time is past, in expiry order, then lease sequence. */
export function dueLeases(s: EngineState, network: string): { lease: LeaseActor; chainTimeMs: number }[] {
  const chainTimeMs = chainTimeOf(s, network)
  const schedule = s.leaseExpiries.get(network)
  if (chainTimeMs === undefined || !schedule) return []
  const due: { lease: LeaseActor; chainTimeMs: number }[] = []
  // Collected before any is timed out: timing out unschedules the lease, and the walk needs the heap unchanged.
  for (const d of schedule.ascending()) {
    if (d.atMs > chainTimeMs) break
    due.push({ lease: s.leases.get(d.id) as LeaseActor, chainTimeMs })
  }
  return due
}

/**
 * The waiting offers dispatch acts on, in creation sequence: every stale one (it expires whatever the limit) and
 * the first offersDispatchedPerCallMax of the others (each is matched). No dispatch step moves another offer into
 * or out of the waiting state, so the list is fixed before the first one is acted on.
 */
export function offersToDispatch(s: EngineState, nowMs: number): { offer: OfferActor; due: boolean }[] {
  const chosen: Due[] = []
  for (const d of s.offerExpiries.ascending()) {
    if (d.atMs > nowMs) break
    chosen.push(d)
  }
  const stale = chosen.length
  let matchable = 0
  for (const d of s.waitingOffers.ascending()) {
    if (matchable >= s.config.offersDispatchedPerCallMax) break
    if (d.atMs <= nowMs) continue
    chosen.push(d)
    matchable += 1
  }
  // The stale ones came in expiry order; dispatch acts in creation sequence, as the lease timeouts left them.
  if (stale > 0) chosen.sort(bySeq)
  return chosen.map((d) => ({ offer: s.offers.get(d.id) as OfferActor, due: d.atMs <= nowMs }))
}
