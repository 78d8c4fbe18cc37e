// The score formula: each documented term, its caps, the clamp to 0..1000, determinism, and monotonicity (more
// repayments or more history never lower a score; defaults, suspension and open exposure never raise it). Version 2:
// a repaid advance counts only when its principal reached its asset's minimum.
import t from 'tap'
import fc from 'fast-check'
import { checkInputs, creditScore, SCORE_MAX, SCORE_MIN, SCORE_TERMS, SCORED_REPAYMENTS_MAX, type CreditScoreInputs, type RepaidAdvance } from '../../src/score/formula.ts'

const DAY_MS = 86_400_000
const asOfMs = Date.UTC(2026, 10, 1)
const fresh: CreditScoreInputs = {
  subject: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  asOfMs,
  repaidAdvances: 0,
  scoredRepayments: [],
  repaymentMinimums: [{ network: 'devnet-b', asset: 'USDC', minPrincipalAtomic: 100_000_000n }, { network: 'devnet-b', asset: 'WETH', minPrincipalAtomic: 10n ** 20n }],
  partialRepayments: 0,
  defaultedAdvances: 0,
  shortfallAtomic: 0n,
  suspended: false,
  openAdvances: 0,
  pastDueAdvances: 0,
  outstanding: [],
  historyStartedAtMs: null,
  erc8004: null,
}
const score = (change: Partial<CreditScoreInputs>) => creditScore({ ...fresh, ...change })
/** `count` advances of `principalAtomic` USDC repaid in full, as the passport names them. */
const repaid = (count: number, principalAtomic: bigint, asset = 'USDC'): RepaidAdvance[] =>
  Array.from({ length: count }, (_, i) => ({ advanceId: `adv_${i}`, network: 'devnet-b', asset, principalAtomic }))
const repaying = (count: number, principalAtomic = 400_000_000n): Partial<CreditScoreInputs> => ({ repaidAdvances: count, scoredRepayments: repaid(Math.min(count, SCORED_REPAYMENTS_MAX), principalAtomic) })

t.test('a borrower with no history scores the base; every factor is zero but the base', async (t) => {
  const s = score({})
  t.equal(s.score, SCORE_TERMS.base)
  t.strictSame(s.factors, { base: 500, repayments: 0, partialRepayments: 0, defaults: 0, shortfall: 0, suspension: 0, exposure: 0, historyAge: 0, erc8004: 0 })
  t.equal(s.formulaVersion, 2)
  t.equal(s.asOfMs, asOfMs)
})

t.test('each term as documented, with its cap', async (t) => {
  t.equal(score(repaying(3)).factors.repayments, 60)
  t.equal(score(repaying(50)).factors.repayments, 200, 'repayments cap at +200')
  t.equal(score({ partialRepayments: 4 }).factors.partialRepayments, 20)
  t.equal(score({ partialRepayments: 40 }).factors.partialRepayments, 50, 'partial repayments cap at +50')
  t.equal(score({ defaultedAdvances: 1 }).factors.defaults, -150)
  t.equal(score({ defaultedAdvances: 9 }).factors.defaults, -450, 'defaults cap at -450')
  t.equal(score({ shortfallAtomic: 1n }).factors.shortfall, -100)
  t.equal(score({ suspended: true }).factors.suspension, -250)
  t.equal(score({ openAdvances: 2, pastDueAdvances: 1 }).factors.exposure, -50 - 50)
  t.equal(score({ openAdvances: 20, pastDueAdvances: 20 }).factors.exposure, -150 - 100, 'exposure caps at -250')
  t.equal(score({ historyStartedAtMs: asOfMs - 365 * DAY_MS }).factors.historyAge, 75, 'one year: half of +150')
  t.equal(score({ historyStartedAtMs: asOfMs - 2000 * DAY_MS }).factors.historyAge, 150, 'history caps at +150 (two years)')
  t.equal(score({ historyStartedAtMs: asOfMs - DAY_MS + 1 }).factors.historyAge, 0, 'less than a day counts nothing')
  t.equal(score({ historyStartedAtMs: asOfMs + DAY_MS }).factors.historyAge, 0, 'a start after asOf counts nothing')
  t.equal(score({ erc8004: { agentId: '1', feedbackCount: 20, averageBps: 10_000 } }).factors.erc8004, 100)
  t.equal(score({ erc8004: { agentId: '1', feedbackCount: 5, averageBps: 10_000 } }).factors.erc8004, 25, 'few feedback entries count less')
  t.equal(score({ erc8004: { agentId: '1', feedbackCount: 40, averageBps: 0 } }).factors.erc8004, -100)
  t.equal(score({ erc8004: { agentId: '1', feedbackCount: 0, averageBps: 0 } }).factors.erc8004, 0, 'no feedback, no term')
})

t.test('a repaid advance counts only when its principal reached its asset\'s minimum: tiny self-lent advances buy nothing', async (t) => {
  t.equal(score({ repaidAdvances: 10, scoredRepayments: repaid(10, 1_000_000n) }).factors.repayments, 0, 'ten 1-USDC advances: nothing (+200 under version 1)')
  t.equal(score({ repaidAdvances: 1, scoredRepayments: repaid(1, 99_999_999n) }).factors.repayments, 0, 'one atomic unit short of 100 USDC: nothing')
  t.equal(score({ repaidAdvances: 1, scoredRepayments: repaid(1, 100_000_000n) }).factors.repayments, 20, '100 USDC: +20')
  t.equal(score({ repaidAdvances: 1, scoredRepayments: repaid(1, 100_000_000n, 'WETH') }).factors.repayments, 0, 'each asset has its own minimum (100 WETH)')
  t.equal(score({ repaidAdvances: 1, scoredRepayments: repaid(1, 10n ** 30n, 'DAI') }).factors.repayments, 0, 'an asset without a minimum never counts')
  t.equal(score({ repaidAdvances: 10 }).factors.repayments, 0, 'the repaid count alone is reported, not scored')
})

