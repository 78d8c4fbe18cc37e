// The engine's memory: live actors, records, their indexes and dispatch's schedules, in one object that the
// engine's modules read and change (one writer: only the running command touches it).
import type { Actor, AnyActorRef } from 'xstate'
import type { advanceMachine, jobMachine, leaseMachine, offerMachine } from '../../machines/index.ts'
import { actorRoot } from './actors.ts'
import type { BookEntry, BookKey, MatchingBook, ScanMark } from './book.ts'
import { PendingChanges } from './changes.ts'
import type { EngineConfig } from './config.ts'
import type { Due } from './dispatch.ts'
import type { OfferKeyOf, WalletView } from './ports.ts'
import { walletKey } from './keys.ts'
import { IndexedMinHeap } from './schedule.ts'
import type { ActorKind, Address, BorrowerRecord, Change, HeldPaymentRecord, LenderRecord, MetaRecord, ReserveRecord, SourceRecord, SupplierRecord } from './types.ts'

export type JobActor = Actor<typeof jobMachine>
export type OfferActor = Actor<typeof offerMachine>
export type LeaseActor = Actor<typeof leaseMachine>
export type AdvanceActor = Actor<typeof advanceMachine>
export type OfferSnapshot = ReturnType<OfferActor['getSnapshot']>
export type AnyLive = JobActor | OfferActor | LeaseActor | AdvanceActor

/**
 * A change the running command made: resolved to its record when the command drains (or already final); `born` for
 * an actor the command started (changes.ts touchBorn).
 */
export type Pending = Change | { kind: Change['kind']; id: string; born?: true }

/**
 * Amounts per address, network and asset (a lender's session wallet's reservations, a borrower's offers on jobs), in
 * nested maps so a lookup builds no key (a `walletKey` string was about 0.33 µs per lender matching scanned, issue 11).
 * Absent reads 0; an amount that comes back to 0 leaves, with its address's maps once they are empty.
 */
export class WalletAmounts {
  private readonly byLender = new Map<string, Map<string, Map<string, bigint>>>()

  get(lender: string, network: string, asset: string): bigint {
    return this.byLender.get(lender)?.get(network)?.get(asset) ?? 0n
  }

  add(lender: string, network: string, asset: string, delta: bigint): void {
    let networks = this.byLender.get(lender)
    if (networks === undefined) this.byLender.set(lender, (networks = new Map()))
    let assets = networks.get(network)
    if (assets === undefined) networks.set(network, (assets = new Map()))
    const amount = (assets.get(asset) ?? 0n) + delta
    if (amount !== 0n) {
      assets.set(asset, amount)
      return
    }
    assets.delete(asset)
    if (assets.size === 0) networks.delete(network)
    if (networks.size === 0) this.byLender.delete(lender)
  }

  /** Every wallet's amount by its `walletKey` (keys.ts), for the invariants. */
  byWalletKey(): Map<string, bigint> {
    const out = new Map<string, bigint>()
    for (const [lender, networks] of this.byLender) {
      for (const [network, assets] of networks) for (const [asset, amount] of assets) out.set(walletKey(lender, network, asset), amount)
    }
    return out
  }
}

export class EngineState {
  meta: MetaRecord = { offerSeq: 0, leaseSeq: 0, advanceSeq: 0, lenderSeq: 0, sourceSeq: 0 }
  readonly lenders = new Map<Address, LenderRecord>()
  readonly lenderBySession = new Map<Address, Address>()
  readonly sources = new Map<string, SourceRecord>()
  // Registration order, for paged lists: lenders and sources are only ever added, in sequence order.
  readonly lenderOrder: Address[] = []
  readonly sourceOrder: string[] = []
  readonly borrowers = new Map<Address, BorrowerRecord>()
  readonly reserves = new Map<string, ReserveRecord>()
  /** The supplier directory by domain, removed entries included (src/engine/suppliers.ts). */
  readonly suppliers = new Map<string, SupplierRecord>()
  /** What the credit contracts hold for refused recipients, by heldPaymentId (src/engine/chain-facts.ts applyHeldFact). */
  readonly heldPayments = new Map<string, HeldPaymentRecord>()
  /** The ids of heldPayments per recipient, for its views. */
  readonly heldPaymentIdsOf = new Map<Address, string[]>()

