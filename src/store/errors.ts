// Typed errors of the store. Each has a stable `code` that HTTP and start-up can switch on, and a short message that
// names the data directory and what the operator should do.

export type StoreErrorCode =
  | 'store_open_failed'
  | 'store_not_a_directory'
  | 'store_permission_denied'
  | 'store_corrupt'
  | 'store_check_timeout'
  | 'store_not_a_store'
  | 'store_version_unsupported'
  | 'store_assertion_failed'
  | 'store_conflict'
  | 'store_closed'
  | 'store_overloaded'
  | 'store_write_failed'
  | 'store_stalled'
  | 'idempotency_in_flight'

export class StoreError extends Error {
  override readonly name: string = 'StoreError'
  readonly code: StoreErrorCode
  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** open() refused the data directory: missing permission, not a directory, damaged or foreign files. */
export class StoreOpenError extends StoreError {
  override readonly name = 'StoreOpenError'
  readonly dataDir: string
  constructor(code: StoreErrorCode, dataDir: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options)
    this.dataDir = dataDir
  }
}

/** The data directory or a record was written by a newer release than this one. */
export class StoreVersionError extends StoreError {
  override readonly name = 'StoreVersionError'
  constructor(message: string) {
    super('store_version_unsupported', message)
  }
}

/** A value about to be written, or read back, breaks the store's invariants. Never retried. */
export class StoreAssertionError extends StoreError {
  override readonly name = 'StoreAssertionError'
  constructor(message: string) {
    super('store_assertion_failed', message)
  }
}

/** A conditional write lost: a create-only record existed, or a delete-must-exist record was gone. */
export class StoreConflictError extends StoreError {
  override readonly name = 'StoreConflictError'
  readonly collection: string
  readonly key: string
  constructor(collection: string, key: string, message: string) {
    super('store_conflict', message)
    this.collection = collection
    this.key = key
  }
}

export class StoreClosedError extends StoreError {
  override readonly name = 'StoreClosedError'
  constructor() {
    super('store_closed', 'the store is closed')
  }
}

/** More commits are queued than the configured limit: the caller should answer 503 and let the client retry. */
export class StoreOverloadedError extends StoreError {
  override readonly name = 'StoreOverloadedError'
  constructor(message: string) {
    super('store_overloaded', message)
  }
}

/**
 * LMDB failed a group's write transaction (the disk refused a write or a flush: EFBIG past a file-size limit, ENOSPC,
 * EIO, a short write): every commit of the group is rejected with it, nothing of the transaction is stored, and the
 * store writes nothing more (memory is ahead of the disk: the process must stop and restart from the store). The
 * message carries the native error, the cause is it.
 */
export class StoreWriteFailedError extends StoreError {
  override readonly name = 'StoreWriteFailedError'
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_write_failed', message, options)
  }
}

/** A group's write transaction has not settled within the stall limit (Store.watchStalls): fatal like a failure. */
export class StoreStalledError extends StoreError {
  override readonly name = 'StoreStalledError'
  constructor(message: string) {
    super('store_stalled', message)
  }
}

/** A retry waited longer than the limit for the first request with its idempotency key to finish. */
export class IdempotencyInFlightError extends StoreError {
  override readonly name = 'IdempotencyInFlightError'
  constructor(message: string) {
    super('idempotency_in_flight', message)
  }
}
