// What each client (clientKeyOf: an address, an IPv6 /64) holds open of a pool every client shares: connections,
// event streams, inspector feeds. A bound per client keeps one stranger from taking the whole pool.

/** Open things per client key; only clients that hold at least one are kept. */
export class ClientCounts {
  readonly #held = new Map<string, number>()

  held(key: string): number {
    return this.#held.get(key) ?? 0
  }

  add(key: string): void {
    this.#held.set(key, this.held(key) + 1)
  }

  /** One more for `key`, unless it holds `max` already: then false and nothing is counted. */
  take(key: string, max: number): boolean {
    if (this.held(key) >= max) return false
    this.add(key)
    return true
  }

  /**
   * The pool is full: of its `items` (oldest first), the oldest of the client holding the most, when that client holds
   * at least two more than `key` (so a newcomer of `key` taking its place never gets the larger share); undefined when
   * no client does. A fair share rather than first come, which let pool / per-client-bound addresses hold every place
   * and take each one freed (an outsider's finding). Runs only while the pool is full.
   */
  displaceable<T>(items: Iterable<T>, clientOf: (item: T) => string, key: string): T | undefined {
    let most = this.held(key) + 1
    let largest: string | undefined
    for (const [client, held] of this.#held) {
      if (held <= most) continue
      most = held
      largest = client
    }
    if (largest === undefined) return undefined
    for (const item of items) if (clientOf(item) === largest) return item
    return undefined
  }

  /** Gives back one place `add` or `take` gave `key`. */
  release(key: string): void {
    const left = this.held(key) - 1
    if (left <= 0) this.#held.delete(key)
    else this.#held.set(key, left)
  }
}
