// Schedules of the engine's timers: binary min-heaps indexed by id, so dispatch peeks at the next due item in O(1)
// and a lease or offer that ends otherwise (paid, cancelled, funded, declined) leaves in O(log n) at that moment.
// Deletion is eager: a heap holds exactly the items scheduled now, which checkInvariants compares to the live actors.

export class IndexedMinHeap<T> {
  private readonly items: T[] = []
  /** Index in `items` of each item, by id: what makes removal O(log n) instead of a linear search. */
  private readonly positions = new Map<string, number>()

  constructor(
    private readonly idOf: (item: T) => string,
    /** A total order: ties must be broken (by sequence) so that the heap's order is deterministic. */
    private readonly compare: (a: T, b: T) => number,
  ) {}

  get size(): number {
    return this.items.length
  }

  has(id: string): boolean {
    return this.positions.has(id)
  }

  get(id: string): T | undefined {
    const at = this.positions.get(id)
    return at === undefined ? undefined : this.items[at]
  }

  peek(): T | undefined {
    return this.items[0]
  }

  push(item: T): void {
    const id = this.idOf(item)
    if (this.positions.has(id)) throw new Error(`schedule: ${id} is already scheduled`)
    this.items.push(item)
    this.positions.set(id, this.items.length - 1)
    this.siftUp(this.items.length - 1)
  }

  /** Unschedule by id; false when it was not scheduled. */
  delete(id: string): boolean {
    const at = this.positions.get(id)
    if (at === undefined) return false
    this.positions.delete(id)
    const last = this.items.pop() as T
    if (at < this.items.length) {
      this.items[at] = last
      this.positions.set(this.idOf(last), at)
      this.siftDown(at)
      this.siftUp(at)
    }
    return true
  }

  /**
   * The items in heap order, smallest first, without removing them: a best-first walk of the heap's tree with a
   * frontier of candidate indexes, O(k log k) for the first k. The heap must not change while the walk runs, so
   * callers collect what they need before acting on it.
   */
  *ascending(): Generator<T> {
    const items = this.items
    if (items.length === 0) return
    const frontier = new IndexedMinHeap<number>(String, (a, b) => this.compare(items[a] as T, items[b] as T))
    frontier.push(0)
    const size = items.length
    while (frontier.size > 0) {
      const at = frontier.pop() as number
      if (items.length !== size) throw new Error('schedule: changed during an ascending walk')
      yield items[at] as T
      if (2 * at + 1 < size) frontier.push(2 * at + 1)
      if (2 * at + 2 < size) frontier.push(2 * at + 2)
    }
  }

  pop(): T | undefined {
    const top = this.items[0]
    if (top !== undefined) this.delete(this.idOf(top))
    return top
  }

  /** Throws when the heap order or the id index is broken (for checkInvariants). */
  check(name: string): void {
    if (this.positions.size !== this.items.length) throw new Error(`invariant: ${name} index size differs from the heap`)
    this.items.forEach((item, at) => {
      if (this.positions.get(this.idOf(item)) !== at) throw new Error(`invariant: ${name} index of ${this.idOf(item)} is wrong`)
      if (at > 0 && this.compare(this.items[(at - 1) >> 1] as T, item) > 0) throw new Error(`invariant: ${name} heap order broken at ${this.idOf(item)}`)
    })
  }

  private siftUp(at: number): void {
    const items = this.items
    const item = items[at] as T
    while (at > 0) {
      const parent = (at - 1) >> 1
      const above = items[parent] as T
      if (this.compare(above, item) <= 0) break
      items[at] = above
      this.positions.set(this.idOf(above), at)
      at = parent
    }
    items[at] = item
    this.positions.set(this.idOf(item), at)
  }

  private siftDown(at: number): void {
    const items = this.items
    const size = items.length
    const item = items[at] as T
    for (;;) {
      const left = 2 * at + 1
      if (left >= size) break
      const right = left + 1
      const child = right < size && this.compare(items[right] as T, items[left] as T) < 0 ? right : left
      const below = items[child] as T
      if (this.compare(item, below) <= 0) break
      items[at] = below
      this.positions.set(this.idOf(below), at)
      at = child
    }
    items[at] = item
    this.positions.set(this.idOf(item), at)
  }
}
