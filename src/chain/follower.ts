// The chain follower (design-chain.md, "The chain follower"): per network, one loop reads the credit contract's events
// at the network's confirmations and hands them, block range by block range, to a consumer that commits their effects
// and the new cursor in one durable commit. The consumer's commit IS the cursor: the follower advances only when the
// consumer resolves, and delivers the same range again when it rejects, so no range is missed or counted twice,
// across restarts too (resume from the stored cursor).
//
// One poll: head -> target = head - (confirmations - 1) (a block with N confirmations is at most head - N + 1) -> the
// cursor block must still have its stored hash (else the chain was replaced or reorganised deeper than the
// confirmations: the follower stops with a clear error instead of reading another history; checked again only when the
// head's hash changed; a head below the cursor, or the cursor's block not found, is a node not yet synced and is waited
// for until it lasts headBehindMaxMs) -> target's hash and time
// -> eth_getLogs over (cursor, target] in chunks, cut after the last whole block within eventsPerBatchMax -> one batch.
// Blocks within logsSafeDepth of the head are read one by one, each by its hash (see #readEvents): a node of a
// load-balanced provider behind the one that answered the head answers a range with the logs up to its own head only,
// silently, and one block by a hash it has not seen with an error; so no event is skipped behind a lagging node.
// Every RPC call has a short deadline; failures back off and mark the network degraded; recovery resumes from the
// cursor. A call unanswered for rpcStalledMs counts as a failure before its deadline (a hanging RPC), and so does a
// head whose block is older than headStaleMs by the wall clock (a chain that stopped). Ranges without events are delivered too, at most every chainTimeIntervalMs, because they advance the chain's
// observed time (what expires leases).
import { EventEmitter } from 'node:events'
import { BlockNotFoundError, type Address, type Block, type Hex } from 'viem'
import type { NetworkConfig } from './config.ts'
import { decodeFacilityLog, type FacilityEvent, type FacilityEventName, type MinedLog } from './events-v2.ts'
import { createPollingClients, SharedHead, type CallObserver, type ChainHead, type PollingClients } from './poll-transport.ts'
import { advanceCapMismatches, contractRoleMismatches, tokenMismatches, type DeploymentMismatch } from './deployment-checks.ts'
import { absentContractMessage, olderContractMessage, probeCreditContract } from './reclaim-window.ts'

export type FollowedEventName = FacilityEventName

/** One decoded event of the credit contract (the same decoding as a report's proof: src/chain/events-v2.ts). */
export type FollowedEvent = FacilityEvent

/** The last block whose events were committed: where the next batch starts, and the hash it must still have. */
export type FollowerCursor = { blockNumber: bigint; blockHash: Hex; blockTimeMs: number }

/** Blocks fromBlock..toBlock (inclusive), every event of the contract in them, in chain order. */
export type ChainBatch = {
  network: string
  fromBlock: bigint
  toBlock: bigint
  toBlockHash: Hex
  /** The chain's time at toBlock: what the consumer may take as the observed chain time. */
  toBlockTimeMs: number
  events: FollowedEvent[]
}

export type FollowerState = 'starting' | 'ok' | 'degraded' | 'stopped'

export type FollowerFatalCode = 'chain_replaced' | 'wrong_chain' | 'older_contract' | 'contract_roles_mismatch' | 'token_mismatch' | 'advance_cap_below_service'

/**
 * The RPC answered a chain behind what the follower read before (its head below the cursor, or a block read earlier
 * not found): a node that has not seen those blocks yet, typically one node of a load-balanced endpoint lagging the
 * others, or two reads answered out of order. The follower waits (degraded, retrying) and applies nothing; only when it
 * persists (headBehindMaxMs) is the chain taken as replaced.
 */
export class ChainBehindError extends Error {
  override readonly name = 'ChainBehindError'
}

/**
 * A call of the follower (its own, or the head it waits for) unanswered for rpcStalledMs: the follower counts as failing
 * (degraded, shown once that lasts the health hold) while the call goes on to its deadline, and follows again (ok) if
 * it is answered. A hanging RPC (the connection accepted, never answered) was seen only at the call's deadline (10 s).
 */
export class RpcStalledError extends Error {
  override readonly name = 'RpcStalledError'
  constructor(network: string, stalledMs: number, timeoutMs: number) {
    super(`the RPC of ${network} has not answered a call of the chain follower for ${stalledMs} ms (a hanging RPC?): counted as failing until it answers (the call is let run to its ${timeoutMs} ms deadline)`)
  }
}

/**
 * The RPC's head is older than headStaleMs by the wall clock: a chain that does not move (its node lost its peers, a
 * sequencer down), whose time, which expires leases, and payments are not seen. The follower applies what it reads
 * and counts as failing (degraded once that lasts the health hold) until a newer head comes.
 */
export class ChainStaleError extends Error {
  override readonly name = 'ChainStaleError'
  constructor(network: string, head: ChainHead, ageMs: number, staleMs: number) {
    super(
      `the head of ${network}'s RPC, block ${head.number}, was mined ${Math.round(ageMs / 1000)} s ago (${new Date(head.timeMs).toISOString()}), more than ${staleMs} ms: ` +
        'the chain it serves does not move (a node without peers, a sequencer down?); no lease is made on it until a newer block comes',
    )
  }
}

/** A condition the follower will not resolve by retrying: the operator must look (health says degraded meanwhile). */
export class FollowerFatalError extends Error {
  override readonly name = 'FollowerFatalError'
  constructor(
    readonly network: string,
    readonly code: FollowerFatalCode,
    message: string,
  ) {
    super(`chain follower of ${network} stopped (${code}): ${message}`)
  }
}

