// Matching: the books of lenders per network and asset (lenders parked out of them while their wallet is empty),
// the walk that picks the cheapest eligible lender, and one attempt to lease an offer; offers ending unmatched.
import { offerRefusals, type OfferContext } from '../../machines/index.ts'
import { expect, send, type Refusal } from './actors.ts'
import { compareEntries, dropScanMark, entryFor, MatchingBook, type BookEntry, type ScanMark } from './book.ts'
import { leastAdvanceAtomic } from './config.ts'
import { offerCommitmentAtomic, releaseCapacity } from './capacity.ts'
import { ID_PREFIXES } from './ids.ts'
import { leaseDeadlineBaseMs, networkClockMs } from './dispatch.ts'
import { bookKey } from './keys.ts'
import { recordFinal } from './changes.ts'
import { grantLease, refuseLease } from './leases.ts'
import { eligibleFee, feeAtomic, leaseAllowance, screenLender } from './rules.ts'
import { offerCreditUntilMs } from './underwriting.ts'
import type { EngineState, OfferActor } from './state.ts'
import type { Address, LeaseView, LenderRecord, LendersPassedOver, MatchOutcome, NoLease, NoLeaseReason } from './types.ts'
import { offerView, walletFreeAtomic } from './views.ts'

/** A lender one matching attempt leases to, and its fee. */
interface Candidate {
  lender: LenderRecord
  fee: bigint
}

/**
 * A registered (or restored) lender enters the registry parked, and its books at once if its wallet holds the least
 * advance on one of its networks (walletFunded).
 */
export function addLender(s: EngineState, lender: LenderRecord): void {
  s.lenders.set(lender.address, lender)
  s.lenderOrder.push(lender.address)
  s.lenderBySession.set(lender.sessionAddress, lender.address)
  s.bookEntries.set(lender.address, { entry: entryFor(lender), books: [] })
  s.parked.add(lender.address)
  if (walletFunded(s, lender)) unpark(s, lender)
}

/**
 * Whether the lender has done nothing but register: never leased, nothing reserved, lent or earned, no withdrawal
 * pending. Only such a lender may be removed (removeLenders): nothing of it is in any lease or advance, and the totals
 * are sums over the lenders there are. What it withdrew does not count: a withdrawal only lowers what the service may
 * lend (no chain transaction, free), so counting it let a script keep free registrations for ever.
 */
export function isUntouchedLender(s: EngineState, lender: LenderRecord): boolean {
  return (
    lender.leasesGranted === 0 &&
    lender.reservedAtomic === 0n &&
    lender.deployedAtomic === 0n &&
    lender.feesEarnedAtomic === 0n &&
    lender.withdrawalPendingAtomic === 0n &&
    (s.liveLeasesByLender.get(lender.address)?.size ?? 0) === 0
  )
}

/**
 * An untouched lender (isUntouchedLender) takes a new session wallet in place of its old one: out of its books, then
 * back in at once if the new wallet already holds the least advance (a new key's wallet seldom does). The old wallet
 * is no longer the lender's: nothing of it is in a lease or advance.
 */
export function replaceSession(s: EngineState, lender: LenderRecord, sessionAddress: Address): void {
  park(s, lender)
  s.lenderBySession.delete(lender.sessionAddress)
  lender.sessionAddress = sessionAddress
  s.lenderBySession.set(sessionAddress, lender.address)
  if (walletFunded(s, lender)) unpark(s, lender)
}

/**
 * Removes untouched lenders (isUntouchedLender; the others are left as they are) from the registry, their books and
 * indexes, each with a change that deletes its record; returns the removed addresses. The registration order is
 * rebuilt once for the batch: O(lenders), so callers remove in batches, not one by one.
 */
