// The matching book of one (network, asset): lenders sorted by ask rate ascending, then reputation descending, then
// available liquidity descending, then registration order. A lender's liquidity changes on every lease, so an entry
// is moved by binary search (remove + insert) instead of re-sorting the book; matching walks from the front and
// stops at the first eligible lender, or as soon as the ask rate prices the fee above the borrower's maximum.
import { isActiveLender, probationWaitMs, type ProbationConfig } from './rules.ts'
import { IndexedMinHeap } from './schedule.ts'
import type { LenderRecord } from './types.ts'

export interface BookEntry {
  lender: LenderRecord
  /** The sort key as the book last saw it; compared to the lender's current values on reposition. */
  askBps: number
  reputationBps: number
  availableAtomic: bigint
  registrationSeq: number
  /**
   * Where the entry was last noted in a book's log of entries entered ahead (MatchingBook `noteEntered`): that book
   * and its position. A repeat note that every mark of the book already sees is skipped. One book kept: an entry in
   * several books noted in another is noted again (never skipped wrongly).
   */
  notedIn: MatchingBook | null
  notedAt: number
  /**
   * The lender's eligibility inputs that change without moving its entry, as the book last saw them (reposition): its
   * principal reserved for live leases (down: a lease ended, freeing its wallet and one of its lease allowance), and
   * when it is eligible by reliability (MatchingBook `eligibleAtMs`: -Infinity when active, else its probation's end).
   */
  reservedAtomic: bigint
  eligibleAtMs: number
  /**
   * A walk passed the lender over only because its session wallet could not pay the offer's amount beyond its live
   * leases (matching.ts walkBook): a change of that wallet may make it eligible, so walletChanged notes it (and clears
   * this). A lender passed over for its policy, an exclusion or its lease allowance is not noted on a wallet change:
   * before (book26), any transfer into any lender's session wallet, a stranger's dust included, noted it (review26).
   */
  walletShort: boolean
}

/** An entry's sort key without its lender: where a walk stopped (state.ts `scanMarks`). */
export type BookKey = Pick<BookEntry, 'askBps' | 'reputationBps' | 'availableAtomic' | 'registrationSeq'>

export function compareEntries(a: BookKey, b: BookKey): number {
  if (a.askBps !== b.askBps) return a.askBps - b.askBps
  if (a.reputationBps !== b.reputationBps) return b.reputationBps - a.reputationBps
  if (a.availableAtomic !== b.availableAtomic) return a.availableAtomic > b.availableAtomic ? -1 : 1
  return a.registrationSeq - b.registrationSeq
}

/** A waiting offer's scan mark (state.ts `scanMarks`): where its last walk stopped, in which book, and when. */
export interface ScanMark extends BookKey {
  book: MatchingBook
  /** The book's `enteredCount` when the mark was set: the entries that entered ahead of it since follow it in the log. */
  seen: number
}

/** A lender's probation end in a book's schedule (MatchingBook `noteDue`), by the lender's address: one per lender. */
interface DueEntry {
  readonly id: string
  readonly seq: number
  readonly atMs: number
  readonly entry: BookEntry
}

export class MatchingBook {
  readonly entries: BookEntry[] = []
  /**
   * Entries whose lender is on probation, by the time it ends (the engine's indexed heap, one item per lender: a new
   * end, or the lender's new entry, replaces its item, and an entry that leaves the book or whose lender is active
   * again takes its item out): the lender becomes eligible then without any command, so a walk notes those due before
   * it reads the log (`noteDue`). Empty without `probation` (a book built by a benchmark or a test). Before (book26), a
   * plain heap kept every end ever scheduled until it passed (up to lenderProbationMaxSeconds): compacted when it held
   * twice its book's entries (review26); now it holds at most one item per entry.
   */
  private readonly due = new IndexedMinHeap<DueEntry>('due')
  private dueSeq = 0
  /**
   * While offers hold scan marks in this book (`marks` > 0, matching.ts markScan): each entry inserted, or moved
   * toward the front, in order (the same entry may repeat), so that a walk resumed after its mark first looks at those
   * that entered ahead of it since (`enteredSince`). Emptied when the last mark goes; at most twice `enteredKept`
   * long: a mark older than the kept part makes its walk start at the front.
   */
  private entered: BookEntry[] = []
  /**
   * How many entries were noted before `entered[0]`: it only grows (an emptied log starts where the last ended), so an
   * entry's `notedAt` from an earlier run of marks is below every later mark's `seen`.
   */
  private enteredBase = 0
  /** The `seen` of the latest mark set (markSeen): no mark sees the log from later on. */
  private lastSeen = 0
  /** How many noted entries a mark can see back (lendersScannedPerMatchMax, set with the marks). */
  enteredKept = 0
  marks = 0

  /** The probation rules (rules.ts isEligibleLender) the book schedules probation ends by; null: none scheduled. */
  constructor(readonly probation: ProbationConfig | null = null) {}

