// Schedules of the engine's timers: binary min-heaps indexed by id, so dispatch peeks at the next due item in O(1)
// and a lease or offer that ends otherwise (paid, cancelled, funded, declined) leaves in O(log n) at that moment.
// Deletion is eager: a heap holds exactly the items scheduled now, which checkInvariants compares to the live actors.

/**
 * An item in its heap with its index there and its order's two keys, read once when it is pushed: a sift step moves
 * the index with the item (no lookup by id) and compares two numbers of the slot it holds (no call of a comparator
 * shared by every heap, no read of the item's own fields): the sifts were about a tenth of a lease time-out's CPU,
 * bench/dispatch.ts's profile (issue 11).
 */
interface Slot<T> {
  readonly item: T
  at: number
  readonly first: number
  readonly then: number
}

/** Which of two slots comes first: the first key, then the second (the heap's order must be total and deterministic). */
const before = <T>(a: Slot<T>, b: Slot<T>): boolean => a.first < b.first || (a.first === b.first && a.then < b.then)

export class IndexedMinHeap<T> {
  private readonly slots: Slot<T>[] = []
  /**
   * Each item's slot by id: what makes removal O(log n) instead of a linear search. Written only when an item comes
   * or goes; the slot carries the item's index, so a sift step (up to log2 n per push or delete: about 15 with the
   * ~40,000 offers the schedules hold under load) writes a number instead of a Map entry of a string key.
   */
  private readonly byId = new Map<string, Slot<T>>()

  constructor(
    private readonly idOf: (item: T) => string,
    /**
     * The order's keys: by `firstOf`, ties by `thenOf` (a sequence, so that the order is total and deterministic).
     * Neither may change while the item is scheduled (check() finds one that did).
     */
    private readonly firstOf: (item: T) => number,
    private readonly thenOf: (item: T) => number,
  ) {}

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
    const id = this.idOf(item)
    if (this.byId.has(id)) throw new Error(`schedule: ${id} is already scheduled`)
    const slot: Slot<T> = { item, at: this.slots.length, first: this.firstOf(item), then: this.thenOf(item) }
    this.slots.push(slot)
    this.byId.set(id, slot)
    this.siftUp(slot)
  }

  /** Unschedule by id; false when it was not scheduled. */
  delete(id: string): boolean {
    return this.take(id) !== undefined
  }

  /** Unschedule by id, answering the item; undefined when it was not scheduled. */
  take(id: string): T | undefined {
    const slot = this.byId.get(id)
    if (slot === undefined) return undefined
    this.byId.delete(id)
    this.remove(slot)
    return slot.item
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
    const earlier = (a: number, b: number): boolean => before(slots[a] as Slot<T>, slots[b] as Slot<T>)
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
    this.byId.delete(this.idOf(top.item))
    this.remove(top)
    return top.item
  }

  /**
   * Throws when the heap order or the id index is broken (for checkInvariants). The order is checked on the items'
   * keys as they are now, so an item whose key changed while scheduled breaks it.
   */
  check(name: string): void {
    if (this.byId.size !== this.slots.length) throw new Error(`invariant: ${name} index size differs from the heap`)
    const now = (slot: Slot<T>): Slot<T> => ({ item: slot.item, at: slot.at, first: this.firstOf(slot.item), then: this.thenOf(slot.item) })
    this.slots.forEach((slot, at) => {
      const id = this.idOf(slot.item)
      if (this.byId.get(id) !== slot || slot.at !== at) throw new Error(`invariant: ${name} index of ${id} is wrong`)
      if (at > 0 && before(now(slot), now(this.slots[(at - 1) >> 1] as Slot<T>))) throw new Error(`invariant: ${name} heap order broken at ${id}`)
    })
    for (const slot of this.slots) {
      const key = now(slot)
      if (key.first !== slot.first || key.then !== slot.then) throw new Error(`invariant: ${name} key of ${this.idOf(slot.item)} changed while scheduled`)
    }
  }

  /** Takes the slot out of the heap: the last slot fills its place and moves down or up from there. */
  private remove(slot: Slot<T>): void {
    const last = this.slots.pop() as Slot<T>
    if (last === slot) return
    last.at = slot.at
    this.slots[slot.at] = last
    this.siftDown(last)
    this.siftUp(last)
  }

  private siftUp(slot: Slot<T>): void {
    const slots = this.slots
    let at = slot.at
    while (at > 0) {
      const parent = (at - 1) >> 1
      const above = slots[parent] as Slot<T>
      if (!before(slot, above)) break
      slots[at] = above
      above.at = at
      at = parent
    }
    slots[at] = slot
    slot.at = at
  }

  private siftDown(slot: Slot<T>): void {
    const slots = this.slots
    const size = slots.length
    let at = slot.at
    for (;;) {
      const left = 2 * at + 1
      if (left >= size) break
      const right = left + 1
      const child = right < size && before(slots[right] as Slot<T>, slots[left] as Slot<T>) ? right : left
      const below = slots[child] as Slot<T>
      if (!before(below, slot)) break
      slots[at] = below
      below.at = at
      at = child
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