export function removeLenders(s: EngineState, addresses: readonly Address[]): Address[] {
  const removed: Address[] = []
  for (const address of addresses) {
    const lender = s.lenders.get(address)
    if (lender === undefined || !isUntouchedLender(s, lender)) continue
    park(s, lender)
    s.parked.delete(address)
    s.bookEntries.delete(address)
    s.lenderBySession.delete(lender.sessionAddress)
    s.liveLeasesByLender.delete(address)
    s.lenders.delete(address)
    recordFinal(s, { kind: 'lender', id: address, record: null, final: false, removed: true })
    removed.push(address)
  }
  if (removed.length > 0) {
    let kept = 0
    for (const address of s.lenderOrder) if (s.lenders.has(address)) s.lenderOrder[kept++] = address
    s.lenderOrder.length = kept
  }
  return removed
}

/**
 * Whether the lender can lend: its session wallet can pay the least advance of its asset on one of its networks
 * (leastAdvanceAtomic), and it did not withdraw everything it had available (such a lender stays out of the books). A
 * wallet holding less could lend nothing: before, 1 atomic unit put a lender in the books, so a stranger's 4,096 such
 * lenders cost it 4,096 units and each match attempt could refuse 4,096 leases (outsider21). A lender whose
 * liquidity is merely all lent is not held out: its repayment may be recorded after the watcher saw its wallet change.
 */
function walletFunded(s: EngineState, lender: LenderRecord): boolean {
  if (lender.availableAtomic <= 0n && lender.withdrawnAtomic + lender.withdrawalPendingAtomic > 0n) return false
  return lender.networks.some((n) => walletHoldsLeastAdvance(s, lender, n, lender.assets[n] as string))
}

/**
 * The rule of a book's entry: the lender's session wallet itself (not counting its live leases) can pay the least
 * advance of `asset` on `network`. Short of it, the lender is refused and leaves that book (walkBook, parkIn); with
 * it, it enters its books (walletFunded).
 */
function walletHoldsLeastAdvance(s: EngineState, lender: LenderRecord, network: string, asset: string): boolean {
  return s.wallets.spendableAtomic(network, asset, lender.sessionAddress) >= leastAdvanceAtomic(s.config, network, asset)
}

export function park(s: EngineState, lender: LenderRecord): void {
  const placed = s.bookEntries.get(lender.address)
  if (!placed || s.parked.has(lender.address)) return
  for (const book of placed.books) book.remove(placed.entry)
  placed.books = []
  s.parked.add(lender.address)
  s.partlyParked.delete(lender.address)
}

/**
 * A lender whose session wallet could not pay the least advance of an offer's asset leaves that offer's book only: its
 * wallet on the offer's network is what could not pay, and on its other networks it may hold plenty. Parked (out of
 * every book) once it is in none. Before, one refusal parked it everywhere, so a stranger's request on a network a
 * lender had not funded kept it out of matching on the network it had (an outsider's finding,
 * test/api/outsider14-park-other-network.test.ts).
 */
function parkIn(s: EngineState, lender: LenderRecord, book: MatchingBook | undefined): void {
  const placed = s.bookEntries.get(lender.address)
  if (!placed || book === undefined) return
  const at = placed.books.indexOf(book)
  if (at < 0) return
  if (placed.books.length === 1) return park(s, lender)
  book.remove(placed.entry)
  placed.books.splice(at, 1)
  s.partlyParked.add(lender.address)
}

function unpark(s: EngineState, lender: LenderRecord): void {
  const placed = s.bookEntries.get(lender.address)
  if (!placed || !s.parked.delete(lender.address)) return
  placed.entry = entryFor(lender)
  enterFundedBooks(s, lender, placed)
}

/**
 * The lender enters each of its books it is not in whose least advance its session wallet holds
 * (walletHoldsLeastAdvance); it stays out of the others, partly parked, until its wallet changes again. Before, it
 * entered every book, and was refused a lease once more in each where its wallet was still short.
 */
function enterFundedBooks(s: EngineState, lender: LenderRecord, placed: { entry: BookEntry; books: MatchingBook[] }): void {
  for (const network of lender.networks) {
    const asset = lender.assets[network] as string
    const key = bookKey(network, asset)
    let book = s.books.get(key)
    if (!book) s.books.set(key, (book = new MatchingBook(s.config)))
    if (placed.books.includes(book) || !walletHoldsLeastAdvance(s, lender, network, asset)) continue
    book.insert(placed.entry)
    placed.books.push(book)
  }
  if (placed.books.length < lender.networks.length) s.partlyParked.add(lender.address)
  else s.partlyParked.delete(lender.address)
}

