// AuthRecords on an LMDB environment: one named database for nonces, one for sessions (keyed by token hash).
import { open, type Database, type RootDatabase } from 'lmdb'
import type { AuthRecords, NonceRecord, SessionRecord } from './records.ts'

export class LmdbAuthRecords implements AuthRecords {
  readonly #root: RootDatabase | undefined
  readonly #nonces: Database<NonceRecord, string>
  readonly #sessions: Database<SessionRecord, string>

  /** Opens (or creates) the environment at `path`; or pass an environment the caller owns as `root`. */
  constructor(options: { path: string } | { root: RootDatabase }) {
    const root = 'root' in options ? options.root : open({ path: options.path })
    this.#root = 'root' in options ? undefined : root
    this.#nonces = root.openDB<NonceRecord, string>({ name: 'auth-nonces' })
    this.#sessions = root.openDB<SessionRecord, string>({ name: 'auth-sessions' })
  }

  async getNonce(nonce: string): Promise<NonceRecord | undefined> {
    return this.#nonces.get(nonce)
  }

  async putNonce(record: NonceRecord): Promise<void> {
    await this.#nonces.put(record.nonce, record)
  }

  consumeNonce(nonce: string, nowMs: number): Promise<NonceRecord | undefined> {
    // The callback runs inside one write transaction: the read and the removal cannot interleave with another.
    return this.#nonces.transaction(() => {
      const record = this.#nonces.get(nonce)
      if (record === undefined) return undefined
      this.#nonces.removeSync(nonce)
      return record.expiresAtMs > nowMs ? record : undefined
    })
  }

  async getSession(tokenHash: string): Promise<SessionRecord | undefined> {
    return this.#sessions.get(tokenHash)
  }

  async putSession(record: SessionRecord): Promise<void> {
    await this.#sessions.put(record.tokenHash, record)
  }

  pruneExpired(nowMs: number): Promise<number> {
    return this.#nonces.transaction(() => {
      let removed = 0
      for (const { key, value } of this.#nonces.getRange()) {
        if (value.expiresAtMs <= nowMs) { this.#nonces.removeSync(key); removed++ }
      }
      for (const { key, value } of this.#sessions.getRange()) {
        if (value.expiresAtMs <= nowMs) { this.#sessions.removeSync(key); removed++ }
      }
      return removed
    })
  }

  /** Closes the environment when this object opened it. */
  async close(): Promise<void> {
    await this.#root?.close()
  }
}
