// The credit score: a pure, deterministic function of a borrower's record as this service holds it. Integers only
// (counts, booleans, milliseconds, atomic amounts compared only within their own asset), so the same inputs give the
// same score on every machine and in every process; amounts are never summed across assets, whose decimals differ.
//
// Version 2: a repaid advance raises the score only when its principal reached its asset's minimum
// (`repaymentMinPrincipalUnits` whole units). Under version 1 every repaid advance gave +20 whatever its size, so ten
// 1-unit advances lent by the borrower's own second wallet bought +200 for the fees alone; now those ten cost at least
// ten minimums paid out to verified suppliers.
//
// score = clamp(base + repayments + partialRepayments + defaults + shortfall + suspension + exposure + historyAge
//               + erc8004, SCORE_MIN, SCORE_MAX), each term below, divisions rounded toward zero.

/** Bump when any constant or term changes: the answer names the version it was computed with. */
export const FORMULA_VERSION = 2
export const SCORE_MIN = 0
export const SCORE_MAX = 1000
const DAY_MS = 86_400_000

/** The terms' constants, published in the catalog and the OpenAPI document. */
export const SCORE_TERMS = {
  base: 500,
  /** Per advance repaid in full whose principal reached its asset's minimum, up to the cap. */
  repaymentPoints: 20,
  repaymentCap: 200,
  /** That minimum in whole units of the asset (10^decimals atomic each): the assets lent are dollar stablecoins. */
  repaymentMinPrincipalUnits: 100,
  /** Per partial repayment, up to the cap. */
  partialRepaymentPoints: 5,
  partialRepaymentCap: 50,
  /** Per defaulted advance, down to the cap. */
  defaultPoints: -150,
  defaultCap: -450,
  /** Once, when a recovery left a shortfall. */
  shortfallPoints: -100,
  /** While the borrower is suspended. */
  suspensionPoints: -250,
  /** Per open advance, down to the cap; and per open advance past due or defaulted, down to its cap. */
  openAdvancePoints: -25,
  openAdvanceCap: -150,
  pastDuePoints: -50,
  pastDueCap: -100,
  /** Linear in the age of the history, reaching the cap at `historyAgeFullDays`. */
  historyAgeCap: 150,
  historyAgeFullDays: 730,
  /** (averageBps - 5000) / 50, shrunk by feedbackCount / erc8004FullCount while fewer, within +-cap. */
  erc8004Cap: 100,
  erc8004FullCount: 20,
} as const

/** Outstanding principal + fee of the subject's open advances on one network and asset. */
export interface OutstandingByAsset {
  network: string
  asset: string
  outstandingAtomic: bigint
}

/** An advance the subject repaid in full, as its passport's `advance_repaid` event records it. */
export interface RepaidAdvance {
  advanceId: string
  network: string
  asset: string
  principalAtomic: bigint
}

/** The least principal, per network and asset, of a repaid advance that counts toward the repayment term. */
export interface RepaymentMinimum {
  network: string
  asset: string
  minPrincipalAtomic: bigint
}

/** How many repaid advances the term can count: more add nothing, so the inputs carry no more. */
export const SCORED_REPAYMENTS_MAX = SCORE_TERMS.repaymentCap / SCORE_TERMS.repaymentPoints

/** Reputation evidence from an ERC-8004 Reputation Registry: feedback of trusted clients about the subject's agent. */
export interface Erc8004Evidence {
  agentId: string
  /** Feedback entries counted. */
  feedbackCount: number
  /** Their average, normalised to basis points (0..10000, 5000 neutral). */
  averageBps: number
}

/**
 * Everything the score reads, as plain data: what the local component receives for one call, and nothing else.
 * `partialRepayments` and `erc8004` are defined before the service records them: 0 and null until it does.
 */
export interface CreditScoreInputs {
  subject: `0x${string}`
  /** The instant the record was read; the age of the history is measured to it. */
  asOfMs: number
  /** Every advance repaid in full (reported; the term reads `scoredRepayments`). */
  repaidAdvances: number
  /**
   * Repaid advances whose principal reached their minimum, oldest first, at most SCORED_REPAYMENTS_MAX: each one is an
   * `advance_repaid` event of the subject's signed passport, so a caller can check it there.
   */
  scoredRepayments: RepaidAdvance[]
  /** The minimum of each network and asset; a repayment in an asset without one never counts. */
  repaymentMinimums: RepaymentMinimum[]
  partialRepayments: number
  defaultedAdvances: number
  shortfallAtomic: bigint
  suspended: boolean
  openAdvances: number
  /** Open advances past their due time or defaulted. */
  pastDueAdvances: number
  outstanding: OutstandingByAsset[]
  /** Earliest activity of the subject the service holds; null when none. */
  historyStartedAtMs: number | null
  erc8004: Erc8004Evidence | null
}

export interface ScoreFactors {
  base: number
  repayments: number
  partialRepayments: number
  defaults: number
  shortfall: number
  suspension: number
  exposure: number
  historyAge: number
  erc8004: number
}

export interface CreditScore {
  subject: `0x${string}`
  score: number
  scoreMin: number
  scoreMax: number
  formulaVersion: number
  asOfMs: number
  /** Each term's contribution; they sum to the score before clamping. */
  factors: ScoreFactors
  inputs: CreditScoreInputs
}

