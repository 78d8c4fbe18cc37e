// The authorization part's persistence (nonce secret, used nonces, sessions) on the service's LMDB store: the same
// data directory, the same durability, the same group commit as everything else. Issuing a nonce writes nothing;
// the used-nonce record is written in the commit of the session it opened. Expired records read as absent; the
// store's sweeper deletes them.
import { randomBytes } from 'node:crypto'
import type { Address } from 'viem'
import { walletSessionKey, type AuthRecords, type SessionRecord, type UsedNonceRecord } from './records.ts'
import { StoreConflictError, type RecordCollection, type RecordWrite, type Store } from '../store/index.ts'

const isUsedNonce = (v: unknown): v is UsedNonceRecord =>
  typeof v === 'object' && v !== null && typeof (v as UsedNonceRecord).nonce === 'string' && Number.isSafeInteger((v as UsedNonceRecord).expiresAtMs)

const isSession = (v: unknown): v is SessionRecord =>
  typeof v === 'object' && v !== null && typeof (v as SessionRecord).tokenHash === 'string' && typeof (v as SessionRecord).address === 'string'

const isSecret = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v)

export class StoreAuthRecords implements AuthRecords {
  readonly #store: Store
  readonly #secret: RecordCollection<string>
  readonly #usedNonces: RecordCollection<UsedNonceRecord>
  readonly #sessions: RecordCollection<SessionRecord>
  readonly #walletSessions: RecordCollection<SessionRecord>

  constructor(store: Store) {
    this.#store = store
    this.#secret = store.collection<string>('auth-nonce-secret', { version: 1, validate: isSecret })
    this.#usedNonces = store.collection<UsedNonceRecord>('auth-used-nonces', { version: 1, validate: isUsedNonce })
    this.#sessions = store.collection<SessionRecord>('auth-sessions', { version: 1, validate: isSession })
    this.#walletSessions = store.collection<SessionRecord>('auth-wallet-sessions', { version: 1, validate: isSession })
  }

  async nonceSecret(): Promise<Uint8Array> {
    const existing = this.#secret.get('secret')
    if (existing !== undefined) return Buffer.from(existing, 'hex')
    // Create-only: of two first calls one writes, the other reads the winner's secret. Durable before any nonce
    // made with it is shown, so a restart still verifies the nonces it issued.
    try {
      await this.#store.commit({ records: [this.#secret.putOp('secret', randomBytes(32).toString('hex'), { onlyIfAbsent: true })] })
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error
    }
    return Buffer.from(this.#secret.get('secret') as string, 'hex')
  }

  async isNonceUsed(nonce: string): Promise<boolean> {
    return this.#usedNonces.has(nonce)
  }

  async openSession(session: SessionRecord, used: UsedNonceRecord, drop: readonly SessionRecord[]): Promise<boolean> {
    try {
      await this.#store.commit({
        records: [
          // onlyIfAbsent: of two sign-ins racing on one nonce, the second commit conflicts and writes nothing.
          this.#usedNonces.putOp(used.nonce, used, { expiresAtMs: used.expiresAtMs, onlyIfAbsent: true }),
          ...drop.flatMap((old) => this.#removeOps(old)),
          this.#sessions.putOp(session.tokenHash, session, { expiresAtMs: session.expiresAtMs, onlyIfAbsent: true }),
          this.#walletSessions.putOp(walletSessionKey(session), session, { expiresAtMs: session.expiresAtMs }),
        ],
      })
    } catch (error) {
      if (error instanceof StoreConflictError) return false
      throw error
    }
    return true
  }

  async getSession(tokenHash: string): Promise<SessionRecord | undefined> {
    return this.#sessions.get(tokenHash)
  }

  async sessionsOf(address: Address): Promise<SessionRecord[]> {
    return [...this.#walletSessions.iterate(`${address}:`)].map((r) => r.value)
  }

  async extendSession(session: SessionRecord): Promise<boolean> {
    if (!this.#sessions.has(session.tokenHash)) return false
    await this.#store.commit({
      records: [
        this.#sessions.putOp(session.tokenHash, session, { expiresAtMs: session.expiresAtMs }),
        this.#walletSessions.putOp(walletSessionKey(session), session, { expiresAtMs: session.expiresAtMs }),
      ],
    })
    return true
  }

  async revokeSessions(sessions: readonly SessionRecord[]): Promise<number> {
    const live = sessions.filter((s) => this.#sessions.has(s.tokenHash))
    if (sessions.length > 0) await this.#store.commit({ records: sessions.flatMap((s) => this.#removeOps(s)) })
    return live.length
  }

  #removeOps(session: SessionRecord): RecordWrite[] {
    return [this.#sessions.deleteOp(session.tokenHash), this.#walletSessions.deleteOp(walletSessionKey(session))]
  }
}
