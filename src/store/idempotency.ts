// Idempotency keys at the store level. The first request with a key gets a ticket; its response is stored by the
// commit that carries the request's changes (same LMDB transaction), so a retry can never see the changes without
// the response or the response without the changes. Retries that arrive while the first is still in flight wait
// for it in memory (the in-flight registry) instead of applying a second time.

import { createHash } from 'node:crypto'
import { IdempotencyInFlightError, StoreAssertionError } from './errors.ts'
import type { IdempotencyRecord, IdempotencyScope, StoredResponse } from './types.ts'
import { assertJsonLike, fail } from './validate.ts'

export const IDEMPOTENCY_KEY_LENGTH_MAX = 255
export const IDEMPOTENCY_PATH_LENGTH_MAX = 1024
export const IDEMPOTENCY_IDENTITY_LENGTH_MAX = 256
export const IDEMPOTENCY_IN_FLIGHT_MAX = 100_000
const METHOD_PATTERN = /^[A-Z]{1,16}$/
const KEY_PATTERN = /^[\x21-\x7e]+$/
const HASH_PATTERN = /^[0-9a-f]{64}$/

/** sha256 hex of the raw request body: what the store compares to detect a key reused with another body. */
export function hashRequestBody(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex')
}

export function assertScope(scope: IdempotencyScope): void {
  const { identity, method, path, key } = scope
  if (typeof identity !== 'string' || identity.length > IDEMPOTENCY_IDENTITY_LENGTH_MAX) {
    fail(`idempotency identity must be a string of at most ${IDEMPOTENCY_IDENTITY_LENGTH_MAX} characters`)
  }
  if (typeof method !== 'string' || !METHOD_PATTERN.test(method)) fail(`invalid idempotency method ${method}`)
  if (typeof path !== 'string' || path.length === 0 || path.length > IDEMPOTENCY_PATH_LENGTH_MAX) {
    fail(`idempotency path must be 1..${IDEMPOTENCY_PATH_LENGTH_MAX} characters`)
  }
  if (typeof key !== 'string' || key.length > IDEMPOTENCY_KEY_LENGTH_MAX || !KEY_PATTERN.test(key)) {
    fail(`Idempotency-Key must be 1..${IDEMPOTENCY_KEY_LENGTH_MAX} printable ASCII characters without space`)
  }
}

export function assertResponse(response: StoredResponse): void {
  if (!Number.isInteger(response.status) || response.status < 100 || response.status > 599) {
    fail(`invalid stored response status ${String(response.status)}`)
  }
  assertJsonLike(response.body, 'response.body')
}

/** The record key: JSON of the four parts, unambiguous whatever characters the parts hold. */
export function scopeKey(scope: IdempotencyScope): string {
  return JSON.stringify([scope.identity, scope.method, scope.path, scope.key])
}

export type IdempotencyBegin =
  | { readonly outcome: 'proceed'; readonly ticket: IdempotencyTicket }
  | { readonly outcome: 'replay'; readonly response: StoredResponse }
  /** The key was used with another body: HTTP answers 422 (stored) or 409 (`inFlight`, the first is running). */
  | { readonly outcome: 'mismatch'; readonly inFlight: boolean }

/** What `commit({ idempotency })` takes: the ticket and the response to store with the request's changes. */
export interface IdempotencyCompletion {
  readonly ticket: IdempotencyTicket
  readonly response: StoredResponse
}

type TicketState = 'open' | 'committing' | 'settled'

export class IdempotencyTicket {
  readonly scope: IdempotencyScope
  /** scopeKey(scope), the record's key: made once when the request begins, not again by its commit. */
  readonly key: string
  readonly requestHash: string
  #state: TicketState = 'open'
  readonly #release: () => void
  /** Resolves when the ticket is settled: its commit finished (either way) or it was abandoned. */
  readonly settled: Promise<void>