/**
 * A parked lender whose session wallet (`holder`) now can lend (walletFunded) is back in the books whose least advance
 * its wallet holds (returns true), and one out of some of its books (partly parked) enters those of them (returns
 * false: it was not parked).
 */
export function walletChanged(s: EngineState, holder: Address): boolean {
  const address = s.lenderBySession.get(holder)
  const lender = address === undefined ? undefined : s.lenders.get(address)
  if (lender === undefined) return false
  // Its wallet may now pay an amount it could not without its entry moving (a top-up): noted in its books, so a walk
  // resumed after a mark behind which it sits looks at it (book26). Only a lender a walk passed over for its wallet
  // alone (`walletShort`): a stranger's dust sent to the session wallets of lenders passed over for their policy noted
  // each of them, and more than lendersScannedPerMatchMax of them between two walks sent every marked walk of the book
  // back to the front, the flood before the mark included (review26). Nothing while no book holds marks.
  if (s.scanMarks.size > 0) {
    const placed = s.bookEntries.get(lender.address)
    if (placed !== undefined && placed.entry.walletShort) {
      placed.entry.walletShort = false
      for (const book of placed.books) book.noteEntered(placed.entry)
    }
  }
  const parked = s.parked.has(lender.address)
  if ((!parked && !s.partlyParked.has(lender.address)) || !walletFunded(s, lender)) return false
  if (parked) unpark(s, lender)
  else enterFundedBooks(s, lender, s.bookEntries.get(lender.address) as { entry: BookEntry; books: MatchingBook[] })
  return parked
}

/**
 * One matching attempt. The walk of the book picks the lenders without changing anything; then the offer machine,
 * sent the attempt's first event, decides whether the offer may be matched now: a stale offer refuses a lease (it
 * expires instead), an offer not waiting for a lender refuses every event of matching (the answer carries the
 * code). The events after the first are the machine's to take: same offer, same instant.
 */
export function leaseToBestLender(s: EngineState, offer: OfferActor, nowMs: number): MatchOutcome | Refusal {
  const o = offer.getSnapshot().context
  const walk = walkBook(s, o, nowMs)
  const refusedLeases: LeaseView[] = []
  if (walk.granted) {
    // A lease gets its whole TTL: granted only while it ends by the offer's credit end. Underwriting and the offer's
    // expiry keep it so, unless the chain's observed time lags the service clock more than when the offer was made
    // (an RPC outage): then the offer's own expiry is not due yet, on chain time.
    const creditUntilMs = offerCreditUntilMs(s, o)
    if (leaseDeadlineBaseMs(s, o.network, nowMs) + s.config.leaseTtlMs > creditUntilMs) return creditEnding(s, offer, nowMs)
    const { lender, fee } = walk.granted
    // The granted lease takes the id after the refused ones.
    const leaseId = `${ID_PREFIXES.lease}${s.meta.leaseSeq + 1 + walk.refused.length}`
    const answer = send(s, 'offer', offer, { type: 'LEASE', leaseId, lender: lender.address, chainTimeMs: networkClockMs(s, o.network, nowMs), nowMs })
    if (!answer.accepted) return notMatched(s, offer, answer, nowMs)
    refuseAll(s, o, walk.refused, refusedLeases, nowMs)
    const granted = grantLease(s, o, lender, fee, nowMs, creditUntilMs)
    return { offer: offerView(offer.getSnapshot()), lease: granted, refusedLeases, offerExpired: false }
  }
  // Out of leases, or nothing to lease: the offer decides whether it waits (its expiry is not due), is stale, or
  // cannot be matched at all.
  const answer = send(s, 'offer', offer, { type: 'EXPIRE', reason: walk.outOfLeases ? 'leases_exhausted' : 'stale', chainTimeMs: networkClockMs(s, o.network, nowMs), nowMs })
  if (!answer.accepted) {
    if (answer.code !== offerRefusals.EXPIRE.guarded) return notMatched(s, offer, answer, nowMs)
    // It waits: its next walk resumes after the bound this one reached, or starts at the front (walkBook).
    markScan(s, o, walk.stoppedAt)
    refuseAll(s, o, walk.refused, refusedLeases, nowMs)
    return { offer: offerView(offer.getSnapshot()), lease: null, refusedLeases, offerExpired: false }
  }
  releaseCapacity(s, o.source, offerCommitmentAtomic(o), nowMs)
  return { offer: offerView(offer.getSnapshot()), lease: null, refusedLeases, offerExpired: true }
}

