// What every operation of the service shares (the operations themselves: credit-service.ts and the concept modules it
// lists). Its dependencies; the ONE run-and-commit path (`apply` for a request, `run` with nobody to answer), which
// runs one engine command and enqueues its changes in the same synchronous section so commits keep the engine's order,
// and tells the durable feed once the disk has them; chain proofs turned into facts and their use recorded; the
// passport writes of a commit; and the reads of jobs, offers and advances, live from the engine or final from the store
// (or ended in a commit not yet written). CreditService extends it; the concept modules take it as their first
// parameter.
import type { Address } from 'viem'
import { advanceViewFromSnapshot, jobViewFromSnapshot, offerViewFromSnapshot, type Engine } from '../engine/engine.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import type { AdvanceView, Change, EngineResult, JobView, OfferView } from '../engine/types.ts'
import type { NetworkClients } from '../chain/clients.ts'
import { findToken, UnknownAssetError, UnknownNetworkError, type NetworkConfig } from '../chain/config.ts'
import { ProofRefusedError } from '../chain/proofs.ts'
import { matchFacilityFacts, readFacilityReceipt, type FacilityFactOf } from '../chain/proofs-v2.ts'
import type { FacilityEventName, FacilityFact } from '../chain/events-v2.ts'
import { ChainUnobservedError, NetworkStoppedError, type ChainFollower } from '../chain/follower.ts'
import type { WalletWatcher } from '../chain/watcher.ts'
import { StoreBudget } from '../http/rate-limit.ts'
import { StoreOverloadedError, type RecordWrite, type Store, type StoredResponse } from '../store/index.ts'
import type { ServiceConfig } from '../app/config.ts'
import type { PassportBook, PassportFact } from '../passport/book.ts'
import { ChainReadBudget } from './chain-read-budget.ts'
import { DurableFeed, type DurableListener } from './durable-feed.ts'
import { LeaseDelivery } from './lease-delivery.ts'
import { ObservedFacts } from './observed-facts.ts'
import type { Mutation } from './mutation.ts'
import { KeyedMutex } from './mutex.ts'
import { isSessionKeyRecord, type SessionKeyRecord } from './session-keys.ts'
import { WaitingRegistrations, walletHasStanding } from './lenders.ts'

/** How many vanished facts the service remembers at most, and for how long (ServiceCore.vanishedFacts). */
const vanishedFactsMax = 10_000
const vanishedFactTtlMs = 10 * 60_000

/** The value of a command or query that succeeded; a refusal is raised. */
export function valueOf<T>(result: EngineResult<T>): T {
  if (!result.ok) throw new EngineRefusedError(result.error)
  return result.value
}

/** The record writes of a command that has none: one function for every such call. */
function noRecords(): RecordWrite[] {
  return []
}

/** A refusal of the engine with this code, or none. */
export function refusedWith(error: unknown, code: string): EngineRefusedError | undefined {
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
  /** Records the passport events of the commands that change an agent's credit standing (src/passport/book.ts). */
  passport: PassportBook
}

