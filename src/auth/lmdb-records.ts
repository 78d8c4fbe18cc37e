// AuthRecords on an LMDB environment: named databases for the nonce secret, used nonces, sessions (keyed by token
// hash) and the per-wallet session index.
import { randomBytes } from 'node:crypto'
import { open, type Database, type RootDatabase } from 'lmdb'
import type { Address } from 'viem'
import { walletSessionKey, type AuthRecords, type SessionRecord, type UsedNonceRecord } from './records.ts'

export class LmdbAuthRecords implements AuthRecords {
  readonly #root: RootDatabase | undefined
  readonly #env: RootDatabase
  readonly #meta: Database<string, string>
  readonly #usedNonces: Database<UsedNonceRecord, string>
  readonly #sessions: Database<SessionRecord, string>
  readonly #walletSessions: Database<SessionRecord, string>
  readonly #nowMs: () => number

  /** Opens (or creates) the environment at `path`; or pass an environment the caller owns as `root`. */
  constructor(options: ({ path: string } | { root: RootDatabase }) & { nowMs?: () => number }) {
    const root = 'root' in options ? options.root : open({ path: options.path })
    this.#root = 'root' in options ? undefined : root
    this.#env = root
    this.#meta = root.openDB<string, string>({ name: 'auth-meta' })
    this.#usedNonces = root.openDB<UsedNonceRecord, string>({ name: 'auth-used-nonces' })
    this.#sessions = root.openDB<SessionRecord, string>({ name: 'auth-sessions' })
    this.#walletSessions = root.openDB<SessionRecord, string>({ name: 'auth-wallet-sessions' })
    this.#nowMs = options.nowMs ?? Date.now
  }

  async nonceSecret(): Promise<Uint8Array> {
    const hex = await this.#meta.transaction(() => {
      const existing = this.#meta.get('nonce-secret')
      if (existing !== undefined) return existing
      const made = randomBytes(32).toString('hex')
      this.#meta.putSync('nonce-secret', made)
      return made
    })
    return Buffer.from(hex, 'hex')
  }

  async isNonceUsed(nonce: string): Promise<boolean> {
    return this.#usedNonces.get(nonce) !== undefined
  }

  openSession(session: SessionRecord, used: UsedNonceRecord, drop: readonly SessionRecord[]): Promise<boolean> {
    // One write transaction: the check of the nonce and the writes cannot interleave with another sign-in.
    return this.#env.transaction(() => {
      if (this.#usedNonces.get(used.nonce) !== undefined) return false
      this.#usedNonces.putSync(used.nonce, used)
      for (const old of drop) this.#remove(old)
      this.#sessions.putSync(session.tokenHash, session)
      this.#walletSessions.putSync(walletSessionKey(session), session)
      return true
    })
  }

  async getSession(tokenHash: string): Promise<SessionRecord | undefined> {
    const session = this.#sessions.get(tokenHash)
    return session === undefined || session.expiresAtMs <= this.#nowMs() ? undefined : session
  }

  async sessionsOf(address: Address): Promise<SessionRecord[]> {
    const nowMs = this.#nowMs()
    const out: SessionRecord[] = []
    for (const { key, value } of this.#walletSessions.getRange({ start: `${address}:` })) {
      if (!String(key).startsWith(`${address}:`)) break
      if (value.expiresAtMs > nowMs) out.push(value)
    }
    return out
  }

  revokeSessions(sessions: readonly SessionRecord[]): Promise<number> {
    return this.#env.transaction(() => sessions.reduce((n, s) => n + (this.#remove(s) ? 1 : 0), 0))
  }

  #remove(session: SessionRecord): boolean {
    const existed = this.#sessions.get(session.tokenHash) !== undefined
    this.#sessions.removeSync(session.tokenHash)
    this.#walletSessions.removeSync(walletSessionKey(session))
    return existed
  }

  pruneExpired(nowMs: number): Promise<number> {
    return this.#env.transaction(() => {
      let removed = 0
      for (const { key, value } of this.#usedNonces.getRange()) {
        if (value.expiresAtMs <= nowMs) { this.#usedNonces.removeSync(key); removed++ }
      }
      for (const { value } of this.#sessions.getRange()) {
        if (value.expiresAtMs <= nowMs) { this.#remove(value); removed++ }
      }
      return removed
    })
  }

  /** Closes the environment when this object opened it. */
  async close(): Promise<void> {
    await this.#root?.close()
  }
}
