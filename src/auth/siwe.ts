// Sign-In with Ethereum (EIP-4361) through viem/siwe. A nonce is issued, signed inside a SIWE message by the
// wallet, verified (through the chain's public client, so ERC-1271 and ERC-6492 smart wallets verify too) and
// consumed once; the caller gets an opaque bearer token of which only the SHA-256 is stored.
import { createHash, randomBytes } from 'node:crypto'
import { getAddress, type Address, type PublicClient } from 'viem'
import { generateSiweNonce, parseSiweMessage, verifySiweMessage } from 'viem/siwe'
import { HttpProblem } from '../http/problem.ts'
import type { Session } from '../http/route.ts'
import type { AuthRecords } from './records.ts'

/** A nonce must be used within this long after it was issued. */
export const DEFAULT_NONCE_TTL_MS = 5 * 60_000
/** A session lasts this long unless the signed message expires earlier. */
export const DEFAULT_SESSION_TTL_MS = 24 * 60 * 60_000
/** Tolerated clock difference between the wallet and the service for `issuedAt` and `notBefore`. */
export const CLOCK_SKEW_MS = 60_000

/** Sessions kept in memory for authentication; the oldest cached one leaves first. */
export const SESSION_CACHE_MAX = 10_000

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/

export interface SiweAuthOptions {
  records: AuthRecords
  /** The `domain` a message must name: the host (and port) the service is reached at, e.g. `credit.example:8402`. */
  domain: string
  /** Public client per accepted chain id; a message for another chain is refused. */
  clients: ReadonlyMap<number, PublicClient> | Readonly<Record<number, PublicClient>>
  nonceTtlMs?: number
  sessionTtlMs?: number
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

/** What the two auth routes need; `SiweAuth` is the implementation. */
export interface AuthService {
  issueNonce(): Promise<IssuedNonce>
  createSession(input: { message: string; signature: `0x${string}` }): Promise<IssuedSession>
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

const refused = (code: string, detail: string) => new HttpProblem(401, code, detail, { title: 'Sign-in refused', headers: { 'www-authenticate': 'Bearer' } })

export class SiweAuth implements AuthService {
  readonly #records: AuthRecords
  readonly #domain: string
  readonly #clients: ReadonlyMap<number, PublicClient>
  readonly #nonceTtlMs: number
  readonly #sessionTtlMs: number
  readonly #nowMs: () => number
  /** Recently used sessions by token hash: every request authenticates, and a store read costs more than a lookup. */
  readonly #sessions = new Map<string, { address: Address; expiresAtMs: number }>()

