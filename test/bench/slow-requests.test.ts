// bench/fixtures/slow-requests.ts cuts a slow request's time into causes: each instant goes to the first cause (in
// CAUSES' order) whose spans cover it, what none covers is the rest, and the shares add up to the request's time.
import t from 'tap'
import { causesOf, type Cause } from '../../bench/fixtures/slow-requests.ts'

const spansOf = (spans: Partial<Record<Cause, Array<[number, number]>>>) => (cause: Cause) => (spans[cause] ?? []).map(([start, end]) => ({ start, end }))
const asObject = (shares: Map<string, number>) => Object.fromEntries([...shares].filter(([, ms]) => ms > 0))

t.test('an instant covered by two causes goes to the first of CAUSES, the uncovered time to the rest', async (t) => {
  const shares = causesOf({ start: 10, end: 30 }, spansOf({
    // A scavenge during a ticker command: the scavenge's time is the GC's, the command's other time the ticker's.
    gc: [[14, 18]],
    'ticker command': [[12, 20]],
    "its group's LMDB commit (writer thread)": [[25, 30]],
  }))
  t.same(asObject(shares), { 'ticker command': 4, gc: 4, "its group's LMDB commit (writer thread)": 5, rest: 7 })
})

t.test('spans are clipped to the request, and one outside it counts nowhere', async (t) => {
  const shares = causesOf({ start: 10, end: 20 }, spansOf({
    'waiting for a CPU': [[5, 12]],
    gc: [[0, 5], [19, 40]],
  }))
  t.same(asObject(shares), { 'waiting for a CPU': 2, gc: 1, rest: 7 })
  t.equal([...shares.values()].reduce((a, b) => a + b, 0), 10, 'the shares add up to the request time')
})

t.test('the own engine command comes before the other commands that cover the same span', async (t) => {
  const shares = causesOf({ start: 0, end: 10 }, spansOf({
    'own engine command': [[0, 2]],
    'other engine commands': [[0, 2], [4, 6]],
  }))
  t.same(asObject(shares), { 'own engine command': 2, 'other engine commands': 2, rest: 6 })
})
