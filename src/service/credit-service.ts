// The application layer between HTTP and the engine. Each operation: turn chain proofs and attestations into verified
// facts (the only awaits before the command), run ONE engine command with the caller's address (the engine decides
// who may act, as it decides every other refusal), and enqueue its changes to the store in the same synchronous
// section, so that commits reach the disk in the order the engine applied them. The caller gets the result only
// once the commit is durable. Where a proof must be checked against live terms, the engine's plan query gives them
// (and refuses what the command would refuse) before any await.
import { getAddress, type Address, type Hex } from 'viem'
import {
  advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot, recoveryAmounts, supplierPaymentOnClosedOffer, type Engine,
} from '../engine/engine.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import type {
  AdvanceView, Change, CollateralPosition, CreditRequestInput, DispatchOutcome, EngineResult, JobSettlementReceipt, JobView,
  LeaseView, LenderRecord, LiquidationReceipt, MatchOutcome, OfferView, PassportEvent, RegisterLenderInput, RegisterSourceInput, RepaymentReceipt,
  SourceRecord, UnderwritingDecision,
} from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import { findToken, UnknownAssetError, UnknownNetworkError, type NetworkConfig } from '../chain/config.ts'
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
import {
  ChainRpcError, ProofRefusedError, verifyProof, verifySupplierPayment, type CreditEventName, type ProofFailureReason, type ProofRequest,
  type VerifiedFact,
} from '../chain/proofs.ts'
import { buildApproveTransaction, buildPaySupplierTransaction, type UnsignedTransaction } from '../chain/transactions.ts'
import type { WalletWatcher } from '../chain/watcher.ts'
import { StoreOverloadedError, type RecordWrite, type Store, type StoredResponse } from '../store/index.ts'
import { AttestationExpiredError, AttestationInvalidError, verifyBackingAttestation } from '../chain/attestation.ts'
import { BorrowerConsentError, verifyBorrowerConsent } from '../chain/consent.ts'
import type { ServiceConfig } from '../app/config.ts'
import type { Mutation } from './mutation.ts'
import { KeyedMutex } from './mutex.ts'
import { isSessionKeyRecord, newSessionKey, type SessionKeyRecord } from './session-keys.ts'
import { SupplierDirectory, SupplierUnresolvedError } from './suppliers.ts'

export type { SessionKeyRecord, SpendPolicy } from './session-keys.ts'
export type { Mutation } from './mutation.ts'

/** The value of a command or query that succeeded; a refusal is raised. */
function valueOf<T>(result: EngineResult<T>): T {
  if (!result.ok) throw new EngineRefusedError(result.error)
  return result.value
}