  // Live actors. Ids are minted in increasing sequence and restored in that order, so iteration order is the same
  // in a fresh and in a restored engine.
  readonly jobs = new Map<string, JobActor>()
  readonly offers = new Map<string, OfferActor>()
  readonly leases = new Map<string, LeaseActor>()
  readonly advances = new Map<string, AdvanceActor>()
  /** The parent of every live actor above: one XState system for all of them (actors.ts actorRoot says why). */
  readonly actorRoot: AnyActorRef = actorRoot()

  readonly books = new Map<string, MatchingBook>()
  readonly bookEntries = new Map<Address, { entry: BookEntry; books: MatchingBook[] }>()
  /**
   * Lenders out of every book (issue 10, hole 2) until the wallet watcher reports their session wallet changed
   * (`walletChanged`): registered but never seen funded, or refused for insufficient balance in its only book left. So a lender who
   * risks nothing costs matching nothing. In memory only: after a restart every lender starts parked and the
   * watcher's first read of its wallet brings the funded ones back.
   */
  readonly parked = new Set<Address>()
  /**
   * Lenders out of some of their books only: refused for insufficient balance on one network (matching.ts parkIn), or
   * entering their books while their wallet held the least advance on some networks only (enterFundedBooks); back in
   * those whose least advance their wallet holds when it changes. In memory only, as `parked`.
   */
  readonly partlyParked = new Set<Address>()
  /**
   * Per waiting offer whose last walk reached lendersScannedPerMatchMax without a lender: the book key of the last
   * entry it scanned, so its next walk starts after it (matching.ts walkBook) and lenders no offer can use cannot fill
   * the bound at every walk; its book notes the entries that enter it ahead since (book.ts `enteredSince`), and the
   * next walk looks at those first. Set only then; cleared by a walk that ends otherwise, dropped when the offer stops
   * waiting (dispatch.ts scheduleOffer, book.ts dropScanMark). In memory only, as `parked`: a restart starts every
   * walk at the front.
   */
  readonly scanMarks = new Map<string, ScanMark>()
  /**
   * Where the last walk started (matching.ts walkBook): after the scan mark `walkedFrom` of offer `walkedOffer`, looking
   * first at `walkedAhead`; `walkedFrom` null: at the book's front. Read by whyNoLease right after a walk without a
   * lease, to count the lenders that walk looked at.
   */
  walkedOffer: string | null = null
  walkedFrom: BookKey | null = null
  walkedAhead: readonly BookEntry[] = []
  /**
   * The ids of each borrower's live offers, in creation order (issue 10, hole 6: their count is bounded by
   * liveOffersPerBorrowerMax). A borrower at the bound has its own stale ones ended by its request (stale-offers.ts).
   */
  readonly liveOffersOf = new Map<Address, Set<string>>()
  /**
   * What a borrower's live offers on jobs ask, per borrower, network and asset: owed on receivables once funded, so
   * underwriting counts it with what its advances owe (underwriting.ts). Kept with liveOffersOf.
   */
  readonly receivableOffered = new WalletAmounts()
  /** Suspended borrowers, for dispatch to lift those due (a small set: only borrowers of failed jobs). */
  readonly suspended = new Set<Address>()
  readonly liveLeasesByLender = new Map<Address, Set<string>>()
  /**
   * Principal of the live leases per (lender, network, asset): what the lender's session wallet has already promised.
   * Matching reads it in O(1) instead of walking the lender's live leases, whose number grows with rate x TTL.
   */
  readonly walletReserved = new WalletAmounts()
  /**
   * Timers of dispatch, so that a call touches only what is due plus at most offersDispatchedPerCallMax waiting
   * offers, instead of every live lease and offer (their number grows with rate x TTL). Live leases, one schedule
   * per network, by the chain time their deadline is over at (leaseOverAtChainMs, then lease sequence: the order
   * they expire in; a network whose chain is not observed holds its own leases only); offers
   * waiting for a lender (state offered) by expiresAtMs, and by creation sequence (the order dispatch matches them
   * in). Kept current where leases start and end (addLiveLease, dropLiveLease in leases.ts) and offers change
   * (scheduleOffer in dispatch.ts, called by every accepted send).
   */
  readonly leaseExpiries = new Map<string, IndexedMinHeap<Due>>()
  /** Waiting offers by TTL deadline, per network: each runs on its network's chain time. */
  readonly offerExpiries = new Map<string, IndexedMinHeap<Due>>()
  readonly waitingOffers = new IndexedMinHeap<Due>('seq')
  /** Live offers by their on-chain key: a SupplierPaid names the offer by its key (src/engine/chain-facts.ts). */
  readonly offerIdByKey = new Map<string, string>()
  /** Live advances by their on-chain key (the offer's key): a Repaid names the advance by it. */
  readonly advanceIdByKey = new Map<string, string>()
  /**
   * The live advances drawn on each backing source (a job lists its own, advanceIds; in no set order: a restore adds
   * them in the store's key order, and seniorLiquidations sorts by offer): a liquidation looks
   * for the source's older advances among them (liquidation.ts seniorLiquidations), not among every live advance
   * (about 0.3 µs each: 30 ms of a request at 100,000, which a lender whose liquidation keeps failing could repeat;
   * review32). Kept where advances open (advances.ts), are restored (snapshots.ts) and are evicted (actors.ts).
   */
  readonly advanceIdsOfBacking = new Map<string, Set<string>>()
  /**
   * Live jobs by their on-chain key (the one each was funded under, JobContext.jobKey, lower case): a CollateralPosted
   * names the job by it. Built at the first lookup (jobs.ts jobIdOfKey) from the restored jobs' keys; kept current from then on.
   */
  jobIdByKey: Map<string, string> | undefined = undefined

