// The authorization part's persistence (nonces and sessions) on the service's LMDB store: the same data directory,
// the same durability, the same group commit as everything else.
import type { AuthRecords, NonceRecord, SessionRecord } from './records.ts'
import { StoreConflictError, type RecordCollection, type Store } from '../store/index.ts'

const isNonce = (v: unknown): v is NonceRecord =>
  typeof v === 'object' && v !== null && typeof (v as NonceRecord).nonce === 'string' && Number.isSafeInteger((v as NonceRecord).expiresAtMs)

const isSession = (v: unknown): v is SessionRecord =>
  typeof v === 'object' && v !== null && typeof (v as SessionRecord).tokenHash === 'string' && typeof (v as SessionRecord).address === 'string'

/** How long a nonce is kept past its own expiry: a sign-in with it in that time is told siwe_nonce_expired (get a new
 * one) instead of siwe_nonce_invalid, which the store's expiry alone would answer. */
export const EXPIRED_NONCE_KEPT_MS = 10 * 60_000

export class StoreAuthRecords implements AuthRecords {
  readonly #store: Store
  readonly #nonces: RecordCollection<NonceRecord>
  readonly #sessions: RecordCollection<SessionRecord>

  constructor(store: Store) {
    this.#store = store
    this.#nonces = store.collection<NonceRecord>('auth-nonces', { version: 1, validate: isNonce })
    this.#sessions = store.collection<SessionRecord>('auth-sessions', { version: 1, validate: isSession })
  }

  async getNonce(nonce: string): Promise<NonceRecord | undefined> {
    return this.#nonces.get(nonce)
  }

  async putNonce(record: NonceRecord): Promise<void> {
    await this.#store.commit({ records: [this.#nonces.putOp(record.nonce, record, { expiresAtMs: record.expiresAtMs + EXPIRED_NONCE_KEPT_MS, onlyIfAbsent: true })] })
  }

  async consumeNonce(nonce: string, nowMs: number): Promise<NonceRecord | undefined> {
    const record = this.#nonces.get(nonce)
    if (record === undefined || record.expiresAtMs <= nowMs) return undefined
    try {
      // mustExist: of two sign-ins racing on one nonce, the second delete conflicts and that sign-in is refused.
      await this.#store.commit({ records: [this.#nonces.deleteOp(nonce, { mustExist: true })] })
    } catch (error) {
      if (error instanceof StoreConflictError) return undefined
      throw error
    }
    return record
  }

  async getSession(tokenHash: string): Promise<SessionRecord | undefined> {
    return this.#sessions.get(tokenHash)
  }

  async putSession(record: SessionRecord): Promise<void> {
    await this.#store.commit({ records: [this.#sessions.putOp(record.tokenHash, record, { expiresAtMs: record.expiresAtMs, onlyIfAbsent: true })] })
  }

  /** Expired nonces and sessions read as absent; the store's sweeper deletes them. */
  async pruneExpired(): Promise<number> {
    return this.#store.sweepExpired()
  }
}