/**
 * The networks file's fields the chain contradicts (a network the start-up could not check), and what to fix in the
 * file (none: the messages say it); then restart.
 */
function mismatchMessage(mismatches: readonly DeploymentMismatch[], fix?: string): string {
  return `${mismatches.map(({ field, message }) => `networks file field ${field}: ${message}`).join('; ')}; ${fix === undefined ? '' : `${fix} in the networks file, `}then restart`
}

/**
 * A request that needs a network whose chain follower stopped (FollowerFatalError): the service no longer follows that
 * chain and no retry changes that (an operator must act, /health says what), so it is refused as such (503
 * network_stopped, without Retry-After) instead of as an outage to retry (chain_unavailable). Nothing was changed.
 */
export class NetworkStoppedError extends Error {
  override readonly name = 'NetworkStoppedError'
  constructor(readonly stopped: FollowerFatalError) {
    super(`${stopped.message}; nothing is served on ${stopped.network} until an operator acts (see /health): do not retry`)
  }
}

/**
 * A lease asked for on a network whose chain the follower has not observed for the health hold
 * (ChainFollower.observesChain): 503 chain_unavailable with Retry-After, nothing changed. A lease there would end only
 * once the chain is seen past its deadline, holding its lender's capacity and its offer until then.
 */
export class ChainUnobservedError extends Error {
  override readonly name = 'ChainUnobservedError'
  constructor(readonly network: string, failure: string | undefined) {
    super(`the chain of network ${network} is not observed${failure === undefined ? '' : ` (${failure})`}: no lease is made on it until it is; nothing changed, retry later (see /health)`)
  }
}

export type FollowerOptions = {
  network: NetworkConfig
  /** The credit contract whose events are followed. */
  contract: Address
  /**
   * Check, before anything is read, that `contract` is a deployment with reclaimJob (probeCreditContract), and stop
   * with 'older_contract' when it is older; a node with no code there yet is waited for (degraded, probed again). A
   * current contract is then checked as the start-up checks it (src/chain/deployment-checks.ts): keys that are not its
   * operator() / leaseSigner() stop the follower with 'contract_roles_mismatch', a token the chain contradicts (no
   * contract, other decimals, another EIP-712 domain) with 'token_mismatch', each naming the networks file's field, and
   * a contract whose advancesPerJobMax() is below the service's (`advancesPerJobMax`) with 'advance_cap_below_service'.
   * For a network whose start-up probe could not reach the RPC or found no code (src/app/app.ts).
   */
  refuseOlderContract?: boolean
  /**
   * The service's advancesPerJobMax (engine config), which the credit contract's own cap must not be below: checked
   * with refuseOlderContract (src/chain/deployment-checks.ts advanceCapMismatches). Default: not checked.
   */
  advancesPerJobMax?: number
  /** The stored cursor (resume after it), or undefined to start at startBlock. */
  cursor: FollowerCursor | undefined
  /** First block read when there is no cursor. Default: the network's deploymentBlock (networks file), else 0. */
  startBlock?: bigint
  /** Commits the batch's effects and its cursor (toBlock, toBlockHash, toBlockTimeMs) durably in one commit. */
  consume(batch: ChainBatch): Promise<void>
  /** Default: the network's confirmations. */
  confirmations?: number
  /**
   * Blocks less than this many below the head read are read one by one by hash (their header, then eth_getLogs by
   * blockHash), the older ones by range (see #readEvents). Default: the network's logsSafeDepth (networks file), else
   * logsSafeDepthDefault. 0: every block by range (an RPC of one node, which cannot lag itself).
   */
  logsSafeDepth?: number
  /** Largest block range of one eth_getLogs (providers cap it). Default 2,000. */
  logBlockRangeMax?: bigint
  /** Largest block range of one batch (bounds one commit). Default 10 chunks. */
  batchBlockRangeMax?: bigint
  /**
   * Most events of one batch: the consumer applies a batch as one command, whose changes the engine bounds (the
   * service passes src/engine/chain-facts.ts chainEventsPerBatchMax). A range holding more is cut after the last
   * block whose events all fit, and the rest comes in the next poll at once; a block is never split, so a first block
   * holding more than this alone is delivered whole (see #readEvents). Default: unbounded.
   */
  eventsPerBatchMax?: number
  /**
   * How many of eventsPerBatchMax one event takes (the service passes src/engine/chain-facts.ts chainEventWeight: an
   * event that makes more changes than most counts as several). Default 1 for every event.
   */
  eventWeight?: (event: FollowedEvent) => number
  /**
   * Deadline of one RPC call. Default 10 s (followerRpcTimeoutMsDefault): the follower is not on any request path, so
   * the request path's fail-fast deadline would only keep it in back-off behind a slow but working RPC.
   */
  rpcTimeoutMs?: number
  /**
   * A call unanswered this long (its own, or the head it waits for) counts as a failure, while the call goes on to
   * rpcTimeoutMs (see RpcStalledError). Default: the network's rpcStalledMs (networks file), else
   * followerRpcStalledMsDefault.
   */
  rpcStalledMs?: number
  /**
   * A head whose block time is older than this by the wall clock counts as a failure (ChainStaleError); undefined: no
   * such rule. Default: headStaleMsOf(network).
   */
  headStaleMs?: number | undefined
  /** Delay between polls while healthy. Default: the network's pollingIntervalMs. */
  pollIntervalMs?: number
  /**
   * The network's head, read for the follower and the wallet watcher together (the service shares one); a poll takes
   * a head read less than one poll interval before it. Default: the follower's own.
   */
  head?: SharedHead | undefined
  /**
   * How long the RPC may answer a chain behind the follower (see ChainBehindError) before the follower stops with
   * 'chain_replaced', on at least chainBehindReadsMin fresh reads in a row. Default: the network's headBehindMaxMs
   * (networks file), else headBehindMaxMsOf.
   */
  headBehindMaxMs?: number
  /**
   * How long the follower must have been failing before its health says degraded, and following again before it says
   * ok (see health()). Default: healthHoldMsOf(network).
   */
  healthHoldMs?: number
  /** Ranges without events are delivered at most this often. Default 1,000 ms. */
  chainTimeIntervalMs?: number
  backoffInitialMs?: number
  backoffMaxMs?: number
  /** The clock of the idle delivery interval (tests inject one). */
  nowMs?: () => number
}

