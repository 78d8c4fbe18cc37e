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
