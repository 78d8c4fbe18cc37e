// A small client for agents (and for this project's tests, demo and bench): Sign-In with Ethereum, then JSON calls
// with the bearer token. Every call returns status, headers and the parsed body; errors are problem+json bodies,
// not exceptions, so callers can assert on codes.
import type { LocalAccount } from 'viem'
import { createSiweMessage } from 'viem/siwe'

export interface Reply<T = any> {
  status: number
  headers: Headers
  body: T
}

export interface CallOptions {
  idempotencyKey?: string
  /** Overrides the session's token (or sends none with ''). */
  token?: string
  contentType?: string
  /** Raw body text instead of JSON.stringify(body). */
  raw?: string
}

export class CreditClient {
  readonly baseUrl: string
  token: string | undefined
  address: `0x${string}` | undefined
  /** The answer of the last sign-in (its expiresAt tells when to sign in again). */
  lastSession: { token: string; expiresAt: string } | undefined

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/$/, '')
  }

  /** GET /auth/nonce, sign an EIP-4361 message with `account`, POST /auth/session; keeps the bearer token. */
  async signIn(account: LocalAccount, chainId?: number): Promise<string> {
    const nonce = await this.call<{ nonce: string; domain: string; chainIds: number[] }>('GET', '/auth/nonce')
    if (nonce.status !== 200) throw new Error(`nonce: ${nonce.status} ${JSON.stringify(nonce.body)}`)
    const message = createSiweMessage({
      domain: nonce.body.domain,
      address: account.address,
      statement: 'Sign in to agent-credit',
      uri: `${this.baseUrl}/`,
      version: '1',
      chainId: chainId ?? (nonce.body.chainIds[0] as number),
      nonce: nonce.body.nonce,
      issuedAt: new Date(),
    })
    const signature = await account.signMessage({ message })
    const session = await this.call<{ token: string; expiresAt: string }>('POST', '/auth/session', { message, signature })
    if (session.status !== 201) throw new Error(`sign-in: ${session.status} ${JSON.stringify(session.body)}`)
    this.lastSession = session.body
    this.token = session.body.token
    this.address = account.address
    return this.token
  }

  /**
   * POST /auth/session/refresh: extends the live session of `token` (default: this client's) in place, without a
   * signature or a new stored record, so it works while strangers hold the service's sign-ins exhausted. Resolves its
   * new expiry (ms), or undefined when the service refused (the session ended: sign in again).
   */
  async refresh(token = this.token): Promise<number | undefined> {
    const reply = await this.call<{ expiresAt: string }>('POST', '/auth/session/refresh', undefined, token === undefined ? {} : { token })
    if (reply.status !== 200) return undefined
    if (token !== undefined && this.lastSession?.token === token) this.lastSession = { token, expiresAt: reply.body.expiresAt }
    return Date.parse(reply.body.expiresAt)
  }

  async call<T = any>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = {}
    const token = options.token ?? this.token
    if (token) headers['authorization'] = `Bearer ${token}`
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
    let payload: string | undefined
    if (options.raw !== undefined) payload = options.raw
    else if (body !== undefined) payload = JSON.stringify(body)
    if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/json'
    const response = await fetch(this.baseUrl + path, { method, headers, ...(payload === undefined ? {} : { body: payload }) })
    const text = await response.text()
    const type = response.headers.get('content-type') ?? ''
    const parsed = type.includes('json') && text.length > 0 ? JSON.parse(text) : text
    return { status: response.status, headers: response.headers, body: parsed as T }
  }

  get<T = any>(path: string, options?: CallOptions): Promise<Reply<T>> {
    return this.call<T>('GET', path, undefined, options)
  }

  post<T = any>(path: string, body: unknown = {}, options?: CallOptions): Promise<Reply<T>> {
    return this.call<T>('POST', path, body, options)
  }

  /** Every item of a paged list: follows `Link: <...>; rel="next"` from `path` to the last page. */
  async list<T = any>(path: string, options?: CallOptions): Promise<Reply<T[]>> {
    const items: T[] = []
    let next: string | undefined = path
    let reply: Reply<T[]> | undefined
    for (let pages = 0; next !== undefined; pages++) {
      if (pages >= LIST_PAGES_MAX) throw new Error(`${path}: more than ${LIST_PAGES_MAX} pages`)
      reply = await this.get<T[]>(next, options)
      if (reply.status !== 200) return reply
      items.push(...reply.body)
      next = nextLink(reply.headers.get('link'))
    }
    return { ...(reply as Reply<T[]>), body: items }
  }
}

/** A bound on the pages `list` follows: a server that links in a circle cannot keep a client busy for ever. */
const LIST_PAGES_MAX = 100_000

/** The target of `rel="next"` in an RFC 8288 Link field, if any. */
export function nextLink(link: string | null): string | undefined {
  if (link === null) return undefined
  for (const part of link.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match !== null && /(^|;)\s*rel="?next"?\s*(;|$)/i.test(match[2] as string)) return match[1]
  }
  return undefined
}
