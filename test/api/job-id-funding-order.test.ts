// src/service/funding-order.ts fundedBefore, which refuseLaterFunding asks whether another network's funding of a job
// id came before the one being registered: on the service's clock through each chain's latest block where the
// evidence is wider than its uncertainty, by the timestamps as they are where it is not (outsider23's clock skew; the
// tap test test/api/outsider23-job-id-clock-skew.test.ts runs it against two devnets).
import t from 'tap'
import { fundedBefore, type FundingOnChain } from '../../src/service/funding-order.ts'

const s = 1000
/** A funding mined at service time `minedAtS` on a chain `aheadS` seconds ahead of the service (whose wall clock is base plus its time), its latest block read at service time `readAtS` (taking `readTakesMs`). */
function funding(slug: string, options: { minedAtS: number; aheadS: number; readAtS: number; readTakesMs?: number; blockTimeMs?: number | undefined; headAgeMs?: number }): FundingOnChain {
  const base = 1_800_000_000 * s
  const readTakesMs = options.readTakesMs ?? 20
  const sentMs = options.readAtS * s
  const blockTimeMs = 'blockTimeMs' in options ? options.blockTimeMs : s
  // The head was mined headAgeMs before the read (at most a block time on a chain that keeps its pace).
  const headMinedMs = sentMs - (options.headAgeMs ?? 500)
  const chainMs = (serviceMs: number) => Math.floor((base + serviceMs + options.aheadS * s) / s) * s
  return { slug, fundedAtMs: chainMs(options.minedAtS * s), clock: { headMs: chainMs(headMinedMs), sentMs, answeredMs: sentMs + readTakesMs, answeredWallMs: base + sentMs + readTakesMs }, blockTimeMs }
}

t.test('clocks that agree: the timestamps order fundings too close for the clocks, as before', async (t) => {
  const real = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 103 })
  const squat = funding('b', { minedAtS: 102, aheadS: 0, readAtS: 103 })
  t.match(fundedBefore(real, squat), { by: 'timestamps' }, 'the squat 2 s later is refused')
  t.equal(fundedBefore(squat, real), undefined, 'the real job is not')
  const same = funding('b', { minedAtS: 100.2, aheadS: 0, readAtS: 103 })
  t.equal(fundedBefore(real, same), undefined, 'the same second is a tie')
  t.equal(fundedBefore(same, real), undefined)
})

t.test('a chain 10 minutes behind: a squat there 10 s after the real funding is the later one', async (t) => {
  const real = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130 })
  const squat = funding('b', { minedAtS: 110, aheadS: 0, readAtS: 130.1 })
  t.ok(squat.fundedAtMs < real.fundedAtMs, 'its timestamp is the earlier')
  t.match(fundedBefore(real, squat), { by: 'clocks' }, 'the squat is refused')
  t.equal(fundedBefore(squat, real), undefined, 'the real job is not')
})

t.test('the real funding on the lagging chain: a squat on the leading chain 10 s later is refused, the real job is not', async (t) => {
  const real = funding('b', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  const squat = funding('a', { minedAtS: 110, aheadS: 600, readAtS: 130.1 })
  t.ok(fundedBefore(real, squat), 'the squat is refused')
  t.equal(fundedBefore(squat, real), undefined, 'the real job is not')
})

t.test('closer than the uncertainty, the timestamps order them: a squat on the lagging chain 2 s later still takes it', async (t) => {
  const real = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130 })
  const squat = funding('b', { minedAtS: 102, aheadS: 0, readAtS: 130.1 })
  t.equal(fundedBefore(real, squat), undefined, 'the residual window: the squat is not refused')
  t.match(fundedBefore(squat, real), { by: 'timestamps' })
})

t.test('slow reads widen the uncertainty: then the timestamps order the fundings', async (t) => {
  const real = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130, readTakesMs: 15_000 })
  const squat = funding('b', { minedAtS: 110, aheadS: 0, readAtS: 130 })
  t.equal(fundedBefore(real, squat), undefined)
  const quick = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130 })
  t.match(fundedBefore(quick, squat), { by: 'clocks' })
})

t.test('a chain of unknown block time is ordered by the timestamps, as before', async (t) => {
  const real = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130 })
  const squat = funding('b', { minedAtS: 110, aheadS: 0, readAtS: 130, blockTimeMs: undefined })
  t.equal(fundedBefore(real, squat), undefined)
  t.match(fundedBefore(squat, real), { by: 'timestamps', uncertaintyMs: undefined })
})

t.test('an old head on the other chain (a chain mining only now and then) makes its funding look later, never earlier', async (t) => {
  const real = funding('b', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  // The squat on the leading chain, 10 s later, whose head is 20 s old when read.
  const squat = funding('a', { minedAtS: 110, aheadS: 600, readAtS: 130, headAgeMs: 20_000 })
  t.equal(fundedBefore(squat, real), undefined, 'the real job is not refused')
  t.ok(fundedBefore(real, squat), 'the squat is')
})

t.test('an old head on the real chain, whose clock keeps the wall clock\'s time, lets no later squat pass, and refuses no real job for good', async (t) => {
  // A review's finding (test/api/review31-job-id-stale-head.test.ts): the real chain's RPC answers a latest block 20 s
  // old, so its funding looked 20 s later than it was, and a squat 3 s after it, its timestamp the later, passed.
  const real = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130, headAgeMs: 20_000 })
  const squat = funding('b', { minedAtS: 103, aheadS: 0, readAtS: 130.1 })
  t.match(fundedBefore(real, squat), { by: 'unsettled', network: 'a' }, 'the squat is not let pass: retry')
  t.ok((fundedBefore(real, squat) as { excessMs: number }).excessMs > 15_000, 'the head\'s excess is read on the wall clock')
  // The real job registering through the same old head looked 20 s later than it was, and was refused 409 as if for good.
  t.match(fundedBefore(squat, real), { by: 'unsettled', network: 'a' }, 'the real job is asked to retry')
  const fresh = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  t.match(fundedBefore(fresh, squat), { by: 'timestamps' }, 'through a newer block, the squat is refused')
  t.equal(fundedBefore(squat, fresh), undefined, 'and the real job is not')
  // On a chain ahead of the wall clock the head's age there bounds nothing: the residual window (README).
  const ahead = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130, headAgeMs: 20_000 })
  t.equal(fundedBefore(ahead, squat), undefined)
})

t.test('a chain behind the wall clock: a squat there is never let pass; the real job against it retries', async (t) => {
  // devnet-b 10 minutes behind devnet-a and the wall clock (outsider23's skew the other way round).
  const real = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  const squat = funding('b', { minedAtS: 110, aheadS: -600, readAtS: 130.1 })
  t.ok(squat.fundedAtMs < real.fundedAtMs, 'the squat\'s timestamp is the earlier')
  // Its latest block looks 10 minutes old on the wall clock, which a stale head could be as well: the clocks' order
  // against the timestamps' is not taken through it.
  t.match(fundedBefore(real, squat), { by: 'unsettled', network: 'b' }, 'the squat registering first is asked to retry')
  t.match(fundedBefore(squat, real), { by: 'unsettled', network: 'b' }, 'so is the real job')
  const longAfter = funding('b', { minedAtS: 800, aheadS: -600, readAtS: 830 })
  const realThen = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 830 })
  t.match(fundedBefore(realThen, longAfter), { by: 'clocks' }, 'a squat there later than the lag and the uncertainty is refused')
})
