// The inputs of one score, read at one instant. The engine's borrower record (repayments, defaults, shortfall,
// suspension) and its live actors (open advances, the earliest activity still held); the subject's passport for the
// repaid advances the repayment term counts, since only the passport keeps each one's principal and asset after the
// advance left the engine, and for its first event, which starts the history when earlier than any live actor. Partial repayments and ERC-8004 evidence are not recorded by the service yet: 0 and null.
import type { Address } from 'viem'
import type { Engine } from '../engine/engine.ts'
import type { PassportBook } from '../passport/book.ts'
import { SCORED_REPAYMENTS_MAX, type CreditScoreInputs, type RepaidAdvance, type RepaymentMinimum } from './formula.ts'

/** The engine's reads the score needs: nothing else of it. */
export type ScoreSource = Pick<Engine, 'getBorrower' | 'borrowerExposure'>
/** The passport's read the score needs. */
export type RepaymentHistory = Pick<PassportBook, 'page'>

/**
 * Passport events read per score at most: a subject with a longer history is scored on the repaid advances among its
 * first ones (its own tiny advances can only crowd out its own real ones), and one call's reads stay bounded.
 */
export const PASSPORT_SCAN_EVENTS_MAX = 10_000
const PAGE_EVENTS = 256

/**
 * What an address the service holds no borrower record of is scored as: a record with nothing in it (no history, the
 * score's base). So /credit-score answers any subject alike, and whether an address is a borrower is learnt at a
 * score's price, not for free (edges30).
 */
const NO_RECORD = { advancesRepaid: 0, advancesDefaulted: 0, shortfallAtomic: 0n, suspended: false } as const

/** The subject's inputs at `nowMs`; an address without a borrower record is read as a blank one (NO_RECORD). */
export function scoreInputsOf(engine: ScoreSource, passport: RepaymentHistory, minimums: readonly RepaymentMinimum[], subject: Address, nowMs: number): CreditScoreInputs {
  const borrower = engine.getBorrower(subject) ?? NO_RECORD
  const exposure = engine.borrowerExposure(subject, nowMs)
  const history = passportHistory(passport, minimums, subject)
  return {
    subject,
    asOfMs: nowMs,
    repaidAdvances: borrower.advancesRepaid,
    scoredRepayments: history.scored,
    repaymentMinimums: [...minimums],
    partialRepayments: 0,
    defaultedAdvances: borrower.advancesDefaulted,
    shortfallAtomic: borrower.shortfallAtomic,
    suspended: borrower.suspended,
    openAdvances: exposure.openAdvances,
    pastDueAdvances: exposure.pastDueAdvances,
    outstanding: exposure.outstanding,
    historyStartedAtMs: earlier(exposure.earliestActivityAtMs, history.firstEventAtMs),
    erc8004: null,
  }
}

/**
 * The earlier of two instants, either unknown. The history starts at the subject's first passport event too: final jobs
 * and advances leave the engine, so its live ones alone lost a repaid borrower's history at its last job's end and
 * restarted it at its next job (an outsider's finding, test/score/outsider22-history-age.test.ts).
 */
function earlier(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b)
}

/**
 * The subject's first SCORED_REPAYMENTS_MAX `advance_repaid` events whose principal reached its asset's minimum, and
 * when its first event was issued (null without one), in one scan.
 */
function passportHistory(passport: RepaymentHistory, minimums: readonly RepaymentMinimum[], subject: Address): { scored: RepaidAdvance[]; firstEventAtMs: number | null } {
  const found: RepaidAdvance[] = []
  let firstEventAtMs: number | null = null
  for (let after = 0; after < PASSPORT_SCAN_EVENTS_MAX && found.length < SCORED_REPAYMENTS_MAX; ) {
    const page = passport.page(subject, after, Math.min(PAGE_EVENTS, PASSPORT_SCAN_EVENTS_MAX - after))
    if (after === 0 && page.length > 0) firstEventAtMs = page[0]!.issuedAtMs
    for (const event of page) {
      if (found.length === SCORED_REPAYMENTS_MAX) break
      if (event.kind !== 'advance_repaid') continue
      const details = JSON.parse(event.details) as { advanceId: string; network: string; asset: string; principalAtomic: string }
      const repaid = { advanceId: details.advanceId, network: details.network, asset: details.asset, principalAtomic: BigInt(details.principalAtomic) }
      const minimum = minimums.find((m) => m.network === repaid.network && m.asset === repaid.asset)
      if (minimum !== undefined && repaid.principalAtomic >= minimum.minPrincipalAtomic) found.push(repaid)
    }
    if (page.length === 0) break
    after += page.length
  }
  return { scored: found, firstEventAtMs }
}
