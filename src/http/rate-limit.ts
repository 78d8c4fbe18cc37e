// A token bucket per key (a signed-in wallet, or a client address). A request needs one token to be admitted;
// what its answer cost beyond that (a list page costs its item count) is charged afterwards and may leave the
// bucket in debt, which later requests wait out. Tokens refill continuously. The store budgets (StoreBudget) are such
// buckets per wallet, per client and for all, charged for each record a stranger makes the service keep.
import type { HttpProblem } from './problem.ts'

export interface RateLimitOptions {
  /** Tokens a key can spend in a burst. */
  burst: number
  /** Tokens added per second. */
  refillPerSecond: number
  /** Buckets kept at most; the least recently used are dropped first (a full bucket loses nothing). */
  bucketsMax?: number
}

export const DEFAULT_RATE_LIMIT: Required<RateLimitOptions> = { burst: 200, refillPerSecond: 100, bucketsMax: 100_000 }

interface Bucket {
  tokens: number
  updatedMs: number
}

/** The bucket after a decision: what the RateLimit header field reports. */
export interface RateDecision {
  allowed: boolean
  /** Whole tokens left (0 when in debt). */
  remaining: number
  /** Seconds until the bucket is full again. */
  resetSeconds: number
  /** Seconds until one token is available: the Retry-After of a refusal (0 when one is available now). */
  retryAfterSeconds: number
}

export class RateLimiter {
  readonly burst: number
  readonly refillPerSecond: number
  readonly #refillPerMs: number
  readonly #bucketsMax: number
  readonly #buckets = new Map<string, Bucket>()

  constructor(options: RateLimitOptions) {
    if (!(options.burst >= 1) || !(options.refillPerSecond > 0)) throw new RangeError('rate limit needs burst >= 1 and refillPerSecond > 0')
    this.burst = options.burst
    this.refillPerSecond = options.refillPerSecond
    this.#refillPerMs = options.refillPerSecond / 1000
    this.#bucketsMax = options.bucketsMax ?? DEFAULT_RATE_LIMIT.bucketsMax
  }

  /** Admits a request when the key has a whole token, and spends it. */
  take(key: string, nowMs: number): RateDecision {
    const tokens = this.#refilled(key, nowMs)
    const allowed = tokens >= 1
    return this.#store(key, allowed ? tokens - 1 : tokens, nowMs, allowed)
  }

  /** Spends `cost` more tokens for an answer already given (its cost is known only now); may leave a debt. */
  charge(key: string, nowMs: number, cost: number): RateDecision {
    if (!(cost >= 0)) throw new RangeError('cost must be >= 0')
    return this.#store(key, this.#refilled(key, nowMs) - cost, nowMs, true)
  }

  /** Gives back the token `take` spent for a request refused afterwards on another bound (never above the burst). */
  refund(key: string, nowMs: number): void {
    this.#store(key, Math.min(this.burst, this.#refilled(key, nowMs) + 1), nowMs, true)
  }

  /** The `w` of the RateLimit-Policy field: the seconds in which an empty bucket fills up again. */
  get windowSeconds(): number {
    return Math.max(1, Math.ceil(this.burst / this.refillPerSecond))
  }

  get size(): number {
    return this.#buckets.size
  }

  #refilled(key: string, nowMs: number): number {
    const previous = this.#buckets.get(key)
    if (previous === undefined) return this.burst
    // Re-inserted by #store, so that Map order is least recently used first, which is what eviction drops.
    this.#buckets.delete(key)
    return Math.min(this.burst, previous.tokens + Math.max(0, nowMs - previous.updatedMs) * this.#refillPerMs)
  }

