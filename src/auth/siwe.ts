// Sign-In with Ethereum (EIP-4361) through viem/siwe. A nonce is issued (stateless: nothing is written), signed
// inside a SIWE message by the wallet, verified and recorded as used with the session it opens; the caller gets an
// opaque bearer token of which only the SHA-256 is stored. Sessions are bounded per wallet and revocable. An EOA's
// signature is recovered locally; only a signature that does not recover to the address (a contract wallet: ERC-1271,
// or ERC-6492 before its deployment) is checked through the chain's public client, and that read is charged to the
// chain read budget first: sign-in is open to anyone, and wallets are free.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { getAddress, hashMessage, isAddressEqual, recoverAddress, type Address, type Hash, type Hex, type PublicClient } from 'viem'
import { parseSiweMessage, validateSiweMessage } from 'viem/siwe'
import { HttpProblem, unauthorized } from '../http/problem.ts'
import type { BudgetProblems, StoreBudget } from '../http/rate-limit.ts'
import type { Session } from '../http/route.ts'
import type { AuthRecords, SessionRecord } from './records.ts'

/** A nonce must be used within this long after it was issued. */
export const DEFAULT_NONCE_TTL_MS = 5 * 60_000
/** A session lasts this long unless the signed message expires earlier. */
export const DEFAULT_SESSION_TTL_MS = 24 * 60 * 60_000
/** Tolerated clock difference between the wallet and the service for `issuedAt` and `notBefore`. */
export const CLOCK_SKEW_MS = 60_000

/** Sessions kept in memory for authentication; the oldest cached one leaves first. */
export const SESSION_CACHE_MAX = 10_000
/** Live sessions per wallet: a new sign-in beyond it ends the wallet's oldest session (never refuses the wallet). */
export const DEFAULT_SESSIONS_PER_WALLET_MAX = 10
/** A session is refreshed (POST /auth/session/refresh) at most until this long after its message was signed. */
export const SESSION_REFRESH_HORIZON_MS = 7 * 24 * 60 * 60_000

// A stateless nonce, 76 hex digits: issue time (12), randomness (32), HMAC-SHA256 of both under the data directory's
// secret, truncated to 128 bits (32). Issuing one writes nothing; verifying one needs only the secret and the clock.
const NONCE_PATTERN = /^[0-9a-f]{76}$/

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/

/** How a sign-in the `signIns` budget (per client address, for all clients) refuses is answered. */
const SIGN_IN_REFUSALS: BudgetProblems = {
  limited: (_bucket, retryAfterSeconds) =>
    new HttpProblem(429, 'sign_ins_client_limited', 'This client address opened as many sessions as it may for now (signInsPerClientPerHour); an agent signs in about once a day per wallet: reuse its session, or retry later.', { title: 'Too many sign-ins', headers: { 'retry-after': String(retryAfterSeconds) } }),
  exhausted: (retryAfterSeconds) =>
    new HttpProblem(503, 'sign_ins_exhausted', 'The service opens no more sessions for now, whoever asks; retry later.', { title: 'Sign-ins exhausted', headers: { 'retry-after': String(retryAfterSeconds) } }),
}

export interface SiweAuthOptions {
  records: AuthRecords
  /** The `domain` a message must name: the host (and port) the service is reached at, e.g. `credit.example:8402`. */
  domain: string
  /** Public client per accepted chain id; a message for another chain is refused. */
  clients: ReadonlyMap<number, PublicClient> | Readonly<Record<number, PublicClient>>
  /**
   * Charges the chain read of a contract wallet's signature check to the network of `chainId` (the service's
   * ChainReadBudget, never as the message's address: nothing proved it yet, and anyone can name any wallet); throws
   * to refuse it (ChainReadsExhaustedError), before the nonce is used. Default: free.
   */
  chargeChainRead?: (chainId: number, client: string) => void
  nonceTtlMs?: number
  sessionTtlMs?: number
  /** Live sessions per wallet (default 10): the oldest ends when a sign-in would exceed it. */
  sessionsPerWalletMax?: number
  /**
   * Sessions opened per client address and by all clients (signInsPerClientPerHour, signInsPerHour): what strangers
   * with free wallets can make the store keep for sessionTtlSeconds. Default: unbounded.
   */
  signIns?: StoreBudget
  /**
   * Whether a wallet is no stranger (CreditService.hasStanding): when all clients' bucket of `signIns` is empty, such a
   * wallet still signs in, held to its own bounds. Default: none is.
   */
  standing?: (address: Address) => boolean
  nowMs?: () => number
}

