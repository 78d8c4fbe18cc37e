// Named record collections (sessions, nonces, used proofs, ...): typed, validated reads and the RecordWrite values a
// commit carries. Reads see a queued commit's writes (the store's overlay) before they are durable.
import type { Store } from './store.ts'
import { StoreAssertionError } from './errors.ts'
import type { RecordEntry, RecordWrite } from './types.ts'
import { assertRecordKey, isPlainObject } from './validate.ts'

export interface PutOptions {
  readonly expiresAtMs?: number | null
  readonly onlyIfAbsent?: boolean
}

/** A named record collection. Reads are synchronous; writes are RecordWrite values carried by `store.commit()`. */
export class RecordCollection<T> {
  readonly name: string
  readonly version: number
  readonly #store: Store
  readonly #validate: ((value: unknown) => value is T) | undefined
  readonly #clock: () => number

  constructor(
    store: Store,
    name: string,
    version: number,
    validate: ((value: unknown) => value is T) | undefined,
    clock: () => number,
  ) {
    this.#store = store
    this.name = name
    this.version = version
    this.#validate = validate
    this.#clock = clock
  }

  /** The value, including one a queued commit is writing (so a concurrent request sees it), unless expired. */
  get(key: string): T | undefined {
    return this.getEntry(key)?.value
  }

  getEntry(key: string): RecordEntry<T> | undefined {
    assertRecordKey(key, this.name)
    const entry = this.#store.readRecord(this.name, key, this.#clock())
    if (entry !== undefined) this.#check(entry.value, key)
    return entry as RecordEntry<T> | undefined
  }

  has(key: string): boolean {
    return this.getEntry(key) !== undefined
  }

  /** Durable, unexpired records whose key starts with `prefix`, in key order. */
  *iterate(prefix = ''): Generator<{ key: string; value: T; entry: RecordEntry<T> }> {
    for (const { key, entry } of this.#store.rangeRecords(this.name, prefix, this.#clock())) {
      this.#check(entry.value, key)
      yield { key, value: entry.value as T, entry: entry as RecordEntry<T> }
    }
  }

  putOp(key: string, value: T, options: PutOptions = {}): RecordWrite {
    assertRecordKey(key, this.name)
    this.#check(value, key)
    return {
      op: 'put',
      collection: this.name,
      key,
      value,
      version: this.version,
      expiresAtMs: options.expiresAtMs ?? null,
      onlyIfAbsent: options.onlyIfAbsent ?? false,
    }
  }

  deleteOp(key: string, options: { readonly mustExist?: boolean } = {}): RecordWrite {
    assertRecordKey(key, this.name)
    return { op: 'delete', collection: this.name, key, mustExist: options.mustExist ?? false }
  }

  #check(value: unknown, key: string): void {
    if (this.#validate !== undefined && !this.#validate(value)) {
      throw new StoreAssertionError(`${this.name} ${key}: value fails the collection's validator`)
    }
  }
}

export interface UsedProofInfo {
  readonly usedBy: string
  readonly usedAtMs: number
}

export function isProofInfo(value: unknown): value is UsedProofInfo {
  return isPlainObject(value) && typeof value.usedBy === 'string' && Number.isSafeInteger(value.usedAtMs)
}

/** Chain proofs already consumed: key `${network}:${txHash}:${logIndex}` by convention of src/chain. */
export class UsedProofs {
  readonly #collection: RecordCollection<UsedProofInfo>
  constructor(collection: RecordCollection<UsedProofInfo>) {
    this.#collection = collection
  }
  /** True once a commit adding the proof was queued (before it is durable, so two requests cannot both use it). */
  has(key: string): boolean {
    return this.#collection.has(key)
  }
  get(key: string): UsedProofInfo | undefined {
    return this.#collection.get(key)
  }
  /** Create-only: the commit carrying this fails with StoreConflictError if the proof was already used. */
  addOp(key: string, info: UsedProofInfo): RecordWrite {
    return this.#collection.putOp(key, info, { onlyIfAbsent: true })
  }
}
