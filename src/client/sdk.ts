// The typed SDK: one object per agent wallet. It signs in with SIWE and renews the session before it expires, calls
// every route with the request and response types of the service's own TypeBox schemas, turns problem+json into
// CreditApiError with the stable code, shares one signed-in session among all its objects of one wallet and service
// in the process (the service keeps at most sessionsPerWalletMax per wallet, a sign-in beyond it ending the oldest),
// pages every list (`xPage(query)`: one page and the next page's cursor; `x(query)`: every item, an async iterator
// that reads a page when the loop reaches it), sends an Idempotency-Key with every POST (so a retry, after a lost
// answer or a 429 or 503 with Retry-After, is safe: the same key and body), follows the event stream, and runs the
// lender's and the borrower's steps. Chain work goes through ChainAgent (./chain.ts), the one module that knows the
// contract.
import { randomUUID } from 'node:crypto'
import type { Static } from 'typebox'
import type { Address, Hash, LocalAccount } from 'viem'
import type {
  Advance, CollateralPost, CollateralPosition, CreditRequest, CreditState, DispatchOutcome, Job, JobCreation, JobFailure, JobSettlementReceipt,
  LenderAction, LenderProfile, LenderRegistration, LenderRegistrationResult, LiquidationReceipt, MatchOutcome, Offer, PassportEvent, PendingAction,
  RepaymentReceipt, UnderwritingDecision, BackingSourceRegistration, BackingSource, Supplier, ChainSteps, LenderWallet, LiquidityWithdrawalResult, HeldPayment,
} from '../api/schemas.ts'
import type { Catalog } from '../api/catalog.ts'
import type { SessionResponse } from '../auth/routes.ts'
import type { LeaseEvent } from '../stream/messages.ts'
import { verifyPassport, type PassportVerification, type SignedPassportEvent } from '../passport/passport.ts'
import { CreditClient, type Reply } from './client.ts'
import { EventStream, type EventStreamOptions, type StreamEvent } from './stream.ts'
import type { ChainAgent } from './chain.ts'

export type { StreamEvent }
export type Wire<S> = S extends { static: unknown } ? Static<S> : never
export type CreditRequestBody = Static<typeof CreditRequest>
export type JobCreationBody = Static<typeof JobCreation>
export type LenderRegistrationBody = Static<typeof LenderRegistration>
export type OfferView = Static<typeof Offer>
export type AdvanceView = Static<typeof Advance>
export type JobView = Static<typeof Job>
export type ChainStepsView = Static<typeof ChainSteps>
export type LeaseEventMessage = Static<typeof LeaseEvent>
/** The event stream options a caller of AgentCredit.events() or runLender() may set; the SDK sets the others. */
export type EventStreamTuning = Pick<EventStreamOptions, 'reconnectDelayMs' | 'sessionEndedWindowMs' | 'sessionEndedBackoffMs' | 'sessionEndedRetriesMax' | 'sessionRenewIntervalMs'>

/**
 * A problem+json answer: `code` is the stable snake_case code programs branch on. `retryAfterSeconds` is the answer's
 * Retry-After when it had one (a 429 or 503 the SDK stopped retrying: its attempts were used, or the wait was longer
 * than `retryAfterMaxSeconds`); nothing was recorded, and the same call may be made again after that many seconds.
 */