/** The refusal of a match whose lease would end after the offer's credit end (leaseToBestLender): a stable 409. */
export const OFFER_CREDIT_ENDING = 'offer_credit_ending'

/**
 * No whole lease fits before the offer's credit end. Whether the offer is stale stays the offer machine's rule: sent
 * EXPIRE (stale), it expires if its TTL is over on chain time; if not, the match is refused (OFFER_CREDIT_ENDING),
 * nothing changes, and the offer waits for its expiry (dispatch passes over it, engine.ts). No lease is granted,
 * refused leases included: the walk's lenders are left as they are.
 */
function creditEnding(s: EngineState, offer: OfferActor, nowMs: number): MatchOutcome | Refusal {
  const o = offer.getSnapshot().context
  const answer = send(s, 'offer', offer, { type: 'EXPIRE', reason: 'stale', chainTimeMs: networkClockMs(s, o.network, nowMs), nowMs })
  if (!answer.accepted) return answer.code === offerRefusals.EXPIRE.guarded ? { accepted: false, code: OFFER_CREDIT_ENDING, state: answer.state } : answer
  releaseCapacity(s, o.source, offerCommitmentAtomic(o), nowMs)
  return { offer: offerView(offer.getSnapshot()), lease: null, refusedLeases: [], offerExpired: true }
}

/**
 * Refusals (insufficient balance) are not the offer's events: they use up none of its leases (issue 10, hole 2).
 * They are recorded once the offer took the attempt's event, or waits; each refused lender leaves the offer's book. A function of
 * the module, not a closure per attempt: under tsx (esbuild's keepNames) every closure made per call also costs an
 * Object.defineProperty of its name, about 5 % of a match in the profile.
 */
function refuseAll(s: EngineState, o: OfferContext, refused: Candidate[], refusedLeases: LeaseView[], nowMs: number): void {
  for (const { lender, fee } of refused) {
    refusedLeases.push(refuseLease(s, o, lender, fee, nowMs))
    parkIn(s, lender, s.books.get(bookKey(o.network, o.asset)))
  }
}

/** The offer refused the attempt's first event: it waits, it is stale (and expires now), or it is a conflict. */
function notMatched(s: EngineState, offer: OfferActor, answer: Refusal, nowMs: number): MatchOutcome | Refusal {
  if (answer.code === offerRefusals.EXPIRE.guarded) {
    return { offer: offerView(offer.getSnapshot()), lease: null, refusedLeases: [], offerExpired: false }
  }
  if (answer.code === offerRefusals.LEASE.guarded) {
    expireOffer(s, offer, 'stale', nowMs)
    return { offer: offerView(offer.getSnapshot()), lease: null, refusedLeases: [], offerExpired: true }
  }
  return answer
}

/**
 * The lenders one matching attempt leases to, in book order, without changing anything: those whose wallet cannot
 * pay the least advance of the offer's asset (each gets a lease refused at once, which is not one of the offer's
 * leases) and the first whose wallet can pay the amount beyond its live leases. A wallet that can pay the least advance
 * but not this amount, or holds it promised to its own live leases, is passed over, like liquidity that does not
 * cover it: refused, it left the book for every later offer, small ones included, and a stranger's waiting offer
 * larger than the cheapest lender's wallet kept it out at every dispatch (outsider21). The walk starts after the
 * offer's scan mark when it has one (state.ts `scanMarks`), after the entries that entered ahead of the mark since
 * (enteredAhead); `stoppedAt` is the last entry scanned when the walk reached
 * lendersScannedPerMatchMax with entries left and no lender, else null.
 */
