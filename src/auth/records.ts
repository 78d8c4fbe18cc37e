// Persistence port of the authorization part, implemented on the service's LMDB store by src/auth/store-records.ts.
import type { Address } from 'viem'

export interface NonceRecord {
  nonce: string
  issuedAtMs: number
  expiresAtMs: number
}

export interface SessionRecord {
  /** SHA-256 of the bearer token, hex. The token itself is never stored. */
  tokenHash: string
  address: Address
  chainId: number
  issuedAtMs: number
  expiresAtMs: number
}

export interface AuthRecords {
  getNonce(nonce: string): Promise<NonceRecord | undefined>
  putNonce(record: NonceRecord): Promise<void>
  /**
   * Atomically removes the nonce and returns it when it exists and has not expired at `nowMs`; otherwise returns
   * undefined. Of two concurrent sign-ins with the same nonce, exactly one gets the record.
   */
  consumeNonce(nonce: string, nowMs: number): Promise<NonceRecord | undefined>
  getSession(tokenHash: string): Promise<SessionRecord | undefined>
  putSession(record: SessionRecord): Promise<void>
  /** Drops expired nonces and sessions; returns how many. Called periodically by the service. */
  pruneExpired?(nowMs: number): Promise<number>
}
