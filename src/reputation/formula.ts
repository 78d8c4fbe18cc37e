// Initial reputation of an agent from ERC-8004 feedback: a pure, bounded, deterministic formula in basis points.
// Integers only (bigint, divisions toward zero), so the same evidence gives the same value on every machine and replay.
//
//   valueBps_i  = clamp(trunc(value_i x 100 / 10^valueDecimals_i), 0, 10000)     feedback is a 0..100 score (ERC-8004)
//   weight_i    = 1,000,000 >> min(20, trunc(age_i / halfLife))                  no half-life: 1,000,000
//   reputation  = trunc((prior x 1,000,000 x 5000 + sum weight_i x valueBps_i) / (prior x 1,000,000 + sum weight_i))
//
// The result is a weighted mean of the neutral 5000 (with the weight of `priorWeight` fresh feedbacks) and the
// feedback: little evidence stays near 5000, much evidence approaches its own mean. It lies within 0..10000 because
// every term does.

export const NEUTRAL_REPUTATION_BPS = 5000
const UNIT_WEIGHT = 1_000_000n
const HALVINGS_MAX = 20

/** One feedback as read from the Reputation Registry (revoked and untrusted ones are never passed in). */
export interface FeedbackEvidence {
  /** int128 value as given to giveFeedback. */
  value: bigint
  /** Its decimals (0..18 in practice; a uint8 on chain). */
  valueDecimals: number
  /** Seconds between the feedback's block and the reading; undefined when age is not considered. */
  ageSeconds?: number | undefined
}

export interface ReputationFormulaParams {
  /** How many fresh neutral feedbacks the prior weighs (1..1000). */
  priorWeight: number
  /** Feedback loses half its weight per this many seconds; undefined: no decay. */
  halfLifeSeconds?: number | undefined
}

export const reputationFormulaDefaults: ReputationFormulaParams = { priorWeight: 5 }

/** A feedback value as basis points of a 0..100 score: below 0 is 0, above 100 is 10000. */
export function feedbackBps(value: bigint, valueDecimals: number): number {
  const bps = (value * 100n) / 10n ** BigInt(valueDecimals)
  return bps < 0n ? 0 : bps > 10_000n ? 10_000 : Number(bps)
}

/** The weight of one feedback: halved per elapsed half-life, 0 after 20 half-lives. */
export function feedbackWeight(ageSeconds: number | undefined, halfLifeSeconds: number | undefined): bigint {
  if (halfLifeSeconds === undefined || ageSeconds === undefined) return UNIT_WEIGHT
  const halvings = Math.min(HALVINGS_MAX, Math.trunc(Math.max(0, ageSeconds) / halfLifeSeconds))
  return UNIT_WEIGHT >> BigInt(halvings)
}

/** The initial reputation in bps from trusted, unrevoked feedback; no feedback gives the neutral 5000. */
export function reputationFromFeedback(feedback: readonly FeedbackEvidence[], params: ReputationFormulaParams = reputationFormulaDefaults): number {
  if (!Number.isInteger(params.priorWeight) || params.priorWeight < 1) throw new RangeError('priorWeight must be a positive integer')
  if (params.halfLifeSeconds !== undefined && !(params.halfLifeSeconds > 0)) throw new RangeError('halfLifeSeconds must be positive')
  const priorWeight = BigInt(params.priorWeight) * UNIT_WEIGHT
  let weighted = priorWeight * BigInt(NEUTRAL_REPUTATION_BPS)
  let total = priorWeight
  for (const item of feedback) {
    const weight = feedbackWeight(item.ageSeconds, params.halfLifeSeconds)
    weighted += weight * BigInt(feedbackBps(item.value, item.valueDecimals))
    total += weight
  }
  return Number(weighted / total)
}
