// The initial-reputation formula (src/reputation/formula.ts): bounded, deterministic, shrunk toward 5000 by how
// little evidence there is, decayed by age when a half-life is set.
import t from 'tap'
import { feedbackBps, feedbackWeight, reputationFromFeedback, NEUTRAL_REPUTATION_BPS } from '../../src/reputation/formula.ts'

t.test('values are 0..100 scores normalised by their decimals, clamped', async (t) => {
  t.equal(feedbackBps(80n, 0), 8000)
  t.equal(feedbackBps(955n, 1), 9550, '95.5 at one decimal')
  t.equal(feedbackBps(12345n, 4), 123, '1.2345 -> 123 bps, toward zero')
  t.equal(feedbackBps(-5n, 0), 0, 'negative is 0')
  t.equal(feedbackBps(250n, 0), 10_000, 'above 100 is 10000')
})

t.test('no evidence is the neutral prior; evidence moves it by its weight', async (t) => {
  t.equal(reputationFromFeedback([]), NEUTRAL_REPUTATION_BPS)
  // prior 5 x 5000 + 1 x 10000 over 6 = 5833.33 -> 5833
  t.equal(reputationFromFeedback([{ value: 100n, valueDecimals: 0 }]), 5833)
  // 5 x 5000 + 10 x 10000 over 15 = 8333
  t.equal(reputationFromFeedback(Array.from({ length: 10 }, () => ({ value: 100n, valueDecimals: 0 }))), 8333, 'more evidence, further from neutral')
  t.equal(reputationFromFeedback([{ value: 0n, valueDecimals: 0 }], { priorWeight: 1 }), 2500, 'the prior weight is configurable')
  // (5 x 5000 + 8000 + 9550) / 7 = 6078.57 -> 6078
  t.equal(reputationFromFeedback([{ value: 80n, valueDecimals: 0 }, { value: 955n, valueDecimals: 1 }]), 6078)
})

t.test('bounded within 0..10000 for extreme inputs, and deterministic', async (t) => {
  const many = (value: bigint) => Array.from({ length: 5000 }, () => ({ value, valueDecimals: 0 }))
  const high = reputationFromFeedback(many(2n ** 126n))
  const low = reputationFromFeedback(many(-(2n ** 126n)))
  t.ok(high <= 10_000 && high > 9_990, `high ${high}`)
  t.ok(low >= 0 && low < 10, `low ${low}`)
  const mixed = [{ value: 73n, valueDecimals: 0 }, { value: 4n, valueDecimals: 0 }, { value: 9999n, valueDecimals: 2 }]
  t.equal(reputationFromFeedback(mixed), reputationFromFeedback([...mixed]), 'same input, same value')
  t.throws(() => reputationFromFeedback([], { priorWeight: 0 }), RangeError)
})

t.test('age decay halves the weight per half-life', async (t) => {
  t.equal(feedbackWeight(0, 100), 1_000_000n)
  t.equal(feedbackWeight(199, 100), 500_000n)
  t.equal(feedbackWeight(250, 100), 250_000n)
  t.equal(feedbackWeight(10 ** 12, 100), 0n, 'after 20 half-lives nothing')
  t.equal(feedbackWeight(250, undefined), 1_000_000n, 'no half-life, no decay')
  const fresh = reputationFromFeedback([{ value: 100n, valueDecimals: 0, ageSeconds: 0 }], { priorWeight: 1, halfLifeSeconds: 100 })
  const old = reputationFromFeedback([{ value: 100n, valueDecimals: 0, ageSeconds: 100 }], { priorWeight: 1, halfLifeSeconds: 100 })
  t.equal(fresh, 7500)
  t.equal(old, 6666, 'half the weight: (5000 + 0.5 x 10000) / 1.5')
})
