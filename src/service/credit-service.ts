// The application layer between HTTP and the engine. Each operation: check who may do it, turn chain proofs into
// verified facts (the only awaits before the command), run ONE engine command, and enqueue its changes to the store
// in the same synchronous section, so that commits reach the disk in the order the engine applied them. The caller
// gets the result only once the commit is durable.
import { getAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot, type Engine } from '../engine/engine.ts'
import type { AdvanceView, Change, CreditRequestInput, JobView, OfferView, EngineError, EngineResult, LenderRecord, RegisterLenderInput, RegisterSourceInput } from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import { findToken, type NetworkConfig } from '../chain/config.ts'
import { idKey } from '../chain/ids.ts'
import {
  ContractRevertError,
  findEarlierSettlement,
  OperatorUnavailableError,
  sendLiquidate,
  sendSettleJob,
  type EarlierSettlement,
  type OperatorReceipt,
} from '../chain/operator.ts'
import { ChainRpcError, verifyProof, verifySupplierPayment, type CreditEventName, type ProofFailureReason, type ProofRequest, type VerifiedFact } from '../chain/proofs.ts'
import { buildApproveTransaction, buildPaySupplierTransaction, type UnsignedTransaction } from '../chain/transactions.ts'
import type { WalletWatcher } from '../chain/watcher.ts'
import { HttpProblem } from '../http/problem.ts'
import type { IdempotencyTicket, RecordWrite, Store, StoredResponse } from '../store/index.ts'
import { verifyBackingAttestation } from './attestation.ts'
import { verifyBorrowerConsent } from '../chain/consent.ts'
import type { ServiceConfig } from './config.ts'
import { KeyedMutex } from './mutex.ts'
import { SupplierDirectory } from './suppliers.ts'

/** What the service keeps of a lender's session key: its address and policy, never the private key. */
export interface SessionKeyRecord {
  lender: Address
  address: Address
  policy: SpendPolicy
  setupTransactions: UnsignedTransaction[]
  createdAtMs: number
}

export interface SpendPolicy {
  /** Asset symbol per network slug. */
  assets: Record<string, string>
  perPaymentCapAtomic: bigint
  totalCapAtomic: bigint
  /** The only contract the key approves and calls, per network: that network's credit contract. */
  allowedContracts: Record<string, Address>
  expiresAtMs: number
}

export interface Mutation {
  /** Present when the request carried an Idempotency-Key and is the first with it. */
  ticket: IdempotencyTicket | undefined
}

export type Respond<T> = (value: T) => StoredResponse

const SESSION_KEY_LIFETIME_MS = 365 * 24 * 3600 * 1000

const ENGINE_STATUS: Readonly<Record<EngineError['class'], number>> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
}

export function problemFromEngine(error: EngineError): HttpProblem {
  return new HttpProblem(ENGINE_STATUS[error.class], error.code, error.message, { title: error.code.replace(/_/g, ' ') })
}

const notFound = (code: string, detail: string) => new HttpProblem(404, code, detail, { title: 'Not found' })
const forbidden = (detail: string) => new HttpProblem(403, 'forbidden', detail, { title: 'Forbidden' })
const invalid = (code: string, detail: string) => new HttpProblem(400, code, detail, { title: 'Bad request' })
const conflict = (code: string, detail: string) => new HttpProblem(409, code, detail, { title: 'Conflict' })

export interface ServiceDeps {
  config: ServiceConfig
  engine: Engine
  store: Store
  networks: readonly NetworkConfig[]
  clients: ReadonlyMap<string, NetworkClients>
  watcher: WalletWatcher
  clock: () => number
}