export class CreditApiError extends Error {
  override readonly name = 'CreditApiError'
  readonly status: number
  readonly code: string
  readonly problem: { type?: string; title?: string; detail?: string; code?: string; errors?: Array<{ path: string; message: string }> }
  readonly retryAfterSeconds: number | undefined
  constructor(method: string, path: string, status: number, problem: CreditApiError['problem'], retryAfterSeconds?: number) {
    // The message names the fields a validation failure lists: its detail alone ("does not match the documented
    // schema") left an agent that printed the error guessing which field (an outsider's finding).
    const fields = Array.isArray(problem.errors) && problem.errors.length > 0 ? ` (${problem.errors.slice(0, 5).map((e) => `${e.path} ${e.message}`).join('; ')}${problem.errors.length > 5 ? '; ...' : ''})` : ''
    super(`${method} ${path}: ${status} ${problem.code ?? ''} ${problem.detail ?? ''}${fields}${retryAfterSeconds === undefined ? '' : ` (Retry-After ${retryAfterSeconds} s)`}`.trim())
    this.status = status
    this.code = problem.code ?? `http_${status}`
    this.problem = problem
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/** `?limit=&after=` of a paged list: items per page (the route's default when absent), and the cursor to start after. */
export interface PageQuery {
  limit?: number
  /** The `nextAfter` of the previous page (the route's next-after): the page starts after it. */
  after?: number
}

/** One page of a paged list: its items, and the `after` of the next page, null on the last. */
export interface Page<T> {
  items: T[]
  nextAfter: number | null
}

export interface AgentCreditOptions {
  baseUrl: string
  /** The agent's wallet: signs SIWE messages (never sent anywhere). */
  account: LocalAccount
  /** Renew the session this long before it expires (default 60 s). */
  renewBeforeMs?: number
  /**
   * Attempts of one call (default 3). Every call is safe to repeat (a GET, or a POST under one Idempotency-Key for all
   * its attempts), and is repeated on a network error or on a 429 or 503 that carries Retry-After, after waiting that
   * many seconds. A 503 without Retry-After (e.g. network_stopped) is not cured by waiting: it is thrown at once.
   */
  attempts?: number
  /** The longest Retry-After a call waits out (default 10 s); a longer one is thrown at once, with its retryAfterSeconds. */
  retryAfterMaxSeconds?: number
  /**
   * The Idempotency-Key of every POST of this object (default: a new one per call). Scoped to the wallet, the method
   * and the path, so one key serves a step of several routes (requestAndMatch): see withIdempotencyKey.
   */
  idempotencyKey?: string
}

/**
 * requestAndMatch's match failed (after its retries) on an approved offer, which stands: it counts against the
 * borrower's live offers until it expires, and a new request would make a second one. `offerId` is the offer to match
 * again (`match(offerId)`), `decision` the approval, `cause` the match's own error; `status`, `code`, `problem` and
 * `retryAfterSeconds` are the match's (status 0 and code `match_not_answered` when it got no answer).
 */
export class OfferNotMatchedError extends CreditApiError {
  readonly offerId: string
  readonly decision: Static<typeof UnderwritingDecision>
  constructor(decision: Static<typeof UnderwritingDecision>, offerId: string, cause: unknown) {
    const api = cause instanceof CreditApiError ? cause : undefined
    super('POST', '/credit/match', api?.status ?? 0, api?.problem ?? { code: 'match_not_answered', detail: String(cause) }, api?.retryAfterSeconds)
    this.message = `${this.message}; the approved offer ${offerId} stands: match it with match('${offerId}') (MCP: match_offer), not a new request`
    this.offerId = offerId
    this.decision = decision
    this.cause = cause
  }
}

/**
 * The signed-in session of one wallet at one service, shared by every AgentCredit of that wallet in the process and
 * by their event streams: eleven of them each signing in would end each other's sessions (sessionsPerWalletMax, 10).
 */
class SharedSession {
  #current: { token: string; expiresAtMs: number } | undefined
  #signingIn: Promise<string> | undefined

  /**
   * A token valid for at least `renewBeforeMs`; one renewal at a time: the live session refreshed in place (no new
   * stored session, so strangers exhausting the service's sign-ins do not lock the agent out), else a sign-in with
   * `account` (no session, or the service would not extend it far enough).
   */
  token(http: CreditClient, account: LocalAccount, renewBeforeMs: number): Promise<string> {
    if (this.#current !== undefined && this.#current.expiresAtMs - Date.now() > renewBeforeMs) return Promise.resolve(this.#current.token)
    this.#signingIn ??= this.#renew(http, account, renewBeforeMs).finally(() => (this.#signingIn = undefined))
    return this.#signingIn
  }

  async #renew(http: CreditClient, account: LocalAccount, renewBeforeMs: number): Promise<string> {
    const current = this.#current
    if (current !== undefined && current.expiresAtMs > Date.now()) {
      const expiresAtMs = await http.refresh(current.token)
      if (expiresAtMs !== undefined && expiresAtMs - Date.now() > renewBeforeMs) {
        if (this.#current === current) this.#current = { token: current.token, expiresAtMs }
        return current.token
      }
    }
    return this.#signIn(http, account)
  }

  /** The service ended `token`'s session: the next call signs in again, unless a newer session replaced it already. */
  ended(token: string): void {
    if (this.#current?.token === token) this.#current = undefined
  }

  async #signIn(http: CreditClient, account: LocalAccount): Promise<string> {
    const token = await http.signIn(account)
    const expiresAt = http.lastSession?.expiresAt
    this.#current = { token, expiresAtMs: expiresAt === undefined ? Date.now() + 5 * 60_000 : Date.parse(expiresAt) }
    return token
  }
}

/** The process's sessions, by service and wallet: one per wallet an agent process acts as. */
const sharedSessions = new Map<string, SharedSession>()

function sharedSession(baseUrl: string, address: Address): SharedSession {
  const key = `${baseUrl} ${address.toLowerCase()}`
  let session = sharedSessions.get(key)
  if (session === undefined) sharedSessions.set(key, (session = new SharedSession()))
  return session
}

/**
 * The seconds a 429 or 503 asks to wait before the same request (its Retry-After, which the service sends as whole
 * seconds); undefined for any other answer, which waiting does not change.
 */
function retryAfterSecondsOf(reply: Reply): number | undefined {
  if (reply.status !== 429 && reply.status !== 503) return undefined
  const value = reply.headers.get('retry-after')
  return value !== null && /^\d+$/.test(value) ? Number(value) : undefined
}

export class AgentCredit {
  readonly http: CreditClient
  readonly account: LocalAccount
  readonly #renewBeforeMs: number
  readonly #attempts: number
  readonly #retryAfterMaxSeconds: number
  readonly #session: SharedSession
  readonly #options: AgentCreditOptions

  constructor(options: AgentCreditOptions) {
    this.#options = options
    this.http = new CreditClient(options.baseUrl)
    this.account = options.account
    this.#renewBeforeMs = options.renewBeforeMs ?? 60_000
    this.#attempts = options.attempts ?? 3
    this.#retryAfterMaxSeconds = options.retryAfterMaxSeconds ?? 10
    this.#session = sharedSession(this.http.baseUrl, this.account.address)
  }

  get address(): Address {
    return this.account.address
  }

  /**
   * This wallet's SDK whose every POST sends `idempotencyKey` (the same signed-in session): a step retried with the same
   * key, after an answer it never saw, is answered the first run's stored answer instead of running twice.
   */
  withIdempotencyKey(idempotencyKey: string): AgentCredit {
    return new AgentCredit({ ...this.#options, idempotencyKey })
  }

  /** A bearer token valid for at least `renewBeforeMs`: signs in again when the current one is about to expire. */
  token(): Promise<string> {
    return this.#session.token(this.http, this.account, this.#renewBeforeMs)
  }

  /** One route: typed body in, typed answer out, problem+json as CreditApiError. */
  async request<T>(method: 'GET' | 'POST', path: string, body?: unknown, options: { auth?: boolean; idempotencyKey?: string } = {}): Promise<T> {
    return (await this.reply<T>(method, path, body, options)).body
  }

  /** As request, with the answer's headers (paged lists name the next page in one). */
  async reply<T>(method: 'GET' | 'POST', path: string, body?: unknown, options: { auth?: boolean; idempotencyKey?: string } = {}): Promise<Reply<T>> {
    const idempotencyKey = method === 'POST' ? (options.idempotencyKey ?? this.#options.idempotencyKey ?? randomUUID()) : undefined
    let lastError: unknown
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      let reply: Reply<any>
      let token = ''
      try {
        if (options.auth !== false) token = await this.token()
        reply = await this.http.call(method, path, body, { token, ...(idempotencyKey ? { idempotencyKey } : {}) })
      } catch (error) {
        // A lost answer: safe to ask again, a POST under the same key is answered from the stored result.
        lastError = error
        await sleep(100 * attempt)
        continue
      }
      if (reply.status === 401 && options.auth !== false && attempt < this.#attempts) {
        // The session ended on the service's side (revoked, or more sign-ins than the wallet may hold): sign in again.
        this.#session.ended(token)
        continue
      }
      if (reply.status < 400) return reply as Reply<T>
      // Nothing was done: the same request (same Idempotency-Key and body) after the wait the service asked for.
      const retryAfterSeconds = retryAfterSecondsOf(reply)
      if (retryAfterSeconds !== undefined && retryAfterSeconds <= this.#retryAfterMaxSeconds && attempt < this.#attempts) {
        await sleep(retryAfterSeconds * 1000)
        continue
      }
      throw new CreditApiError(method, path, reply.status, typeof reply.body === 'object' ? reply.body : { detail: String(reply.body) }, retryAfterSeconds)
    }
    throw lastError instanceof Error ? lastError : new Error(`${method} ${path}: no answer after ${this.#attempts} attempts`)
  }

  // ------------------------------------------------------------------------------------------------ reads (public)

  catalog = () => this.request<Static<typeof Catalog>>('GET', '/.well-known/service.json', undefined, { auth: false })
  state = () => this.request<Static<typeof CreditState>>('GET', '/credit/state', undefined, { auth: false })
  /** One page of the active lenders and their policies (GET /lenders), in registration order. */
  lendersPage = (query: PageQuery = {}) => this.#page<Static<typeof LenderProfile>>('/lenders', query)
  /** Every active lender, page after page as the loop asks for them (`limit` per page). */
  lenders = (query: PageQuery = {}) => this.#each<Static<typeof LenderProfile>>('/lenders', query)
  /** One page of the lenders' session wallets: balances per network and lending activity (GET /lenders/wallets). */
  lenderWalletsPage = (query: PageQuery = {}) => this.#page<Static<typeof LenderWallet>>('/lenders/wallets', query)
  /** Every lender's session wallet, page after page. */
  lenderWallets = (query: PageQuery = {}) => this.#each<Static<typeof LenderWallet>>('/lenders/wallets', query)
  /** One page of the verified backing sources (GET /credit/backing-sources), in registration order. */
  backingSourcesPage = (query: PageQuery = {}) => this.#page<Static<typeof BackingSource>>('/credit/backing-sources', query)
  /** Every backing source, page after page. */
  backingSources = (query: PageQuery = {}) => this.#each<Static<typeof BackingSource>>('/credit/backing-sources', query)
  /** The supplier directory: the domains (and addresses per network) credit may pay. */
  suppliers = () => this.request<Array<Static<typeof Supplier>>>('GET', '/suppliers', undefined, { auth: false })
  offer = (offerId: string) => this.request<OfferView>('GET', `/credit/offers/${encodeURIComponent(offerId)}`, undefined, { auth: false })
  advance = (advanceId: string) => this.request<AdvanceView>('GET', `/credit/advances/${encodeURIComponent(advanceId)}`, undefined, { auth: false })
  job = (jobId: string) => this.request<JobView>('GET', `/credit/jobs/${encodeURIComponent(jobId)}`, undefined, { auth: false })
  /** A lender's session wallet as the service's watcher last read it (GET /lenders/{address}/wallet). */
  wallet = (lender: Address) => this.request<Static<typeof LenderWallet>>('GET', `/lenders/${lender}/wallet`, undefined, { auth: false })
  /**
   * What the credit contract holds for `account` because its token refused it (GET /credit/held-payments/{address}):
   * per network and token, the amount and the unsigned claimHeld (a lender's wallet() lists its session wallet's too).
   */
  heldPayments = (account: Address) => this.request<Array<Static<typeof HeldPayment>>>('GET', `/credit/held-payments/${account}`, undefined, { auth: false })

  /**
   * Sends a held payment's claimHeld from `chain`'s wallet (anyone's: the contract pays the account, never the sender)
   * and waits for it to be mined; it reverts while the token still refuses the account. The service's views drop the
   * payment once its chain follower sees the claim.
   */
  async claimHeld(chain: ChainAgent, payment: Static<typeof HeldPayment>): Promise<Hash> {
    return chain.sendUnsigned(payment.claim)
  }

  /**
   * One page of a wallet's passport as the route answers it (GET /passport/{address}): signed events in sequence
   * order, `after` the sequence of the last event already read. Not verified: a page alone cannot show the chain from
   * sequence 1 (passport() reads and checks the whole of it).
   */
  passportPage = (address: Address, query: PageQuery = {}) => this.#page<SignedPassportEvent>(`/passport/${address}`, query)

  /**
   * A wallet's whole passport, every page, checked as a stranger would check it: each event signed by the issuer the
   * catalog publishes, under its domain, chained by hash from sequence 1. `verification.ok` false means the answer
   * cannot be trusted (the problems say why); the events are returned either way.
   */
  async passport(address: Address, pageSize = 100): Promise<{ events: SignedPassportEvent[]; verification: PassportVerification }> {
    const events: SignedPassportEvent[] = []
    for await (const event of this.#each<SignedPassportEvent>(`/passport/${address}`, { limit: pageSize })) events.push(event)
    const { passport } = await this.catalog()
    return { events, verification: await verifyPassport(events, { issuer: passport.issuer as Address, domain: passport.domain }) }
  }

  /** One page of a paged list: `?limit=&after=` in, the items and the next page's `after` (its next-after) out. */
  async #page<T>(path: string, query: PageQuery): Promise<Page<T>> {
    const search = new URLSearchParams()
    if (query.limit !== undefined) search.set('limit', String(query.limit))
    if (query.after !== undefined) search.set('after', String(query.after))
    const reply = await this.reply<T[]>('GET', search.size === 0 ? path : `${path}?${search}`, undefined, { auth: false })
    const nextAfter = reply.headers.get('next-after')
    return { items: reply.body, nextAfter: nextAfter === null ? null : Number(nextAfter) }
  }

  /**
   * Every item of a paged list from `query.after` on, one page at a time as the caller iterates. Each page must move
   * the cursor forward: a server that names the same or an earlier page again cannot keep the loop going for ever.
   */
  async *#each<T>(path: string, query: PageQuery): AsyncGenerator<T, void, undefined> {
    let after = query.after
    for (;;) {
      const page: Page<T> = await this.#page<T>(path, after === undefined ? query : { ...query, after })
      yield* page.items
      if (page.nextAfter === null) return
      if (after !== undefined && page.nextAfter <= after) throw new Error(`${path}: the next page (after ${page.nextAfter}) does not follow this one (after ${after})`)
      after = page.nextAfter
    }
  }

  // ------------------------------------------------------------------------------------------------ borrower

  createJob = (body: JobCreationBody) => this.request<JobView>('POST', '/credit/jobs', body)
  postCollateral = (jobId: string, body: Static<typeof CollateralPost>) => this.request<Static<typeof CollateralPosition>>('POST', `/credit/jobs/${encodeURIComponent(jobId)}/collateral`, body)
  registerBackingSource = (body: Static<typeof BackingSourceRegistration>) => this.request<Static<typeof BackingSource>>('POST', '/credit/backing-sources', body)
  requestCredit = (body: CreditRequestBody) => this.request<Static<typeof UnderwritingDecision>>('POST', '/credit/request', body)
  match = (offerId: string) => this.request<Static<typeof MatchOutcome>>('POST', '/credit/match', { offerId })
  dispatch = () => this.request<Static<typeof DispatchOutcome>>('POST', '/credit/dispatch', {})
  completeJob = (jobId: string) => this.request<Static<typeof JobSettlementReceipt>>('POST', `/credit/jobs/${encodeURIComponent(jobId)}/complete`, {})
  failJob = (jobId: string, body: Static<typeof JobFailure>) => this.request<Static<typeof PassportEvent>>('POST', `/credit/jobs/${encodeURIComponent(jobId)}/fail`, body)
  reportRepayment = (advanceId: string, txHash: Hash) => this.request<Static<typeof RepaymentReceipt>>('POST', `/credit/advances/${encodeURIComponent(advanceId)}/repay`, { txHash })
  liquidate = (advanceId: string) => this.request<Static<typeof LiquidationReceipt>>('POST', `/credit/advances/${encodeURIComponent(advanceId)}/liquidate`, {})

  /**
   * Request credit and match it at once: the decision, and the lease when a lender was found. A match that fails
   * throws OfferNotMatchedError, which names the approved offer to match again (it stands until it expires).
   */
  async requestAndMatch(body: CreditRequestBody): Promise<{ decision: Static<typeof UnderwritingDecision>; match: Static<typeof MatchOutcome> | null }> {
    const decision = await this.requestCredit(body)
    if (decision.decision !== 'approved' || decision.offer === null) return { decision, match: null }
    const { offerId } = decision.offer
    try {
      return { decision, match: await this.match(offerId) }
    } catch (error) {
      throw new OfferNotMatchedError(decision, offerId, error)
    }
  }

  /** The job's client's unsigned approve + fundJob (GET /credit/jobs/{jobId}/funding-transactions). */
  fundingTransactions = (jobId: string, query: { network: string; asset: string; receivableAtomic: string; agent: string; client: string }) =>
    this.request<ChainStepsView>('GET', `/credit/jobs/${encodeURIComponent(jobId)}/funding-transactions?${new URLSearchParams(query)}`, undefined, { auth: false })
  /** The borrower's unsigned approve + postCollateral (GET /credit/jobs/{jobId}/collateral-transactions). */
  collateralTransactions = (jobId: string, amountAtomic: string) =>
    this.request<ChainStepsView>('GET', `/credit/jobs/${encodeURIComponent(jobId)}/collateral-transactions?${new URLSearchParams({ amountAtomic })}`, undefined, { auth: false })
  /** Unsigned approve + repay of what an advance owes, or of `amountAtomic` (GET /credit/advances/{advanceId}/repay-transactions). */
  repayTransactions = (advanceId: string, query: { amountAtomic?: string; from?: string } = {}) =>
    this.request<ChainStepsView>('GET', `/credit/advances/${encodeURIComponent(advanceId)}/repay-transactions?${new URLSearchParams(query)}`, undefined, { auth: false })

  /**
   * The job's client (`chain`) escrows the receivable on chain with the service's unsigned approve + fundJob, and the
   * job is registered for `body.agent` by this wallet (the borrower, or the client with the borrower's consent).
   */
  async fundJob(chain: ChainAgent, body: Omit<JobCreationBody, 'fundingTxHash'>): Promise<JobView> {
    const { jobId, network, asset, receivableAtomic, agent } = body
    const steps = await this.fundingTransactions(jobId, { network, asset, receivableAtomic, agent, client: chain.account.address })
    const fundingTxHash = (await chain.sendAll(steps.transactions)).at(-1) as Hash
    return this.createJob({ ...body, fundingTxHash })
  }

  /** The borrower (`chain`) posts collateral for its job with the service's unsigned approve + postCollateral, and reports it. */
  async postCollateralOnChain(chain: ChainAgent, jobId: string, amountAtomic: bigint): Promise<Static<typeof CollateralPosition>> {
    const steps = await this.collateralTransactions(jobId, amountAtomic.toString())
    const txHash = (await chain.sendAll(steps.transactions)).at(-1) as Hash
    return this.postCollateral(jobId, { amountAtomic: steps.amountAtomic, txHash })
  }

  /**
   * Repays what an advance still owes (or `amountAtomic` of it) from `chain`'s wallet with the service's unsigned
   * approve + repay of exactly that amount, and reports it.
   */
  async repay(chain: ChainAgent, advanceId: string, amountAtomic?: bigint): Promise<Static<typeof RepaymentReceipt>> {
    const steps = await this.repayTransactions(advanceId, { from: chain.account.address, ...(amountAtomic === undefined ? {} : { amountAtomic: amountAtomic.toString() }) })
    const txHash = (await chain.sendAll(steps.transactions)).at(-1) as Hash
    return this.reportRepayment(advanceId, txHash)
  }

  // ------------------------------------------------------------------------------------------------ lender

  /**
   * Registers the wallet as a lender. An answer without the private key is a replay of this call's own registration
   * (its first answer was lost, the retry under the same Idempotency-Key cannot repeat the key: the service never
   * stored it): the registration then gets a new session key (rotateSessionKey), whose answer carries it, unless
   * `keeps(sessionAddress)` says the caller kept that key from the first answer (a retry under withIdempotencyKey):
   * then the replay is answered as it is.
   */
  registerLender = async (body: LenderRegistrationBody, keeps?: (sessionAddress: string) => Promise<boolean>): Promise<Static<typeof LenderRegistrationResult>> => {
    const registration = await this.request<Static<typeof LenderRegistrationResult>>('POST', '/lenders/register', body)
    if (registration.sessionKey.privateKey !== null || (await keeps?.(registration.sessionKey.address)) === true) return registration
    return this.rotateSessionKey()
  }
  /** A new session key for the wallet's registration while it did nothing but register (POST /lenders/{address}/session-key). */
  rotateSessionKey = () => this.request<Static<typeof LenderRegistrationResult>>('POST', `/lenders/${this.address}/session-key`, {})
  actions = () => this.request<Array<Static<typeof LenderAction>>>('GET', `/lenders/${this.address}/actions`)
  /**
   * Lowers what the service may lend by `amountAtomic` (POST /lenders/{address}/withdraw): the lender profile after it
   * and the session key's unsigned transfer back of what no live lease needs (sign it with the session key).
   */
  withdraw = (amountAtomic: bigint | string) =>
    this.request<Static<typeof LiquidityWithdrawalResult>>('POST', `/lenders/${this.address}/withdraw`, { amountAtomic: amountAtomic.toString() })
  reportSupplierPayment = (offerId: string, txHash: Hash) =>
    this.request<AdvanceView>('POST', `/credit/offers/${encodeURIComponent(offerId)}/supplier-payment`, { lender: this.address, supplierPaymentId: txHash })

  /**
   * Sets up a registered lender's session wallet: `owner` sends it gas and `walletAtomic` of the asset, `session`
   * (the session key's ChainAgent) sends the setup transactions of the registration.
   */
  async setupSessionWallet(registration: Static<typeof LenderRegistrationResult>, owner: ChainAgent, session: ChainAgent, asset: string, walletAtomic: bigint, gasWei = 10n ** 17n): Promise<void> {
    await owner.sendGas(registration.sessionKey.address as Address, gasWei)
    if (walletAtomic > 0n) await owner.transferToken(asset, registration.sessionKey.address as Address, walletAtomic)
    await session.sendAll(registration.setupTransactions.filter((tx) => tx.chainId === session.network.chainId))
  }

  /**
   * The live event stream of this wallet, resuming by itself after a drop. `options` tunes its reconnection and how it
   * meets lost sessions (`sessionEndedWindowMs`, `sessionEndedBackoffMs`, `sessionEndedRetriesMax`: see EventStreamOptions).
   */
  async events(resumeFrom?: { epoch: string; seq: number }, options: EventStreamTuning = {}): Promise<EventStream> {
    const stream = new EventStream({ ...options, baseUrl: this.http.baseUrl, token: () => this.token(), renewSession: () => this.token(), onSessionEnded: (token) => this.#session.ended(token), ...(resumeFrom ? { resumeFrom } : {}) })
    await stream.ready()
    return stream
  }

  /**
   * The lender loop: takes each new lease from the stream, signs its paySupplier with the session key, sends it and
   * reports it before the lease expires. `onError` hears a lease that could not be paid (it then expires, and the
   * offer goes to the next lender); `stream` tunes its event stream (as events()' options). Returns the stop function.
   */
  async runLender(session: ChainAgent, hooks: { onPaid?: (advance: AdvanceView) => void; onError?: (error: unknown, lease: LeaseEventMessage) => void; stream?: EventStreamTuning } = {}): Promise<{ stop: () => void; stream: EventStream }> {
    const stream = await this.events(undefined, hooks.stream)
    const pay = async (event: LeaseEventMessage) => {
      const action = event.action
      if (action === null) return
      try {
        if (Number(action.authorization.deadline) * 1000 < Date.now()) throw new Error(`lease ${event.lease.leaseId} already expired`)
        const txHash = await session.sendUnsigned(action.transaction)
        hooks.onPaid?.(await this.reportSupplierPayment(event.lease.offerId, txHash))
      } catch (error) {
        hooks.onError?.(error, event)
      }
    }
    const off = stream.on((message) => {
      if (message.type === 'event' && message.kind === 'lease' && message.lease.state === 'leased') void pay(message)
    })
    return {
      stream,
      stop: () => {
        off()
        stream.close()
      },
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export type { SessionResponse }