export class ServiceCore {
  readonly config: ServiceConfig
  readonly engine: Engine
  readonly store: Store
  readonly networks: readonly NetworkConfig[]
  readonly watcher: WalletWatcher
  readonly passport: PassportBook
  /** Each network's request-path clients (one attempt with its rpcTimeoutMs). */
  readonly clients: ReadonlyMap<string, NetworkClients>
  readonly #clock: () => number
  /** The lenders' session keys (src/service/session-keys.ts), kept beside the engine's records (lenders.ts). */
  readonly sessionKeyRecords
  /** Per client, the lender registrations that wait for their session wallet's first funds (lenders.ts). */
  readonly waitingRegistrations: WaitingRegistrations
  /** First requests with an Idempotency-Key, per wallet, per client and for all: each may store its answer for a day. */
  readonly keyedRequests: StoreBudget
  /** walletHasStanding, made once: asked only when all callers' bucket of a store budget refuses. */
  readonly hasStanding = (address: string): boolean => walletHasStanding(this, address as Address)
  /** Serialises plan -> operator transaction -> record for one job or advance. */
  readonly locks = new KeyedMutex()
  #fatal: ((error: unknown) => void) | undefined
  /** Listeners of durable changes (the event stream, the inspector): told only after the disk has the commit. */
  readonly #durable = new DurableFeed()
  /** Final actors of commits not yet written, by `${kind}:${id}`: see run. */
  readonly #endedInFlight = new Map<string, Change>()
  /** Signs and delivers live leases' authorizations (lenders.ts). */
  readonly leaseDelivery: LeaseDelivery
  /** The chain follower of each served network (started by src/app/app.ts), for health. */
  readonly followers = new Map<string, ChainFollower>()
  /**
   * Per network, the last block of the follower's batches the engine has applied since the start (set in the batch's
   * command, before its commit is durable, unlike the follower's cursor): a job registered now learns from the chain
   * what was posted for it up to there, and the follower applies the rest (src/service/borrowers.ts).
   */
  readonly appliedChainBlocks = new Map<string, bigint>()
  /** The chain reads callers can make the service do, per network and per wallet (src/service/chain-read-budget.ts). */
  readonly chainReads: ChainReadBudget
  /** The contract's events the chain followers read lately, by transaction: proofs of them read no chain (prove). */
  readonly observedFacts = new ObservedFacts()
  /**
   * Per network, the proof keys of facts read from a receipt in a block the chain follower had not applied yet (a
   * report's proof, an operator transaction's events), with that block's number and whether the service counted the
   * fact whatever its use (`sent`: the operator's own transaction, recorded by its route): the follower's batch over
   * that block must hold each one counted, or the chain took back a block the service counted from, and the follower
   * stops (chain-observation.ts, outsider31: the follower's own check of its cursor's hash never sees a block it did
   * not read). In memory: a restart forgets them. `fact`: what was counted (an operator transaction's fact may have
   * moved to a later block meanwhile: chain-observation.ts).
   */
  readonly reportedAhead = new Map<string, Map<string, { blockNumber: bigint; sent: boolean; fact: FacilityFact }>>()
  /**
   * Proof keys of facts noted ahead (reportedAhead) whose block the chain follower passed without them, before their
   * report's commit (the proof not used yet, so the follower could not stop on it), with that block's number: a
   * report still in flight would commit a fact the chain took back. useProof refuses them (reorg39). Short-lived and
   * bounded (vanishedFactsMax, vanishedFactTtlMs): a report commits within moments of its proof; the same transaction
   * mined again in another block is a fact of that block, not refused.
   */
  readonly vanishedFacts = new Map<string, { blockNumber: bigint; untilMs: number }>()
  /**
   * The host (and port) clients reach this deployment at, its SIWE domain: the `service` a backing attestation names
   * (src/chain/attestation.ts). Set by the app once the server listens (with PORT=0 the port is known only then).
   */
  domain = ''