export class CreditService {
  readonly config: ServiceConfig
  readonly engine: Engine
  readonly store: Store
  readonly networks: readonly NetworkConfig[]
  readonly watcher: WalletWatcher
  readonly suppliers: SupplierDirectory
  readonly #clients: ReadonlyMap<string, NetworkClients>
  readonly #clock: () => number
  readonly #sessionKeys
  /** Serialises plan -> operator transaction -> record for one job or advance. */
  readonly #locks = new KeyedMutex()
  #fatal: ((error: unknown) => void) | undefined
  /** Verification reads the used-proof registry; the use itself is written with the command's commit. */
  readonly #proofsReadOnly = {
    has: (key: string) => this.store.proofs.has(key),
    add: (key: string) => {
      throw new Error(`proofs are added by the commit of the command they feed, not by verification (${key})`)
    },
  }

  constructor(deps: ServiceDeps) {
    this.config = deps.config
    this.engine = deps.engine
    this.store = deps.store
    this.networks = deps.networks
    this.watcher = deps.watcher
    this.#clients = deps.clients
    this.#clock = deps.clock
    this.suppliers = new SupplierDirectory(deps.config.suppliers)
    this.#sessionKeys = deps.store.collection<SessionKeyRecord>('session-keys', { version: 1, validate: isSessionKeyRecord })
  }

  /** Called when a commit fails: memory is ahead of the disk, so the process must stop and restart from the store. */
  onFatal(handler: (error: unknown) => void): void {
    this.#fatal = handler
  }

  isOperator(address: Address): boolean {
    return this.config.operators.includes(address)
  }

  /** Active: reliable enough to be matched (the engine's reliability floor). */
  isActiveLender(lender: LenderRecord): boolean {
    return lender.reliabilityBps >= this.engine.config.lenderReliabilityMinBps
  }

  // ------------------------------------------------------------------------------------------------ commit path

  /**
   * Runs `command` and enqueues its changes (plus `records` and the idempotency record of `mutation`) in the same
   * synchronous section, then waits for durability. Nothing awaits between the command and the enqueue.
   */
  async apply<T>(
    mutation: Mutation,
    command: () => EngineResult<T>,
    respond: Respond<T>,
    records: (value: T) => RecordWrite[] = () => [],
  ): Promise<StoredResponse> {
    // Refused before the command: once the engine has changed memory, a commit the store turns away is fatal.
    if (!this.store.hasRoom()) {
      throw new HttpProblem(503, 'store_overloaded', 'too many changes are waiting for the disk; retry shortly', { title: 'Overloaded', headers: { 'retry-after': '1' } })
    }
    const result = command()
    if (!result.ok) throw problemFromEngine(result.error)
    const response = respond(result.value)
    const writes = records(result.value)
    await this.#commit(result.changes, writes, mutation, response)
    return response
  }

  async #commit(changes: readonly Change[], records: readonly RecordWrite[], mutation: Mutation, response: StoredResponse): Promise<void> {
    try {
      const idempotency = mutation.ticket?.complete(response)
      await this.store.commit({ changes, records, ...(idempotency ? { idempotency } : {}) })
    } catch (error) {
      // The engine already holds the change in memory: continuing would acknowledge state the disk lacks.
      this.#fatal?.(error)
      throw error
    }
  }

  /** Persists changes that no request asked for (the dispatch ticker). */
  async persist(changes: readonly Change[]): Promise<void> {
    if (changes.length === 0) return
    await this.#commit(changes, [], { ticket: undefined }, { status: 200, body: null })
  }

  // ------------------------------------------------------------------------------------------------ helpers

  network(slug: string): NetworkConfig {
    const network = this.networks.find((n) => n.slug === slug)
    if (network === undefined) throw invalid('unknown_network', `unknown network ${JSON.stringify(slug)}; see /.well-known/service.json`)
    return network
  }

  #clientsOf(slug: string): NetworkClients {
    const clients = this.#clients.get(slug)
    if (clients === undefined) throw invalid('unknown_network', `unknown network ${JSON.stringify(slug)}`)
    return clients
  }

  token(network: NetworkConfig, symbol: string) {
    try {
      return findToken(network, symbol)
    } catch {
      throw invalid('unknown_asset', `asset ${JSON.stringify(symbol)} is not configured on ${network.slug}`)
    }
  }

  /** Verifies a proof without consuming it; the caller adds `fact.proofKey` to the commit of the command it feeds. */
  #prove<E extends CreditEventName>(network: string, request: ProofRequest<E>): Promise<VerifiedFact<E>> {
    return this.#verdict(verifyProof(this.#clientsOf(network), this.#proofsReadOnly, { ...request, consume: false }))
  }

  /** A proof verdict as the API reports it: the fact, or 422 naming the reason (409 when already used, 503 on RPC failure). */
  async #verdict<F>(verification: Promise<{ ok: true; fact: F } | { ok: false; reason: ProofFailureReason; detail: string }>): Promise<F> {
    let result
    try {
      result = await verification
    } catch (error) {
      if (error instanceof ChainRpcError) throw new HttpProblem(503, 'chain_unavailable', error.message, { title: 'Chain unavailable', headers: { 'retry-after': '1' } })
      throw error
    }
    if (!result.ok) {
      const status = result.reason === 'already_used' ? 409 : 422
      throw new HttpProblem(status, `proof_${result.reason}`, result.detail, { title: 'Transaction proof refused' })
    }
    return result.fact
  }

  /** Re-checked synchronously right before the command: another request may have used the proof meanwhile. */
  #useProof(fact: { proofKey: string }, usedBy: string): RecordWrite {
    if (this.store.proofs.has(fact.proofKey)) throw new HttpProblem(409, 'proof_already_used', `the proof ${fact.proofKey} was already used`, { title: 'Transaction proof refused' })
    return this.store.proofs.addOp(fact.proofKey, { usedBy, usedAtMs: this.#clock() })
  }

  /**
   * Sends an operator transaction (settleJob, liquidate) and returns its hash. When the contract answers that it was
   * already done (`alreadyDone`), the earlier transaction is looked up and returned if it did what the plan says:
   * a crash between an operator transaction and its commit is repaired by the next attempt. Any other refusal of the
   * contract is a 409 naming its error, and nothing is recorded.
   */
  async #operatorSend(
    slug: string,
    send: (clients: NetworkClients) => Promise<OperatorReceipt>,
    earlier: { alreadyDone: string; find: (clients: NetworkClients) => Promise<EarlierSettlement | undefined>; matches: (found: EarlierSettlement) => boolean },
  ): Promise<Hex> {
    const clients = this.#operatorClients(slug)
    try {
      return (await send(clients)).txHash
    } catch (error) {
      if (error instanceof ContractRevertError) {
        if (error.errorName === earlier.alreadyDone) {
          const found = await earlier.find(clients).catch(() => undefined)
          if (found !== undefined && earlier.matches(found)) return found.txHash
        }
        const code = `contract_${error.errorName.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().replace(/[^a-z0-9_]/g, '_')}`
        throw new HttpProblem(409, code, `${error.message}; nothing was recorded`, { title: 'Refused by the credit contract' })
      }
      if (error instanceof OperatorUnavailableError) throw new HttpProblem(503, 'operator_unavailable', error.message, { title: 'Operator unavailable' })
      throw new HttpProblem(503, 'chain_unavailable', `the operator transaction on ${slug} could not be completed: ${(error as Error).message?.split('\n')[0]}`, {
        title: 'Chain unavailable',
        headers: { 'retry-after': '1' },
      })
    }
  }

  #operatorClients(slug: string): NetworkClients {
    const clients = this.#clientsOf(slug)
    if (clients.operator === undefined) {
      throw new HttpProblem(503, 'operator_unavailable', `no operator key is configured for ${slug}`, { title: 'Operator unavailable' })
    }
    return clients
  }

  // ------------------------------------------------------------------------------------------------ lenders

  async registerLender(
    mutation: Mutation,
    lender: Address,
    body: Omit<RegisterLenderInput, 'address' | 'sessionAddress' | 'reputationBps' | 'reliabilityBps'>,
    respond: Respond<{ sessionKey: SessionKeyRecord; lender: LenderRecord }>,
  ): Promise<{ response: StoredResponse; privateKey: Hex }> {
    if (body.availableLiquidityAtomic <= 0n) throw invalid('invalid_liquidity', 'availableLiquidityAtomic must be positive')
    const networks = [...new Set(body.networks)].map((slug) => this.network(slug))
    const assets: Record<string, string> = {}
    for (const network of networks) {
      const symbol = body.assets?.[network.slug] ?? body.asset
      this.token(network, symbol)
      assets[network.slug] = symbol
    }
    for (const slug of Object.keys(body.assets ?? {})) {
      if (!networks.some((n) => n.slug === slug)) throw invalid('asset_network_not_supported', `assets names ${slug}, which is not in networks`)
    }
    const privateKey = generatePrivateKey()
    const sessionAddress = privateKeyToAddress(privateKey)
    const nowMs = this.#clock()
    const sessionKey: SessionKeyRecord = {
      lender,
      address: sessionAddress,
      policy: {
        assets,
        perPaymentCapAtomic: body.availableLiquidityAtomic,
        totalCapAtomic: body.availableLiquidityAtomic,
        allowedContracts: Object.fromEntries(networks.map((n) => [n.slug, n.creditContract])),
        expiresAtMs: nowMs + SESSION_KEY_LIFETIME_MS,
      },
      setupTransactions: networks.map((n) =>
        buildApproveTransaction(n, { owner: sessionAddress, asset: assets[n.slug] as string, amountAtomic: body.availableLiquidityAtomic }),
      ),
      createdAtMs: nowMs,
    }
    const response = await this.apply(
      mutation,
      () =>
        this.engine.registerLender(
          {
            address: lender,
            sessionAddress,
            availableLiquidityAtomic: body.availableLiquidityAtomic,
            asset: body.asset,
            assets,
            networks: networks.map((n) => n.slug),
            minFeeBps: body.minFeeBps,
            maxDurationSeconds: body.maxDurationSeconds,
            acceptedRiskBands: body.acceptedRiskBands,
          },
          nowMs,
        ),
      // The stored response (idempotent replays) never holds the private key; only this caller gets it.
      (record) => respond({ sessionKey, lender: record }),
      () => [this.#sessionKeys.putOp(lender, sessionKey)],
    )
    // Unfunded, the session wallet costs a membership entry only; its first transfer or approval makes it watched.
    for (const network of networks) this.watcher.watchWhenFunded(network.slug, sessionAddress)
    return { response, privateKey }
  }

  /** Every session key, to re-watch wallets after a restart. */
  *sessionKeys(): Generator<SessionKeyRecord> {
    for (const { value } of this.#sessionKeys.iterate('')) yield value
  }

  /** The unsigned paySupplier transaction of each live lease of `lender`. */
  pendingActions(lender: Address) {
    // The lender polling its own actions re-arms the funding window of a session wallet not yet seen funded.
    const key = this.#sessionKeys.get(lender)
    if (key !== undefined) for (const slug of Object.keys(key.policy.assets)) if (this.#clients.has(slug)) this.watcher.watchWhenFunded(slug, key.address)
    return this.engine.liveLeasesOf(lender).map((lease) => {
      const network = this.network(lease.network)
      return {
        lease,
        transaction: buildPaySupplierTransaction(network, {
          offerId: lease.offerId,
          payer: lease.payer,
          supplier: lease.supplierAddress,
          asset: lease.asset,
          amountAtomic: lease.amountAtomic,
          expiresAtMs: lease.expiresAtMs,
        }),
      }
    })
  }

  // ------------------------------------------------------------------------------------------------ borrowers

  async registerSource(
    mutation: Mutation,
    caller: Address,
    body: RegisterSourceInput,
    respond: Respond<NonNullable<ReturnType<Engine['getSource']>>>,
  ): Promise<StoredResponse> {
    if (body.agent !== caller) throw forbidden('a backing source is registered by its agent: sign in as the body\'s agent')
    if (body.validUntilMs <= this.#clock()) {
      throw new HttpProblem(422, 'attestation_expired', 'the attestation\'s validUntil has passed; ask the attester for a fresh one', { title: 'Attestation refused' })
    }
    const attester = await verifyBackingAttestation(this.config.attesters, body, body.evidenceId)
    if (attester === undefined) {
      throw new HttpProblem(422, 'attestation_invalid', 'evidenceId is not an EIP-712 BackingSource signature by a configured attester over these fields', { title: 'Attestation refused' })
    }
    return this.apply(mutation, () => this.engine.registerSource(body, this.#clock()), respond)
  }

  async createJob(
    mutation: Mutation,
    caller: Address,
    body: { jobId: string; network: string; asset: string; agent: Address; receivableAtomic: bigint; dueAtMs: number; fundingTxHash: string; borrowerConsent?: string | undefined },
    respond: Respond<NonNullable<ReturnType<Engine['getJob']>>>,
  ): Promise<StoredResponse> {
    const network = this.network(body.network)
    const token = this.token(network, body.asset)
    const fact = await this.#prove(network.slug, {
      txHash: body.fundingTxHash,
      eventName: 'JobFunded',
      args: { jobKey: idKey(body.jobId), borrower: body.agent, asset: token.address, amount: body.receivableAtomic },
    })
    const client = getAddress(fact.args.client)
    if (caller !== client && caller !== body.agent) throw forbidden('a job is created by its client (the funder) or its borrower')
    // Only the borrower's own request, or its signed consent, names it as a job's borrower: otherwise a stranger could
    // fund a tiny job naming any wallet and fail it to suspend that wallet (issue 10, hole 3).
    if (caller !== body.agent) {
      if (body.borrowerConsent === undefined) {
        throw new HttpProblem(403, 'borrower_consent_required', 'a client registers a job only with the borrower\'s consent (borrowerConsent, EIP-712; see the catalog), or the borrower registers it', { title: 'Consent required' })
      }
      const terms = { jobId: body.jobId, network: network.slug, asset: token.symbol, receivableAtomic: body.receivableAtomic, client, dueAtMs: body.dueAtMs }
      if (!(await verifyBorrowerConsent(body.agent, terms, body.borrowerConsent))) {
        throw new HttpProblem(403, 'borrower_consent_invalid', 'borrowerConsent is not the borrower\'s EIP-712 BorrowerConsent signature over these terms', { title: 'Consent refused' })
      }
    }
    const proof = this.#useProof(fact, `job:${body.jobId}`)
    return this.apply(
      mutation,
      () =>
        this.engine.createJob(
          {
            jobId: body.jobId,
            client,
            borrower: body.agent,
            network: network.slug,
            asset: token.symbol,
            receivableAtomic: body.receivableAtomic,
            dueAtMs: body.dueAtMs,
            funding: { network: network.slug, txHash: fact.txHash, logIndex: fact.logIndex },
          },
          this.#clock(),
        ),
      respond,
      () => [proof],
    )
  }

  async postCollateral(
    mutation: Mutation,
    caller: Address,
    jobId: string,
    body: { amountAtomic: bigint; txHash: string },
    respond: Respond<Extract<ReturnType<Engine['postCollateral']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    const job = this.engine.getJob(jobId)
    if (job === undefined) throw notFound('job_not_found', `no live job ${jobId}`)
    if (caller !== job.borrower) throw forbidden('collateral is posted by the job\'s borrower')
    const token = this.token(this.network(job.network), job.asset)
    const fact = await this.#prove(job.network, {
      txHash: body.txHash,
      eventName: 'CollateralPosted',
      args: { jobKey: idKey(jobId), borrower: job.borrower, asset: token.address, amount: body.amountAtomic },
    })
    const proof = this.#useProof(fact, `collateral:${jobId}`)
    return this.apply(
      mutation,
      () =>
        this.engine.postCollateral(
          { jobId, borrower: getAddress(fact.args.borrower), amountAtomic: fact.args.amount, proof: { network: job.network, txHash: fact.txHash, logIndex: fact.logIndex } },
          this.#clock(),
        ),
      respond,
      () => [proof],
    )
  }

  async requestCredit(
    mutation: Mutation,
    caller: Address,
    body: Omit<CreditRequestInput, 'supplierAddress'> & { supplierAddress?: Address },
    respond: Respond<Extract<ReturnType<Engine['requestCredit']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    if (body.agent !== caller) throw forbidden('credit is requested by the borrower agent itself: sign in as the body\'s agent')
    const network = this.network(body.network)
    this.token(network, body.asset)
    const supplierAddress = body.supplierAddress ?? this.suppliers.resolve(body.supplierDomain)
    if (supplierAddress === undefined) {
      throw new HttpProblem(422, 'supplier_unresolved', `supplierDomain ${body.supplierDomain} is not in the supplier directory and no supplierAddress was given`, { title: 'Supplier unresolved' })
    }
    if (supplierAddress === body.agent) throw new HttpProblem(422, 'supplier_is_borrower', 'the supplier is paid, never the borrower', { title: 'Supplier refused' })
    const { supplierAddress: _omit, ...rest } = body
    return this.apply(mutation, () => this.engine.requestCredit({ ...rest, supplierAddress }, this.#clock()), respond)
  }

  async match(
    mutation: Mutation,
    caller: Address,
    offerId: string,
    respond: Respond<Extract<ReturnType<Engine['matchOffer']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    const offer = this.engine.getOffer(offerId)
    if (offer === undefined) throw this.#missing('offer', offerId)
    if (caller !== offer.borrower) throw forbidden('an offer is matched by its borrower')
    // Dispatch (the ticker or any caller) may have leased the offer already: the match asked for exists, answer it,
    // but only once the commit that created it is durable (an empty commit queues behind it), or a crash could
    // lose a lease this answer acknowledged.
    const lease = offer.state === 'leased' && offer.currentLeaseId !== null ? this.engine.getLease(offer.currentLeaseId) : undefined
    if (lease !== undefined) {
      await this.store.commit({})
      return respond({ offer, lease, refusedLeases: [], offerExpired: false })
    }
    return this.apply(mutation, () => this.engine.matchOffer({ offerId }, this.#clock()), respond)
  }

  async dispatch(mutation: Mutation, respond: Respond<Extract<ReturnType<Engine['dispatch']>, { ok: true }>['value']>): Promise<StoredResponse> {
    return this.apply(mutation, () => this.engine.dispatch(this.#clock()), respond)
  }

  async recordSupplierPayment(
    mutation: Mutation,
    caller: Address,
    offerId: string,
    body: { lender: Address; supplierPaymentId: string },
    respond: Respond<Extract<ReturnType<Engine['recordSupplierPayment']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    if (body.lender !== caller) throw forbidden('a supplier payment is reported by the lender that paid: sign in as the body\'s lender')
    const offer = this.engine.getOffer(offerId) ?? this.#stored('offer', offerId, offerViewFromSnapshot)
    if (offer === undefined) throw notFound('offer_not_found', `no offer ${offerId}`)
    // The latest lease this lender held on the offer: after an expiry the offer is rematched to another lender, and
    // the late report of the first one must learn that its own lease expired (spec section 3), not that it has none.
    let lease: ReturnType<typeof leaseViewFromSnapshot> | undefined
    for (const id of [...(offer.currentLeaseId ? [offer.currentLeaseId] : []), ...[...offer.leaseIds].reverse()]) {
      const candidate = this.engine.getLease(id) ?? this.#stored('lease', id, leaseViewFromSnapshot)
      if (candidate !== undefined && candidate.lender === body.lender) {
        lease = candidate
        break
      }
    }
    if (lease === undefined) throw conflict('no_lease', `offer ${offerId} has no lease to lender ${body.lender}`)
    if (lease.state === 'expired') throw conflict('lease_expired', `the lease ${lease.leaseId} of offer ${offerId} expired; the report is rejected`)
    if (lease.state !== 'leased') throw conflict('lease_not_live', `the lease ${lease.leaseId} is ${lease.state}`)
    const fact = await this.#verdict(
      verifySupplierPayment(this.#clientsOf(lease.network), this.#proofsReadOnly, {
        txHash: body.supplierPaymentId,
        offerId,
        payer: lease.payer,
        supplier: lease.supplierAddress,
        asset: lease.asset,
        amountAtomic: lease.amountAtomic,
        consume: false,
      }),
    )
    const proof = this.#useProof(fact, `offer:${offerId}`)
    return this.apply(mutation, () => this.engine.recordSupplierPayment(fact, this.#clock()), respond, () => [proof])
  }

  async repay(
    mutation: Mutation,
    advanceId: string,
    body: { txHash: string },
    respond: Respond<Extract<ReturnType<Engine['repayAdvance']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    const plan = this.engine.planRepayment(advanceId)
    if (!plan.ok) throw plan.error.code === 'advance_not_found' ? this.#missing('advance', advanceId) : problemFromEngine(plan.error)
    const { network, lender, asset } = plan.value
    const token = this.token(this.network(network), asset)
    // The contract's Repaid carries the total paid (`amount`) and the reserve's part of it; the plan's amountAtomic
    // is the lender's part. A proof of any other amounts does not prove this repayment (422, like any argument).
    const fact = await this.#prove(network, {
      txHash: body.txHash,
      eventName: 'Repaid',
      args: {
        advanceKey: idKey(advanceId),
        lender,
        asset: token.address,
        amount: plan.value.amountAtomic + plan.value.reserveAmountAtomic,
        reserveAmount: plan.value.reserveAmountAtomic,
      },
    })
    const proof = this.#useProof(fact, `advance:${advanceId}`)
    return this.apply(
      mutation,
      () =>
        this.engine.repayAdvance(
          {
            network,
            txHash: fact.txHash,
            logIndex: fact.logIndex,
            advanceId,
            lender: getAddress(fact.args.lender),
            payer: getAddress(fact.args.payer),
            // The engine's fact names the lender's part: the total minus the reserve's share.
            amountAtomic: fact.args.amount - fact.args.reserveAmount,
            reserveAmountAtomic: fact.args.reserveAmount,
          },
          this.#clock(),
        ),
      respond,
      () => [proof],
    )
  }

  async completeJob(
    mutation: Mutation,
    caller: Address,
    jobId: string,
    respond: Respond<Extract<ReturnType<Engine['completeJob']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    return this.#locks.run(`job:${jobId}`, async () => {
      const job = this.engine.getJob(jobId)
      if (job === undefined) throw this.#missing('job', jobId)
      if (caller !== job.client && !this.isOperator(caller)) throw forbidden('a job is completed by its client or an operator')
      const plan = this.engine.planJobSettlement(jobId)
      if (!plan.ok) throw problemFromEngine(plan.error)
      const settled = await this.#operatorSend(
        job.network,
        (clients) =>
          sendSettleJob(clients, {
            jobId,
            payouts: plan.value.advances.map((a) => ({ advanceId: a.advanceId, lender: a.lender, amountAtomic: a.amountAtomic })),
            reserveAtomic: plan.value.toReserveAtomic,
          }),
        {
          alreadyDone: 'JobAlreadySettled',
          find: (clients) => findEarlierSettlement(clients, { eventName: 'JobSettled', jobId }, job.funding.txHash),
          matches: (found) =>
            found.eventName === 'JobSettled' && found.toLendersAtomic === plan.value.toLendersAtomic && found.toReserveAtomic === plan.value.toReserveAtomic,
        },
      )
      return this.apply(mutation, () => this.engine.completeJob({ jobId, network: job.network, txHash: settled }, this.#clock()), respond)
    })
  }

  async failJob(
    mutation: Mutation,
    caller: Address,
    jobId: string,
    body: { reason: string },
    respond: Respond<Extract<ReturnType<Engine['failJob']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    return this.#locks.run(`job:${jobId}`, async () => {
      const job = this.engine.getJob(jobId)
      if (job === undefined) throw this.#missing('job', jobId)
      if (caller !== job.client && !this.isOperator(caller)) throw forbidden('a job is failed by its client or an operator')
      return this.apply(mutation, () => this.engine.failJob({ jobId, reason: body.reason }, this.#clock()), respond)
    })
  }

  async liquidate(
    mutation: Mutation,
    caller: Address,
    advanceId: string,
    respond: Respond<Extract<ReturnType<Engine['liquidate']>, { ok: true }>['value']>,
  ): Promise<StoredResponse> {
    return this.#locks.run(`advance:${advanceId}`, async () => {
      const advance = this.engine.getAdvance(advanceId)
      if (advance === undefined) throw this.#missing('advance', advanceId)
      if (caller !== advance.lender && !this.isOperator(caller)) throw forbidden('an advance is liquidated by its lender or an operator')
      const plan = this.engine.planLiquidation(advanceId, this.#clock())
      if (!plan.ok) throw problemFromEngine(plan.error)
      const step = (name: string) => plan.value.steps.find((s) => s.step === name)?.amountAtomic ?? 0n
      const amounts = {
        fromRevenueAtomic: step('source_revenue'),
        fromCollateralAtomic: step('collateral'),
        fromReserveAtomic: step('insurance_reserve'),
      }
      const sameAmounts = (found: EarlierSettlement) =>
        found.eventName === 'Liquidated' &&
        found.fromRevenueAtomic === amounts.fromRevenueAtomic &&
        found.fromCollateralAtomic === amounts.fromCollateralAtomic &&
        found.fromReserveAtomic === amounts.fromReserveAtomic
      const liquidated = await this.#operatorSend(
        advance.network,
        (clients) => sendLiquidate(clients, { advanceId, jobId: plan.value.jobId, lender: advance.lender, asset: advance.asset, ...amounts }),
        {
          alreadyDone: 'AdvanceAlreadyLiquidated',
          find: (clients) => findEarlierSettlement(clients, { eventName: 'Liquidated', advanceId }, advance.payment.txHash),
          matches: sameAmounts,
        },
      )
      return this.apply(mutation, () => this.engine.liquidate({ advanceId, network: advance.network, txHash: liquidated, ...amounts }, this.#clock()), respond)
    })
  }

  // ------------------------------------------------------------------------------------------------ reads

  /** A job, offer or advance by id: live from the engine, final from the store; undefined when never seen. */
  view(kind: 'job', id: string): JobView | undefined
  view(kind: 'offer', id: string): OfferView | undefined
  view(kind: 'advance', id: string): AdvanceView | undefined
  view(kind: 'job' | 'offer' | 'advance', id: string): JobView | OfferView | AdvanceView | undefined {
    if (kind === 'job') return this.engine.getJob(id) ?? this.#stored('job', id, jobViewFromSnapshot)
    if (kind === 'offer') return this.engine.getOffer(id) ?? this.#stored('offer', id, offerViewFromSnapshot)
    return this.engine.getAdvance(id) ?? this.#stored('advance', id, advanceViewFromSnapshot)
  }

  /** A final actor, read from the store (final actors leave memory). */
  #stored<V>(kind: 'job' | 'offer' | 'lease' | 'advance', id: string, view: (snapshot: unknown) => V): V | undefined {
    const entry = this.store.getSnapshot(kind, id)
    return entry === undefined ? undefined : view(entry.snapshot)
  }

  /** 404 for an id never seen; 409 for one that reached a final state (it can no longer change). */
  #missing(kind: 'job' | 'offer' | 'advance', id: string): HttpProblem {
    const entry = this.store.getSnapshot(kind, id)
    if (entry === undefined) return notFound(`${kind}_not_found`, `no ${kind} ${id}`)
    return conflict(`${kind}_closed`, `${kind} ${id} has reached a final state`)
  }
}

function isSessionKeyRecord(value: unknown): value is SessionKeyRecord {
  const v = value as SessionKeyRecord
  return typeof v === 'object' && v !== null && typeof v.address === 'string' && typeof v.lender === 'string' && typeof v.policy === 'object'
}

