// Persistence port of the authorization part. The service's LMDB store implements it (src/auth/store-records.ts).
//
// Nonces are stateless (an HMAC over their issue time and randomness, see siwe.ts): issuing one writes nothing. What
// is kept is the secret of that HMAC, once per data directory, and the record that a nonce was USED, written only in
// the same durable write as the session it opened, so that a replayed message is refused.
import type { Address } from 'viem'

export interface UsedNonceRecord {
  nonce: string
  /** The nonce's own expiry: after it the nonce is refused as expired, so the record may go. */
  expiresAtMs: number
}

export interface SessionRecord {
  /** SHA-256 of the bearer token, hex. The token itself is never stored. */
  tokenHash: string
  address: Address
  chainId: number
  issuedAtMs: number
  expiresAtMs: number
  /** The signed message's expirationTime, when it had one: a refresh never extends the session past it. */
  notAfterMs?: number
  /** When the wallet signed the message that opened the session (before refreshes); absent: `issuedAtMs`. */
  signedAtMs?: number
}

export interface AuthRecords {
  /** 32 random bytes, made once per data directory and kept durably: the HMAC key of stateless nonces. */
  nonceSecret(): Promise<Uint8Array>
  /** True once a session opened with this nonce is recorded. */
  isNonceUsed(nonce: string): Promise<boolean>
  /**
   * One durable write: the session, the used-nonce record (create-only) and the removal of `drop` (older sessions of
   * the same wallet, over its bound). Resolves false, writing nothing, when the nonce was already used: of two
   * sign-ins racing on one nonce, exactly one opens a session.
   */
  openSession(session: SessionRecord, used: UsedNonceRecord, drop: readonly SessionRecord[]): Promise<boolean>
  getSession(tokenHash: string): Promise<SessionRecord | undefined>
  /** The wallet's unexpired sessions, oldest first. */
  sessionsOf(address: Address): Promise<SessionRecord[]>
  /**
   * Rewrites a session under the same token hash and index key (a later expiry) in one durable write; resolves false,
   * writing nothing, when it is no longer there. The store does not grow.
   */
  extendSession(session: SessionRecord): Promise<boolean>
  /** Removes these sessions in one durable write; resolves how many were still there. */
  revokeSessions(sessions: readonly SessionRecord[]): Promise<number>
}

/** The key of a session in the per-wallet index: wallet, then issue time (so a prefix scan is oldest first). */
export function walletSessionKey(session: Pick<SessionRecord, 'address' | 'issuedAtMs' | 'tokenHash'>): string {
  return `${session.address}:${session.issuedAtMs.toString().padStart(16, '0')}:${session.tokenHash}`
}
