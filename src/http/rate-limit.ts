// A token bucket per client address. Each request takes one token; tokens refill continuously.

export interface RateLimitOptions {
  /** Tokens a client can spend in a burst. */
  burst: number
  /** Tokens added per second. */
  refillPerSecond: number
  /** Buckets kept at most; the least recently refilled are dropped first (a full bucket loses nothing). */
  maxClients?: number
}

export const DEFAULT_RATE_LIMIT: Required<RateLimitOptions> = { burst: 200, refillPerSecond: 100, maxClients: 100_000 }

interface Bucket {
  tokens: number
  updatedMs: number
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number }

export class RateLimiter {
  readonly #burst: number
  readonly #refillPerMs: number
  readonly #maxClients: number
  readonly #buckets = new Map<string, Bucket>()

  constructor(options: RateLimitOptions) {
    if (!(options.burst >= 1) || !(options.refillPerSecond > 0)) throw new RangeError('rate limit needs burst >= 1 and refillPerSecond > 0')
    this.#burst = options.burst
    this.#refillPerMs = options.refillPerSecond / 1000
    this.#maxClients = options.maxClients ?? DEFAULT_RATE_LIMIT.maxClients
  }

  take(client: string, nowMs: number): RateDecision {
    const previous = this.#buckets.get(client)
    const tokens = previous === undefined
      ? this.#burst
      : Math.min(this.#burst, previous.tokens + Math.max(0, nowMs - previous.updatedMs) * this.#refillPerMs)
    // Re-insert so that Map order is least recently seen first, which is what eviction drops.
    this.#buckets.delete(client)
    if (tokens >= 1) {
      this.#buckets.set(client, { tokens: tokens - 1, updatedMs: nowMs })
      this.#evict()
      return { allowed: true }
    }
    this.#buckets.set(client, { tokens, updatedMs: nowMs })
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.#refillPerMs / 1000)) }
  }

  get size(): number {
    return this.#buckets.size
  }

  #evict(): void {
    while (this.#buckets.size > this.#maxClients) {
      const oldest = this.#buckets.keys().next()
      if (oldest.done === true) return
      this.#buckets.delete(oldest.value)
    }
  }
}
