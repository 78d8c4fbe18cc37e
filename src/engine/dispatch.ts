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

/**
 * An offer is in dispatch's waiting schedules exactly while it waits for a lender (state offered, not final): the
 * waiting list by sequence, and its network's expiry schedule (its TTL runs on that network's chain time).
 */
export function scheduleOffer(s: EngineState, offer: OfferActor): void {
  const snap = offer.getSnapshot()
  const o = snap.context
  const waiting = snap.status === 'active' && snap.matches('offered')
  if (waiting === s.waitingOffers.has(o.offerId)) return
  if (waiting) {
    const due: Due = { id: o.offerId, seq: seqOf(o.offerId), atMs: o.expiresAtMs }
    s.waitingOffers.push(due)
    s.offerSchedule(o.network).push(due)
  } else {
    s.waitingOffers.delete(o.offerId)
    s.offerExpiries.get(o.network)?.delete(o.offerId)
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

/**
 * The clock the network's timers run on (offer TTLs, lease deadlines): its observed chain time, which stands still
 * while the chain is not observed (an RPC outage pauses the timers). Before the network's first observation (a start
 * before the follower's first batch, or an engine fed no chain), the service's clock stands in for it.
 */
export function networkClockMs(s: EngineState, network: string, nowMs: number): number {
  return chainTimeOf(s, network) ?? nowMs
}

/**
 * The time a lease's deadline counts from: the later of the service's clock and the network's observed chain time.
 * The contract judges the deadline on the time of the block that includes the payment, which is about the head's time;
 * the observed chain time is the last confirmed block's, behind the head by confirmations x block time (and frozen
 * while the RPC is down), so a deadline counted from it alone gives the lender that much less than the TTL, or one
 * already past on the chain. The service's clock alone would do the same on a chain running ahead of it (a devnet
 * moved forward). The later of the two gives the lender at least the TTL; the lease still ends only when the observed
 * chain time passes the deadline.
 */
export function leaseDeadlineBaseMs(s: EngineState, network: string, nowMs: number): number {
  const chainTimeMs = chainTimeOf(s, network)
  return chainTimeMs === undefined || chainTimeMs < nowMs ? nowMs : chainTimeMs
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
  const stale = new Set<string>()
  for (const [network, schedule] of s.offerExpiries) {
    const clockMs = networkClockMs(s, network, nowMs)
    for (const d of schedule.ascending()) {
      if (d.atMs > clockMs) break
      chosen.push(d)
      stale.add(d.id)
    }
  }
  let matchable = 0
  for (const d of s.waitingOffers.ascending()) {
    if (matchable >= s.config.offersDispatchedPerCallMax) break
    if (stale.has(d.id)) continue
    chosen.push(d)
    matchable += 1
  }
  // The stale ones came per network in expiry order; dispatch acts in creation sequence, as the lease timeouts left them.
  if (stale.size > 0) chosen.sort(bySeq)
  return chosen.map((d) => ({ offer: s.offers.get(d.id) as OfferActor, due: stale.has(d.id) }))
}