export interface IssuedNonce {
  nonce: string
  expiresAtMs: number
  domain: string
  chainIds: number[]
}

export interface IssuedSession {
  token: string
  address: Address
  chainId: number
  expiresAtMs: number
}

/** A refreshed session: the same token, its expiry now. */
export type RefreshedSession = Omit<IssuedSession, 'token'>

/** What the auth routes need; `SiweAuth` is the implementation. */
export interface AuthService {
  issueNonce(): Promise<IssuedNonce>
  /** `client`: the request's client (RouteContext.clientKey), whose sign-ins are bounded. */
  createSession(input: { message: string; signature: `0x${string}`; client: string }): Promise<IssuedSession>
  /**
   * Extends the live session of the request in place (same token, a later expiry; see refreshedExpiryMs): the store
   * keeps no new record, so no sign-in budget is charged. Resolves its new expiry; 401 when it ended meanwhile.
   */
  refresh(session: Session): Promise<RefreshedSession>
  /** Ends the session of the request (`all`: every session of its wallet); resolves how many ended. */
  revoke(session: Session, all: boolean): Promise<number>
}

/**
 * A refreshed session's expiry: sessionTtl from now, but never past its message's expirationTime nor
 * SESSION_REFRESH_HORIZON_MS after the wallet signed it (a leaked token is not kept alive forever; revocation ends it
 * at once). No later than its current expiry: the session is not extended, and its wallet signs in again.
 */
