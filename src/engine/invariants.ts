// The engine's invariants (DESIGN section 4): liquidity adds up, reservations match live leases, capacity matches
// what offers and advances hold, indexes and schedules agree with the actors. `checkInvariants` throws on the first
// that does not hold.
import { leaseOverAtChainMs, type SourceRef } from '../../machines/index.ts'
import type { MatchingBook } from './book.ts'
import { advanceCommitmentAtomic, offerCommitmentAtomic } from './capacity.ts'
import { outstandingAtomic } from './ledger.ts'
import { isBps, seqOf, walletKey } from './keys.ts'
import { principalRepaidAtomic } from './rules.ts'
import type { EngineState } from './state.ts'
import type { Address } from './types.ts'

/** Throws when any money or lifecycle invariant of DESIGN section 4 does not hold. */
export function checkInvariants(s: EngineState): void {
  if (s.lenderOrder.length !== s.lenders.size || s.sourceOrder.length !== s.sources.size) throw new Error('invariant: registration order out of step with the records')
  const { reservedByLender, reservedByWallet } = checkLeases(s)
  checkSchedules(s)
  const walletReserved = s.walletReserved.byWalletKey()
  if (reservedByWallet.size !== walletReserved.size || [...reservedByWallet].some(([k, v]) => walletReserved.get(k) !== v)) {
    throw new Error('invariant: the per-wallet reservations differ from the live leases')
  }
  const committed = new Map<string, bigint>()
  const addCommitted = (src: SourceRef, amount: bigint): void => {
    const key = `${src.kind}:${src.id}`
    committed.set(key, (committed.get(key) ?? 0n) + amount)
  }
  checkOffers(s, addCommitted)
  const deployedByLender = checkAdvances(s, addCommitted)
  checkLenders(s, reservedByLender, deployedByLender)
  checkSources(s, committed)
  checkBorrowersAndBooks(s)
}

/** Each live lease is its offer's current one and in its lender's index; what they reserve, by lender and wallet. */
function checkLeases(s: EngineState): { reservedByLender: Map<Address, bigint>; reservedByWallet: Map<string, bigint> } {
  const reservedByLender = new Map<Address, bigint>()
  const leasesByOffer = new Map<string, number>()
  const reservedByWallet = new Map<string, bigint>()
  for (const [id, lease] of s.leases) {
    const snap = lease.getSnapshot()
    if (!snap.matches('leased')) throw new Error(`invariant: lease ${id} is final but still in memory`)
    const l = snap.context
    reservedByLender.set(l.lender, (reservedByLender.get(l.lender) ?? 0n) + l.amountAtomic)
    const wallet = walletKey(l.lender, l.network, l.asset)
    reservedByWallet.set(wallet, (reservedByWallet.get(wallet) ?? 0n) + l.amountAtomic)
    leasesByOffer.set(l.offerId, (leasesByOffer.get(l.offerId) ?? 0) + 1)
    const offer = s.offers.get(l.offerId)
    if (!offer || offer.getSnapshot().context.currentLeaseId !== id) throw new Error(`invariant: live lease ${id} is not its offer's current lease`)
    if (!s.liveLeasesByLender.get(l.lender)?.has(id)) throw new Error(`invariant: lease ${id} missing from its lender's index`)
  }
  for (const [id, count] of leasesByOffer) if (count > 1) throw new Error(`invariant: offer ${id} has ${count} live leases`)
  return { reservedByLender, reservedByWallet }
}

function checkOffers(s: EngineState, addCommitted: (src: SourceRef, amount: bigint) => void): void {
  for (const [id, offer] of s.offers) {
    const snap = offer.getSnapshot()
    const o = snap.context
    if (snap.status !== 'active') throw new Error(`invariant: offer ${id} is final but still in memory`)
    if ((snap.matches('leased') || snap.matches('closing')) !== (o.currentLeaseId !== null && s.leases.has(o.currentLeaseId))) {
      throw new Error(`invariant: offer ${id} state ${String(snap.value)} disagrees with its lease`)
    }
    if (o.leaseIds.length > s.config.leasesPerOfferMax) throw new Error(`invariant: offer ${id} exceeded leasesPerOfferMax`)
    addCommitted(o.source, offerCommitmentAtomic(o))
  }
}

