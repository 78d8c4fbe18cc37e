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

  /** Gives back one place `add` or `take` gave `key`. */
  release(key: string): void {
    const left = this.held(key) - 1
    if (left <= 0) this.#held.delete(key)
    else this.#held.set(key, left)
  }
}