function walkBook(s: EngineState, o: OfferContext, nowMs: number): { refused: Candidate[]; granted: Candidate | null; outOfLeases: boolean; stoppedAt: BookEntry | null } {
  const refused: Candidate[] = []
  const book = s.books.get(bookKey(o.network, o.asset))
  const leasesLeft = s.config.leasesPerOfferMax - o.leaseIds.length
  s.walkedFrom = null
  if (book && leasesLeft > 0) {
    const entries = book.entries
    // Lenders whose probation ended by now are noted first (one comparison when none is due).
    book.noteDue(nowMs)
    let start = 0
    // A resumed walk looks first at the entries that entered ahead of its mark since (they sort before every entry
    // after it), then at those after it: entries[i] for i from start, ahead[i - first] before.
    let ahead = NO_ENTRIES
    if (s.scanMarks.size > 0) {
      const mark = s.scanMarks.get(o.offerId)
      if (mark !== undefined) {
        const since = enteredAhead(s, book, mark)
        if (since !== null) {
          ahead = since
          start = book.firstAfter(mark)
          // What this walk looked at, for whyNoLease when it ends without a lease.
          s.walkedOffer = o.offerId
          s.walkedFrom = mark
          s.walkedAhead = ahead
        }
      }
    }
    const first = start - ahead.length
    const end = Math.min(entries.length, first + s.config.lendersScannedPerMatchMax)
    const client = clientOf(s, o)
    let i = first
    for (; i < end; i++) {
      const entry = (i < start ? ahead[i - first] : entries[i]) as BookEntry
      // Asks only rise along the book: once this ask prices the fee above the maximum, no later lender fits.
      if (feeAtomic(o.amountAtomic, entry.askBps) > o.maximumFeeAtomic) break
      const lender = entry.lender
      const fee = eligibleFee(lender, o, s.config, nowMs)
      if (fee === null || excludedFrom(o, lender, client)) continue
      if (atLeaseAllowance(s, lender)) continue
      const free = walletFreeAtomic(s, lender, o.network, o.asset)
      if (free >= o.amountAtomic) return { refused, granted: { lender, fee }, outOfLeases: false, stoppedAt: null }
      // Passed over for its wallet alone: a change of that wallet is noted (walletChanged).
      entry.walletShort = true
      // Refused (out of the book) only when the wallet itself is short of the least advance: one that holds it but has
      // it promised to its own live leases is busy, and nothing would bring it back when a lease ends unused (review22).
      if (!walletHoldsLeastAdvance(s, lender, o.network, o.asset)) refused.push({ lender, fee })
    }
    // The bound, not the book's end nor the fee break, ended the walk: the next one resumes after it.
    if (i === end && end < entries.length) return { refused, granted: null, outOfLeases: false, stoppedAt: entries[end - 1] as BookEntry }
  }
  return { refused, granted: null, outOfLeases: leasesLeft <= 0, stoppedAt: null }
}

/**
 * Keeps where the offer's walk stopped (a copy of the entry's key: the entry moves as its lender's liquidity changes),
 * or clears it: a walk that ends without a lender before the bound (the book's end, the fee break) starts the next at
 * the front.
 */
function markScan(s: EngineState, o: OfferContext, stoppedAt: BookEntry | null): void {
  if (stoppedAt === null) {
    if (s.scanMarks.size > 0) dropScanMark(s.scanMarks, o.offerId)
    return
  }
  const book = s.books.get(bookKey(o.network, o.asset)) as MatchingBook
  if (!s.scanMarks.has(o.offerId)) book.markAdded(s.config.lendersScannedPerMatchMax)
  const { askBps, reputationBps, availableAtomic, registrationSeq } = stoppedAt
  s.scanMarks.set(o.offerId, { askBps, reputationBps, availableAtomic, registrationSeq, book, seen: book.markSeen() })
}

const NO_ENTRIES: readonly BookEntry[] = []