t.test('the score is the clamped sum of its factors, within 0..1000; both ends are reachable', async (t) => {
  const best = score({ ...repaying(10), partialRepayments: 10, historyStartedAtMs: asOfMs - 730 * DAY_MS, erc8004: { agentId: '1', feedbackCount: 20, averageBps: 10_000 } })
  t.equal(best.score, SCORE_MAX)
  const worst = score({ defaultedAdvances: 3, shortfallAtomic: 5n, suspended: true, openAdvances: 6, pastDueAdvances: 6 })
  t.equal(worst.score, SCORE_MIN)
  t.equal(Object.values(worst.factors).reduce((a, b) => a + b, 0), 500 - 450 - 100 - 250 - 250, 'the sum before the clamp')
})

const inputsArb = fc
  .record({
    repaidAdvances: fc.nat({ max: 100 }),
    principals: fc.array(fc.bigInt({ min: 1n, max: 10n ** 12n }), { maxLength: SCORED_REPAYMENTS_MAX }),
    partialRepayments: fc.nat({ max: 100 }),
    defaultedAdvances: fc.nat({ max: 20 }),
    shortfallAtomic: fc.bigInt({ min: 0n, max: 10n ** 12n }),
    suspended: fc.boolean(),
    openAdvances: fc.nat({ max: 30 }),
    pastDue: fc.nat({ max: 30 }),
    ageDays: fc.option(fc.nat({ max: 3000 }), { nil: null }),
    erc8004: fc.option(fc.record({ agentId: fc.constant('7'), feedbackCount: fc.nat({ max: 100 }), averageBps: fc.integer({ min: 0, max: 10_000 }) }), { nil: null }),
  })
  .map(({ pastDue, ageDays, principals, ...rest }): CreditScoreInputs => ({
    ...fresh,
    ...rest,
    repaidAdvances: Math.max(rest.repaidAdvances, principals.length),
    scoredRepayments: principals.map((principalAtomic, i) => ({ advanceId: `adv_${i}`, network: 'devnet-b', asset: 'USDC', principalAtomic })),
    pastDueAdvances: Math.min(pastDue, rest.openAdvances),
    historyStartedAtMs: ageDays === null ? null : asOfMs - ageDays * DAY_MS,
  }))

t.test('property: deterministic, within range, monotone in each input', async (t) => {
  fc.assert(
    fc.property(inputsArb, (inputs) => {
      const s = creditScore(inputs)
      if (s.score < SCORE_MIN || s.score > SCORE_MAX || !Number.isInteger(s.score)) return false
      if (JSON.stringify(creditScore(structuredClone(inputs)), (_, v) => (typeof v === 'bigint' ? `${v}n` : v)) !== JSON.stringify(s, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))) return false
      const better = [
        { ...inputs, repaidAdvances: inputs.repaidAdvances + 1 },
        ...(inputs.scoredRepayments.length < SCORED_REPAYMENTS_MAX
          ? [{ ...inputs, repaidAdvances: inputs.repaidAdvances + 1, scoredRepayments: [...inputs.scoredRepayments, ...repaid(1, 100_000_000n)] }]
          : []),
        { ...inputs, partialRepayments: inputs.partialRepayments + 1 },
        { ...inputs, historyStartedAtMs: (inputs.historyStartedAtMs ?? asOfMs) - 30 * DAY_MS },
        { ...inputs, suspended: false },
        { ...inputs, defaultedAdvances: Math.max(0, inputs.defaultedAdvances - 1) },
      ]
      const worse = [
        { ...inputs, defaultedAdvances: inputs.defaultedAdvances + 1 },
        { ...inputs, suspended: true },
        { ...inputs, openAdvances: inputs.openAdvances + 1 },
        { ...inputs, openAdvances: inputs.openAdvances + 1, pastDueAdvances: inputs.pastDueAdvances + 1 },
        { ...inputs, shortfallAtomic: inputs.shortfallAtomic + 1n },
      ]
      return better.every((b) => creditScore(b).score >= s.score) && worse.every((w) => creditScore(w).score <= s.score)
    }),
    { numRuns: 500, seed: Number(process.env['FC_SEED'] ?? 12) },
  )
  t.pass('500 generated records')
})

t.test('inputs no record could produce are refused', async (t) => {
  t.throws(() => checkInputs({ ...fresh, repaidAdvances: -1 }), RangeError)
  t.throws(() => checkInputs({ ...fresh, openAdvances: 1.5 }), RangeError)
  t.throws(() => checkInputs({ ...fresh, openAdvances: 1, pastDueAdvances: 2 }), /pastDueAdvances/)
  t.throws(() => checkInputs({ ...fresh, shortfallAtomic: -1n }), RangeError)
  t.throws(() => checkInputs({ ...fresh, repaidAdvances: 1, scoredRepayments: repaid(2, 100_000_000n) }), /scoredRepayments/)
  t.throws(() => checkInputs({ ...fresh, repaidAdvances: 20, scoredRepayments: repaid(SCORED_REPAYMENTS_MAX + 1, 100_000_000n) }), /scoredRepayments/)
  t.throws(() => checkInputs({ ...fresh, repaidAdvances: 1, scoredRepayments: repaid(1, 0n) }), /principal/)
  t.throws(() => checkInputs({ ...fresh, erc8004: { agentId: '1', feedbackCount: 1, averageBps: 10_001 } }), /averageBps/)
  t.doesNotThrow(() => checkInputs(fresh))
})