  /**
   * When the lender is eligible by its reliability (rules.ts isEligibleLender): -Infinity while active, else when its
   * probation wait ends.
   */
  eligibleAtMs(lender: LenderRecord): number {
    const config = this.probation
    if (config === null || isActiveLender(lender, config)) return -Infinity
    return (lender.inactiveSinceMs ?? lender.registeredAtMs) + probationWaitMs(lender, config)
  }

  /** How many entries were noted since the marks began: a new mark's `seen`. */
  get enteredCount(): number {
    return this.enteredBase + this.entered.length
  }

  /**
   * The entries noted since `seen` (a mark's), in order, or null when more than `enteredKept` were, or the log no
   * longer reaches back that far: the walk then starts at the front.
   */
  enteredSince(seen: number): readonly BookEntry[] | null {
    const from = seen - this.enteredBase
    if (from < 0 || this.entered.length - from > this.enteredKept) return null
    return from === this.entered.length ? NONE : this.entered.slice(from)
  }

  /** A mark set in this book; its last one dropped empties the log. */
  markAdded(kept: number): void {
    this.marks += 1
    this.enteredKept = kept
  }

  /** A mark's `seen`, set now (matching.ts markScan): the log's current length. */
  markSeen(): number {
    return (this.lastSeen = this.enteredCount)
  }

  markDropped(): void {
    this.marks -= 1
    if (this.marks > 0) return
    this.enteredBase += this.entered.length
    this.entered = []
  }

  /**
   * An entry entered the book or moved toward its front, or its lender may have become eligible without moving (a
   * lease ended, its wallet changed, its probation ended or was given back: book26): noted while marks exist (one
   * comparison otherwise), once while every mark sees its last note. Before, each repeat counted: about enteredKept
   * forward moves of one lender between two walks (each a chain repayment) sent every marked walk back to the front
   * (review23).
   */
  noteEntered(entry: BookEntry): void {
    if (this.marks === 0) return
    if (entry.notedIn === this && entry.notedAt >= this.lastSeen) return
    entry.notedIn = this
    entry.notedAt = this.enteredCount
    this.entered.push(entry)
    if (this.entered.length > 2 * this.enteredKept) {
      this.entered.splice(0, this.enteredKept)
      this.enteredBase += this.enteredKept
    }
  }

  /**
   * The entry's lender becomes eligible at `entry.eligibleAtMs` (its probation's end) with nothing else changing:
   * scheduled, noted by the first walk of the book from then on (`noteDue`).
   */
  scheduleEligible(entry: BookEntry): void {
    const id = entry.lender.address
    this.due.delete(id)
    this.due.push({ id, seq: ++this.dueSeq, atMs: entry.eligibleAtMs, entry })
  }

  /** The entry's probation end is no longer ahead (its lender active again) or the entry left the book: unscheduled. */
  unscheduleEligible(entry: BookEntry): void {
    const id = entry.lender.address
    if (this.due.get(id)?.entry === entry) this.due.delete(id)
  }

  /**
   * Notes the entries whose lender's probation ended by `nowMs` (scheduleEligible), before a walk at `nowMs` reads the
   * log: a mark set while such a lender waited sees it. One comparison when none is due.
   */
  noteDue(nowMs: number): void {
    for (let top = this.due.peek(); top !== undefined && top.atMs <= nowMs; top = this.due.peek()) {
      this.due.pop()
      // Only while the entry is in this book and its end is the one scheduled (review26: a lender parked and back is a
      // new entry, and an old one's note counted toward the log's bound for nothing).
      if (top.entry.eligibleAtMs === top.atMs && this.holds(top.entry)) this.noteEntered(top.entry)
    }
  }

  /** How many probation ends the book's schedule holds: at most one per entry. */
  get scheduled(): number {
    return this.due.size
  }

  /** Whether `entry` is in the book (at its key: the book is sorted by the keys its entries carry). */
  private holds(entry: BookEntry): boolean {
    return this.entries[this.lowerBound(entry)] === entry
  }

