// The matching book stays sorted under random key changes, and agrees with a full sort.
import fc from 'fast-check'
import t from 'tap'
import { compareEntries, entryFor, MatchingBook, reposition, type BookEntry } from '../../src/engine/book.ts'
import type { LenderRecord } from '../../src/engine/types.ts'
import { addr } from './fixtures/world.ts'

function lender(i: number, ask: number, rep: number, liq: number): LenderRecord {
  return {
    address: addr(i), sessionAddress: addr(10_000 + i), asset: 'A', assets: { n: 'A' }, networks: ['n'], askBps: ask,
    maxDurationSeconds: 1, acceptedRiskBands: ['A'], registeredAtomic: BigInt(liq), availableAtomic: BigInt(liq),
    reservedAtomic: 0n, deployedAtomic: 0n, feesEarnedAtomic: 0n, lossesAtomic: 0n, withdrawnAtomic: 0n, withdrawalPendingAtomic: 0n, reputationBps: rep, reliabilityBps: 5000, inactiveSinceMs: null, probationMisses: 0,
    registrationSeq: i, registeredAtMs: 0, leasesGranted: 0, leasesPaid: 0, leasesExpired: 0, advancesRepaid: 0, advancesDefaulted: 0, recentLeaseOutcomes: '',
  }
}

t.test('random repositions keep two books sorted and identical to a full sort', async (t) => {
  const small = fc.integer({ min: 0, max: 5 })
  fc.assert(fc.property(
    fc.array(fc.tuple(small, small, small), { minLength: 1, maxLength: 40 }),
    fc.array(fc.tuple(fc.nat(), small, small, small), { maxLength: 60 }),
    (initial, moves) => {
      const a = new MatchingBook()
      const b = new MatchingBook()
      const entries: BookEntry[] = initial.map(([ask, rep, liq], i) => entryFor(lender(i + 1, ask, rep * 1000, liq)))
      for (const e of entries) { a.insert(e); b.insert(e) }
      for (const [pick, ask, rep, liq] of moves) {
        const e = entries[pick % entries.length] as BookEntry
        e.lender.askBps = ask
        e.lender.reputationBps = rep * 1000
        e.lender.availableAtomic = BigInt(liq)
        reposition(e, [a, b])
      }
      const sorted = [...entries].sort(compareEntries)
      return sorted.every((e, i) => a.entries[i] === e && b.entries[i] === e)
    },
  ), { numRuns: 300 })
  t.pass('sorted after every random sequence')
})

t.test('while marks exist the book notes the entries that enter it or move toward its front, and forgets past its bound', async (t) => {
  const book = new MatchingBook()
  const [a, b, c] = [1, 2, 3].map((i) => entryFor(lender(i, 10, 5000, 100))) as [BookEntry, BookEntry, BookEntry]
  book.insert(a)
  t.same(book.enteredSince(0), [], 'no mark: nothing noted')
  book.markAdded(2)
  const seen = book.enteredCount
  book.insert(b)
  a.lender.availableAtomic = 50n
  reposition(a, [book])
  t.same(book.enteredSince(seen), [b], 'an insertion is noted, a move toward the back is not')
  a.lender.availableAtomic = 200n
  reposition(a, [book])
  t.same(book.enteredSince(seen), [b, a], 'a move toward the front is')
  book.insert(c)
  t.equal(book.enteredSince(seen), null, 'more than the bound since the mark: the walk starts at the front')
  t.same(book.enteredSince(book.enteredCount - 1), [c], 'a later mark still sees what entered after it')
  for (let i = 0; i < 4; i++) book.insert(entryFor(lender(10 + i, 10, 5000, 1)))
  t.equal(book.enteredSince(seen), null, 'the log keeps at most twice the bound: older marks start at the front')
  const end = book.enteredCount
  book.markDropped()
  // Its count goes on from where it ended (an entry's notedAt from before stays below every later mark's seen).
  t.equal(book.enteredCount, end, 'the last mark gone, the log is emptied')
  t.equal(book.enteredSince(end - 1), null, 'nothing noted before is kept')
})