function checkAdvances(s: EngineState, addCommitted: (src: SourceRef, amount: bigint) => void): Map<Address, bigint> {
  const deployedByLender = new Map<Address, bigint>()
  for (const [id, advance] of s.advances) {
    const snap = advance.getSnapshot()
    const a = snap.context
    if (snap.status !== 'active') throw new Error(`invariant: advance ${id} is final but still in memory`)
    if (!a.payment || !/^0x[0-9a-fA-F]{64}$/.test(a.payment.txHash)) throw new Error(`invariant: advance ${id} has no verified payment`)
    if (s.leases.has(a.leaseId) || s.offers.has(a.offerId)) throw new Error(`invariant: advance ${id} while its lease or offer is live`)
    if (a.lenderOwedAtomic < 0n || a.reserveOwedAtomic < 0n || a.lenderOwedAtomic + a.reserveOwedAtomic === 0n) {
      throw new Error(`invariant: advance ${id} is live but owes ${a.lenderOwedAtomic} + ${a.reserveOwedAtomic}`)
    }
    // A shortfall advance was closed on its source and left the lender's deployed capital at its liquidation.
    if (a.recovery !== null) {
      if (!snap.matches('shortfall')) throw new Error(`invariant: advance ${id} was liquidated but is ${String(snap.value)}`)
      continue
    }
    // A partial repayment returned principal first: the lender's deployed capital is what is not back yet.
    deployedByLender.set(a.lender, (deployedByLender.get(a.lender) ?? 0n) + a.principalAtomic - principalRepaidAtomic(a))
    addCommitted(a.source, advanceCommitmentAtomic(a))
  }
  return deployedByLender
}

function checkLenders(s: EngineState, reservedByLender: Map<Address, bigint>, deployedByLender: Map<Address, bigint>): void {
  for (const l of s.lenders.values()) {
    if (l.availableAtomic < 0n || l.reservedAtomic < 0n || l.deployedAtomic < 0n || l.withdrawnAtomic < 0n || l.withdrawalPendingAtomic < 0n) {
      throw new Error(`invariant: negative liquidity of ${l.address}`)
    }
    // What is withdrawn but still lent is part of reserved + deployed; it leaves them as it comes back.
    if (l.withdrawalPendingAtomic > outstandingAtomic(l)) throw new Error(`invariant: pending withdrawal of ${l.address} exceeds what may come back to it`)
    if (l.availableAtomic + l.reservedAtomic + l.deployedAtomic !== l.registeredAtomic + l.feesEarnedAtomic - l.lossesAtomic - l.withdrawnAtomic) {
      throw new Error(`invariant: liquidity of ${l.address} does not add up`)
    }
    if (l.reservedAtomic !== (reservedByLender.get(l.address) ?? 0n)) throw new Error(`invariant: reserved of ${l.address} != its live leases`)
    if (l.deployedAtomic !== (deployedByLender.get(l.address) ?? 0n)) throw new Error(`invariant: deployed of ${l.address} != its open advances`)
    if (!isBps(l.reputationBps) || !isBps(l.reliabilityBps)) throw new Error(`invariant: reputation of ${l.address} out of range`)
  }
}

/** Jobs and backing sources hold exactly the capacity their live offers and open advances committed. */
function checkSources(s: EngineState, committed: Map<string, bigint>): void {
  for (const [id, job] of s.jobs) {
    const j = job.getSnapshot().context
    if (j.committedAtomic !== (committed.get(`job:${id}`) ?? 0n)) throw new Error(`invariant: job ${id} committed capacity mismatch`)
    if (j.revenueUsedAtomic > j.receivableAtomic || j.collateralUsedAtomic > j.collateralAtomic) throw new Error(`invariant: job ${id} over-used`)
    for (const advanceId of j.advanceIds) if (!s.advances.has(advanceId)) throw new Error(`invariant: job ${id} lists closed advance ${advanceId}`)
  }
  let indexed = 0
  for (const [id, ids] of s.advanceIdsOfBacking) {
    for (const advanceId of ids) {
      const source = s.advances.get(advanceId)?.getSnapshot().context.source
      if (source?.kind !== 'backing' || source.id !== id) throw new Error(`invariant: backing source ${id} lists advance ${advanceId}, not a live one of it`)
    }
    indexed += ids.size
  }
  let onBacking = 0
  for (const advance of s.advances.values()) if (advance.getSnapshot().context.source.kind === 'backing') onBacking += 1
  if (indexed !== onBacking) throw new Error(`invariant: ${onBacking} live advances on backing sources, ${indexed} listed by them`)
  for (const [id, src] of s.sources) {
    if (src.committedAtomic !== (committed.get(`backing:${id}`) ?? 0n)) throw new Error(`invariant: source ${id} committed capacity mismatch`)
    if (src.backingUsedAtomic > src.liquidationValueAtomic) throw new Error(`invariant: source ${id} backing over-used`)
  }
  for (const r of s.reserves.values()) {
    if (r.balanceAtomic < 0n || r.balanceAtomic !== r.fundedAtomic - r.paidOutAtomic) throw new Error(`invariant: reserve ${r.network}/${r.asset} does not add up`)
  }
}

