// The inputs of one score, read from the engine at one instant. The engine is the only source: its borrower record
// (repayments, defaults, shortfall, suspension) and its live actors (open advances, the earliest activity still
// held). Partial repayments and ERC-8004 evidence are not recorded by the service yet: 0 and null until they are.
import type { Address } from 'viem'
import type { Engine } from '../engine/engine.ts'
import type { CreditScoreInputs } from './formula.ts'

/** The engine's reads the score needs: nothing else of it. */
export type ScoreSource = Pick<Engine, 'getBorrower' | 'borrowerExposure'>

/** The subject's inputs at `nowMs`, or undefined when the service knows no borrower at that address. */
export function scoreInputsOf(engine: ScoreSource, subject: Address, nowMs: number): CreditScoreInputs | undefined {
  const borrower = engine.getBorrower(subject)
  if (borrower === undefined) return undefined
  const exposure = engine.borrowerExposure(subject, nowMs)
  return {
    subject,
    asOfMs: nowMs,
    repaidAdvances: borrower.advancesRepaid,
    partialRepayments: 0,
    defaultedAdvances: borrower.advancesDefaulted,
    shortfallAtomic: borrower.shortfallAtomic,
    suspended: borrower.suspended,
    openAdvances: exposure.openAdvances,
    pastDueAdvances: exposure.pastDueAdvances,
    outstanding: exposure.outstanding,
    historyStartedAtMs: exposure.earliestActivityAtMs,
    erc8004: null,
  }
}