const T = SCORE_TERMS

function clamp(value: number, min: number, max: number): number {
  return value < min ? min : value > max ? max : value
}

/** Terms of a count: `points` each, bounded by `cap` (a negative cap bounds a penalty). */
function counted(count: number, points: number, cap: number): number {
  const raw = count * points
  return cap < 0 ? Math.max(raw, cap) : Math.min(raw, cap)
}

/** The repaid advances that reach their asset's minimum: the count the repayment term scores. */
function repaymentsReachingMinimum(inputs: CreditScoreInputs): number {
  return inputs.scoredRepayments.filter((repaid) => {
    const minimum = inputs.repaymentMinimums.find((m) => m.network === repaid.network && m.asset === repaid.asset)
    return minimum !== undefined && repaid.principalAtomic >= minimum.minPrincipalAtomic
  }).length
}

function historyAgeTerm(inputs: CreditScoreInputs): number {
  if (inputs.historyStartedAtMs === null) return 0
  const ageDays = Math.trunc(Math.max(0, inputs.asOfMs - inputs.historyStartedAtMs) / DAY_MS)
  return Math.min(T.historyAgeCap, Math.trunc((ageDays * T.historyAgeCap) / T.historyAgeFullDays))
}

function erc8004Term(evidence: Erc8004Evidence | null): number {
  if (evidence === null || evidence.feedbackCount <= 0) return 0
  const weight = Math.min(evidence.feedbackCount, T.erc8004FullCount)
  const raw = Math.trunc(((evidence.averageBps - 5000) * weight) / (T.erc8004FullCount * 50))
  return clamp(raw, -T.erc8004Cap, T.erc8004Cap)
}

/** Refuses inputs no honest reading of the service's records could produce: a score of them would mean nothing. */
export function checkInputs(inputs: CreditScoreInputs): void {
  const counts = ['repaidAdvances', 'partialRepayments', 'defaultedAdvances', 'openAdvances', 'pastDueAdvances'] as const
  for (const name of counts) {
    if (!Number.isSafeInteger(inputs[name]) || inputs[name] < 0) throw new RangeError(`${name} must be a non-negative integer`)
  }
  if (inputs.pastDueAdvances > inputs.openAdvances) throw new RangeError('pastDueAdvances exceeds openAdvances')
  if (!Number.isSafeInteger(inputs.asOfMs)) throw new RangeError('asOfMs must be an integer')
  if (inputs.historyStartedAtMs !== null && !Number.isSafeInteger(inputs.historyStartedAtMs)) throw new RangeError('historyStartedAtMs must be an integer')
  if (inputs.shortfallAtomic < 0n) throw new RangeError('shortfallAtomic must be >= 0')
  if (inputs.scoredRepayments.length > Math.min(inputs.repaidAdvances, SCORED_REPAYMENTS_MAX)) throw new RangeError('scoredRepayments exceeds repaidAdvances or SCORED_REPAYMENTS_MAX')
  if (inputs.scoredRepayments.some((repaid) => repaid.principalAtomic <= 0n)) throw new RangeError('a repaid principal must be > 0')
  if (inputs.repaymentMinimums.some((minimum) => minimum.minPrincipalAtomic <= 0n)) throw new RangeError('a repayment minimum must be > 0')
  if (inputs.erc8004 !== null) {
    const { feedbackCount, averageBps } = inputs.erc8004
    if (!Number.isSafeInteger(feedbackCount) || feedbackCount < 0) throw new RangeError('erc8004.feedbackCount must be a non-negative integer')
    if (!Number.isInteger(averageBps) || averageBps < 0 || averageBps > 10_000) throw new RangeError('erc8004.averageBps must be in 0..10000')
  }
}

export function creditScore(inputs: CreditScoreInputs): CreditScore {
  checkInputs(inputs)
  const factors: ScoreFactors = {
    base: T.base,
    repayments: counted(repaymentsReachingMinimum(inputs), T.repaymentPoints, T.repaymentCap),
    partialRepayments: counted(inputs.partialRepayments, T.partialRepaymentPoints, T.partialRepaymentCap),
    defaults: counted(inputs.defaultedAdvances, T.defaultPoints, T.defaultCap),
    shortfall: inputs.shortfallAtomic > 0n ? T.shortfallPoints : 0,
    suspension: inputs.suspended ? T.suspensionPoints : 0,
    exposure: counted(inputs.openAdvances, T.openAdvancePoints, T.openAdvanceCap) + counted(inputs.pastDueAdvances, T.pastDuePoints, T.pastDueCap),
    historyAge: historyAgeTerm(inputs),
    erc8004: erc8004Term(inputs.erc8004),
  }
  const sum = Object.values(factors).reduce((a, b) => a + b, 0)
  return {
    subject: inputs.subject,
    score: clamp(sum, SCORE_MIN, SCORE_MAX),
    scoreMin: SCORE_MIN,
    scoreMax: SCORE_MAX,
    formulaVersion: FORMULA_VERSION,
    asOfMs: inputs.asOfMs,
    factors,
    inputs,
  }
}
