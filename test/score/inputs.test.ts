// The score's inputs as the engine holds them: an unknown address has a blank record (no history); a borrower's open advance counts as
// exposure (principal + fee, per network and asset) and as past due once its due time passes; a repayment moves it
// from exposure to the repaid count; the history starts at the borrower's earliest activity the engine holds. The
// repaid advances the repayment term counts come from the passport: those whose principal reached its minimum.
import t from 'tap'
import type { SignedPassportEvent } from '../../src/passport/passport.ts'
import { PASSPORT_SCAN_EVENTS_MAX, scoreInputsOf, type RepaymentHistory } from '../../src/score/inputs.ts'
import { SCORED_REPAYMENTS_MAX } from '../../src/score/formula.ts'
import { ASSET, BORROWER, addr, fundAdvance, hash, lenderInput, NET, newEngine, registerBacking, T0, unwrap , repaidFact } from '../engine/fixtures/world.ts'

const MINIMUMS = [{ network: NET, asset: ASSET, minPrincipalAtomic: 1000n }]
const NO_PASSPORT: RepaymentHistory = { page: () => [] }

/** A passport holding `events` (kind and principal) for BORROWER, paged as PassportBook.page pages. */
function passportOf(events: Array<{ kind: SignedPassportEvent['kind']; principalAtomic: bigint; asset?: string }>): RepaymentHistory & { read: number } {
  const signed = events.map((e, i) => ({
    agent: BORROWER, sequence: i + 1, kind: e.kind, issuedAtMs: T0,
    details: JSON.stringify({ advanceId: `adv_${i + 1}`, network: NET, asset: e.asset ?? ASSET, principalAtomic: e.principalAtomic.toString() }),
  }) as SignedPassportEvent)
  const history = {
    read: 0,
    page: (agent: string, after: number, limit: number) => {
      const page = agent === BORROWER ? signed.slice(after, after + limit) : []
      history.read += page.length
      return page
    },
  }
  return history
}

/** The inputs of an address the service holds no borrower record of: a blank record, no history (edges30). */
function blank(subject: string, asOfMs: number) {
  return {
    subject, asOfMs, repaidAdvances: 0, scoredRepayments: [], repaymentMinimums: MINIMUMS, partialRepayments: 0, defaultedAdvances: 0, shortfallAtomic: 0n,
    suspended: false, openAdvances: 0, pastDueAdvances: 0, outstanding: [], historyStartedAtMs: null, erc8004: null,
  }
}

t.test('an address the engine does not know as a borrower is read as a blank record: no history', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  t.strictSame(scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, T0), blank(BORROWER, T0))
  t.strictSame(scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, lenderInput(1).address, T0), blank(lenderInput(1).address, T0), 'a lender is not a borrower')
})

t.test('open advances are exposure, past due after their due time; a repayment moves one to the repaid count', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  registerBacking(engine, 'src_1', 10_000_000n)
  const registered = scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, T0 + 1000)
  t.match(registered, { subject: BORROWER, asOfMs: T0 + 1000, openAdvances: 0, pastDueAdvances: 0, outstanding: [], historyStartedAtMs: T0, repaidAdvances: 0 })
  t.equal(registered?.partialRepayments, 0, 'partial repayments: 0 until the service records them')
  t.equal(registered?.erc8004, null, 'ERC-8004 evidence: null until the service reads it')

  const advanceId = fundAdvance(engine, { amountAtomic: 1000n }, T0 + 5000)
  const advance = engine.getAdvance(advanceId)!
  const open = scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, T0 + 6000)!
  t.equal(open.openAdvances, 1)
  t.equal(open.pastDueAdvances, 0)
  t.strictSame(open.outstanding, [{ network: NET, asset: ASSET, outstandingAtomic: advance.principalAtomic + advance.feeAtomic }])
  t.equal(open.historyStartedAtMs, T0, 'the source registration is the earliest activity')
  t.equal(scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, advance.dueAtMs)!.pastDueAdvances, 0, 'not past due at its due time: the contract liquidates from the next second on')
  const late = scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, (Math.floor(advance.dueAtMs / 1000) + 1) * 1000)!
  t.equal(late.pastDueAdvances, 1, 'past due from the second after its due time\'s')
  t.strictSame(scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, addr(0xdead), T0), blank(addr(0xdead), T0), 'another address: still blank')

  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(77)), T0 + 7000))
  const repaid = scoreInputsOf(engine, NO_PASSPORT, MINIMUMS, BORROWER, T0 + 8000)!
  t.match(repaid, { openAdvances: 0, pastDueAdvances: 0, outstanding: [], repaidAdvances: 1 })
})

t.test('the scored repayments: the passport\'s repaid advances whose principal reached its asset\'s minimum, oldest first, at most the term\'s count', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine, 'src_1', 10_000_000n)
  const passport = passportOf([
    { kind: 'advance_repaid', principalAtomic: 999n },
    { kind: 'advance_defaulted', principalAtomic: 5000n },
    { kind: 'advance_repaid', principalAtomic: 1000n },
    { kind: 'advance_repaid', principalAtomic: 5000n, asset: 'WETH' },
    ...Array.from({ length: SCORED_REPAYMENTS_MAX + 5 }, () => ({ kind: 'advance_repaid' as const, principalAtomic: 2000n })),
  ])
  const inputs = scoreInputsOf(engine, passport, MINIMUMS, BORROWER, T0)!
  t.strictSame(inputs.repaymentMinimums, MINIMUMS, 'the minimums it was read against')
  t.equal(inputs.scoredRepayments.length, SCORED_REPAYMENTS_MAX, 'no more than the term can count')
  t.strictSame(inputs.scoredRepayments[0], { advanceId: 'adv_3', network: NET, asset: ASSET, principalAtomic: 1000n }, 'below the minimum, not repaid, or in an asset without a minimum: left out')
  t.ok(inputs.scoredRepayments.every((r) => r.principalAtomic >= 1000n && r.asset === ASSET))
})

t.test('the passport scan is bounded: repayments beyond its first PASSPORT_SCAN_EVENTS_MAX events are not read', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine, 'src_1', 10_000_000n)
  const passport = passportOf([
    ...Array.from({ length: PASSPORT_SCAN_EVENTS_MAX }, () => ({ kind: 'advance_repaid' as const, principalAtomic: 1n })),
    { kind: 'advance_repaid', principalAtomic: 5000n },
  ])
  t.strictSame(scoreInputsOf(engine, passport, MINIMUMS, BORROWER, T0)!.scoredRepayments, [])
  t.equal(passport.read, PASSPORT_SCAN_EVENTS_MAX)
})