  constructor(scope: IdempotencyScope, key: string, requestHash: string, onSettled: () => void) {
    this.scope = scope
    this.key = key
    this.requestHash = requestHash
    let resolve!: () => void
    this.settled = new Promise<void>((r) => (resolve = r))
    this.#release = () => {
      onSettled()
      resolve()
    }
  }

  get state(): TicketState {
    return this.#state
  }

  /** The response to store; pass the result as `commit({ ..., idempotency })`. */
  complete(response: StoredResponse): IdempotencyCompletion {
    if (this.#state !== 'open') fail(`idempotency ticket is ${this.#state}, cannot complete it`)
    assertResponse(response)
    return { ticket: this, response }
  }

  /** Nothing will be stored for this key (e.g. the request failed before any change): waiting retries go ahead. */
  abandon(): void {
    if (this.#state === 'committing') fail('idempotency ticket is being committed, cannot abandon it')
    if (this.#state === 'settled') return
    this.#state = 'settled'
    this.#release()
  }

  /** @internal called by the store when the commit carrying the ticket is queued. */
  markCommitting(): void {
    if (this.#state !== 'open') throw new StoreAssertionError(`idempotency ticket is ${this.#state}, used twice?`)
    this.#state = 'committing'
  }

  /** @internal called by the store when that commit resolved or failed. */
  settle(): void {
    if (this.#state === 'settled') return
    this.#state = 'settled'
    this.#release()
  }
}

export interface IdempotencyOptions {
  readonly retentionMs: number
  readonly waitMs: number
  readonly clock: () => number
  /** The durable, unexpired record for a scope key, if any. */
  readonly read: (key: string) => IdempotencyRecord | undefined
}

export class Idempotency {
  readonly retentionMs: number
  readonly waitMs: number
  readonly #options: IdempotencyOptions
  readonly #inFlight = new Map<string, IdempotencyTicket>()

  constructor(options: IdempotencyOptions) {
    this.#options = options
    this.retentionMs = options.retentionMs
    this.waitMs = options.waitMs
  }

  get inFlightCount(): number {
    return this.#inFlight.size
  }

  /** The stored (durable, unexpired) record of a scope. */
  lookup(scope: IdempotencyScope): IdempotencyRecord | undefined {
    assertScope(scope)
    return this.#options.read(scopeKey(scope))
  }

  /**
   * Decide what a request carrying an idempotency key does. Synchronous up to the first wait, so two calls in the
   * same tick cannot both proceed. A retry of an in-flight key waits at most `waitMs`, then throws
   * IdempotencyInFlightError.
   */
  async begin(scope: IdempotencyScope, requestHash: string): Promise<IdempotencyBegin> {
    assertScope(scope)
    if (!HASH_PATTERN.test(requestHash)) fail('requestHash must be a sha256 hex digest (hashRequestBody)')
    const key = scopeKey(scope)
    const deadlineMs = Date.now() + this.waitMs
    for (;;) {
      const stored = this.#options.read(key)
      if (stored !== undefined) {
        return stored.requestHash === requestHash
          ? { outcome: 'replay', response: stored.response }
          : { outcome: 'mismatch', inFlight: false }
      }
      const running = this.#inFlight.get(key)
      if (running === undefined) {
        if (this.#inFlight.size >= IDEMPOTENCY_IN_FLIGHT_MAX) {
          throw new IdempotencyInFlightError(`more than ${IDEMPOTENCY_IN_FLIGHT_MAX} idempotent requests in flight`)
        }
        const ticket = new IdempotencyTicket(scope, key, requestHash, () => {
          if (this.#inFlight.get(key) === ticket) this.#inFlight.delete(key)
        })
        this.#inFlight.set(key, ticket)
        return { outcome: 'proceed', ticket }
      }
      if (running.requestHash !== requestHash) return { outcome: 'mismatch', inFlight: true }
      const remainingMs = deadlineMs - Date.now()
      if (remainingMs <= 0 || !(await settledWithin(running.settled, remainingMs))) {
        throw new IdempotencyInFlightError(
          `the first request with this Idempotency-Key is still running after ${this.waitMs} ms`,
        )
      }
    }
  }
}

function settledWithin(settled: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    void settled.then(() => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}