/**
 * Why a match of `offer` made no lease, for `POST /credit/match`'s answer only (engine.ts matchOffer): called once the
 * attempt ended without a lease, never on the leased path nor by dispatch. Looks again at the lenders the attempt's
 * walk looked at, in its order, at most lendersScannedPerMatchMax of them (changes nothing): the book's first ones,
 * cheapest first, or, for a walk resumed after the offer's scan mark, those that entered ahead of the mark since, then
 * those after it (walkBook records where it started: `walkedFrom`). Before, it always counted the book's first
 * lenders, not those the resumed walk saw (book26). It counts each by the first rule that passed it over. The reason: the offer expired; the book is empty (no_funded_lender); the walk
 * stopped at the scan bound (the offer has a scan mark: the next attempt resumes after it); a lender took the terms but
 * is busy (waiting helps); else the rule that passed over the most lenders, the first of the counts' order on a tie.
 */
export function whyNoLease(s: EngineState, offer: OfferActor, offerExpired: boolean, nowMs: number): NoLease {
  const o = offer.getSnapshot().context
  const passedOver: LendersPassedOver = { feeAboveMaximum: 0, riskBandNotAccepted: 0, durationNotOffered: 0, amountAboveLiquidity: 0, excluded: 0, busy: 0 }
  const book = s.books.get(bookKey(o.network, o.asset))
  const entries = book?.entries ?? NO_ENTRIES
  // The refusing walk's order (walkBook): the entries noted ahead of its mark, then entries[start] on.
  let ahead = NO_ENTRIES
  let start = 0
  if (s.walkedFrom !== null && s.walkedOffer === o.offerId && book !== undefined) {
    ahead = s.walkedAhead
    start = book.firstAfter(s.walkedFrom)
  }
  const scanned = offerExpired ? 0 : Math.min(ahead.length + entries.length - start, s.config.lendersScannedPerMatchMax)
  const client = clientOf(s, o)
  for (let i = 0; i < scanned; i++) {
    const lender = ((i < ahead.length ? ahead[i] : entries[start + i - ahead.length]) as BookEntry).lender
    // Asks rise along the book: from the first ask above the maximum on, every lender's is.
    if (feeAtomic(o.amountAtomic, lender.askBps) > o.maximumFeeAtomic) {
      passedOver.feeAboveMaximum += scanned - i
      break
    }
    // The walk's own rules (screenLender, excludedFrom); an eligible or inactive lender not excluded is busy.
    const screened = screenLender(lender, o, s.config, nowMs)
    if (screened === 'riskBand') passedOver.riskBandNotAccepted++
    else if (screened === 'duration') passedOver.durationNotOffered++
    else if (screened === 'liquidity') passedOver.amountAboveLiquidity++
    else if (screened === 'fee') passedOver.feeAboveMaximum++
    else if (screened === 'asset' || screened === 'supplier' || excludedFrom(o, lender, client)) passedOver.excluded++
    else passedOver.busy++
  }
  let reason: NoLeaseReason = 'lenders_busy'
  let busyBeforeMark = false
  if (offerExpired) reason = 'offer_expired'
  else if (entries.length === 0) reason = 'no_funded_lender'
  else if (s.scanMarks.has(o.offerId)) reason = 'scan_bound_reached'
  else if (passedOver.busy === 0) {
    // A resumed walk looked only after the mark (and at the lenders noted ahead of it): a cheaper lender before it that
    // takes the terms but is busy is what the borrower waits for, not a reason to raise its maximum (review26).
    busyBeforeMark = start > 0 && busyBefore(s, o, entries, start, client, nowMs)
    if (!busyBeforeMark) {
      let most = 0
      for (const [key, code] of PASSED_OVER_REASONS) {
        if (passedOver[key] > most) {
          most = passedOver[key]
          reason = code
        }
      }
    }
  }
  const detail = busyBeforeMark ? BUSY_BEFORE_MARK : noLeaseDetail(reason, o, s.config.lendersScannedPerMatchMax)
  return { reason, detail, lendersInBook: entries.length, lendersScanned: scanned, passedOver }
}

