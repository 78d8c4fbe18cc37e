// The indexed heap of dispatch's schedules (src/engine/schedule.ts) against a sorted list: after any sequence of
// pushes, deletions by id and pops it holds exactly the items pushed and not removed, gives the smallest first, walks
// them in order, and its index finds each one where it is.
import fc from 'fast-check'
import t from 'tap'
import { IndexedMinHeap } from '../../src/engine/schedule.ts'

interface Item {
  id: string
  atMs: number
  seq: number
}

const byAtThenSeq = (a: Item, b: Item): number => a.atMs - b.atMs || a.seq - b.seq
const bySeq = (a: Item, b: Item): number => a.seq - b.seq

type Op = { op: 'push'; atMs: number } | { op: 'delete'; pick: number } | { op: 'pop' }

const ops = fc.array(
  fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('push' as const), atMs: fc.integer({ min: 0, max: 20 }) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('pop' as const) }) },
  ),
  { maxLength: 200, size: 'max' },
)

for (const [order, byOrder] of [['due', byAtThenSeq], ['seq', bySeq]] as const) {
  t.test(`the heap (${order} order) equals a sorted list through pushes, deletions by id and pops`, async (t) => {
    fc.assert(
      fc.property(ops, (sequence: Op[]) => {
        const heap = new IndexedMinHeap<Item>(order)
        let model: Item[] = []
        let seq = 0
        for (const step of sequence) {
          if (step.op === 'push') {
            seq += 1
            const item = { id: `i_${seq}`, atMs: step.atMs, seq }
            heap.push(item)
            model.push(item)
            model.sort(byOrder)
          } else if (step.op === 'delete') {
            // Half the picks name an id that is not scheduled (never pushed, or gone): delete answers false.
            const id = `i_${(step.pick % (2 * seq + 1)) + 1}`
            const held = model.some((item) => item.id === id)
            if (heap.delete(id) !== held) return false
            model = model.filter((item) => item.id !== id)
          } else if (heap.pop() !== model.shift()) {
            return false
          }
          heap.check('heap')
          if (heap.size !== model.length || heap.peek() !== model[0]) return false
        }
        if (!model.every((item) => heap.has(item.id) && heap.get(item.id) === item)) return false
        const walked = [...heap.ascending()]
        return walked.length === model.length && walked.every((item, i) => item === model[i])
      }),
      { numRuns: 300 },
    )
  })
}

t.test('an item already scheduled is refused, and check() finds a heap out of order', async (t) => {
  const heap = new IndexedMinHeap<Item>('due')
  const first = { id: 'i_1', atMs: 5, seq: 1 }
  heap.push(first)
  heap.push({ id: 'i_2', atMs: 7, seq: 2 })
  t.throws(() => heap.push({ ...first }), /i_1 is already scheduled/)
  // An item whose key changes while scheduled breaks the order: check() is what catches it (checkInvariants).
  first.atMs = 9
  t.throws(() => heap.check('schedule'), /schedule heap order broken at i_2/)
})

t.test('an ascending walk refuses a heap changed under it', async (t) => {
  const heap = new IndexedMinHeap<Item>('due')
  heap.push({ id: 'i_1', atMs: 1, seq: 1 })
  heap.push({ id: 'i_2', atMs: 2, seq: 2 })
  t.throws(() => {
    for (const item of heap.ascending()) heap.delete(item.id)
  }, /changed during an ascending walk/)
})