/** Borrower scores in range, live offers counted per borrower, book entries current and in every book unless (partly) parked. */
function checkBorrowersAndBooks(s: EngineState): void {
  for (const b of s.borrowers.values()) if (!isBps(b.reputationBps)) throw new Error(`invariant: reputation of ${b.address} out of range`)
  const offersOf = new Map<Address, string[]>()
  const offeredOn = new Map<string, bigint>()
  for (const offer of s.offers.values()) {
    const o = offer.getSnapshot().context
    const ids = offersOf.get(o.borrower)
    if (ids === undefined) offersOf.set(o.borrower, [o.offerId])
    else ids.push(o.offerId)
    if (o.source.kind !== 'job') continue
    const key = walletKey(o.borrower, o.network, o.asset)
    offeredOn.set(key, (offeredOn.get(key) ?? 0n) + o.amountAtomic)
  }
  // The same ids, and in creation order (the order a borrower at its limit ends its stale ones in: stale-offers.ts).
  const bySeq = (a: string, b: string) => seqOf(a) - seqOf(b)
  if (offersOf.size !== s.liveOffersOf.size || [...offersOf].some(([b, ids]) => String([...(s.liveOffersOf.get(b) ?? [])]) !== String(ids.sort(bySeq)))) {
    throw new Error('invariant: live offers per borrower are miscounted')
  }
  const receivableOffered = s.receivableOffered.byWalletKey()
  if (offeredOn.size !== receivableOffered.size || [...offeredOn].some(([key, n]) => receivableOffered.get(key) !== n)) {
    throw new Error('invariant: what live offers on jobs ask is miscounted')
  }
  for (const [address, { entry, books }] of s.bookEntries) {
    if (entry.lender !== s.lenders.get(address)) throw new Error(`invariant: book entry of ${address} is stale`)
    if (entry.availableAtomic !== entry.lender.availableAtomic || entry.reputationBps !== entry.lender.reputationBps) {
      throw new Error(`invariant: book key of ${address} is stale`)
    }
    const all = entry.lender.networks.length
    const placed = s.parked.has(address) ? books.length === 0 : s.partlyParked.has(address) ? books.length > 0 && books.length < all : books.length === all
    if (!placed) throw new Error(`invariant: ${address} is not in each of its books, or parked and in one, or partly parked and in all or none`)
  }
}

/**
 * Dispatch's schedules hold exactly the live leases at their expiry and the live offers waiting for a lender; scan marks
 * (matching.ts walkBook) belong to waiting offers only.
 */
function checkSchedules(s: EngineState): void {
  let scheduled = 0
  for (const [network, schedule] of s.leaseExpiries) {
    schedule.check(`lease expiry schedule of ${network}`)
    scheduled += schedule.size
  }
  let offersScheduled = 0
  for (const [network, schedule] of s.offerExpiries) {
    schedule.check(`offer expiry schedule of ${network}`)
    offersScheduled += schedule.size
  }
  s.waitingOffers.check('waiting offers')
  if (scheduled !== s.leases.size) throw new Error('invariant: the lease expiry schedules differ from the live leases')
  for (const [id, lease] of s.leases) {
    const l = lease.getSnapshot().context
    const due = s.leaseExpiries.get(l.network)?.get(id)
    if (!due || due.atMs !== leaseOverAtChainMs(l.expiresAtMs) || due.seq !== seqOf(id)) {
      throw new Error(`invariant: lease ${id} is not scheduled at its expiry`)
    }
  }
  let waiting = 0
  for (const [id, offer] of s.offers) {
    const snap = offer.getSnapshot()
    if (!snap.matches('offered')) continue
    waiting += 1
    const due = s.offerExpiries.get(snap.context.network)?.get(id)
    if (!s.waitingOffers.has(id) || !due || due.atMs !== snap.context.expiresAtMs || due.seq !== seqOf(id)) {
      throw new Error(`invariant: waiting offer ${id} is not scheduled at its expiry`)
    }
  }
  if (s.waitingOffers.size !== waiting || offersScheduled !== waiting) {
    throw new Error('invariant: the waiting-offer schedules hold offers that are not waiting for a lender')
  }
  const marksPerBook = new Map<MatchingBook, number>()
  for (const [id, mark] of s.scanMarks) {
    if (!s.waitingOffers.has(id)) throw new Error(`invariant: offer ${id} keeps a scan mark but is not waiting for a lender`)
    marksPerBook.set(mark.book, (marksPerBook.get(mark.book) ?? 0) + 1)
  }
  for (const book of s.books.values()) {
    if (book.marks !== (marksPerBook.get(book) ?? 0)) throw new Error('invariant: a book counts other scan marks than the offers hold')
  }
}