  /** What the running command changed, in order; resolved to Changes when the command drains (changes.ts). */
  readonly pending = new PendingChanges()

  /** `offerKeyOf` gives each new offer its on-chain key (ports.ts OfferKeyOf). */
  constructor(readonly config: EngineConfig, readonly wallets: WalletView, readonly offerKeyOf: OfferKeyOf) {}

  /** The live actors of one kind. */
  actorMap(kind: ActorKind): Map<string, AnyLive> {
    switch (kind) {
      case 'job': return this.jobs as Map<string, AnyLive>
      case 'offer': return this.offers as Map<string, AnyLive>
      case 'lease': return this.leases as Map<string, AnyLive>
      case 'advance': return this.advances as Map<string, AnyLive>
    }
  }

  /** Notes a live advance on its backing source (advanceIdsOfBacking); one on a job is not noted. */
  backingAdvanceOpened(source: { kind: string; id: string }, advanceId: string): void {
    if (source.kind !== 'backing') return
    let ids = this.advanceIdsOfBacking.get(source.id)
    if (ids === undefined) this.advanceIdsOfBacking.set(source.id, (ids = new Set()))
    ids.add(advanceId)
  }

  /** Forgets an evicted advance on its backing source, with the source's set once it is empty. */
  backingAdvanceClosed(source: { kind: string; id: string }, advanceId: string): void {
    const ids = source.kind === 'backing' ? this.advanceIdsOfBacking.get(source.id) : undefined
    if (ids === undefined) return
    ids.delete(advanceId)
    if (ids.size === 0) this.advanceIdsOfBacking.delete(source.id)
  }

  /** The lease expiry schedule of one network, made on first use. */
  offerSchedule(network: string): IndexedMinHeap<Due> {
    let schedule = this.offerExpiries.get(network)
    if (!schedule) this.offerExpiries.set(network, (schedule = new IndexedMinHeap<Due>('due')))
    return schedule
  }

  leaseSchedule(network: string): IndexedMinHeap<Due> {
    let schedule = this.leaseExpiries.get(network)
    if (!schedule) this.leaseExpiries.set(network, (schedule = new IndexedMinHeap<Due>('due')))
    return schedule
  }

  actorMaps(): [ActorKind, Map<string, AnyLive>][] {
    return (['job', 'offer', 'lease', 'advance'] as const).map((k) => [k, this.actorMap(k)])
  }
}
