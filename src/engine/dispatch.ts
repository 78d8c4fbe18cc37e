// Dispatch's schedules: when live leases expire and which offers wait for a lender, kept current as actors change;
// and the change budget its steps (and the chain follower's lease time-outs) take from one command.
import { dropScanMark } from './book.ts'
import { seqOf } from './keys.ts'
import type { EngineConfig } from './config.ts'
import type { EngineState, LeaseActor, OfferActor, OfferSnapshot } from './state.ts'
import { leaseOverAtChainMs, type LeaseInput } from '../../machines/index.ts'
import type { IndexedMinHeap } from './schedule.ts'

/** A scheduled lease or offer: when it is due and its id's sequence, the tie-break that keeps the order deterministic. */
export interface Due {
  id: string
  seq: number
  atMs: number
}

export const dueId = (d: Due): string => d.id
export const bySeq = (a: Due, b: Due): number => a.seq - b.seq

/**
 * An offer is in dispatch's waiting schedules exactly while it waits for a lender (state offered, not final): the
 * waiting list by sequence, and its network's expiry schedule (its TTL runs on that network's chain time).
 */
export function scheduleOffer(s: EngineState, snap: OfferSnapshot): void {
  const o = snap.context
  // The offer machine is flat: its state value is the state's name (a string compare, not matches()'s path walk).
  const waiting = snap.status === 'active' && snap.value === 'offered'
  if (waiting === s.waitingOffers.has(o.offerId)) return
  if (waiting) {
    const due: Due = { id: o.offerId, seq: seqOf(o.offerId), atMs: o.expiresAtMs }
    s.waitingOffers.push(due)
    s.offerSchedule(o.network).push(due)
  } else {
    s.waitingOffers.delete(o.offerId)
    s.offerExpiries.get(o.network)?.delete(o.offerId)
    // Leased or ended: its walk's resume mark goes (matching.ts walkBook); an offer back from a lease starts afresh.
    if (s.scanMarks.size > 0) dropScanMark(s.scanMarks, o.offerId)
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

/** The network's live lease that is over first, when its observed chain time is past that lease's deadline. */
export function dueLease(s: EngineState, network: string): LeaseActor | undefined {
  return dueLeaseOf(s, s.leaseExpiries.get(network), chainTimeOf(s, network))
}

/**
 * dueLease with the network's lease schedule and observed chain time already read: a pass of time-outs reads them
 * once (neither changes during it; dueLease's own CPU was about 1.5 % of a time-out's, bench/dispatch.ts's profile).
 */
export function dueLeaseOf(s: EngineState, schedule: IndexedMinHeap<Due> | undefined, chainTimeMs: number | undefined): LeaseActor | undefined {
  const next = schedule?.peek()
  if (chainTimeMs === undefined || next === undefined || next.atMs > chainTimeMs) return undefined
  return s.leases.get(next.id) as LeaseActor
}

/**
 * Whether a lease or an offer is due on any network: a peek at each schedule, O(networks), so the dispatch ticker
 * can ask after every call.
 */
export function timersDue(s: EngineState, nowMs: number): boolean {
  for (const network of s.leaseExpiries.keys()) if (dueLease(s, network)) return true
  for (const [network, schedule] of s.offerExpiries) {
    const next = schedule.peek()
    if (next !== undefined && next.atMs <= networkClockMs(s, network, nowMs)) return true
  }
  return false
}

/**
 * The dispatch backlog's age: how long, on its network's clock, the oldest lease or offer that is due has been due
 * (0 when none is). A peek at each schedule, O(networks), like timersDue.
 */
export function oldestOverdueMs(s: EngineState, nowMs: number): number {
  let overdueMs = 0
  for (const [network, schedule] of s.leaseExpiries) {
    const next = schedule.peek()
    const chainTimeMs = chainTimeOf(s, network)
    if (next !== undefined && chainTimeMs !== undefined && next.atMs <= chainTimeMs) overdueMs = Math.max(overdueMs, chainTimeMs - next.atMs)
  }
  for (const [network, schedule] of s.offerExpiries) {
    const next = schedule.peek()
    const clockMs = networkClockMs(s, network, nowMs)
    if (next !== undefined && next.atMs <= clockMs) overdueMs = Math.max(overdueMs, clockMs - next.atMs)
  }
  return overdueMs
}

/**
 * How many leases and offers are due now (for a bench's reading, not for the ticker: it walks every due item, at
 * most `max` of each kind).
 */
export function dueCounts(s: EngineState, nowMs: number, max: number): { leases: number; offers: number } {
  let leases = 0
  let offers = 0
  for (const [network, schedule] of s.leaseExpiries) {
    const chainTimeMs = chainTimeOf(s, network)
    if (chainTimeMs === undefined) continue
    for (const d of schedule.ascending()) {
      if (d.atMs > chainTimeMs || leases >= max) break
      leases += 1
    }
  }
  for (const [network, schedule] of s.offerExpiries) {
    const clockMs = networkClockMs(s, network, nowMs)
    for (const d of schedule.ascending()) {
      if (d.atMs > clockMs || offers >= max) break
      offers += 1
    }
  }
  return { leases, offers }
}

/**
 * What a command's timer steps ended: counted (the per-command bounds read the count) and, for a caller that shows
 * them (POST /credit/dispatch, a follower's batch), viewed; `views` is null for the ticker, which shows nothing.
 */
export interface Ended<V> {
  count: number
  views: V[] | null
}

export function ended<V>(withViews: boolean): Ended<V> {
  return { count: 0, views: withViews ? [] : null }
}

// The changes one step of dispatch or of the follower's batch may add to its command (an actor or record counts
// once per command, however often it is touched). A command takes a step only while the step's most still fits in
// changesPerCommandMax (`roomFor`), so no command makes more changes than the store takes in one commit.

/**
 * A lease's time-out (leases.ts timeOutLease): the lease, its offer, its lender, and the offer's source (a job or a
 * backing source) when the offer ends with it (closing, or past its TTL).
 */
export const LEASE_TIME_OUT_CHANGES_MAX = 4
/** A stale offer's expiry (matching.ts expireOffer): the offer and its source. */
export const OFFER_EXPIRY_CHANGES_MAX = 2
/** A suspension's lift (borrowers.ts liftDueSuspensions): the borrower's record. */
export const SUSPENSION_LIFT_CHANGES_MAX = 1
/** The record writes of a lift's passport event, which the service writes in the same commit (src/passport/book.ts). */
export const SUSPENSION_LIFT_RECORD_WRITES = 2

/**
 * One matching attempt (matching.ts leaseToBestLender): a lease born expired for each lender whose wallet cannot pay
 * (at most the lenders it scans), then the offer, the engine's id sequences (meta), and the granted lease with its
 * lender, or the offer's source when the offer expires instead.
 */
export function matchChangesMax(config: Pick<EngineConfig, 'lendersScannedPerMatchMax'>): number {
  return config.lendersScannedPerMatchMax + 4
}

/** Whether the running command may take one more step that adds at most `stepChangesMax` changes. */
export function roomFor(s: EngineState, stepChangesMax: number): boolean {
  return s.pending.size + stepChangesMax <= s.config.changesPerCommandMax
}

/**
 * Whether the running command may lift one more suspension after `liftedBefore`: its change, and its passport event's
 * record writes, which the store bounds per commit as it bounds changes (RECORD_WRITES_PER_COMMIT_MAX, the same
 * number as CHANGES_PER_COMMIT_MAX_DEFAULT): the change budget bounds them too.
 */
export function roomForLift(s: EngineState, liftedBefore: number): boolean {
  return roomFor(s, SUSPENSION_LIFT_CHANGES_MAX) && (liftedBefore + 1) * SUSPENSION_LIFT_RECORD_WRITES <= s.config.changesPerCommandMax
}

/**
 * The waiting offers dispatch acts on, in creation sequence: the stale ones (each expires), at most as many as one
 * command has changes for (the first ones due of each network), and the first offersDispatchedPerCallMax of the
 * others (each is matched). No dispatch step moves another offer into or out of the waiting state, so the list is
 * fixed before the first one is acted on; dispatch stops where its change budget does, and the next call goes on.
 * While more offers are stale than one command may expire, none is matched: the stale ones come first, as every other
 * step's work is done before the next step's, and the walk for matches would visit every waiting offer, the stale
 * backlog included (after a burst of lease time-outs, thousands), in each of the calls that expire it. An offer of
 * a network in `unobserved` is not matched (Engine.dispatch); its expiry runs on that network's chain time as ever.
 */
export function offersToDispatch(s: EngineState, nowMs: number, unobserved: ReadonlySet<string>): { offer: OfferActor; due: boolean }[] {
  const chosen: Due[] = []
  // Each expiry changes at least its offer: no command expires more than changesPerCommandMax of them, nor more than
  // timeOutsPerCommandMax (a burst of offers stale in the same second is spread over the ticker's next turns).
  const staleMax = Math.min(s.config.changesPerCommandMax, s.config.timeOutsPerCommandMax)
  let staleLeft = false
  for (const [network, schedule] of s.offerExpiries) {
    const clockMs = networkClockMs(s, network, nowMs)
    for (const d of schedule.ascending()) {
      if (d.atMs > clockMs) break
      if (chosen.length >= staleMax) {
        staleLeft = true
        break
      }
      chosen.push(d)
    }
  }
  const stale = new Set(chosen.map(dueId))
  if (!staleLeft) {
    let matchable = 0
    for (const d of s.waitingOffers.ascending()) {
      if (matchable >= s.config.offersDispatchedPerCallMax) break
      if (stale.has(d.id)) continue
      // Passed over, not counted: the walk visits each waiting offer of an unobserved network once per call (only
      // while one is unobserved), so that the other networks' offers are matched as before.
      if (unobserved.size > 0 && unobserved.has((s.offers.get(d.id) as OfferActor).getSnapshot().context.network)) continue
      chosen.push(d)
      matchable += 1
    }
  }
  // The stale ones came per network in expiry order; dispatch acts in creation sequence, as the lease timeouts left them.
  if (stale.size > 0) chosen.sort(bySeq)
  return chosen.map((d) => ({ offer: s.offers.get(d.id) as OfferActor, due: stale.has(d.id) }))
}
