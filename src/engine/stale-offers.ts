// A borrower at its live-offer limit: its own offers already past their time, which the dispatch ticker has not ended
// yet (it is bounded per turn and falls behind under load), are ended by its credit request before the limit is
// judged, as the ticker would end them (matching.ts expireOffer, leases.ts timeOutLease): the ticker's work done early.
import { leaseOverAtChainMs } from '../../machines/index.ts'
import { chainTimeOf, LEASE_TIME_OUT_CHANGES_MAX, networkClockMs, OFFER_EXPIRY_CHANGES_MAX } from './dispatch.ts'
import { timeOutLease } from './leases.ts'
import { repositionLender } from './ledger.ts'
import { expireOffer } from './matching.ts'
import type { EngineState, LeaseActor, OfferActor } from './state.ts'
import type { Address, LenderRecord } from './types.ts'

/** What a credit request changes itself when approved: its offer, the engine's id sequences (meta), its source. */
export const CREDIT_REQUEST_CHANGES_MAX = 3

/**
 * A due timer of the borrower's whose end ends its offer: a waiting offer past its TTL on its network's clock (lease
 * undefined), or the current lease of a leased or closing offer with the network's observed chain time past the
 * lease's deadline, when that chain time also ends the offer (closing, or past its TTL: the offer machine's isStale).
 */
export interface StaleTimer {
  offer: OfferActor
  lease: LeaseActor | undefined
  chainTimeMs: number
}

/**
 * The borrower's stale timers, oldest offer first (its set iterates in creation order): at most timeOutsPerCommandMax,
 * and no more than the command has room for beside the request's own changes, each counted at its step's most
 * (dispatch.ts). Reads only: the request ends them (endStaleTimers) once nothing else refuses it, so a refusal still
 * changes nothing. Each one ends one live offer of the borrower. A lease past its deadline whose offer is not past its
 * TTL is not among them: its offer is live (it waits for another lender once the ticker times the lease out).
 */
export function staleTimersOf(s: EngineState, borrower: Address, nowMs: number): StaleTimer[] {
  const stale: StaleTimer[] = []
  const ids = s.liveOffersOf.get(borrower)
  if (ids === undefined) return stale
  let changes = s.pending.size + CREDIT_REQUEST_CHANGES_MAX
  for (const id of ids) {
    if (stale.length >= s.config.timeOutsPerCommandMax) break
    const offer = s.offers.get(id) as OfferActor
    const snap = offer.getSnapshot()
    const o = snap.context
    let timer: StaleTimer | undefined
    // The offer machine is flat: its state value is the state's name.
    if (snap.value === 'offered') {
      // The dispatch expiry schedule's rule (offersToDispatch): due once its network's clock reaches the TTL.
      const clockMs = networkClockMs(s, o.network, nowMs)
      if (o.expiresAtMs <= clockMs) timer = { offer, lease: undefined, chainTimeMs: clockMs }
    } else if (o.currentLeaseId !== null) {
      // dueLeaseOf's rule: the lease is due once the observed chain time reaches the first instant it is over.
      const chainTimeMs = chainTimeOf(s, o.network)
      const lease = s.leases.get(o.currentLeaseId)
      if (chainTimeMs !== undefined && lease !== undefined && leaseOverAtChainMs(lease.getSnapshot().context.expiresAtMs) <= chainTimeMs &&
        (snap.value === 'closing' || chainTimeMs >= o.expiresAtMs)) {
        timer = { offer, lease, chainTimeMs }
      }
    }
    if (timer === undefined) continue
    changes += timer.lease === undefined ? OFFER_EXPIRY_CHANGES_MAX : LEASE_TIME_OUT_CHANGES_MAX
    if (changes > s.config.changesPerCommandMax) break
    stale.push(timer)
  }
  return stale
}

/**
 * Ends the stale timers as dispatch does: the offer expires stale, or the lease times out (and its offer ends with it);
 * the lenders whose leases timed out move in their books once, after the pass (chain-facts.ts timeOutDueLeases).
 */
export function endStaleTimers(s: EngineState, stale: readonly StaleTimer[], nowMs: number): void {
  const moved = new Set<LenderRecord>()
  for (const timer of stale) {
    if (timer.lease === undefined) expireOffer(s, timer.offer, 'stale', nowMs)
    else timeOutLease(s, timer.lease, timer.chainTimeMs, nowMs, moved)
  }
  for (const lender of moved) repositionLender(s, lender)
}