  constructor(options: SiweAuthOptions) {
    this.#records = options.records
    this.#domain = options.domain
    this.#clients = options.clients instanceof Map
      ? options.clients
      : new Map(Object.entries(options.clients).map(([id, client]) => [Number(id), client]))
    if (this.#clients.size === 0) throw new Error('SiweAuth needs at least one chain client')
    this.#nonceTtlMs = options.nonceTtlMs ?? DEFAULT_NONCE_TTL_MS
    this.#sessionTtlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS
    this.#nowMs = options.nowMs ?? Date.now
  }

  get domain(): string {
    return this.#domain
  }

  get chainIds(): number[] {
    return [...this.#clients.keys()]
  }

  async issueNonce(): Promise<IssuedNonce> {
    const nowMs = this.#nowMs()
    const nonce = generateSiweNonce()
    const expiresAtMs = nowMs + this.#nonceTtlMs
    await this.#records.putNonce({ nonce, issuedAtMs: nowMs, expiresAtMs })
    return { nonce, expiresAtMs, domain: this.#domain, chainIds: this.chainIds }
  }

  async createSession(input: { message: string; signature: `0x${string}` }): Promise<IssuedSession> {
    const nowMs = this.#nowMs()
    const parsed = parseSiweMessage(input.message)
    const { address, chainId, domain, nonce, uri, version } = parsed
    if (address === undefined || chainId === undefined || domain === undefined || nonce === undefined || uri === undefined || version !== '1' || parsed.issuedAt === undefined) {
      throw new HttpProblem(400, 'siwe_message_invalid', 'The message is not an EIP-4361 message with address, chain id, domain, uri, version 1, nonce and issued-at.', { title: 'Invalid sign-in message' })
    }
    if (domain !== this.#domain) throw refused('siwe_domain_mismatch', `The message is for ${domain}; this service signs in for ${this.#domain}.`)
    const client = this.#clients.get(chainId)
    if (client === undefined) throw refused('siwe_chain_unsupported', `Chain ${chainId} is not accepted; use one of ${this.chainIds.join(', ')}.`)
    const issued = await this.#records.getNonce(nonce)
    if (issued === undefined) throw refused('siwe_nonce_invalid', 'The nonce was not issued by GET /auth/nonce or was already used.')
    if (issued.expiresAtMs <= nowMs) throw refused('siwe_nonce_expired', 'The nonce expired; get a new one from GET /auth/nonce.')
    if (parsed.issuedAt.getTime() > nowMs + CLOCK_SKEW_MS) throw refused('siwe_message_not_yet_valid', 'The message is issued in the future.')
    if (parsed.notBefore !== undefined && parsed.notBefore.getTime() > nowMs + CLOCK_SKEW_MS) throw refused('siwe_message_not_yet_valid', 'The message is not valid before its notBefore time.')
    if (parsed.expirationTime !== undefined && parsed.expirationTime.getTime() <= nowMs) throw refused('siwe_message_expired', 'The message expired.')

    let valid: boolean
    try {
      valid = await verifySiweMessage(client, { message: input.message, signature: input.signature, domain: this.#domain, nonce, time: new Date(nowMs) })
    } catch (error) {
      throw new HttpProblem(503, 'chain_unavailable', `The signature could not be verified on chain ${chainId}; retry later.`, { title: 'Chain unavailable', headers: { 'retry-after': '1' }, cause: error })
    }
    if (!valid) throw refused('siwe_signature_invalid', 'The signature does not prove that the address signed this message.')

    // Consumed only now, atomically: of two sign-ins racing on one nonce, one wins.
    const consumed = await this.#records.consumeNonce(nonce, nowMs)
    if (consumed === undefined) throw refused('siwe_nonce_invalid', 'The nonce was already used.')

    const token = randomBytes(32).toString('base64url')
    const expiresAtMs = Math.min(nowMs + this.#sessionTtlMs, parsed.expirationTime?.getTime() ?? Number.POSITIVE_INFINITY)
    const checksummed = getAddress(address)
    await this.#records.putSession({ tokenHash: hashToken(token), address: checksummed, chainId, issuedAtMs: nowMs, expiresAtMs })
    return { token, address: checksummed, chainId, expiresAtMs }
  }

  /** The server's `authenticate` option: the session of a bearer token, or undefined. */
  readonly authenticate = async (token: string): Promise<Session | undefined> => {
    if (!TOKEN_PATTERN.test(token)) return undefined
    const tokenHash = hashToken(token)
    const nowMs = this.#nowMs()
    const cached = this.#sessions.get(tokenHash)
    if (cached !== undefined) {
      if (cached.expiresAtMs > nowMs) return { address: cached.address }
      this.#sessions.delete(tokenHash)
      return undefined
    }
    const record = await this.#records.getSession(tokenHash)
    if (record === undefined || record.expiresAtMs <= nowMs) return undefined
    // Sessions are never revoked before they expire, so a cached one stays true until its expiry.
    if (this.#sessions.size >= SESSION_CACHE_MAX) this.#sessions.delete(this.#sessions.keys().next().value as string)
    this.#sessions.set(tokenHash, { address: record.address, expiresAtMs: record.expiresAtMs })
    return { address: record.address }
  }
}
