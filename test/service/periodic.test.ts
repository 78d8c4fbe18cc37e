// periodic.ts: the dispatch ticker's runner. While work is due, runs start one per turn of the event loop, up to
// inFlightMax unfinished at once (a run is a short command, then a wait for its commit); never more; none when nothing
// is due; the interval never starts a second run beside one still unfinished.
import t from 'tap'
import { periodic } from '../../src/service/periodic.ts'

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** Runs that finish only when released, in the order they started. */
function heldRuns() {
  const release: (() => void)[] = []
  let started = 0
  let unfinished = 0
  let most = 0
  const run = () => {
    started++
    unfinished++
    most = Math.max(most, unfinished)
    return new Promise<void>((resolve) => release.push(() => {
      unfinished--
      resolve()
    }))
  }
  return { run, release, counts: () => ({ started, unfinished, most }) }
}

t.test('while work is due, up to inFlightMax runs wait at once, one started per turn', async (t) => {
  const held = heldRuns()
  let due = true
  const job = periodic(3_600_000, held.run, (error) => t.fail(String(error)), { dueAgain: () => due, inFlightMax: 3 })
  t.teardown(job.stop)
  job.wake()
  await turns(1)
  t.equal(held.counts().started, 1, 'one run on the first turn')
  await turns(10)
  t.same(held.counts(), { started: 3, unfinished: 3, most: 3 }, 'then one per turn, up to three unfinished, not more')
  held.release.shift()?.()
  await turns(3)
  t.same(held.counts(), { started: 4, unfinished: 3, most: 3 }, 'a finished run makes room for the next')
  due = false
  held.release.shift()?.()
  await turns(3)
  t.same(held.counts(), { started: 4, unfinished: 2, most: 3 }, 'nothing due: no new run')
  for (const release of held.release.splice(0)) release()
})

t.test('by default one run at a time, even while work is due', async (t) => {
  const held = heldRuns()
  const job = periodic(3_600_000, held.run, (error) => t.fail(String(error)), { dueAgain: () => true })
  t.teardown(job.stop)
  job.wake()
  await turns(10)
  t.same(held.counts(), { started: 1, unfinished: 1, most: 1 })
  held.release.shift()?.()
  await turns(3)
  t.same(held.counts(), { started: 2, unfinished: 1, most: 1 }, 'the next starts once the first finished')
  for (const release of held.release.splice(0)) release()
})

t.test('the interval starts no run beside an unfinished one', async (t) => {
  const held = heldRuns()
  const job = periodic(5, held.run, (error) => t.fail(String(error)), { dueAgain: () => false, inFlightMax: 4 })
  t.teardown(job.stop)
  await new Promise((resolve) => setTimeout(resolve, 60))
  t.same(held.counts(), { started: 1, unfinished: 1, most: 1 }, 'the ticks it overlaps are skipped')
  for (const release of held.release.splice(0)) release()
})

t.test('inFlightMax must be a positive integer', async (t) => {
  t.throws(() => periodic(1000, async () => {}, () => {}, { inFlightMax: 0 }), RangeError)
})

t.test('with a turn budget, several runs start in one turn while work is due, up to inFlightMax', async (t) => {
  const held = heldRuns()
  const job = periodic(3_600_000, held.run, (error) => t.fail(String(error)), { dueAgain: () => true, inFlightMax: 5, turnBudgetMs: 60_000 })
  t.teardown(job.stop)
  job.wake()
  await turns(1)
  t.same(held.counts(), { started: 5, unfinished: 5, most: 5 }, 'all five in the first turn: their commands took no time')
  for (const release of held.release.splice(0)) release()
})

/** Held runs whose synchronous part takes `runMs` on a clock the test moves (no real time is measured). */
function clockedRuns(runMs: number) {
  const held = heldRuns()
  const clock = { nowMs: 0 }
  const run = () => {
    clock.nowMs += runMs
    return held.run()
  }
  /** Runs started in the next turn of the job. */
  const nextTurn = async () => {
    const before = held.counts().started
    await turns(1)
    return held.counts().started - before
  }
  return { held, clock, run, nextTurn }
}

