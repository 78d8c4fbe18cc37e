// Schedules of the engine's timers: binary min-heaps indexed by id, so dispatch peeks at the next due item in O(1)
// and a lease or offer that ends otherwise (paid, cancelled, funded, declined) leaves in O(log n) at that moment.
// Deletion is eager: a heap holds exactly the items scheduled now, which checkInvariants compares to the live actors.

/** What a schedule holds: an id, a time it is due at and a sequence, the tie-break that keeps the order deterministic. */
export interface Scheduled {
  readonly id: string
  readonly seq: number
  readonly atMs: number
}

/**
 * A schedule's order: by due time then sequence (the expiry schedules), or by sequence alone (the waiting list). The
 * heap compares the items' fields itself instead of calling a comparator shared by every heap: the sifts were about a
 * tenth of a lease time-out's CPU in bench/dispatch.ts's profile (issue 11). The keys stay in the items (a copy in each
 * slot costs a boxed number per push: due times are past the small-integer range).
 */
export type ScheduleOrder = 'due' | 'seq'

/** An item in its heap with its index there: a sift step moves the index with the item, no lookup by id. */
interface Slot<T> {
  readonly item: T
  at: number
}

export class IndexedMinHeap<T extends Scheduled> {
  private readonly slots: Slot<T>[] = []
  /**
   * Each item's slot by id: what makes removal O(log n) instead of a linear search. Written only when an item comes
   * or goes; the slot carries the item's index, so a sift step (up to log2 n per push or delete: about 15 with the
   * ~40,000 offers the schedules hold under load) writes a number instead of a Map entry of a string key.
   */
  private readonly byId = new Map<string, Slot<T>>()

  private readonly bySeq: boolean

  /** An item's `atMs` and `seq` must not change while it is scheduled (check() finds one that did). */
  constructor(order: ScheduleOrder) {
    this.bySeq = order === 'seq'
  }

  get size(): number {
    return this.slots.length
  }

  has(id: string): boolean {
    return this.byId.has(id)
  }

  get(id: string): T | undefined {
    return this.byId.get(id)?.item
  }

  peek(): T | undefined {
    return this.slots[0]?.item
  }

  push(item: T): void {
    const id = item.id
    if (this.byId.has(id)) throw new Error(`schedule: ${id} is already scheduled`)
    const slot: Slot<T> = { item, at: this.slots.length }
    this.slots.push(slot)
    this.byId.set(id, slot)
    this.siftUp(slot)
  }

  /** Unschedule by id; false when it was not scheduled. */
  delete(id: string): boolean {
    const slot = this.byId.get(id)
    if (slot === undefined) return false
    this.byId.delete(id)
    this.remove(slot)
    return true
  }

  /**
   * The items in heap order, smallest first, without removing them: a best-first walk of the heap's tree with a
   * frontier of candidate indexes, O(k log k) for the first k. The heap must not change while the walk runs, so
   * callers collect what they need before acting on it.
   */
  *ascending(): Generator<T> {
    const slots = this.slots
    const size = slots.length
    if (size === 0) return
    // The frontier is a plain binary min-heap of indexes into `slots`: it needs no removal by id.
    const earlier = (a: number, b: number): boolean => this.before((slots[a] as Slot<T>).item, (slots[b] as Slot<T>).item)
    const frontier: number[] = [0]
    while (frontier.length > 0) {
      const at = popIndex(frontier, earlier)
      if (slots.length !== size) throw new Error('schedule: changed during an ascending walk')
      yield (slots[at] as Slot<T>).item
      if (2 * at + 1 < size) pushIndex(frontier, 2 * at + 1, earlier)
      if (2 * at + 2 < size) pushIndex(frontier, 2 * at + 2, earlier)
    }
  }

  pop(): T | undefined {
    const top = this.slots[0]
    if (top === undefined) return undefined
    this.byId.delete(top.item.id)
    this.remove(top)
    return top.item
  }

  /** Throws when the heap order or the id index is broken (for checkInvariants). */
  check(name: string): void {
    if (this.byId.size !== this.slots.length) throw new Error(`invariant: ${name} index size differs from the heap`)
    this.slots.forEach((slot, at) => {
      const id = slot.item.id
      if (this.byId.get(id) !== slot || slot.at !== at) throw new Error(`invariant: ${name} index of ${id} is wrong`)
      if (at > 0 && this.before(slot.item, (this.slots[(at - 1) >> 1] as Slot<T>).item)) throw new Error(`invariant: ${name} heap order broken at ${id}`)
    })
  }

  /** Whether `a` comes before `b` in this heap's order (a total order: sequences are unique). */
  private before(a: T, b: T): boolean {
    if (this.bySeq) return a.seq < b.seq
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq)
  }

  /**
   * Takes the slot out of the heap, bottom-up: the earlier child moves into the hole level by level down to a leaf,
   * where the last slot goes and moves up. One comparison a level instead of a sift down's two: the last slot is one of
   * the latest, so it almost always belongs near the bottom (a lease's time-out deletes the top of its schedule, whose
   * last slot a sift down took the whole way down: issue 11, the `perfengine23` round). Same items, same order.
   */
  private remove(slot: Slot<T>): void {
    const slots = this.slots
    const last = slots.pop() as Slot<T>
    if (last === slot) return
    const size = slots.length
    let at = slot.at
    for (;;) {
      const left = 2 * at + 1
      if (left >= size) break
      const right = left + 1
      const child = right < size && this.before((slots[right] as Slot<T>).item, (slots[left] as Slot<T>).item) ? right : left
      const below = slots[child] as Slot<T>
      slots[at] = below
      below.at = at
      at = child
    }
    last.at = at
    this.siftUp(last)
  }

  private siftUp(slot: Slot<T>): void {
    const slots = this.slots
    let at = slot.at
    while (at > 0) {
      const parent = (at - 1) >> 1
      const above = slots[parent] as Slot<T>
      if (!this.before(slot.item, above.item)) break
      slots[at] = above
      above.at = at
      at = parent
    }
    slots[at] = slot
    slot.at = at
  }
}

/** Adds an index to a plain binary min-heap of indexes ordered by `before`. */
function pushIndex(heap: number[], index: number, before: (a: number, b: number) => boolean): void {
  let at = heap.length
  heap.push(index)
  while (at > 0) {
    const parent = (at - 1) >> 1
    const above = heap[parent] as number
    if (!before(index, above)) break
    heap[at] = above
    at = parent
  }
  heap[at] = index
}

/** Takes the smallest index out of a plain binary min-heap of indexes ordered by `before` (the heap is not empty). */
function popIndex(heap: number[], before: (a: number, b: number) => boolean): number {
  const top = heap[0] as number
  const last = heap.pop() as number
  const size = heap.length
  if (size === 0) return top
  let at = 0
  for (;;) {
    const left = 2 * at + 1
    if (left >= size) break
    const right = left + 1
    const child = right < size && before(heap[right] as number, heap[left] as number) ? right : left
    const below = heap[child] as number
    if (!before(below, last)) break
    heap[at] = below
    at = child
  }
  heap[at] = last
  return top
}