export type FollowerEvents = {
  batch: [ChainBatch]
  degraded: [{ network: string; error: unknown }]
  recovered: [{ network: string; cursor: FollowerCursor | undefined }]
  consumerFailed: [{ network: string; fromBlock: bigint; toBlock: bigint; error: unknown }]
  fatal: [FollowerFatalError]
}

export const logBlockRangeMaxDefault = 2_000n

/**
 * How far below the head every node of a provider has surely seen a block: 64 blocks, two epochs of Ethereum (12.8
 * minutes), more than a minute on a 1-second chain; providers take a node lagging that far out of their rotation. The
 * blocks above it cost two calls each (header and logs), instead of one eth_getLogs per poll: on a chain whose
 * confirmations are fewer, every block is read so in steady state.
 */
export const logsSafeDepthDefault = 64

/**
 * Reads of a chain behind the follower, in a row, before it may be taken as replaced: with the time bound, the first
 * answers of a node that was behind when it last answered are not enough (a failed step starts the count again: #run).
 */
export const chainBehindReadsMin = 3

/**
 * The default bound of a chain behind the follower: ten polling intervals, at least 30 s. Nodes of one provider lag
 * each other by a block or two (on a 12 s chain, up to half a minute); a devnet restarted without its state stays
 * behind for good.
 */
export function headBehindMaxMsOf(network: NetworkConfig): number {
  return network.headBehindMaxMs ?? Math.max(30_000, 10 * network.pollingIntervalMs)
}
export const chainTimeIntervalMsDefault = 1_000

/**
 * The health hold: the network's healthHoldMs (networks file), by default three polling intervals, at least 1 s. A
 * node of a load-balanced RPC trailing the others stalls the follower (a block it has not seen, degraded) until it has
 * the block, a block or two, and the next poll goes on (ok): without a hold, /health flipped between degraded and ok
 * at every block.
 */
export function healthHoldMsOf(network: NetworkConfig): number {
  return network.healthHoldMs ?? Math.max(1_000, 3 * network.pollingIntervalMs)
}

/** See FollowerOptions.rpcTimeoutMs. */
export const followerRpcTimeoutMsDefault = 10_000

/**
 * How long a call may go unanswered before the follower counts as failing: 2 s, the wallet watcher's deadline (the
 * head it shares is read under it), which a working RPC answers well within; with the health hold, a hanging RPC
 * shows degraded after 2 s + the hold instead of the 10 s deadline + the hold. One slow call shorter than 2 s + the
 * hold does not show.
 */
export const followerRpcStalledMsDefault = 2_000

/** Block times (ms) of known chains, by chainId: Ethereum and its testnets, and the OP Stack and Polygon PoS chains. */
export const knownBlockTimeMs: ReadonlyMap<number, number> = new Map([
  [1, 12_000], [11155111, 12_000], [17000, 12_000], [560048, 12_000],
  [10, 2_000], [11155420, 2_000], [8453, 2_000], [84532, 2_000],
  [137, 2_000], [80002, 2_000],
])

export const headStaleBlocksDefault = 10

/**
 * How old the head's block may be (by the wall clock) before the chain is taken as stopped: headStaleBlocks (10)
 * block times, plus a second (timestamps are whole seconds) and a polling interval (a poll may take a head read that
 * long before it). Ethereum: 2 min 2 s; Base: 22 s; the devnet (a block a second, mined while idle too): 11 s.
 * Undefined (no such rule) for a chain of unknown block time without blockTimeMs: one that mines only on transactions
 * (an anvil without --block-time) does not move while idle, and is not stopped for it.
 */
export function headStaleMsOf(network: NetworkConfig): number | undefined {
  const blockTimeMs = network.blockTimeMs ?? knownBlockTimeMs.get(network.chainId)
  if (blockTimeMs === undefined) return undefined
  return (network.headStaleBlocks ?? headStaleBlocksDefault) * blockTimeMs + 1_000 + network.pollingIntervalMs
}