  #store(key: string, tokens: number, nowMs: number, allowed: boolean): RateDecision {
    this.#buckets.set(key, { tokens, updatedMs: nowMs })
    this.#evict()
    return {
      allowed,
      remaining: Math.max(0, Math.floor(tokens)),
      resetSeconds: Math.ceil((this.burst - tokens) / this.#refillPerMs / 1000),
      // Rounded to the microsecond first: a rate per hour (4 / 3600) would otherwise wait 901 s for a 900 s token.
      retryAfterSeconds: tokens >= 1 ? 0 : Math.max(1, Math.ceil(Math.round(((1 - tokens) / this.#refillPerMs) * 1000) / 1e6)),
    }
  }

  #evict(): void {
    while (this.#buckets.size > this.#bucketsMax) {
      const oldest = this.#buckets.keys().next()
      if (oldest.done === true) return
      this.#buckets.delete(oldest.value)
    }
  }
}

/**
 * The problems a StoreBudget's refusal is answered with, each with Retry-After `retryAfterSeconds`: the same request
 * may be sent again then.
 */
export interface BudgetProblems {
  /** 429: the caller's own bound refused, its wallet's or its client address's. */
  limited(bucket: 'wallet' | 'client', retryAfterSeconds: number): HttpProblem
  /** 503: every caller's together refused. */
  exhausted(retryAfterSeconds: number): HttpProblem
}

/**
 * What strangers may make the service keep for a while (a session, a stored answer): free wallets and free client
 * addresses would otherwise add without end. A token per record, from a bucket per wallet, per client (clientKeyOf)
 * and one for all callers, checked in that order so that a caller refused its own bound spends nothing of the
 * shared one; and a refused caller spends nothing of its own either (the tokens the buckets before the refusing one
 * gave back): else an honest client that retried while strangers held the shared bucket empty came out of it with its
 * own bucket spent too, refused 429 long after the 503s ended. A bucket of `perHour` 0 is off. In memory: a restart refills each bucket once, so what is kept stays
 * within burst + rate x retention, plus one burst per restart.
 */
export class StoreBudget {
  readonly #wallet: RateLimiter | undefined
  readonly #client: RateLimiter | undefined
  readonly #all: RateLimiter | undefined
  readonly #nowMs: () => number

  constructor(perHour: { wallet?: number; client?: number; all?: number }, nowMs: () => number) {
    this.#nowMs = nowMs
    // A bucket holds an hour's tokens for a caller's own bound (a burst of an agent's day fits), a minute's for all.
    const bucket = (tokensPerHour: number | undefined, burstSeconds: number): RateLimiter | undefined =>
      tokensPerHour === undefined || tokensPerHour === 0
        ? undefined
        : new RateLimiter({ burst: Math.max(1, Math.round((tokensPerHour * burstSeconds) / 3600)), refillPerSecond: tokensPerHour / 3600 })
    this.#wallet = bucket(perHour.wallet, 3600)
    this.#client = bucket(perHour.client, 3600)
    this.#all = bucket(perHour.all, 60)
  }

  /**
   * Spends one token of each bucket that applies, or throws the refusal as `problems` says, spending nothing (the
   * buckets before the refusing one get their token back, the ones after it are not asked). When only all callers'
   * bucket refuses and `standing` (asked then only, so it costs nothing otherwise) says the caller is no stranger, it
   * is admitted on its own buckets: strangers holding the shared bucket empty do not lock it out. Returns false then,
   * true when all callers' bucket paid (or is off).
   */
  charge(wallet: string | undefined, client: string, problems: BudgetProblems, standing?: () => boolean): boolean {
    const nowMs = this.#nowMs()
    const refused = (wallet === undefined ? undefined : refusal(this.#wallet, 'wallet', wallet, nowMs)) ?? refusal(this.#client, 'client', client, nowMs) ?? refusal(this.#all, 'all', '', nowMs)
    if (refused === undefined) return true
    if (refused.bucket === 'all' && standing?.() === true) return false
    if (refused.bucket !== 'wallet' && wallet !== undefined) this.#wallet?.refund(wallet, nowMs)
    if (refused.bucket === 'all') this.#client?.refund(client, nowMs)
    throw refused.bucket === 'all' ? problems.exhausted(refused.retryAfterSeconds) : problems.limited(refused.bucket, refused.retryAfterSeconds)
  }
}

/** Which of a StoreBudget's buckets refused `key` a token, and when it has one again; undefined when it spent one (or is off). */
function refusal(limiter: RateLimiter | undefined, bucket: 'wallet' | 'client' | 'all', key: string, nowMs: number): { bucket: 'wallet' | 'client' | 'all'; retryAfterSeconds: number } | undefined {
  if (limiter === undefined) return undefined
  const decision = limiter.take(key, nowMs)
  return decision.allowed ? undefined : { bucket, retryAfterSeconds: decision.retryAfterSeconds }
}