export function refreshedExpiryMs(session: SessionRecord, nowMs: number, sessionTtlMs: number): number {
  return Math.min(nowMs + sessionTtlMs, session.notAfterMs ?? Number.POSITIVE_INFINITY, (session.signedAtMs ?? session.issuedAtMs) + SESSION_REFRESH_HORIZON_MS)
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

const NOT_SIGNED = 'The signature does not prove that the address signed this message.'

const sessionEnded = () => unauthorized('The session ended meanwhile (revoked or expired); sign in again.')

const refused = (code: string, detail: string) => new HttpProblem(401, code, detail, { title: 'Sign-in refused', headers: { 'www-authenticate': 'Bearer' } })

export class SiweAuth implements AuthService {
  readonly #records: AuthRecords
  readonly #endedListeners = new Set<(tokenHashes: readonly string[]) => void>()
  readonly #domain: string
  readonly #clients: ReadonlyMap<number, PublicClient>
  readonly #chargeChainRead: (chainId: number, client: string) => void
  readonly #nonceTtlMs: number
  readonly #sessionTtlMs: number
  readonly #sessionsPerWalletMax: number
  readonly #signIns: StoreBudget | undefined
  readonly #standing: (address: Address) => boolean
  readonly #nowMs: () => number
  #secret: Promise<Uint8Array> | undefined
  /**
   * Recently used sessions by bearer token: every request authenticates, and a store read costs more than a lookup;
   * keyed by the token itself so that a cached session costs no SHA-256 (about 1% of a request's CPU, issue 11).
   */
  readonly #sessions = new Map<string, { session: Readonly<Session> & { tokenHash: string }; expiresAtMs: number }>()
  /** The cached token of each token hash: revocation and the per-wallet bound name sessions by hash only. */
  readonly #cachedTokens = new Map<string, string>()
  /** Token hashes being revoked: refused at once, before their removal is durable. */
  readonly #revoking = new Set<string>()
  /** Sign-ins and revocations of one wallet run one at a time, so its session count cannot overshoot its bound. */
  readonly #walletQueue = new Map<Address, Promise<unknown>>()

  constructor(options: SiweAuthOptions) {
    this.#records = options.records
    this.#domain = options.domain
    this.#clients = options.clients instanceof Map
      ? options.clients
      : new Map(Object.entries(options.clients).map(([id, client]) => [Number(id), client]))
    if (this.#clients.size === 0) throw new Error('SiweAuth needs at least one chain client')
    this.#chargeChainRead = options.chargeChainRead ?? (() => {})
    this.#nonceTtlMs = options.nonceTtlMs ?? DEFAULT_NONCE_TTL_MS
    this.#sessionTtlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS
    this.#sessionsPerWalletMax = options.sessionsPerWalletMax ?? DEFAULT_SESSIONS_PER_WALLET_MAX
    if (!Number.isSafeInteger(this.#sessionsPerWalletMax) || this.#sessionsPerWalletMax < 1) throw new Error('sessionsPerWalletMax must be a positive integer')
    this.#signIns = options.signIns
    this.#standing = options.standing ?? (() => false)
    this.#nowMs = options.nowMs ?? Date.now
  }

  get domain(): string {
    return this.#domain
  }

  get chainIds(): number[] {
    return [...this.#clients.keys()]
  }

  #mac(secret: Uint8Array, body: string): string {
    return createHmac('sha256', secret).update(body, 'latin1').digest('hex').slice(0, 32)
  }

  /** A nonce issued now: nothing is written (hole 6 of issue 10: an unauthenticated request costs no disk). */
  async issueNonce(): Promise<IssuedNonce> {
    const nowMs = this.#nowMs()
    const body = nowMs.toString(16).padStart(12, '0') + randomBytes(16).toString('hex')
    const nonce = body + this.#mac(await this.#nonceSecret(), body)
    return { nonce, expiresAtMs: nowMs + this.#nonceTtlMs, domain: this.#domain, chainIds: this.chainIds }
  }

  #nonceSecret(): Promise<Uint8Array> {
    this.#secret ??= this.#records.nonceSecret()
    return this.#secret
  }

  /** The issue time of a nonce this service made, or undefined for anything else (forged, altered, foreign). */
  async #nonceIssuedAtMs(nonce: string): Promise<number | undefined> {
    if (!NONCE_PATTERN.test(nonce)) return undefined
    const body = nonce.slice(0, 44)
    const expected = Buffer.from(this.#mac(await this.#nonceSecret(), body), 'latin1')
    if (!timingSafeEqual(expected, Buffer.from(nonce.slice(44), 'latin1'))) return undefined
    return Number.parseInt(nonce.slice(0, 12), 16)
  }

  async createSession(input: { message: string; signature: `0x${string}`; client: string }): Promise<IssuedSession> {
    const nowMs = this.#nowMs()
    const parsed = parseSiweMessage(input.message)
    const { address, chainId, domain, nonce, uri, version } = parsed
    if (address === undefined || chainId === undefined || domain === undefined || nonce === undefined || uri === undefined || version !== '1' || parsed.issuedAt === undefined) {
      throw new HttpProblem(400, 'siwe_message_invalid', 'The message is not an EIP-4361 message with address, chain id, domain, uri, version 1, nonce and issued-at.', { title: 'Invalid sign-in message' })
    }
    if (domain !== this.#domain) throw refused('siwe_domain_mismatch', `The message is for ${domain}; this service signs in for ${this.#domain}.`)
    const client = this.#clients.get(chainId)
    if (client === undefined) throw refused('siwe_chain_unsupported', `Chain ${chainId} is not accepted; use one of ${this.chainIds.join(', ')}.`)
    const issuedAtMs = await this.#nonceIssuedAtMs(nonce)
    if (issuedAtMs === undefined || issuedAtMs > nowMs + CLOCK_SKEW_MS) throw refused('siwe_nonce_invalid', 'The nonce was not issued by GET /auth/nonce.')
    const nonceExpiresAtMs = issuedAtMs + this.#nonceTtlMs
    if (nonceExpiresAtMs <= nowMs) throw refused('siwe_nonce_expired', 'The nonce expired; get a new one from GET /auth/nonce.')
    if (await this.#records.isNonceUsed(nonce)) throw refused('siwe_nonce_invalid', 'The nonce was already used.')
    if (parsed.issuedAt.getTime() > nowMs + CLOCK_SKEW_MS) throw refused('siwe_message_not_yet_valid', 'The message is issued in the future.')
    if (parsed.notBefore !== undefined && parsed.notBefore.getTime() > nowMs + CLOCK_SKEW_MS) throw refused('siwe_message_not_yet_valid', 'The message is not valid before its notBefore time.')
    if (parsed.expirationTime !== undefined && parsed.expirationTime.getTime() <= nowMs) throw refused('siwe_message_expired', 'The message expired.')

    // What viem's verifySiweMessage checked besides the signature, as it did (notBefore here without the skew).
    if (!validateSiweMessage({ message: parsed, domain: this.#domain, nonce, time: new Date(nowMs) })) throw refused('siwe_signature_invalid', NOT_SIGNED)
    const hash = hashMessage(input.message)
    let valid = await recoversTo(address, hash, input.signature)
    if (!valid) {
      // A contract wallet's check reads the chain: charged first, so a refusal reads nothing and leaves the nonce unused.
      this.#chargeChainRead(chainId, input.client)
      try {
        valid = await client.verifyHash({ address, hash, signature: input.signature })
      } catch (error) {
        throw new HttpProblem(503, 'chain_unavailable', `The signature could not be verified on chain ${chainId}; retry later.`, { title: 'Chain unavailable', headers: { 'retry-after': '1' }, cause: error })
      }
    }
    if (!valid) throw refused('siwe_signature_invalid', NOT_SIGNED)

    const token = randomBytes(32).toString('base64url')
    const notAfterMs = parsed.expirationTime?.getTime()
    const expiresAtMs = Math.min(nowMs + this.#sessionTtlMs, notAfterMs ?? Number.POSITIVE_INFINITY)
    const checksummed = getAddress(address)
    const session: SessionRecord = { tokenHash: hashToken(token), address: checksummed, chainId, issuedAtMs: nowMs, expiresAtMs, ...(notAfterMs === undefined ? {} : { notAfterMs }) }
    await this.#forWallet(checksummed, async () => {
      const live = await this.#records.sessionsOf(checksummed)
      // Charged only now, for a sign-in that stores a session: a refused message costs no one's budget. The nonce
      // stays unused, so the same message may be sent again after the wait (while the nonce lasts). When strangers
      // hold all clients' bucket empty, a wallet with standing is held to its own bounds (sessionsPerWalletMax and its
      // client's bucket: what it adds costs what a free wallet does not), and any other wallet that holds a live
      // session replaces its oldest one (the store does not grow); a fresh wallet is refused.
      let replaces = false
      this.#signIns?.charge(undefined, input.client, SIGN_IN_REFUSALS, () => this.#standing(checksummed) || (replaces = live.length > 0))
      const drop = live.slice(0, Math.max(replaces ? 1 : 0, live.length + 1 - this.#sessionsPerWalletMax))
      // The nonce is recorded as used only now, in the session's own write: of two sign-ins racing on it, one wins.
      const opened = await this.#records.openSession(session, { nonce, expiresAtMs: nonceExpiresAtMs }, drop)
      if (!opened) throw refused('siwe_nonce_invalid', 'The nonce was already used.')
      for (const old of drop) this.#uncache(old.tokenHash)
      this.#sessionsEnded(drop.map((s) => s.tokenHash))
    })
    return { token, address: checksummed, chainId, expiresAtMs }
  }

  async refresh(current: Session): Promise<RefreshedSession> {
    const tokenHash = current.tokenHash
    if (tokenHash === undefined) throw new Error('refresh needs the session of a bearer token')
    return this.#forWallet(current.address, async () => {
      const nowMs = this.#nowMs()
      const stored = await this.#records.getSession(tokenHash)
      if (stored === undefined || stored.expiresAtMs <= nowMs || this.#revoking.has(tokenHash)) throw sessionEnded()
      const expiresAtMs = refreshedExpiryMs(stored, nowMs, this.#sessionTtlMs)
      if (expiresAtMs > stored.expiresAtMs) {
        const extended: SessionRecord = { ...stored, expiresAtMs, signedAtMs: stored.signedAtMs ?? stored.issuedAtMs }
        if (!(await this.#records.extendSession(extended))) throw sessionEnded()
        const token = this.#cachedTokens.get(tokenHash)
        const cached = token === undefined ? undefined : this.#sessions.get(token)
        if (cached !== undefined) cached.expiresAtMs = expiresAtMs
      }
      return { address: stored.address, chainId: stored.chainId, expiresAtMs: Math.max(expiresAtMs, stored.expiresAtMs) }
    })
  }

  async revoke(current: Session, all: boolean): Promise<number> {
    const tokenHash = current.tokenHash
    if (tokenHash === undefined) throw new Error('revoke needs the session of a bearer token')
    return this.#forWallet(current.address, async () => {
      const own = await this.#records.getSession(tokenHash)
      const ending = all ? await this.#records.sessionsOf(current.address) : []
      if (own !== undefined && !ending.some((s) => s.tokenHash === tokenHash)) ending.push(own)
      for (const s of ending) {
        this.#revoking.add(s.tokenHash)
        this.#uncache(s.tokenHash)
      }
      try {
        const revoked = await this.#records.revokeSessions(ending)
        this.#sessionsEnded(ending.map((s) => s.tokenHash))
        return revoked
      } finally {
        for (const s of ending) {
          this.#uncache(s.tokenHash)
          this.#revoking.delete(s.tokenHash)
        }
      }
    })
  }

  /** Hears the token hashes of sessions that ended before their expiry (revoked, or dropped by the per-wallet bound). */
  onSessionsEnded(listener: (tokenHashes: readonly string[]) => void): () => void {
    this.#endedListeners.add(listener)
    return () => this.#endedListeners.delete(listener)
  }

  #sessionsEnded(tokenHashes: readonly string[]): void {
    if (tokenHashes.length === 0) return
    for (const listener of this.#endedListeners) listener(tokenHashes)
  }

  #forWallet<T>(address: Address, run: () => Promise<T>): Promise<T> {
    const previous = this.#walletQueue.get(address) ?? Promise.resolve()
    const next = previous.then(run, run)
    const settled = next.catch(() => undefined)
    this.#walletQueue.set(address, settled)
    void settled.then(() => {
      if (this.#walletQueue.get(address) === settled) this.#walletQueue.delete(address)
    })
    return next
  }

  /**
   * The server's `authenticate` option: the session of a bearer token, or undefined. A cached session is answered at
   * once, the same object each time, with no promise: every signed-in request asks (issue 11); only a token not in the
   * cache waits for the store.
   */
  readonly session = (token: string): Session | undefined | Promise<Session | undefined> => {
    const nowMs = this.#nowMs()
    // A cached session stays true until its expiry or its revocation (which removes it from this cache first).
    const cached = this.#sessions.get(token)
    if (cached === undefined) return this.#storedSession(token, nowMs)
    if (cached.expiresAtMs > nowMs) return cached.session
    this.#uncache(cached.session.tokenHash)
    return undefined
  }

  /**
   * The expiry (ms) of the live session of `tokenHash` as stored (a refresh in place moves it later), or undefined once
   * it ended (expired, revoked): the event stream closes a stream at its session's expiry (EventHub SessionExpiry).
   */
  readonly sessionExpiresAt = async (tokenHash: string): Promise<number | undefined> => {
    if (this.#revoking.has(tokenHash)) return undefined
    const record = await this.#records.getSession(tokenHash)
    return record === undefined || record.expiresAtMs <= this.#nowMs() || this.#revoking.has(tokenHash) ? undefined : record.expiresAtMs
  }

  /** `session` as a promise, for callers that always wait (the event stream's upgrade). */
  readonly authenticate = async (token: string): Promise<Session | undefined> => this.session(token)

  async #storedSession(token: string, nowMs: number): Promise<Session | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined
    const tokenHash = hashToken(token)
    if (this.#revoking.has(tokenHash)) return undefined
    const record = await this.#records.getSession(tokenHash)
    if (record === undefined || record.expiresAtMs <= nowMs || this.#revoking.has(tokenHash)) return undefined
    if (this.#sessions.size >= SESSION_CACHE_MAX) {
      const oldest = this.#sessions.values().next().value as { session: { tokenHash: string } }
      this.#uncache(oldest.session.tokenHash)
    }
    const session = Object.freeze({ address: record.address, tokenHash })
    this.#sessions.set(token, { session, expiresAtMs: record.expiresAtMs })
    this.#cachedTokens.set(tokenHash, token)
    return session
  }

  #uncache(tokenHash: string): void {
    const token = this.#cachedTokens.get(tokenHash)
    if (token === undefined) return
    this.#cachedTokens.delete(tokenHash)
    this.#sessions.delete(token)
  }
}

/** True when `signature` is an ECDSA signature of `hash` by `address` (an EOA's key): no chain read. */
async function recoversTo(address: Address, hash: Hash, signature: Hex): Promise<boolean> {
  try {
    return isAddressEqual(await recoverAddress({ hash, signature }), address)
  } catch {
    // Not a 65-byte ECDSA signature (an ERC-1271 or ERC-6492 one): the wallet decides.
    return false
  }
}