/** Follows one network's credit contract. start() runs the loop; stop() ends it after the current step. */
export class ChainFollower extends EventEmitter<FollowerEvents> {
  readonly network: string
  readonly #clients: PollingClients
  readonly #sharedHead: SharedHead
  readonly #options: FollowerOptions
  readonly #confirmations: bigint
  readonly #logRange: bigint
  readonly #logsSafeDepth: bigint
  readonly #batchRange: bigint
  readonly #eventsMax: number
  readonly #eventWeight: (event: FollowedEvent) => number
  readonly #chainTimeIntervalMs: number
  readonly #headBehindMaxMs: number
  readonly #healthHoldMs: number
  readonly #rpcTimeoutMs: number
  readonly #rpcStalledMs: number
  readonly #headStaleMs: number | undefined
  readonly #nowMs: () => number
  /** Calls unanswered now (the client's own, and the head waited for): see #rearmStall. */
  #callsOutstanding = 0
  #stallTimer: NodeJS.Timeout | undefined = undefined
  readonly #calls: CallObserver = {
    started: () => {
      this.#callsOutstanding++
      this.#rearmStall()
    },
    settled: () => {
      this.#callsOutstanding--
      this.#rearmStall()
    },
  }
  /** The head of this step when it is stale (headStaleMs): the step fails once it has applied what it read. */
  #staleHead: { head: ChainHead; ageMs: number } | undefined = undefined
  #cursor: FollowerCursor | undefined
  /** Blocks after the cursor up to this one were read and hold no event (not yet delivered: chain time not due). */
  #scanned: FollowerCursor | undefined = undefined
  /** The chain's head at the last poll that found the cursor on it: with the cursor, the follower's lag (health). */
  #head: bigint | undefined = undefined
  /** Since when (nowMs) and on how many reads in a row the RPC has answered a chain behind the follower. */
  #behind: { sinceMs: number; reads: number } | undefined = undefined
  /** The hash of the head under which the cursor and the scanned blocks were last checked, undefined once one moved. */
  #checkedHead: Hex | undefined = undefined
  #state: FollowerState = 'starting'
  /** Since when (nowMs) #state is what it is: health() shows it once it has lasted the hold. */
  #stateSinceMs: number
  /** The state health() shows: #state once it has lasted healthHoldMs (stopped, and the first ok, at once). */
  #shown: FollowerState = 'starting'
  /** The last failure's message, shown while health() says degraded (also once the follower runs again, within the hold). */
  #lastFailure: string | undefined = undefined
  /** The RPC's chain (and the contract, refuseOlderContract) checked: until then every step checks first. */
  #chainChecked = false
  #error: unknown = undefined
  #lastDeliveryMs = Number.NEGATIVE_INFINITY
  #running = false
  #loop: Promise<void> | undefined
  #wake: (() => void) | undefined

  constructor(options: FollowerOptions) {
    super()
    this.#options = options
    this.network = options.network.slug
    this.#rpcTimeoutMs = options.rpcTimeoutMs ?? followerRpcTimeoutMsDefault
    this.#rpcStalledMs = options.rpcStalledMs ?? options.network.rpcStalledMs ?? followerRpcStalledMsDefault
    this.#headStaleMs = 'headStaleMs' in options ? options.headStaleMs : headStaleMsOf(options.network)
    this.#clients = createPollingClients(options.network, { timeoutMs: this.#rpcTimeoutMs, calls: this.#calls })
    this.#sharedHead = options.head ?? new SharedHead(this.#clients)
    this.#confirmations = BigInt(options.confirmations ?? options.network.confirmations)
    if (this.#confirmations < 1n) throw new RangeError('confirmations must be at least 1')
    this.#logRange = options.logBlockRangeMax ?? logBlockRangeMaxDefault
    if (this.#logRange < 1n) throw new RangeError('logBlockRangeMax must be at least 1')
    this.#logsSafeDepth = BigInt(options.logsSafeDepth ?? options.network.logsSafeDepth ?? logsSafeDepthDefault)
    if (this.#logsSafeDepth < 0n) throw new RangeError('logsSafeDepth must be at least 0')
    this.#batchRange = options.batchBlockRangeMax ?? this.#logRange * 10n
    this.#eventsMax = options.eventsPerBatchMax ?? Number.POSITIVE_INFINITY
    if (!(this.#eventsMax >= 1)) throw new RangeError('eventsPerBatchMax must be at least 1')
    this.#eventWeight = options.eventWeight ?? (() => 1)
    this.#chainTimeIntervalMs = options.chainTimeIntervalMs ?? chainTimeIntervalMsDefault
    this.#headBehindMaxMs = options.headBehindMaxMs ?? headBehindMaxMsOf(options.network)
    this.#healthHoldMs = options.healthHoldMs ?? healthHoldMsOf(options.network)
    this.#nowMs = options.nowMs ?? Date.now
    this.#stateSinceMs = this.#nowMs()
    this.#cursor = options.cursor
  }

  /** The last committed block, or undefined before the first batch of a fresh start. */
  get cursor(): FollowerCursor | undefined {
    return this.#cursor
  }

  /** This step's state: ok, degraded (RPC failing, retrying), stopped (fatal, or stop()), with the last error. */
  status(): { network: string; state: FollowerState; cursor: FollowerCursor | undefined; head: bigint | undefined; error: string | undefined } {
    return { network: this.network, state: this.#state, cursor: this.#cursor, head: this.#head, error: this.#error === undefined ? undefined : firstLine(this.#error) }
  }

  /**
   * What /health shows, steadier than status(): degraded once the follower has been failing for healthHoldMs, ok
   * again once it has been following for as long; stopped at once, and the first ok after the start at once. A
   * failure shorter than the hold (a trailing node's block waited for, one RPC error) does not show; a follower that
   * alternates within the hold shows the state it had before, so an operator's monitor sees at most one change per
   * hold. The error is the last failure's while it shows degraded.
   */
  health(): { state: FollowerState; error: string | undefined } {
    this.#settleShown()
    const error = this.#shown === 'ok' ? undefined : this.#error === undefined ? this.#lastFailure : firstLine(this.#error)
    return { state: this.#shown, error }
  }

  /** The shown state becomes the step's once that has lasted the hold (stopped, and the first ok, at once). */
  #settleShown(): void {
    const state = this.#state
    if (state === this.#shown) return
    const firstOk = state === 'ok' && this.#shown === 'starting'
    if (state === 'stopped' || firstOk || this.#nowMs() - this.#stateSinceMs >= this.#healthHoldMs) this.#shown = state
  }

  /** The step's state changes: the one it leaves is shown first if it lasted the hold (health() may not have asked). */
  #enter(state: FollowerState): void {
    this.#settleShown()
    this.#state = state
    this.#stateSinceMs = this.#nowMs()
  }

  /**
   * Whether leases may be made on the network (ServiceCore.unobservedNetworks): false once the follower has been failing
   * for healthHoldMs, the moment health() shows degraded, and while stopped; true again at its first step that reads
   * the chain (health() still shows degraded for the hold then: it is steadied for monitors, matching need not wait). A
   * stall shorter than the hold (a trailing node's block, one RPC error) does not count, as it does not show. Every
   * match asks: no clock read while the follower follows.
   */
  get observesChain(): boolean {
    const state = this.#state
    if (state === 'degraded') return this.#nowMs() - this.#stateSinceMs < this.#healthHoldMs
    return state !== 'stopped'
  }

  /** The state status() shows, without its copy of the rest. */
  get state(): FollowerState {
    return this.#state
  }

  /** Why the follower stopped for good, or undefined while it runs (or after stop()). */
  get fatal(): FollowerFatalError | undefined {
    return this.#error instanceof FollowerFatalError ? this.#error : undefined
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loop = this.#run()
  }

  async stop(): Promise<void> {
    this.#running = false
    // Cleared, a timer is not armed again by refresh(): calls settling after this change nothing.
    clearTimeout(this.#stallTimer)
    this.#wake?.()
    await this.#loop
    if (this.#state !== 'stopped') this.#enter('stopped')
  }

  async #run(): Promise<void> {
    const backoffInitialMs = this.#options.backoffInitialMs ?? 100
    const backoffMaxMs = this.#options.backoffMaxMs ?? 2_000
    let backoffMs = backoffInitialMs
    while (this.#running) {
      let delayMs = this.#pollIntervalMs()
      try {
        if (!this.#chainChecked) await this.#checkChain()
        const more = await this.#poll()
        const stale = this.#staleHead
        // A stale head is read and applied as any (nothing of it is wrong, only old), and counted as a failure; the RPC
        // answers, so the next poll comes after the interval, not a back-off.
        if (stale !== undefined) this.#failing(new ChainStaleError(this.network, stale.head, stale.ageMs, this.#headStaleMs as number))
        else if (this.#state !== 'ok') {
          const recovered = this.#state === 'degraded'
          this.#enter('ok')
          this.#error = undefined
          if (recovered) this.emit('recovered', { network: this.network, cursor: this.#cursor })
        }
        backoffMs = backoffInitialMs
        if (more) delayMs = 0
      } catch (error) {
        if (error instanceof FollowerFatalError) {
          this.#enter('stopped')
          this.#error = error
          this.#running = false
          this.emit('fatal', error)
          return
        }
        // Behind is measured over answers in a row: a step the RPC did not answer says nothing of the chain, and a node
        // back from an outage (restarted, syncing) answers behind for a while; counted across the outage, two such
        // answers after an outage longer than the bound took the chain as replaced.
        if (!(error instanceof ChainBehindError)) this.#behind = undefined
        this.#failing(error)
        delayMs = backoffMs
        backoffMs = Math.min(backoffMs * 2, backoffMaxMs)
      }
      if (!this.#running) break
      if (delayMs > 0) await this.#sleep(delayMs)
    }
  }

  /** The step failed (or counts as failing): degraded from now, unless it already was (the hold counts from then). */
  #failing(error: unknown): void {
    this.#error = error
    this.#lastFailure = firstLine(error)
    if (this.#state !== 'degraded') {
      this.#enter('degraded')
      this.emit('degraded', { network: this.network, error })
    }
  }

  /**
   * Restarts the stall timer at each call sent or settled: when it fires with a call unanswered, that call has been
   * outstanding for rpcStalledMs at least (each call still unanswered was sent before the last event). The follower
   * then counts as failing (RpcStalledError) and the call goes on: answered, the step ends ok; past its deadline, it
   * fails as before. One timer, refreshed, rather than one per call.
   */
  #rearmStall(): void {
    if (this.#stallTimer !== undefined) {
      this.#stallTimer.refresh()
      return
    }
    this.#stallTimer = setTimeout(() => {
      if (this.#callsOutstanding === 0 || !this.#running || this.#state === 'degraded' || this.#state === 'stopped') return
      this.#failing(new RpcStalledError(this.network, this.#rpcStalledMs, this.#rpcTimeoutMs))
    }, this.#rpcStalledMs)
    this.#stallTimer.unref()
  }

  /** The shared head read after `notBeforeMs`, waited for as a call of the follower's (see #rearmStall). */
  async #headAfter(notBeforeMs: number): Promise<ChainHead> {
    this.#calls.started()
    try {
      return await this.#sharedHead.latest(notBeforeMs)
    } finally {
      this.#calls.settled()
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms)
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
      this.#wake = done
    }).finally(() => {
      this.#wake = undefined
    })
  }

  async #checkChain(): Promise<void> {
    const chainId = await this.#clients.publicClient.getChainId()
    if (chainId !== this.#options.network.chainId) {
      throw new FollowerFatalError(this.network, 'wrong_chain', `the RPC serves chain ${chainId}, the network is configured as ${this.#options.network.chainId}`)
    }
    if (this.#options.refuseOlderContract === true) {
      const { verdict, head, advancesPerJobMax: contractMax } = await probeCreditContract(this.#clients.publicClient, this.#options.contract)
      if (verdict === 'older') throw new FollowerFatalError(this.network, 'older_contract', olderContractMessage(this.network, this.#options.contract))
      if (verdict === 'absent') throw new Error(absentContractMessage(this.network, this.#options.contract, head))
      const network = this.#options.network
      const serviceMax = this.#options.advancesPerJobMax
      const cap = serviceMax === undefined ? [] : advanceCapMismatches(network, contractMax, serviceMax)
      if (cap.length > 0) throw new FollowerFatalError(this.network, 'advance_cap_below_service', mismatchMessage(cap))
      const roles = await contractRoleMismatches(this.#clients.publicClient, network, head)
      if (roles.length > 0) throw new FollowerFatalError(this.network, 'contract_roles_mismatch', mismatchMessage(roles, 'set the key of the contract\'s role, or configure the contract deployed with these keys'))
      const tokens = await tokenMismatches(this.#clients.publicClient, network, head)
      if (tokens.length > 0) throw new FollowerFatalError(this.network, 'token_mismatch', mismatchMessage(tokens, 'correct the token\'s entry to what its contract answers'))
    }
    this.#chainChecked = true
  }

  #pollIntervalMs(): number {
    return this.#options.pollIntervalMs ?? this.#options.network.pollingIntervalMs
  }

  /** One step; true when there is more to read at once (the batch's range was capped). */
  async #poll(): Promise<boolean> {
    // The head's hash, not only its number: under the head the last poll checked, the cursor and the scanned blocks
    // are still the chain's (a block's hash commits to all its ancestors), so an unchanged head costs this one call
    // instead of one more per block checked (most polls: a devnet polls every 50 ms and mines a block a second). A poll
    // that moves the cursor or the scanned block forgets that head: the blocks it read after the head may be of another
    // branch, so the next poll checks them again. A head read shortly before this poll began (by the wallet watcher) is
    // as good as one read now. A head may be lower than an earlier one (a lagging node, reads answered out of order):
    // below the cursor, that is the chain behind (#chainBehind).
    // While the chain is behind (below), every poll reads a head of its own: each read counted is a fresh one.
    const headFromMs = this.#behind === undefined ? this.#sharedHead.nowMs() - this.#pollIntervalMs() : this.#sharedHead.nowMs()
    let headBlock = await this.#headAfter(headFromMs)
    const cursor = this.#cursor
    const scanned = this.#scanned
    // A shared head below the cursor may be an older read answered late, or another node's: read it afresh first.
    if (cursor !== undefined && headBlock.number < cursor.blockNumber && this.#behind === undefined) headBlock = await this.#headAfter(this.#sharedHead.nowMs())
    const head = headBlock.number
    if (headBlock.hash !== this.#checkedHead) {
      if (cursor !== undefined) await this.#checkContinuity(cursor, head)
      if (scanned !== undefined) await this.#checkHash(scanned)
      this.#checkedHead = headBlock.hash
    }
    this.#head = head
    this.#behind = undefined
    // The chain's timestamps are wall-clock times: compared with the wall clock, not nowMs (a test's clock).
    const ageMs = Date.now() - headBlock.timeMs
    this.#staleHead = this.#headStaleMs !== undefined && ageMs > this.#headStaleMs ? { head: headBlock, ageMs } : undefined
    const fromBlock = cursor === undefined ? (this.#options.startBlock ?? this.#options.network.deploymentBlock ?? 0n) : cursor.blockNumber + 1n
    const target = head - (this.#confirmations - 1n)
    const limit = fromBlock + this.#batchRange - 1n
    const scanFrom = scanned === undefined ? fromBlock : scanned.blockNumber + 1n
    let toBlock = target < limit ? target : limit
    let end: FollowerCursor
    let events: FollowedEvent[] = []
    let stalled = false
    if (toBlock >= scanFrom) {
      const nearFrom = head - this.#logsSafeDepth + 1n
      const read = await this.#readEvents(scanFrom, toBlock, nearFrom > scanFrom ? nearFrom : scanFrom, scanned ?? cursor)
      events = read.events
      end = read.end
      toBlock = end.blockNumber
      stalled = read.stalled
    } else if (scanned !== undefined) {
      toBlock = scanned.blockNumber
      end = scanned
    } else {
      return false
    }
    // A range without events waits (and grows) until chain time is due: one commit per interval, not one per block.
    // What was read of it is remembered, so that it is not read again.
    if (events.length === 0 && this.#nowMs() - this.#lastDeliveryMs < this.#chainTimeIntervalMs) {
      // Only blocks read now may be of another branch than the head checked: a poll that read none keeps the head's
      // check (idle, most polls: it was three calls a poll, issue 11).
      if (end !== scanned) this.#checkedHead = undefined
      this.#scanned = end
      return false
    }
    const batch: ChainBatch = { network: this.network, fromBlock, toBlock, toBlockHash: end.blockHash, toBlockTimeMs: end.blockTimeMs, events }
    try {
      await this.#options.consume(batch)
    } catch (error) {
      // Nothing advanced: the same range comes again after the back-off, so no event is lost or counted twice.
      this.emit('consumerFailed', { network: this.network, fromBlock, toBlock, error })
      throw error
    }
    this.#cursor = end
    this.#scanned = undefined
    this.#checkedHead = undefined
    this.#lastDeliveryMs = this.#nowMs()
    this.emit('batch', batch)
    // Stalled on a block the RPC's node has not seen: read it again after a poll interval, not at once.
    return !stalled && toBlock < target
  }

  /** The cursor's block must still be the one committed: otherwise this is another history than the one counted. */
  async #checkContinuity(cursor: FollowerCursor, head: bigint): Promise<void> {
    if (head < cursor.blockNumber) this.#chainBehind(`the chain's head ${head} is behind the follower's cursor ${cursor.blockNumber}`)
    await this.#checkHash(cursor)
  }

  /**
   * Fatal when `block` is no longer the chain's block at its height: at once when the height holds another block (a
   * replacement for certain), after headBehindMaxMs when the height is not found (a node behind, until it persists).
   */
  async #checkHash(block: FollowerCursor): Promise<void> {
    let hash: Hex
    try {
      hash = (await this.#clients.publicClient.getBlock({ blockNumber: block.blockNumber })).hash
    } catch (error) {
      if (error instanceof BlockNotFoundError) this.#chainBehind(`block ${block.blockNumber} read earlier is not found`)
      throw error
    }
    if (hash !== block.blockHash) {
      throw new FollowerFatalError(
        this.network,
        'chain_replaced',
        `block ${block.blockNumber} has hash ${hash}, but ${block.blockHash} was read: the chain was replaced or ` +
          `reorganised deeper than the ${this.#confirmations} confirmation(s); the events counted may no longer exist. ` +
          'Reconcile the ledger with the chain before resuming.',
      )
    }
  }

  /**
   * The RPC answered a chain behind the follower (`what`): a ChainBehindError (wait, read again) until that has lasted
   * headBehindMaxMs over at least chainBehindReadsMin reads in a row, then fatal: the chain was replaced.
   */
  #chainBehind(what: string): never {
    const now = this.#nowMs()
    const behind = (this.#behind ??= { sinceMs: now, reads: 0 })
    behind.reads++
    const forMs = now - behind.sinceMs
    if (behind.reads >= chainBehindReadsMin && forMs >= this.#headBehindMaxMs) {
      throw new FollowerFatalError(
        this.network,
        'chain_replaced',
        `${what}, on ${behind.reads} reads over ${forMs} ms: the chain was replaced (a devnet restarted without its state?)`,
      )
    }
    throw new ChainBehindError(`${what}: waiting for the RPC to catch up (a node behind the others?); the follower stops if this lasts ${this.#headBehindMaxMs} ms`)
  }

  /** The cursor of a batch cut at `blockNumber`; `logHash`: the block's hash in its logs, read before it. */
  async #blockAt(blockNumber: bigint, logHash: Hex | undefined): Promise<FollowerCursor> {
    const block = await this.#clients.publicClient.getBlock({ blockNumber })
    // Logs of another hash than the block's: the chain moved under us (as for the range's end), read again.
    if (logHash !== undefined && logHash !== block.hash) throw new Error(`block ${blockNumber} changed while it was read`)
    return cursorOf(block)
  }

  /**
   * The events of blocks fromBlock..toBlock in chain order and the cursor of the last block they cover: toBlock; or,
   * once they come over eventsPerBatchMax, the last block before the first one that does not fit (nothing later is
   * read); or (stalled) the block before the first one the RPC's node has not seen yet.
   *
   * Blocks before nearFrom (at least logsSafeDepth below the head) are read by range in logRange chunks, the end
   * block's hash read first and checked against its logs. A range says nothing of a block the answering node has not
   * seen: it answers up to its own head, silently. So each block from nearFrom on is read alone: its header by number,
   * whose parentHash must be the hash of the block before (`previous`, then each header read: one chain, whatever
   * nodes answered), then eth_getLogs by that blockHash (EIP-234), which a node that has not seen the block answers
   * with an error, never with an empty list. A block not found, or whose logs are not found, ends the read there (the
   * blocks before it are delivered; with none, a ChainBehindError: degraded, waited for, never skipped).
   *
   * A block is never split: the batch's cursor is a block. A first block holding more events than the cap alone is
   * taken whole rather than never delivered (or skipped). The cap counts every event at the most one makes (8 changes;
   * most make none or share them), so only a far larger block overflows the commit: with the default budget, over
   * 1,250 SupplierPaid (each writes a new advance, at least five fresh storage slots, and moves tokens: over 120,000
   * gas, so over 150M gas in one block) or 2,000 Repaid of as many distinct advances, lenders and borrowers. Such a
   * block would be refused by the store, as any batch was before the cap.
   */
  async #readEvents(fromBlock: bigint, toBlock: bigint, nearFrom: bigint, previous: FollowerCursor | undefined): Promise<{ events: FollowedEvent[]; end: FollowerCursor; stalled: boolean }> {
    const { publicClient } = this.#clients
    const events: FollowedEvent[] = []
    let weight = 0
    const blockTimes = new Map<bigint, number>()
    const logHashes = new Map<bigint, Hex>()
    const take = async (logs: readonly (MinedLog & { blockHash: Hex })[]): Promise<void> => {
      for (const log of logs) {
        logHashes.set(log.blockNumber, log.blockHash)
        let blockTimeMs = blockTimes.get(log.blockNumber)
        if (blockTimeMs === undefined) {
          const timestamp = (log as { blockTimestamp?: bigint }).blockTimestamp ?? (await publicClient.getBlock({ blockNumber: log.blockNumber })).timestamp
          blockTimeMs = Number(timestamp) * 1000
          blockTimes.set(log.blockNumber, blockTimeMs)
        }
        const event = decodeFacilityLog(this.#options.contract, log, blockTimeMs)
        if (event !== undefined) {
          events.push(event)
          weight += this.#eventWeight(event)
        }
      }
    }
    /** The cursors of the blocks whose header was read. */
    const headers = new Map<bigint, FollowerCursor>()
    const cut = async () => {
      const within = wholeBlocksWithin(events, this.#eventsMax, this.#eventWeight)
      const end = headers.get(within.lastBlock) ?? (await this.#blockAt(within.lastBlock, logHashes.get(within.lastBlock)))
      return { events: within.events, end, stalled: false }
    }
    let last = previous
    if (fromBlock < nearFrom) {
      const rangeTo = nearFrom - 1n < toBlock ? nearFrom - 1n : toBlock
      last = cursorOf(await publicClient.getBlock({ blockNumber: rangeTo }))
      headers.set(rangeTo, last)
      for (let start = fromBlock; start <= rangeTo; start += this.#logRange) {
        const end = start + this.#logRange - 1n < rangeTo ? start + this.#logRange - 1n : rangeTo
        const logs = await publicClient.getLogs({ address: this.#options.contract, fromBlock: start, toBlock: end })
        // The end block was read first; a log of it from another hash means the chain moved under us: read again.
        if (logs.some((log) => log.blockNumber === rangeTo && log.blockHash !== last?.blockHash)) throw new Error(`block ${rangeTo} changed while it was read`)
        await take(logs)
        if (weight > this.#eventsMax) return cut()
      }
    }
    for (let number = fromBlock > nearFrom ? fromBlock : nearFrom; number <= toBlock; number++) {
      const block = await this.#nearBlock(number)
      if (block !== undefined && last !== undefined && block.parentHash !== last.blockHash) {
        // Another branch than the blocks read before it: read again; the next poll checks the cursor's block anew.
        this.#checkedHead = undefined
        throw new Error(`block ${number} does not follow block ${last.blockNumber} read before it: the chain moved while it was read`)
      }
      const logs = block === undefined ? undefined : await this.#logsOf(block.hash)
      if (block === undefined || logs === undefined) {
        const unseen = block === undefined ? `block ${number} is not found` : `the logs of block ${number} (${block.hash}) are not found`
        // Nothing read: wait for the node, as for a head behind the cursor (not counted towards a replaced chain: the
        // block came from the RPC a moment ago). Else the blocks read are delivered; this one comes at the next poll.
        if (number === fromBlock) throw new ChainBehindError(`${unseen} by the RPC, within ${this.#logsSafeDepth} blocks of its head: waiting for it (a node behind the others?); nothing after block ${number - 1n} is applied meanwhile`)
        return { events, end: last as FollowerCursor, stalled: true }
      }
      // By hash, the logs are the block's own; one of another hash is a node answering something else: read again.
      if (logs.some((log) => log.blockHash !== block.hash)) throw new Error(`block ${number}'s logs answered with another block hash`)
      last = cursorOf(block)
      headers.set(number, last)
      blockTimes.set(number, last.blockTimeMs)
      await take(logs)
      if (weight > this.#eventsMax) return cut()
    }
    return { events, end: last as FollowerCursor, stalled: false }
  }

  /** Block `number` by number, or undefined when the RPC's node has not seen it. */
  async #nearBlock(number: bigint): Promise<Block<bigint, false, 'latest'> | undefined> {
    try {
      return await this.#clients.publicClient.getBlock({ blockNumber: number })
    } catch (error) {
      if (error instanceof BlockNotFoundError) return undefined
      throw error
    }
  }

  /** The contract's logs of the block `hash` (EIP-234), or undefined when the RPC's node does not know that block. */
  async #logsOf(hash: Hex): Promise<(MinedLog & { blockHash: Hex })[] | undefined> {
    try {
      return await this.#clients.publicClient.getLogs({ address: this.#options.contract, blockHash: hash })
    } catch (error) {
      if (unknownBlockAnswer.test((error as Error).message)) return undefined
      throw error
    }
  }
}

/** An error's message, its first line (viem's go on with details and a docs link). */
function firstLine(error: unknown): string {
  return ((error as Error).message ?? String(error)).split('\n')[0] as string
}

/** How nodes answer eth_getLogs for a blockHash they do not have: geth and anvil 'unknown block', others 'not found'. */
const unknownBlockAnswer = /unknown block|block not found|header not found/i

function cursorOf(block: { number: bigint | null; hash: Hex | null; timestamp: bigint }): FollowerCursor {
  if (block.number === null || block.hash === null) throw new Error('a pending block has no number or hash')
  return { blockNumber: block.number, blockHash: block.hash, blockTimeMs: Number(block.timestamp) * 1000 }
}

/**
 * The longest prefix of `events` (whole blocks read, in chain order, weighing more than `max`) made of whole blocks and
 * weighing at most `max`, ending on the block before the first that does not fit; or the first block whole when it
 * alone weighs more than `max`.
 */
function wholeBlocksWithin(events: FollowedEvent[], max: number, weightOf: (event: FollowedEvent) => number): { events: FollowedEvent[]; lastBlock: bigint } {
  // The first event that brings the weight over max: no block from its own on fits.
  let weight = 0
  let first = 0
  while (first < events.length && (weight += weightOf(events[first] as FollowedEvent)) <= max) first++
  const over = (events[first] as FollowedEvent).blockNumber
  let fit = first
  while (fit > 0 && (events[fit - 1] as FollowedEvent).blockNumber === over) fit--
  if (fit > 0) return { events: events.slice(0, fit), lastBlock: over - 1n }
  const firstBlock = (events[0] as FollowedEvent).blockNumber
  const next = events.findIndex((e) => e.blockNumber !== firstBlock)
  return { events: next === -1 ? events : events.slice(0, next), lastBlock: firstBlock }
}
