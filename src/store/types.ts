// The data the store persists. `Change` is the engine seam of src/README.md; the rest is the store's own vocabulary.

export const ACTOR_KINDS = ['job', 'offer', 'lease', 'advance'] as const
export const ENGINE_RECORD_KINDS = ['lender', 'source', 'borrower', 'reserve', 'supplier', 'held', 'meta'] as const
export type ActorKind = (typeof ACTOR_KINDS)[number]
export type EngineRecordKind = (typeof ENGINE_RECORD_KINDS)[number]
export type ChangeKind = ActorKind | EngineRecordKind

/** One changed snapshot returned by an engine command (src/README.md, "Engine seam"). */
export interface Change {
  readonly kind: ChangeKind
  readonly id: string
  readonly record: unknown
  readonly final: boolean
  /**
   * The actor was live before this change's command (src/engine/types.ts Change): its live-index entry is already
   * stored, so none is written (issue 11: one B-tree put fewer per change of a live actor). Only on a live actor's
   * change that is not final.
   */
  readonly alreadyLive?: boolean
  /**
   * The command removed the record (an engine record, never an actor; its `record` is null): its snapshot is deleted.
   * A lender registration that never funded its wallet is removed this way (src/service/lenders.ts).
   */
  readonly removed?: boolean
}

/** What the store keeps under [kind, id]: DESIGN section 9, with the time unit in the name. */
export interface SnapshotEntry<T = unknown> {
  readonly version: number
  readonly snapshot: T
  readonly updatedAtMs: number
  readonly final: boolean
}

/** What a named record collection keeps under [collection, key]. */
export interface RecordEntry<T = unknown> {
  readonly version: number
  readonly value: T
  readonly updatedAtMs: number
  readonly expiresAtMs: number | null
}

/** A write to a record collection, carried by a commit. Build them with `RecordCollection.putOp` / `deleteOp`. */
export type RecordWrite =
  | {
      readonly op: 'put'
      readonly collection: string
      readonly key: string
      readonly value: unknown
      readonly version: number
      /** Epoch ms after which the record reads as absent and the sweep deletes it; null keeps it. */
      readonly expiresAtMs: number | null
      /** The commit fails with StoreConflictError when a live record already holds the key (create-only). */
      readonly onlyIfAbsent: boolean
    }
  | {
      readonly op: 'delete'
      readonly collection: string
      readonly key: string
      /** The commit fails with StoreConflictError when no live record holds the key (consume-once). */
      readonly mustExist: boolean
    }

export interface StoredResponse {
  readonly status: number
  readonly body: unknown
}

/** Who asked, and for which resource: one idempotency key is only meaningful inside its scope. */
export interface IdempotencyScope {
  readonly identity: string
  readonly method: string
  readonly path: string
  readonly key: string
}

export interface IdempotencyRecord {
  readonly scope: IdempotencyScope
  readonly requestHash: string
  readonly response: StoredResponse
  readonly createdAtMs: number
  readonly expiresAtMs: number
}

export interface CommitResult {
  /** The LMDB transaction id that carried this commit; commits that share it were group-committed. */
  readonly txnId: number
}

export type Durability = 'sync' | 'none'