/** A refusal of the engine with this code, or none. */
function refusedWith(error: unknown, code: string): EngineRefusedError | undefined {
  return error instanceof EngineRefusedError && error.error.code === code ? error : undefined
}

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
  /** Listeners of durable changes (the event stream, the inspector): told only after the disk has the commit. */
  readonly #durableListeners = new Set<(changes: readonly Change[]) => void>()
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

  /**
   * Calls `listener` with the changes of every commit once it is durable, in the engine's order (group commits
   * resolve in queue order), so what a listener shows could never be lost by a crash. Returns the unsubscribe.
   * A listener that throws is isolated from the commit path and the other listeners (a process warning reports it).
   */
  onDurable(listener: (changes: readonly Change[]) => void): () => void {
    this.#durableListeners.add(listener)
    return () => this.#durableListeners.delete(listener)
  }

  // ------------------------------------------------------------------------------------------------ commit path

  /**
   * Runs `command` and enqueues its changes (plus `records` and, under an Idempotency-Key, the encoded response) in
   * the same synchronous section, then waits for durability. Nothing awaits between the command and the enqueue.
   */
  async apply<T>(mutation: Mutation<T>, command: () => EngineResult<T>, records: (value: T) => RecordWrite[] = () => []): Promise<StoredResponse> {
    return (await this.#run(mutation, command, records)) as StoredResponse
  }

  /**
   * The dispatch ticker: the same command as POST /credit/dispatch, through the same run-and-commit path as a request,
   * with nobody to answer.
   */
  async tick(): Promise<void> {
    await this.#run<DispatchOutcome>(null, () => this.engine.dispatch(this.#clock()), () => [])
  }

  async #run<T>(mutation: Mutation<T> | null, command: () => EngineResult<T>, records: (value: T) => RecordWrite[]): Promise<StoredResponse | null> {
    // Refused before the command: once the engine has changed memory, a commit the store turns away is fatal.
    if (!this.store.hasRoom()) throw new StoreOverloadedError('too many changes are waiting for the disk; retry shortly')
    const result = command()
    const value = valueOf(result)
    const response = mutation === null ? null : mutation.encode(value)
    const writes = records(value)
    const changes = result.ok ? result.changes : []
    // With nobody to answer, a command that changed nothing needs no commit: no response could show state ahead of
    // the disk. A request's empty commit still waits for the commits queued before it.
    if (response === null && changes.length === 0 && writes.length === 0) return null
    try {
      const idempotency = response === null ? undefined : mutation?.ticket?.complete(response)
      await this.store.commit({ changes, records: writes, ...(idempotency ? { idempotency } : {}) })
    } catch (error) {
      // The engine already holds the change in memory: continuing would acknowledge state the disk lacks.
      this.#fatal?.(error)
      throw error
    }
    if (changes.length > 0) this.#tellDurable(changes)
    return response
  }

  #tellDurable(changes: readonly Change[]): void {
    for (const listener of this.#durableListeners) {
      try {
        listener(changes)
      } catch (error) {
        // The commit is done and acknowledged; a listener's bug must not stop the process or the other listeners.
        const detail = error instanceof Error ? (error.stack ?? error.message) : String(error)
        process.emitWarning('a durable-change listener failed', { code: 'DURABLE_LISTENER_FAILED', detail })
      }
    }
  }

  // ------------------------------------------------------------------------------------------------ helpers

  network(slug: string): NetworkConfig {
    const network = this.networks.find((n) => n.slug === slug)
    if (network === undefined) throw new UnknownNetworkError(slug)
    return network
  }

  #clientsOf(slug: string): NetworkClients {
    const clients = this.#clients.get(slug)
    if (clients === undefined) throw new UnknownNetworkError(slug)
    return clients
  }

  token(network: NetworkConfig, symbol: string) {
    try {
      return findToken(network, symbol)
    } catch {
      throw new UnknownAssetError(network.slug, symbol)
    }
  }

  /** Verifies a proof without consuming it; the caller adds `fact.proofKey` to the commit of the command it feeds. */
  #prove<E extends CreditEventName>(network: string, request: ProofRequest<E>): Promise<VerifiedFact<E>> {
    return this.#verdict(verifyProof(this.#clientsOf(network), this.#proofsReadOnly, { ...request, consume: false }))
  }

  /** The fact of a proof verdict, or the verdict raised (ProofRefusedError); an RPC failure is a ChainRpcError. */
  async #verdict<F>(verification: Promise<{ ok: true; fact: F } | { ok: false; reason: ProofFailureReason; detail: string }>): Promise<F> {
    const result = await verification
    if (!result.ok) throw new ProofRefusedError(result.reason, result.detail)
    return result.fact
  }

  /** Re-checked synchronously right before the command: another request may have used the proof meanwhile. */
  #useProof(fact: { proofKey: string }, usedBy: string): RecordWrite {
    if (this.store.proofs.has(fact.proofKey)) throw new ProofRefusedError('already_used', `the proof ${fact.proofKey} was already used`)
    return this.store.proofs.addOp(fact.proofKey, { usedBy, usedAtMs: this.#clock() })
  }

  /**
   * Sends an operator transaction (settleJob, liquidate) and returns its hash. When the contract answers that it was
   * already done (`alreadyDone`), the earlier transaction is looked up and returned if it did what the plan says:
   * a crash between an operator transaction and its commit is repaired by the next attempt. Any other refusal of the
   * contract is raised (ContractRevertError), and nothing is recorded; any other failure is the chain's (ChainRpcError).
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
        throw error
      }
      if (error instanceof OperatorUnavailableError) throw error
      throw new ChainRpcError(slug, error)
    }
  }

  #operatorClients(slug: string): NetworkClients {
    const clients = this.#clientsOf(slug)
    if (clients.operator === undefined) throw new OperatorUnavailableError(slug)
    return clients
  }

  // ------------------------------------------------------------------------------------------------ lenders

  async registerLender(
    mutation: Mutation<{ sessionKey: SessionKeyRecord; lender: LenderRecord }>,
    lender: Address,
    body: Omit<RegisterLenderInput, 'address' | 'sessionAddress' | 'reputationBps' | 'reliabilityBps'>,
  ): Promise<{ response: StoredResponse; privateKey: Hex }> {
    const networks = [...new Set(body.networks)].map((slug) => this.network(slug))
    const assets: Record<string, string> = {}
    for (const network of networks) {
      const symbol = body.assets?.[network.slug] ?? body.asset
      this.token(network, symbol)
      assets[network.slug] = symbol
    }
    const nowMs = this.#clock()
    const { privateKey, sessionKey } = newSessionKey(lender, networks, assets, body.availableLiquidityAtomic, nowMs)
    const sessionAddress = sessionKey.address
    const response = await this.apply(
      mutation,
      () => {
        const registered = this.engine.registerLender(
          {
            address: lender,
            sessionAddress,
            availableLiquidityAtomic: body.availableLiquidityAtomic,
            asset: body.asset,
            // The body's own map: the engine refuses one that names a network the lender does not list.
            assets: { ...assets, ...body.assets },
            networks: networks.map((n) => n.slug),
            minFeeBps: body.minFeeBps,
            maxDurationSeconds: body.maxDurationSeconds,
            acceptedRiskBands: body.acceptedRiskBands,
          },
          nowMs,
        )
        // The stored response (idempotent replays) never holds the private key; only this caller gets it.
        return registered.ok ? { ...registered, value: { sessionKey, lender: registered.value } } : registered
      },
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
    return this.engine.liveLeasesOf(lender).map((lease) => ({ lease, transaction: this.paySupplierTransaction(lease) }))
  }

  /** The unsigned paySupplier transaction of a lease: what GET /lenders/{address}/actions and the event stream deliver. */
  paySupplierTransaction(lease: LeaseView) {
    return buildPaySupplierTransaction(this.network(lease.network), {
      offerId: lease.offerId,
      payer: lease.payer,
      supplier: lease.supplierAddress,
      asset: lease.asset,
      amountAtomic: lease.amountAtomic,
      expiresAtMs: lease.expiresAtMs,
    })
  }

  // ------------------------------------------------------------------------------------------------ borrowers

  async registerSource(mutation: Mutation<SourceRecord>, caller: Address, body: RegisterSourceInput): Promise<StoredResponse> {
    if (body.validUntilMs <= this.#clock()) throw new AttestationExpiredError('the attestation\'s validUntil has passed; ask the attester for a fresh one')
    const attester = await verifyBackingAttestation(this.config.attesters, body, body.evidenceId)
    if (attester === undefined) {
      throw new AttestationInvalidError('evidenceId is not an EIP-712 BackingSource signature by a configured attester over these fields')
    }
    return this.apply(mutation, () => this.engine.registerSource({ ...body, caller }, this.#clock()))
  }

  async createJob(
    mutation: Mutation<JobView>,
    caller: Address,
    body: { jobId: string; network: string; asset: string; agent: Address; receivableAtomic: bigint; dueAtMs: number; fundingTxHash: string; borrowerConsent?: string | undefined },
  ): Promise<StoredResponse> {
    const network = this.network(body.network)
    const token = this.token(network, body.asset)
    const fact = await this.#prove(network.slug, {
      txHash: body.fundingTxHash,
      eventName: 'JobFunded',
      args: { jobKey: idKey(body.jobId), borrower: body.agent, asset: token.address, amount: body.receivableAtomic },
    })
    const client = getAddress(fact.args.client)
    // Only the borrower's own request, or its signed consent, names it as a job's borrower: otherwise a stranger could
    // fund a tiny job naming any wallet and fail it to suspend that wallet (issue 10, hole 3). Who may create a job
    // at all (its client or its borrower) is the engine's rule.
    if (caller !== body.agent && caller === client) {
      if (body.borrowerConsent === undefined) {
        throw new BorrowerConsentError('borrower_consent_required', 'a client registers a job only with the borrower\'s consent (borrowerConsent, EIP-712; see the catalog), or the borrower registers it')
      }
      const terms = { jobId: body.jobId, network: network.slug, asset: token.symbol, receivableAtomic: body.receivableAtomic, client, dueAtMs: body.dueAtMs }
      if (!(await verifyBorrowerConsent(body.agent, terms, body.borrowerConsent))) {
        throw new BorrowerConsentError('borrower_consent_invalid', 'borrowerConsent is not the borrower\'s EIP-712 BorrowerConsent signature over these terms')
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
            caller,
          },
          this.#clock(),
        ),
      () => [proof],
    )
  }

  async postCollateral(
    mutation: Mutation<CollateralPosition>,
    caller: Address,
    jobId: string,
    body: { amountAtomic: bigint; txHash: string },
  ): Promise<StoredResponse> {
    const job = valueOf(this.engine.planCollateral({ jobId, caller }))
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
          {
            jobId,
            caller,
            borrower: getAddress(fact.args.borrower),
            amountAtomic: fact.args.amount,
            proof: { network: job.network, txHash: fact.txHash, logIndex: fact.logIndex },
          },
          this.#clock(),
        ),
      () => [proof],
    )
  }

  async requestCredit(
    mutation: Mutation<UnderwritingDecision>,
    caller: Address,
    body: Omit<CreditRequestInput, 'supplierAddress'> & { supplierAddress?: Address },
  ): Promise<StoredResponse> {
    const network = this.network(body.network)
    this.token(network, body.asset)
    const supplierAddress = body.supplierAddress ?? this.suppliers.resolve(body.supplierDomain)
    if (supplierAddress === undefined) {
      throw new SupplierUnresolvedError(`supplierDomain ${body.supplierDomain} is not in the supplier directory and no supplierAddress was given`)
    }
    const { supplierAddress: _omit, ...rest } = body
    return this.apply(mutation, () => this.engine.requestCredit({ ...rest, supplierAddress, caller }, this.#clock()))
  }

  async match(mutation: Mutation<MatchOutcome>, caller: Address, offerId: string): Promise<StoredResponse> {
    try {
      return await this.apply(mutation, () => this.engine.matchOffer({ offerId, caller }, this.#clock()))
    } catch (error) {
      if (refusedWith(error, 'offer_not_found')) throw this.#missing('offer', offerId)
      // Dispatch (the ticker or any caller) may have leased the offer already: the match asked for exists, answer
      // it, but only once the commit that created it is durable (an empty commit queues behind it), or a crash could
      // lose a lease this answer acknowledged.
      const offer = refusedWith(error, 'offer_not_offered') && this.engine.getOffer(offerId)
      const lease = offer && offer.currentLeaseId !== null ? this.engine.getLease(offer.currentLeaseId) : undefined
      if (!offer || lease === undefined) throw error
      await this.store.commit({})
      return mutation.encode({ offer, lease, refusedLeases: [], offerExpired: false })
    }
  }

  async dispatch(mutation: Mutation<DispatchOutcome>): Promise<StoredResponse> {
    return this.apply(mutation, () => this.engine.dispatch(this.#clock()))
  }

  async recordSupplierPayment(
    mutation: Mutation<AdvanceView>,
    caller: Address,
    offerId: string,
    body: { lender: Address; supplierPaymentId: string },
  ): Promise<StoredResponse> {
    const plan = this.engine.planSupplierPayment({ offerId, lender: body.lender, caller })
    if (!plan.ok && plan.error.code === 'offer_not_found') {
      // An offer that reached a final state left memory: the late report of a lender whose lease expired, after the
      // offer was rematched and funded, must learn that its own lease expired (spec section 3).
      const closed = this.#stored('offer', offerId, offerViewFromSnapshot)
      if (closed !== undefined) {
        const leaseOf = (id: string) => this.engine.getLease(id) ?? this.#stored('lease', id, leaseViewFromSnapshot)
        throw new EngineRefusedError(supplierPaymentOnClosedOffer(closed, leaseOf, body.lender))
      }
    }
    const lease = valueOf(plan)
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
    return this.apply(mutation, () => this.engine.recordSupplierPayment({ ...fact, caller }, this.#clock()), () => [proof])
  }

  async repay(mutation: Mutation<RepaymentReceipt>, advanceId: string, body: { txHash: string }): Promise<StoredResponse> {
    const plan = { value: this.#live(this.engine.planRepayment(advanceId), 'advance', advanceId) }
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
      () => [proof],
    )
  }

  async completeJob(mutation: Mutation<JobSettlementReceipt>, caller: Address, jobId: string): Promise<StoredResponse> {
    return this.#locks.run(`job:${jobId}`, async () => {
      const plan = this.#live(this.engine.planJobSettlement({ jobId, caller }), 'job', jobId)
      const job = this.engine.getJob(jobId) as JobView
      const settled = await this.#operatorSend(
        job.network,
        (clients) =>
          sendSettleJob(clients, {
            jobId,
            payouts: plan.advances.map((a) => ({ advanceId: a.advanceId, lender: a.lender, amountAtomic: a.amountAtomic })),
            reserveAtomic: plan.toReserveAtomic,
          }),
        {
          alreadyDone: 'JobAlreadySettled',
          find: (clients) => findEarlierSettlement(clients, { eventName: 'JobSettled', jobId }, job.funding.txHash),
          matches: (found) =>
            found.eventName === 'JobSettled' && found.toLendersAtomic === plan.toLendersAtomic && found.toReserveAtomic === plan.toReserveAtomic,
        },
      )
      return this.apply(mutation, () => this.engine.completeJob({ jobId, caller, network: job.network, txHash: settled }, this.#clock()))
    })
  }

  async failJob(mutation: Mutation<PassportEvent>, caller: Address, jobId: string, body: { reason: string }): Promise<StoredResponse> {
    return this.#locks.run(`job:${jobId}`, async () => {
      try {
        return await this.apply(mutation, () => this.engine.failJob({ jobId, reason: body.reason, caller }, this.#clock()))
      } catch (error) {
        throw refusedWith(error, 'job_not_found') ? this.#missing('job', jobId) : error
      }
    })
  }

  async liquidate(mutation: Mutation<LiquidationReceipt>, caller: Address, advanceId: string): Promise<StoredResponse> {
    return this.#locks.run(`advance:${advanceId}`, async () => {
      const plan = this.#live(this.engine.planLiquidation({ advanceId, caller }, this.#clock()), 'advance', advanceId)
      const advance = this.engine.getAdvance(advanceId) as AdvanceView
      // The contract's liquidate moves revenue, collateral and reserve; backing is liquidated off chain.
      const { fromRevenueAtomic, fromCollateralAtomic, fromReserveAtomic } = recoveryAmounts(plan)
      const amounts = { fromRevenueAtomic, fromCollateralAtomic, fromReserveAtomic }
      const sameAmounts = (found: EarlierSettlement) =>
        found.eventName === 'Liquidated' &&
        found.fromRevenueAtomic === amounts.fromRevenueAtomic &&
        found.fromCollateralAtomic === amounts.fromCollateralAtomic &&
        found.fromReserveAtomic === amounts.fromReserveAtomic
      const liquidated = await this.#operatorSend(
        advance.network,
        (clients) => sendLiquidate(clients, { advanceId, jobId: plan.jobId, lender: advance.lender, asset: advance.asset, ...amounts }),
        {
          alreadyDone: 'AdvanceAlreadyLiquidated',
          find: (clients) => findEarlierSettlement(clients, { eventName: 'Liquidated', advanceId }, advance.payment.txHash),
          matches: sameAmounts,
        },
      )
      return this.apply(mutation, () => this.engine.liquidate({ advanceId, caller, network: advance.network, txHash: liquidated, ...amounts }, this.#clock()))
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

  /** The engine's refusal of an id it does not hold live: never seen (not found), or final in the store (closed). */
  #missing(kind: 'job' | 'offer' | 'advance', id: string): EngineRefusedError {
    const entry = this.store.getSnapshot(kind, id)
    if (entry === undefined) return new EngineRefusedError({ class: 'not_found', code: `${kind}_not_found`, message: `no ${kind} ${id}` })
    return new EngineRefusedError({ class: 'conflict', code: `${kind}_closed`, message: `${kind} ${id} has reached a final state` })
  }

  /** The value of a query on a live actor; an id the engine does not hold is told apart as never seen or closed. */
  #live<T>(result: EngineResult<T>, kind: 'job' | 'offer' | 'advance', id: string): T {
    if (!result.ok && result.error.code === `${kind}_not_found`) throw this.#missing(kind, id)
    return valueOf(result)
  }
}
