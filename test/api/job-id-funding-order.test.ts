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

t.test('an old head on the real chain, whose clock keeps the wall clock\'s time, does not let a later squat pass', async (t) => {
  // A review's finding (test/api/review31-job-id-stale-head.test.ts): the real chain's RPC answers a latest block 20 s
  // old, so its funding looked 20 s later than it was, and a squat 3 s after it, its timestamp the later, passed.
  const real = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130, headAgeMs: 20_000 })
  const squat = funding('b', { minedAtS: 103, aheadS: 0, readAtS: 130.1 })
  t.match(fundedBefore(real, squat), { by: 'timestamps' }, 'the squat is refused, by the timestamps as before')
  // The real job registering through the same old head looks 20 s later than it was: refused (409) until its RPC
  // answers a newer block, the squat meanwhile refused too.
  t.match(fundedBefore(squat, real), { by: 'clocks' })
  const fresh = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  t.equal(fundedBefore(squat, fresh), undefined, 'through a newer block the real job is not refused')
  // On a chain ahead of the wall clock the head's age there bounds nothing: the residual window (README).
  const ahead = funding('a', { minedAtS: 100, aheadS: 600, readAtS: 130, headAgeMs: 20_000 })
  const squatBehind = funding('b', { minedAtS: 103, aheadS: 0, readAtS: 130.1 })
  t.equal(fundedBefore(ahead, squatBehind), undefined)
})

t.test('a chain behind the wall clock: a squat there is still refused by the clocks; the real job against it is ordered by the timestamps', async (t) => {
  // devnet-b 10 minutes behind devnet-a and the wall clock (outsider23's skew the other way round).
  const real = funding('a', { minedAtS: 100, aheadS: 0, readAtS: 130 })
  const squat = funding('b', { minedAtS: 110, aheadS: -600, readAtS: 130.1 })
  t.ok(squat.fundedAtMs < real.fundedAtMs, 'the squat\'s timestamp is the earlier')
  t.match(fundedBefore(real, squat), { by: 'clocks' }, 'the squat registering first is refused')
  // Its latest block looks 10 minutes old on the wall clock, which a stale head could be as well: the real job, not
  // told apart from a later funding, is ordered by the timestamps (409 until the squat's funding is reclaimed).
  t.match(fundedBefore(squat, real), { by: 'timestamps' })
})
