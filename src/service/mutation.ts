// One mutating request as the service runs it.
import type { IdempotencyTicket, StoredResponse } from '../store/index.ts'

/**
 * A request that changes state. The service runs its engine command, builds its response with `encode`, and queues
 * both the changes and (under an Idempotency-Key) the stored response in one synchronous section, so that they
 * commit in the same LMDB transaction: a retry never finds the changes without the response, nor the response
 * without the changes. That is why the route hands the service its encoder instead of encoding the value later.
 */
export interface Mutation<T> {
  /** Present when the request carried an Idempotency-Key and is the first with it. */
  readonly ticket: IdempotencyTicket | undefined
  readonly encode: (value: T) => StoredResponse
}