t.test('while the job says it is behind, each turn doubles its budget and runs in flight up to their most; back at the base once it is not', async (t) => {
  // Each run's synchronous part takes a quarter of a millisecond: a 1 ms budget starts four runs in a turn.
  const { held, clock, run, nextTurn } = clockedRuns(0.25)
  let behind = false
  let due = true
  const job = periodic(3_600_000, run, (error) => t.fail(String(error)), {
    dueAgain: () => due, inFlightMax: 100, inFlightBehindMax: 400, turnBudgetMs: 1, turnBudgetMaxMs: 4, behind: () => behind, clock: () => clock.nowMs,
  })
  t.teardown(job.stop)
  job.wake()
  t.equal(await nextTurn(), 4, 'not behind: the base budget, four runs')
  t.equal(await nextTurn(), 4, 'still not behind: still four')
  behind = true
  t.equal(await nextTurn(), 8, 'behind: twice the budget')
  t.equal(await nextTurn(), 16, 'still behind: twice again')
  t.equal(await nextTurn(), 16, 'not past turnBudgetMaxMs')
  behind = false
  t.equal(await nextTurn(), 4, 'caught up: the base budget at once')
  t.same(job.turns(), { turns: 6, grownTurns: 3, fullTurns: 0, budgetMsMax: 4 }, 'six turns, three of them with a grown budget')
  // The runs in flight: 52 unfinished, a base of 100, so the next turns stop at the cap, not at the budget.
  behind = true
  await nextTurn()
  t.equal(held.counts().unfinished, 60, 'behind, the cap is 200 (the budget, 8 runs, stops the turn first)')
  due = false
  for (const release of held.release.splice(0)) release()
  await turns(3)
})

t.test('runs in flight grow while behind, and the cap is back at inFlightMax once not', async (t) => {
  // Runs that take no time: only the cap stops a turn.
  const { held, run, nextTurn } = clockedRuns(0)
  /** Finishes the `n` oldest runs; each one's end (a promise callback) asks for a run on the next turn. */
  const release = async (n: number) => {
    for (const finish of held.release.splice(0, n)) finish()
    await Promise.resolve()
  }
  let behind = false
  const job = periodic(3_600_000, run, (error) => t.fail(String(error)), {
    dueAgain: () => true, inFlightMax: 4, inFlightBehindMax: 16, turnBudgetMs: 1, turnBudgetMaxMs: 1, behind: () => behind, clock: () => 0,
  })
  t.teardown(job.stop)
  job.wake()
  t.equal(await nextTurn(), 4, 'not behind: inFlightMax')
  behind = true
  await release(1)
  t.equal(await nextTurn(), 5, 'behind: twice as many in flight (8)')
  await release(1)
  t.equal(await nextTurn(), 9, 'still behind: twice again (16), not more')
  await release(1)
  t.equal(await nextTurn(), 1, 'at the most (16): one for the one that finished')
  behind = false
  await release(13)
  t.equal(await nextTurn(), 1, 'caught up: back at 4 in flight, one of them started now')
  t.equal(held.counts().unfinished, 4)
  for (const release of held.release.splice(0)) release()
})

t.test('without turnBudgetMaxMs and inFlightBehindMax nothing grows, however far behind', async (t) => {
  const { held, clock, run, nextTurn } = clockedRuns(0.25)
  const job = periodic(3_600_000, run, (error) => t.fail(String(error)), { dueAgain: () => true, inFlightMax: 1000, turnBudgetMs: 1, behind: () => true, clock: () => clock.nowMs })
  t.teardown(job.stop)
  job.wake()
  t.equal(await nextTurn(), 4)
  clock.nowMs += 1_000
  t.equal(await nextTurn(), 4)
  t.equal(await nextTurn(), 4)
  t.same(job.turns(), { turns: 3, grownTurns: 0, fullTurns: 0, budgetMsMax: 1 })
  for (const release of held.release.splice(0)) release()
})

t.test('turnBudgetMaxMs below turnBudgetMs is refused', async (t) => {
  t.throws(() => periodic(1000, async () => {}, () => {}, { turnBudgetMs: 2, turnBudgetMaxMs: 1 }), RangeError)
})