  /** First index in [lo, hi) whose entry does not sort before `entry`. */
  private lowerBound(entry: BookEntry, lo = 0, hi = this.entries.length): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareEntries(this.entries[mid] as BookEntry, entry) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /**
   * First index whose entry sorts after `key`: where a walk that stopped at `key` resumes (its entry may have moved or
   * left the book since).
   */
  firstAfter(key: BookKey): number {
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareEntries(this.entries[mid] as BookEntry, key) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  insert(entry: BookEntry): void {
    this.entries.splice(this.lowerBound(entry), 0, entry)
    this.noteEntered(entry)
    entry.eligibleAtMs = this.eligibleAtMs(entry.lender)
    if (entry.eligibleAtMs !== -Infinity) this.scheduleEligible(entry)
  }

  remove(entry: BookEntry): void {
    this.entries.splice(this.indexOf(entry), 1)
    this.unscheduleEligible(entry)
  }

  /** Where `entry` sits, found by its current key. */
  indexOf(entry: BookEntry): number {
    const index = this.lowerBound(entry)
    if (this.entries[index] !== entry) throw new Error(`book corrupt: entry of ${entry.lender.address} not at its key`)
    return index
  }

  /**
   * Move the entry that sat at `from` (before its key changed) to where its new key sorts. Only the entries between
   * the old and the new place shift (copyWithin), so a small liquidity change costs O(log n + distance), not O(n).
   * `forward`: its key moved toward the front; noted even when it keeps its place (its liquidity back, still behind
   * its neighbour, may cover an amount it did not when a walk passed it).
   */
  moveFrom(from: number, entry: BookEntry, forward = false): void {
    const entries = this.entries
    if (from > 0 && compareEntries(entries[from - 1] as BookEntry, entry) > 0) {
      const to = this.lowerBound(entry, 0, from)
      entries.copyWithin(to + 1, to, from)
      entries[to] = entry
      this.noteEntered(entry)
    } else if (from < entries.length - 1 && compareEntries(entries[from + 1] as BookEntry, entry) < 0) {
      const next = this.lowerBound(entry, from + 1, entries.length)
      entries.copyWithin(from, from + 1, next)
      entries[next - 1] = entry
    } else if (forward) {
      this.noteEntered(entry)
    }
  }

  get size(): number {
    return this.entries.length
  }
}

const NONE: readonly BookEntry[] = []

export function entryFor(lender: LenderRecord): BookEntry {
  return {
    lender,
    askBps: lender.askBps,
    reputationBps: lender.reputationBps,
    availableAtomic: lender.availableAtomic,
    registrationSeq: lender.registrationSeq,
    notedIn: null,
    notedAt: 0,
    reservedAtomic: lender.reservedAtomic,
    eligibleAtMs: -Infinity,
    walletShort: false,
  }
}

export function entryIsCurrent(entry: BookEntry): boolean {
  const l = entry.lender
  return entry.askBps === l.askBps && entry.reputationBps === l.reputationBps && entry.availableAtomic === l.availableAtomic
}

/**
 * Move an entry to its lender's current key in every book that holds it, and note it where its lender may have become
 * eligible without moving (eligibilityEased).
 */
export function reposition(entry: BookEntry, books: MatchingBook[]): void {
  if (books.length > 0) eligibilityEased(entry, books)
  if (entryIsCurrent(entry)) return
  // A lender in one book (one network) needs no array of places: the usual case, once per lease and payment.
  const only = books.length === 1 ? (books[0] as MatchingBook) : undefined
  const from = only === undefined ? -1 : only.indexOf(entry)
  const at = only === undefined ? books.map((book) => book.indexOf(entry)) : undefined
  // Toward the front (the lender's new key against the entry's old one), read only while a book holds marks.
  const forward = (only === undefined || only.marks > 0) && compareEntries(entry.lender, entry) < 0
  entry.askBps = entry.lender.askBps
  entry.reputationBps = entry.lender.reputationBps
  entry.availableAtomic = entry.lender.availableAtomic
  if (only !== undefined) only.moveFrom(from, entry, forward)
  else for (let i = 0; i < books.length; i++) (books[i] as MatchingBook).moveFrom((at as number[])[i] as number, entry, forward)
}

/**
 * A lender can become eligible for an offer a walk passed it over for without its entry moving: a lease of it ended
 * (its reserved principal down: its wallet's promise and one of its lease allowance freed, whether the lease was paid,
 * timed out while its reputation fell, or cancelled), or it became active or its probation end moved (`eligibleAtMs`).
 * Such an entry is noted in each of its books (a probation end still ahead is scheduled: MatchingBook noteDue), so a
 * walk resumed after a mark behind which it sits looks at it first. Before, only a move toward the front was noted,
 * and a cheaper eligible lender behind the mark lost the lease to a dearer one after it (book26). Two comparisons
 * when nothing changed.
 */
function eligibilityEased(entry: BookEntry, books: MatchingBook[]): void {
  const lender = entry.lender
  const freed = lender.reservedAtomic < entry.reservedAtomic
  entry.reservedAtomic = lender.reservedAtomic
  const at = (books[0] as MatchingBook).eligibleAtMs(lender)
  const moved = at !== entry.eligibleAtMs
  if (!freed && !moved) return
  entry.eligibleAtMs = at
  for (let i = 0; i < books.length; i++) {
    const book = books[i] as MatchingBook
    if (freed || (moved && at === -Infinity)) book.noteEntered(entry)
    if (moved) {
      if (at === -Infinity) book.unscheduleEligible(entry)
      else book.scheduleEligible(entry)
    }
  }
}

/** Drops the offer's scan mark, if it has one (state.ts `scanMarks`), and its count in its book. */
export function dropScanMark(marks: Map<string, ScanMark>, offerId: string): void {
  const mark = marks.get(offerId)
  if (mark === undefined) return
  marks.delete(offerId)
  mark.book.markDropped()
}