/**
 * Whether one of the book's first lenders before a resumed walk's start (`entries[0, end)`, at most
 * lendersScannedPerMatchMax of them, cheapest first) takes the offer's terms and is not excluded from it, but is busy
 * (the walk's rules, like whyNoLease's `busy`): the offer's earlier walks passed over it, and nothing noted since made
 * it eligible. Changes nothing.
 */
function busyBefore(s: EngineState, o: OfferContext, entries: readonly BookEntry[], end: number, client: Address | undefined, nowMs: number): boolean {
  const scanned = Math.min(end, s.config.lendersScannedPerMatchMax)
  for (let i = 0; i < scanned; i++) {
    const lender = (entries[i] as BookEntry).lender
    if (feeAtomic(o.amountAtomic, lender.askBps) > o.maximumFeeAtomic) return false
    const screened = screenLender(lender, o, s.config, nowMs)
    if ((typeof screened === 'bigint' || screened === 'inactive') && !excludedFrom(o, lender, client)) return true
  }
  return false
}

const PASSED_OVER_REASONS: readonly (readonly [keyof LendersPassedOver, NoLeaseReason])[] = [
  ['feeAboveMaximum', 'fee_above_maximum'],
  ['riskBandNotAccepted', 'risk_band_not_accepted'],
  ['durationNotOffered', 'duration_not_offered'],
  ['amountAboveLiquidity', 'amount_above_liquidity'],
  ['excluded', 'lenders_excluded'],
]

const WAITS = 'The offer waits and is leased in the background (dispatch) once a lender takes it, until its expiresAt.'

/** lenders_busy's detail when the busy lender is before where a resumed walk started (whyNoLease busyBefore). */
const BUSY_BEFORE_MARK = `A cheaper lender, one an earlier attempt of this offer looked at (before the lenders this attempt looked at and counts), takes the offer's terms but is busy now: its wallet's funds are promised to its live leases, it holds its allowance of live leases, or it waits out its probation. ${WAITS}`

function noLeaseDetail(reason: NoLeaseReason, o: OfferContext, scanBound: number): string {
  switch (reason) {
    case 'offer_expired':
      return 'The offer expired (past its expiresAt, or out of leases): request credit again for a new offer.'
    case 'no_funded_lender':
      return `No lender is in the book of ${o.network} ${o.asset}: none registered for it, or none whose session wallet holds the least advance. ${WAITS}`
    case 'scan_bound_reached':
      return `The match looked at ${scanBound} lenders (lendersScannedPerMatchMax) and none took the offer; the next attempt resumes after them. ${WAITS}`
    case 'lenders_busy':
      return `A lender takes the offer's terms but is busy now: its wallet's funds are promised to its live leases, it holds its allowance of live leases, or it waits out its probation. ${WAITS}`
    case 'fee_above_maximum':
      return `The lenders ask a fee above the offer's maximumFeeAtomic ${o.maximumFeeAtomic}: request again with a higher maximum. ${WAITS}`
    case 'risk_band_not_accepted':
      return `No lender looked at accepts risk band ${o.riskBand}. ${WAITS}`
    case 'duration_not_offered':
      return `No lender looked at lends for ${o.durationSeconds} s (their maxDurationSeconds is shorter): a job due sooner asks a shorter duration. ${WAITS}`
    case 'amount_above_liquidity':
      return `No lender looked at has ${o.amountAtomic} of the asset available to lend: request a smaller amount. ${WAITS}`
    case 'lenders_excluded':
      return `The lenders looked at may not lend on this offer: the borrower's or the job client's own wallets, the supplier, or lenders that left a lease of it unpaid. ${WAITS}`
  }
}

/**
 * The entries that entered the offer's book ahead of its mark since the mark was set (inserted: a lender registered
 * or back from parking; moved toward the front: liquidity back from a lease that ended unused or a repayment, a
 * reputation risen), still in the book at a key before the mark or at it (a lender refused at the mark and back at
 * the same key is a new entry that firstAfter passes), once each, in book order. Before, the resumed walk
 * never saw them, and leased a dearer lender behind the mark (review22). Null (the walk starts at the front) when the
 * book noted more since the mark than one walk scans (lendersScannedPerMatchMax), or as many of them are ahead.
 */
