// bench/loadmix.ts refuses to report a window whose answers show a broken mix: too many errors, or matches that do
// not lease (the book ran dry). These bounds are what keeps a broken mix from passing for a fast one.
import t from 'tap'
import { checkMix, ERROR_SHARE_MAX, LEASED_SHARE_MIN, type MixCounts } from '../../bench/fixtures/mix.ts'

const healthy = (over: Partial<MixCounts> = {}): MixCounts => ({
  requests: 500, approved: 500, declined: 0, matches: 500, leased: 500, noEligibleLender: 0, offerExpired: 0, refusedLeases: 0, unrecognised: 0, errors: {}, ...over,
})

t.test('a window within the bounds passes, at the bounds too', async (t) => {
  t.doesNotThrow(() => checkMix('w', { requests: 1000, errors: 0 }, healthy()))
  t.doesNotThrow(() => checkMix('w', { requests: 1000, errors: 1000 * ERROR_SHARE_MAX }, healthy({ errors: { '500 internal': 10 } })))
  t.doesNotThrow(() => checkMix('w', { requests: 1000, errors: 0 }, healthy({ leased: 500 * LEASED_SHARE_MIN, noEligibleLender: 50 })))
})

t.test('more error answers than the bound fail the window, naming them', async (t) => {
  t.throws(() => checkMix('uws-front saturated', { requests: 1000, errors: 11 }, healthy({ errors: { '409 live_offers_limit': 11 } })), /uws-front saturated: 11 of 1000 answers are errors .*live_offers_limit/)
  t.throws(() => checkMix('w', { requests: 1000, errors: 6 }, healthy({ unrecognised: 5 })), /11 of 1000 answers are errors/, 'unrecognised 200 answers count as errors')
})

t.test('matches that do not lease, or no match at all, fail the window', async (t) => {
  t.throws(() => checkMix('w', { requests: 1000, errors: 0 }, healthy({ leased: 449, noEligibleLender: 51 })), /449 of 500 matches leased/)
  t.throws(() => checkMix('w', { requests: 1000, errors: 0 }, healthy({ matches: 0, leased: 0 })), /0 of 0 matches leased/)
})