  constructor(deps: ServiceDeps) {
    this.config = deps.config
    this.engine = deps.engine
    this.store = deps.store
    this.networks = deps.networks
    this.watcher = deps.watcher
    this.clients = deps.clients
    this.#clock = deps.clock
    this.passport = deps.passport
    this.leaseDelivery = new LeaseDelivery(deps.networks)
    this.chainReads = new ChainReadBudget({ perSecond: deps.config.chainReadsPerSecond, burst: deps.config.chainReadsBurst }, deps.clock)
    this.sessionKeyRecords = deps.store.collection<SessionKeyRecord>('session-keys', { version: 1, validate: isSessionKeyRecord })
    this.waitingRegistrations = new WaitingRegistrations(deps.config.lendersPendingPerClientMax, deps.config.lenderUnfundedTtlSeconds * 1000)
    const { keyedRequestsPerWalletPerHour: wallet, keyedRequestsPerClientPerHour: client, keyedRequestsPerHour: all } = deps.config
    this.keyedRequests = new StoreBudget({ wallet, client, all }, deps.clock)
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
  onDurable(listener: DurableListener): () => void {
    return this.#durable.subscribe(listener)
  }

  // ------------------------------------------------------------------------------------------------ commit path

  /**
   * Runs `command` and enqueues its changes (plus `records` and, under an Idempotency-Key, the encoded response) in
   * the same synchronous section, then waits for durability. Nothing awaits between the command and the enqueue.
   */
  apply<T>(mutation: Mutation<T>, command: () => EngineResult<T>, records: (value: T) => RecordWrite[] = noRecords): Promise<StoredResponse> {
    // run's own promise: with a mutation it answers with the response, never null.
    return this.run(mutation, command, records) as Promise<StoredResponse>
  }

  /**
   * The passport writes of `facts` for the commit being prepared: numbered and signed now, in the command's
   * synchronous section (called from a `records` function), so they reach the disk in the same commit as the change.
   */
  passportWrites(facts: readonly PassportFact[]): RecordWrite[] {
    return facts.length === 0 ? [] : this.passport.record(facts, this.#clock()).writes
  }

  async run<T>(mutation: Mutation<T> | null, command: () => EngineResult<T>, records: (value: T) => RecordWrite[]): Promise<StoredResponse | null> {
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
    // An actor that ended in this command left the engine's memory, and the store has it only once the commit is
    // written: until then a read finds it here (and, like every read, answers once the commit is durable).
    const ended = this.#holdEnded(changes)
    try {
      // A request that changed nothing stores no answer: a retry runs again and can apply nothing twice. Stored, a
      // no-op any session may send (a dispatch with nothing due) kept ~1.7 KB per request for a day, unbounded.
      const changedSomething = changes.length > 0 || writes.length > 0
      const idempotency = response === null || !changedSomething ? undefined : mutation?.ticket?.complete(response)
      await this.store.commit({ changes, records: writes, idempotency })
    } catch (error) {
      // The engine already holds the change in memory: continuing would acknowledge state the disk lacks.
      this.#fatal?.(error)
      throw error
    } finally {
      if (ended !== null) this.#releaseEnded(ended)
    }
    if (changes.length > 0) this.#durable.tell(changes)
    return response
  }

  /** Holds the final actors of `changes` for reads until their commit is written; null (no allocation) when none is. */
  #holdEnded(changes: readonly Change[]): Map<string, Change> | null {
    let ended: Map<string, Change> | null = null
    for (const change of changes) {
      if (!change.final) continue
      const key = `${change.kind}:${change.id}`
      this.#endedInFlight.set(key, change)
      ended ??= new Map()
      ended.set(key, change)
    }
    return ended
  }

  /** Lets go of the held actors that a later commit of the same actor has not taken over. */
  #releaseEnded(ended: ReadonlyMap<string, Change>): void {
    for (const [key, change] of ended) if (this.#endedInFlight.get(key) === change) this.#endedInFlight.delete(key)
  }

  // ------------------------------------------------------------------------------------------------ helpers

  /** The service's clock (epoch ms), for the parts that prepare a command outside this class (src/reputation). */
  now(): number {
    return this.#clock()
  }

  /**
   * The network's request-path clients (one attempt with its rpcTimeoutMs). Every request that reads its chain takes
   * them here, so a network whose chain follower stopped for good is refused here (refuseStoppedNetwork) before
   * anything is read or changed.
   */
  clientsOf(slug: string): NetworkClients {
    const clients = this.clients.get(slug)
    if (clients === undefined) throw new UnknownNetworkError(slug)
    this.refuseStoppedNetwork(slug)
    return clients
  }

  /**
   * NetworkStoppedError (503 network_stopped, no Retry-After) when the network's chain follower stopped for good
   * (chain_replaced, wrong_chain, older_contract, contract_roles_mismatch, token_mismatch, advance_cap_below_service): nothing of that chain is applied any more, so a request on it would
   * otherwise answer chain_unavailable, "retry", for ever. Requests that read no chain (a credit request, a match) call it
   * themselves.
   */
  refuseStoppedNetwork(slug: string): void {
    const stopped = this.followers.get(slug)?.fatal
    if (stopped !== undefined) throw new NetworkStoppedError(stopped)
  }

  /**
   * The networks whose chain is not observed (ChainFollower.observesChain: the follower stopped, for good or with the
   * service, or has been failing for the health hold): dispatch matches none of their offers (Engine.dispatch), as the
   * match route refuses them (refuseUnobservedNetwork). Undefined while every follower observes its chain.
   */
  unobservedNetworks(): ReadonlySet<string> | undefined {
    let unobserved: Set<string> | undefined
    for (const [slug, follower] of this.followers) if (!follower.observesChain) (unobserved ??= new Set()).add(slug)
    return unobserved
  }

  /** Whether any network's chain is not observed (unobservedNetworks). */
  anyNetworkUnobserved(): boolean {
    for (const follower of this.followers.values()) if (!follower.observesChain) return true
    return false
  }

  /**
   * No lease on a network whose chain is not observed (unobservedNetworks): NetworkStoppedError when its follower
   * stopped for good, else ChainUnobservedError (503 chain_unavailable, with Retry-After: the follower retries).
   */
  refuseUnobservedNetwork(slug: string): void {
    this.refuseStoppedNetwork(slug)
    const follower = this.followers.get(slug)
    if (follower !== undefined && !follower.observesChain) throw new ChainUnobservedError(slug, follower.status().error)
  }

  network(slug: string): NetworkConfig {
    const network = this.networks.find((n) => n.slug === slug)
    if (network === undefined) throw new UnknownNetworkError(slug)
    return network
  }

  token(network: NetworkConfig, symbol: string) {
    try {
      return findToken(network, symbol)
    } catch {
      throw new UnknownAssetError(network.slug, symbol)
    }
  }

  /**
   * The first event `eventName` of the credit contract in `txHash` whose arguments equal `args`, at the network's
   * confirmations; a proof that does not show it is refused (ProofRefusedError). The caller adds `fact.proofKey` to
   * the commit of the command it feeds. A transaction the chain follower read is proved from its facts; otherwise the
   * read is `caller`'s, from the network's chain read budget and its `client`'s part of it (the request's clientKeyOf).
   */
  async prove<E extends FacilityEventName>(slug: string, caller: Address, client: string, eventName: E, txHash: string, args: Partial<FacilityFactOf<E>['args']>): Promise<FacilityFactOf<E>> {
    return (await this.proveIn(slug, caller, client, eventName, txHash, args)).fact
  }

  /** As prove, with every event of the credit contract in that transaction, in log order (what else the call did). */
  async proveIn<E extends FacilityEventName>(
    slug: string, caller: Address, client: string, eventName: E, txHash: string, args: Partial<FacilityFactOf<E>['args']>,
  ): Promise<{ fact: FacilityFactOf<E>; facts: readonly FacilityFact[] }> {
    const network = this.network(slug)
    // A stopped follower's facts may be of a chain since replaced: nothing of that network is proved any more.
    this.refuseStoppedNetwork(slug)
    let facts = this.observedFacts.of(slug, txHash)
    if (facts === undefined) {
      this.chainReads.take(slug, caller, client)
      const read = await readFacilityReceipt(this.clientsOf(slug), network.creditContract, { txHash })
      if (!read.ok) throw new ProofRefusedError(read.reason, read.detail)
      facts = read.value.facts
      this.noteReportedAhead(slug, read.value.blockNumber, facts, false)
    }
    const result = matchFacilityFacts(facts, txHash, eventName, args)
    if (!result.ok) throw new ProofRefusedError(result.reason, result.detail)
    return { fact: result.value[0] as FacilityFactOf<E>, facts }
  }

  /** Remembers `facts` (of block `blockNumber`) for the follower's batch over that block, when it has not applied it yet. */
  noteReportedAhead(slug: string, blockNumber: bigint, facts: readonly FacilityFact[], sent: boolean): void {
    const applied = this.appliedChainBlocks.get(slug) ?? this.followers.get(slug)?.cursor?.blockNumber
    if (applied !== undefined && blockNumber <= applied) return
    let ahead = this.reportedAhead.get(slug)
    if (ahead === undefined) this.reportedAhead.set(slug, (ahead = new Map()))
    // A report of an operator transaction (anyone may name its hash, even to a route that refuses it) keeps it counted.
    for (const fact of facts) ahead.set(fact.proofKey, { blockNumber, sent: sent || ahead.get(fact.proofKey)?.sent === true, fact })
  }

  /** Notes that the follower passed block `blockNumber` without the fact `proofKey` a report read there (vanishedFacts). */
  noteVanishedFact(proofKey: string, blockNumber: bigint): void {
    const nowMs = this.#clock()
    for (const [key, { untilMs }] of this.vanishedFacts) {
      if (untilMs > nowMs && this.vanishedFacts.size < vanishedFactsMax) break
      this.vanishedFacts.delete(key)
    }
    this.vanishedFacts.delete(proofKey)
    this.vanishedFacts.set(proofKey, { blockNumber, untilMs: nowMs + vanishedFactTtlMs })
  }

  /**
   * Re-checked synchronously right before the command: another request may have used the proof meanwhile, or the
   * follower passed its block without it (vanishedFacts: not confirmed, the report may be sent again).
   */
  useProof(fact: { proofKey: string; blockNumber?: bigint }, usedBy: string): RecordWrite {
    if (this.store.proofs.has(fact.proofKey)) throw new ProofRefusedError('already_used', `the proof ${fact.proofKey} was already used`)
    const vanished = this.vanishedFacts.get(fact.proofKey)
    if (vanished !== undefined && vanished.untilMs > this.#clock() && (fact.blockNumber === undefined || fact.blockNumber === vanished.blockNumber)) {
      throw new ProofRefusedError(
        'too_few_confirmations',
        `the event ${fact.proofKey} was read in block ${vanished.blockNumber}, whose chain no longer holds it (reorganised): not confirmed; send the same request again once its transaction is mined at the confirmations (nothing was recorded)`,
      )
    }
    return this.store.proofs.addOp(fact.proofKey, { usedBy, usedAtMs: this.#clock() })
  }

  // ------------------------------------------------------------------------------------------------ reads

  /** A job, offer or advance by id: live from the engine, final from the store; undefined when never seen. */
  view(kind: 'job', id: string): JobView | undefined
  view(kind: 'offer', id: string): OfferView | undefined
  view(kind: 'advance', id: string): AdvanceView | undefined
  view(kind: 'job' | 'offer' | 'advance', id: string): JobView | OfferView | AdvanceView | undefined {
    if (kind === 'job') return this.engine.getJob(id) ?? this.stored('job', id, jobViewFromSnapshot)
    if (kind === 'offer') return this.engine.getOffer(id) ?? this.stored('offer', id, offerViewFromSnapshot)
    return this.engine.getAdvance(id) ?? this.stored('advance', id, advanceViewFromSnapshot)
  }

  /** A final actor, read from the store (final actors leave memory). */
  stored<V>(kind: 'job' | 'offer' | 'lease' | 'advance', id: string, view: (snapshot: unknown) => V): V | undefined {
    const inFlight = this.inFlight(kind, id, view)
    if (inFlight !== undefined) return inFlight
    const entry = this.store.getSnapshot(kind, id)
    return entry === undefined ? undefined : view(entry.snapshot)
  }

  /** An actor that ended in a commit not yet on disk: its final snapshot, which the store does not have yet. */
  inFlight<V>(kind: 'job' | 'offer' | 'lease' | 'advance', id: string, view: (snapshot: unknown) => V): V | undefined {
    const ended = this.#endedInFlight.get(`${kind}:${id}`)
    return ended === undefined ? undefined : view(ended.record)
  }

  /** The ids of the actors of `kind` that ended in commits not yet on disk (each read by inFlight). */
  endedInFlightIds(kind: 'job' | 'offer' | 'lease' | 'advance'): string[] {
    const prefix = `${kind}:`
    const ids: string[] = []
    for (const key of this.#endedInFlight.keys()) if (key.startsWith(prefix)) ids.push(key.slice(prefix.length))
    return ids
  }

  /** The engine's refusal of an id it does not hold live: never seen (not found), or final in the store (closed). */
  missing(kind: 'job' | 'offer' | 'advance', id: string): EngineRefusedError {
    const entry = this.store.getSnapshot(kind, id)
    if (entry === undefined) return new EngineRefusedError({ class: 'not_found', code: `${kind}_not_found`, message: `no ${kind} ${id}` })
    return new EngineRefusedError({ class: 'conflict', code: `${kind}_closed`, message: `${kind} ${id} has reached a final state` })
  }

  /** The value of a query on a live actor; an id the engine does not hold is told apart as never seen or closed. */
  live<T>(result: EngineResult<T>, kind: 'job' | 'offer' | 'advance', id: string): T {
    if (!result.ok && result.error.code === `${kind}_not_found`) throw this.missing(kind, id)
    return valueOf(result)
  }
}