function enteredAhead(s: EngineState, book: MatchingBook, mark: ScanMark): readonly BookEntry[] | null {
  const noted = book.enteredSince(mark.seen)
  if (noted === null || noted.length === 0) return noted
  const ahead = new Set<BookEntry>()
  for (const entry of noted) {
    if (compareEntries(entry, mark) > 0) continue
    const placed = s.bookEntries.get(entry.lender.address)
    if (placed?.entry === entry && placed.books.includes(book)) ahead.add(entry)
  }
  return ahead.size >= s.config.lendersScannedPerMatchMax ? null : [...ahead].sort(compareEntries)
}

/**
 * The lender holds as many live leases as its allowance lets it (rules.ts leaseAllowance, at least one): it is not
 * eligible for another. Its live leases are at most those granted and neither paid nor missed (a cancelled one ended
 * too), so a lender with fewer of those than its allowance, as one that pays its leases has, costs no lookup.
 */
function atLeaseAllowance(s: EngineState, lender: LenderRecord): boolean {
  const allowance = leaseAllowance(lender, s.config)
  if (lender.leasesGranted - lender.leasesPaid - lender.leasesExpired < allowance) return false
  return (s.liveLeasesByLender.get(lender.address)?.size ?? 0) >= Math.max(1, allowance)
}

/**
 * Who may never lend on the offer besides its borrower: on a job, the job's client (walkBook checks both with
 * isParty, no array per attempt). A lender lending to itself (or to a job it can fail, and whose escrow it then gets
 * back) risks nothing of its own: on a default the insurance reserve, funded by every other advance's fees, pays its
 * claim (recovery step 4).
 */
function clientOf(s: EngineState, o: OfferContext): Address | undefined {
  return o.source.kind === 'job' ? s.jobs.get(o.source.id)?.getSnapshot().context.client : undefined
}

/** Whether the lender is `party` (the offer's borrower, or its job's client) by its address or its session key. */
function isParty(lender: LenderRecord, party: Address): boolean {
  return lender.address === party || lender.sessionAddress === party
}

/**
 * The offer's own exclusions, beyond the lender's policy (screenLender): lenders that left a lease of it unpaid, and
 * the borrower's and the job client's own wallets. Exact comparisons: every address in the engine is EIP-55
 * checksummed on its way in (sessions, bodies, chain events).
 */
function excludedFrom(o: OfferContext, lender: LenderRecord, client: Address | undefined): boolean {
  return o.excludedLenders.includes(lender.address) || isParty(lender, o.borrower) || (client !== undefined && isParty(lender, client))
}

/**
 * An offer past its TTL, or out of leases, expires and gives its capacity back to its source (a caller that shows it
 * builds its view).
 */
export function expireOffer(s: EngineState, offer: OfferActor, reason: 'stale' | 'leases_exhausted', nowMs: number): void {
  const o = offer.getSnapshot().context
  expect(s, 'offer', offer, { type: 'EXPIRE', reason, chainTimeMs: networkClockMs(s, o.network, nowMs), nowMs })
  releaseCapacity(s, o.source, offerCommitmentAtomic(o), nowMs)
}

/**
 * Withdraw an offer. A waiting one is declined now; a leased one is `closing`: its lease is not cancelled, since the
 * authorization the service signed stays payable on chain until its deadline (a payment under it funds the offer), and
 * it holds its capacity until the lease is over on chain time (`endClosingOffer`) or paid. Already closing: nothing to
 * do. `giveBackCapacity` is false when the source already released it (a failing job releases its waiting offers').
 * Answers whether the offer was declined now (false: it is closing).
 */
export function declineOffer(s: EngineState, offer: OfferActor, reason: 'borrower_suspended' | 'source_closed', nowMs: number, giveBackCapacity = true): boolean {
  const snap = offer.getSnapshot()
  if (snap.matches('closing')) return false
  expect(s, 'offer', offer, { type: 'DECLINE', reason, nowMs })
  if (snap.matches('leased')) return false
  if (giveBackCapacity) releaseCapacity(s, snap.context.source, offerCommitmentAtomic(snap.context), nowMs)
  return true
}

