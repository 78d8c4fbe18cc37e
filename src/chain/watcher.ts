// Keeps the session keys' asset balances and allowances (to the credit contract) in memory, current from the
// tokens' Transfer and Approval logs, so that matching reads them without waiting on an RPC.
//
// Per network one loop polls: new head -> logs of the configured tokens since the last block -> re-read the
// balance and allowance of every watched holder those logs touch, at that head. Re-reading instead of applying
// deltas keeps the cache exact even for transfers that emit no Approval (OpenZeppelin 5 transferFrom). An RPC
// failure marks the network degraded (the last known values keep being served) and backs off; once the RPC answers
// again every watched holder is re-read, because logs may have been missed or the chain may have been replaced.
import { EventEmitter } from 'node:events'
import { erc20Abi, getAddress, type Address } from 'viem'
import type { NetworkConfig, TokenConfig } from './config.ts'
import { createPollingClients, SharedHead, type PollingClients } from './poll-transport.ts'

/** Same shape as the engine's port (src/engine/ports.ts), declared here so that chain does not import engine. */
export interface WalletView {
  spendableAtomic(network: string, asset: string, holder: Address): bigint
}

export type Holding = { balanceAtomic: bigint; allowanceAtomic: bigint; blockNumber: bigint }

export type WatcherOptions = {
  /** Delay between polls of one network while healthy. Default: the network's pollingIntervalMs (devnet 50 ms). */
  pollIntervalMs?: number
  /** First retry delay after an RPC failure; doubles up to backoffMaxMs. */
  backoffInitialMs?: number
  backoffMaxMs?: number
  /** Largest block range asked of eth_getLogs at once (providers limit it). */
  logBlockRangeMax?: bigint
  /** Per-request RPC timeout; short so that an outage is noticed quickly. */
  rpcTimeoutMs?: number
  /** Holders followed per network at most (default watchedHoldersMax). */
  holdersMax?: number
  /** How long an unfunded holder waits in the membership set for its first transfer or approval (default 1 h). */
  unfundedWindowMs?: number
  /** Clock of the unfunded window (tests move it). */
  nowMs?: () => number
  /**
   * Whether a watched holder must keep its slot whatever it holds (the service: a session wallet with a live lease,
   * which its lender must be able to pay). Default: none must.
   */
  keepsSlot?: (network: string, holder: Address) => boolean
  /**
   * Each network's head, read for the watcher and the chain follower together (the service shares one per network);
   * a poll takes a head read less than one poll interval before it and after the last `invalidate`. Default: the
   * watcher's own.
   */
  heads?: ReadonlyMap<string, SharedHead>
}

export const watchedHoldersMax = 10_000
/** Deadline of one RPC call of the watcher: short, so that an outage is noticed quickly. */
export const watcherRpcTimeoutMsDefault = 2_000
export const unfundedWindowMsDefault = 60 * 60_000

export type WatcherEvents = {
  update: [{ network: string; asset: string; holder: Address } & Holding]
  tick: [{ network: string; blockNumber: bigint }]
  degraded: [{ network: string; error: unknown }]
  recovered: [{ network: string; blockNumber: bigint }]
}

export class WatchLimitError extends Error {
  override readonly name = 'WatchLimitError'
}

class NetworkWatch {
  readonly holders = new Set<Address>()
  /**
   * Unfunded holders: a membership set only (never read, never polled), with the time each leaves it. A token log
   * naming one moves it to `holders` (read at once); so an unfunded registration costs memory, not RPC or a slot.
   */
  readonly unfunded = new Map<Address, number>()
  readonly dirty = new Set<Address>()
  /**
   * Holders whose last reading is older than a movement the service recorded (`invalidate`), with the invalidation's
   * number: a poll that began after it (read at that poll's head) makes the holder current again.
   */
  readonly stale = new Map<Address, number>()
  invalidations = 0
  /** When the last `invalidate` came (the head's clock): only a head read begun after it proves the holder current. */
  invalidatedAtMs = Number.NEGATIVE_INFINITY
  readonly holdings = new Map<string, Holding>()
  lastBlock: bigint | undefined = undefined
  degraded = false
  wake: (() => void) | undefined = undefined
  constructor(readonly clients: PollingClients, readonly head: SharedHead) {}
}

/** Keyed by the lower-case address: matching asks on its hot path, and a checksum costs a keccak per call. */
function holdingKey(asset: string, holder: Address): string {
  return `${asset}:${holder.toLowerCase()}`
}

/** One holder's balance and allowance in one token, read at `blockNumber`. */
type Reading = Holding & { holder: Address; token: TokenConfig }

/**
 * What a holder can lend, comparable across tokens: the sum of min(balance, allowance) of each token scaled to 36
 * decimals (a whole unit of any token counts the same). A balance without an allowance, or the reverse, is worth 0.
 */
function spendableWorth(holdings: readonly { token: TokenConfig; balanceAtomic: bigint; allowanceAtomic: bigint }[]): bigint {
  let worth = 0n
  for (const { token, balanceAtomic, allowanceAtomic } of holdings) {
    worth += (balanceAtomic < allowanceAtomic ? balanceAtomic : allowanceAtomic) * 10n ** BigInt(36 - token.decimals)
  }
  return worth
}

/** The watched holders a poll must read again: those its logs touched, then those marked dirty, each once. */
function changedHolders(watch: NetworkWatch, touched: ReadonlySet<Address>): Address[] {
  const targets: Address[] = []
  for (const holder of touched) if (watch.holders.has(holder)) targets.push(holder)
  for (const holder of watch.dirty) if (!touched.has(holder)) targets.push(holder)
  return targets
}

export class WalletWatcher extends EventEmitter<WatcherEvents> implements WalletView {
  readonly #watches = new Map<string, NetworkWatch>()
  readonly #options: Required<Omit<WatcherOptions, 'pollIntervalMs' | 'unfundedWindowMs' | 'nowMs' | 'heads' | 'keepsSlot'>> & { pollIntervalMs: number | undefined }
  #running = false
  readonly #loops: Promise<void>[] = []
  readonly #unfundedWindowMs: number
  readonly #nowMs: () => number
  readonly #keepsSlot: (network: string, holder: Address) => boolean

  constructor(networks: readonly NetworkConfig[], options: WatcherOptions = {}) {
    super()
    this.#options = {
      pollIntervalMs: options.pollIntervalMs,
      backoffInitialMs: options.backoffInitialMs ?? 100,
      backoffMaxMs: options.backoffMaxMs ?? 2_000,
      logBlockRangeMax: options.logBlockRangeMax ?? 2_000n,
      rpcTimeoutMs: options.rpcTimeoutMs ?? watcherRpcTimeoutMsDefault,
      holdersMax: options.holdersMax ?? watchedHoldersMax,
    }
    this.#unfundedWindowMs = options.unfundedWindowMs ?? unfundedWindowMsDefault
    this.#nowMs = options.nowMs ?? Date.now
    this.#keepsSlot = options.keepsSlot ?? (() => false)
    for (const network of networks) {
      const clients = createPollingClients(network, { timeoutMs: this.#options.rpcTimeoutMs })
      this.#watches.set(network.slug, new NetworkWatch(clients, options.heads?.get(network.slug) ?? new SharedHead(clients)))
    }
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    for (const watch of this.#watches.values()) this.#loops.push(this.#loop(watch))
  }

  /** Whether it polls (between start and stop). */
  get running(): boolean {
    return this.#running
  }

  async stop(): Promise<void> {
    this.#running = false
    for (const watch of this.#watches.values()) watch.wake?.()
    await Promise.all(this.#loops.splice(0))
  }

  /** Adds a holder (a session key's address) on a network; its values are read on the next poll. */
  watch(network: string, holder: Address): void {
    const watch = this.#watch(network)
    const address = getAddress(holder)
    if (watch.holders.has(address)) return
    if (watch.holders.size >= this.#options.holdersMax) throw new WatchLimitError(`more than ${this.#options.holdersMax} holders on ${network}`)
    watch.holders.add(address)
    watch.dirty.add(address)
    watch.wake?.()
  }

  /**
   * Waits for a holder's first funding without reading it: it joins the cheap membership set until a transfer or
   * approval of a configured token names it (then it is watched, if there is room) or `unfundedWindowMs` passes (then
   * it is forgotten; calling this again re-arms the window). A holder already watched is left as it is.
   */
  watchWhenFunded(network: string, holder: Address): void {
    const watch = this.#watch(network)
    const address = getAddress(holder)
    if (watch.holders.has(address)) return
    watch.unfunded.set(address, this.#nowMs() + this.#unfundedWindowMs)
  }

  /** Stops following a holder on `network` (its lender's registration was removed): its slot or membership entry and its readings go. */
  forget(network: string, holder: Address): void {
    const watch = this.#watches.get(network)
    if (watch === undefined) return
    const address = getAddress(holder)
    watch.unfunded.delete(address)
    watch.holders.delete(address)
    watch.dirty.delete(address)
    watch.stale.delete(address)
    for (const token of watch.clients.network.tokens) watch.holdings.delete(holdingKey(token.symbol, address))
  }

  /** Whether `holder` waits in the unfunded membership set of `network`. */
  isWaitingForFunds(network: string, holder: Address): boolean {
    const until = this.#watch(network).unfunded.get(getAddress(holder))
    return until !== undefined && until > this.#nowMs()
  }

  get unfundedWindowMs(): number {
    return this.#unfundedWindowMs
  }

  /** Holders followed per network at most. */
  get holdersMax(): number {
    return this.#options.holdersMax
  }

  /** Whether `watch` would accept one more new holder on `network`. */
  hasRoom(network: string): boolean {
    return this.#watch(network).holders.size < this.#options.holdersMax
  }

  /** min(balance, allowance to the credit contract), 0n when unknown (never read, or unknown network/asset). */
  spendableAtomic(network: string, asset: string, holder: Address): bigint {
    const holding = this.holding(network, asset, holder)
    if (holding === undefined) return 0n
    return holding.balanceAtomic < holding.allowanceAtomic ? holding.balanceAtomic : holding.allowanceAtomic
  }

  /**
   * The service recorded a movement of the holder's tokens that its last reading may predate (a supplier payment or a
   * repayment, applied from a confirmed transaction): the holder is re-read at once, and `isCurrent` is false until a
   * reading made after this call, at the chain's head, is in. Matching keeps using the last reading meanwhile (the
   * contract checks the balance itself); what is computed from the difference between the reading and the engine's
   * state (the lender's wallet actions) waits for it.
   */
  invalidate(network: string, holder: Address): void {
    const watch = this.#watches.get(network)
    if (watch === undefined || !watch.holders.has(holder)) return
    watch.stale.set(holder, ++watch.invalidations)
    watch.invalidatedAtMs = watch.head.nowMs()
    watch.dirty.add(holder)
    watch.wake?.()
  }

  /** Whether the holder's last reading is at least as new as every movement `invalidate` was told of. */
  isCurrent(network: string, holder: Address): boolean {
    return this.#watches.get(network)?.stale.has(holder) !== true
  }

  holding(network: string, asset: string, holder: Address): Holding | undefined {
    return this.#watches.get(network)?.holdings.get(holdingKey(asset, holder))
  }

  isDegraded(network: string): boolean {
    return this.#watch(network).degraded
  }

  /** Per network: degraded or not, the last block read, how many holders are watched (for health reports). */
  status(): { network: string; degraded: boolean; lastBlock: bigint | undefined; holders: number; unfunded: number }[] {
    return [...this.#watches.values()].map((w) => ({
      network: w.clients.network.slug,
      degraded: w.degraded,
      lastBlock: w.lastBlock,
      holders: w.holders.size,
      unfunded: w.unfunded.size,
    }))
  }

  /** Resolves once `predicate` holds (checked now and after every poll or change); rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs: number): Promise<void> {
    if (predicate()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!predicate()) return
        cleanup()
        resolve()
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`condition not met within ${timeoutMs} ms`))
      }, timeoutMs)
      const cleanup = (): void => {
        clearTimeout(timer)
        for (const name of ['tick', 'update', 'degraded', 'recovered'] as const) this.off(name, check)
      }
      for (const name of ['tick', 'update', 'degraded', 'recovered'] as const) this.on(name, check)
    })
  }

  #watch(network: string): NetworkWatch {
    const watch = this.#watches.get(network)
    if (watch === undefined) throw new Error(`unknown network ${network}`)
    return watch
  }

  async #loop(watch: NetworkWatch): Promise<void> {
    let backoffMs = this.#options.backoffInitialMs
    while (this.#running) {
      let delayMs = this.#pollIntervalMs(watch)
      try {
        await this.#poll(watch)
        backoffMs = this.#options.backoffInitialMs
      } catch (error) {
        if (!watch.degraded) {
          watch.degraded = true
          this.emit('degraded', { network: watch.clients.network.slug, error })
        }
        delayMs = backoffMs
        backoffMs = Math.min(backoffMs * 2, this.#options.backoffMaxMs)
      }
      if (!this.#running) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs)
        watch.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      watch.wake = undefined
    }
  }

  #pollIntervalMs(watch: NetworkWatch): number {
    return this.#options.pollIntervalMs ?? watch.clients.network.pollingIntervalMs
  }

  async #poll(watch: NetworkWatch): Promise<void> {
    const { network, publicClient } = watch.clients
    // Invalidations up to here were told of movements already mined: this poll's head, read after them, is past them.
    const invalidations = watch.invalidations
    const headReadAfterMs = Math.max(watch.head.nowMs() - this.#pollIntervalMs(watch), watch.invalidatedAtMs)
    const head = (await watch.head.latest(headReadAfterMs)).number
    // After an outage or a chain that went backwards (a replaced devnet), nothing known can be trusted.
    const fullRead = watch.degraded || watch.lastBlock === undefined || head < watch.lastBlock
    let toBlock = head
    const touched = new Set<Address>()
    const nowMs = this.#nowMs()
    for (const [holder, untilMs] of watch.unfunded) if (untilMs <= nowMs) watch.unfunded.delete(holder)
    if (!fullRead && watch.lastBlock !== undefined && head > watch.lastBlock && watch.holders.size + watch.unfunded.size > 0) {
      const fromBlock = watch.lastBlock + 1n
      if (head - fromBlock + 1n > this.#options.logBlockRangeMax) toBlock = fromBlock + this.#options.logBlockRangeMax - 1n
      const logs = await publicClient.getLogs({
        address: network.tokens.map((t) => t.address),
        events: erc20Abi.filter((item) => item.type === 'event'),
        fromBlock,
        toBlock,
      })
      for (const log of logs) {
        if (log.eventName === 'Transfer') {
          // A transferFrom by the credit contract spends allowance too: re-read both values of the sender.
          touched.add(getAddress(log.args.from as Address))
          touched.add(getAddress(log.args.to as Address))
        } else if (log.eventName === 'Approval' && getAddress(log.args.spender as Address) === network.creditContract) {
          touched.add(getAddress(log.args.owner as Address))
        }
      }
      // A token log naming an unfunded holder: its wallet may have changed, so it is read, and watched from now on if
      // it holds something (a 0-value transfer, the same log, funds nothing).
      const named = [...touched].filter((holder) => watch.unfunded.has(holder))
      if (named.length > 0) await this.#promoteFunded(watch, named, toBlock)
    }
    // After a start or an outage logs may have been missed: unfunded holders are read once, and any holding something
    // is watched from now on (the only time they cost a read).
    if (fullRead && watch.unfunded.size > 0) await this.#promoteFunded(watch, [...watch.unfunded.keys()], toBlock)
    // From the few touched and dirty holders, not a pass over every watched one: most polls find neither.
    const targets = fullRead ? [...watch.holders] : changedHolders(watch, touched)
    if (targets.length > 0) await this.#read(watch, targets, toBlock)
    for (const holder of targets) {
      const staleAt = watch.stale.get(holder)
      if (staleAt === undefined) {
        watch.dirty.delete(holder)
      } else if (staleAt <= invalidations && toBlock === head) {
        // Read at the head of a poll that began after the invalidation (not at a block a capped log range stopped at).
        watch.stale.delete(holder)
        watch.dirty.delete(holder)
      }
    }
    watch.lastBlock = toBlock
    if (watch.degraded) {
      watch.degraded = false
      this.emit('recovered', { network: network.slug, blockNumber: toBlock })
    }
    this.emit('tick', { network: network.slug, blockNumber: toBlock })
  }

  /**
   * Unfunded holders read at `blockNumber`: one that holds something (a balance or an allowance in any token) is
   * watched from now on, if there is room. When the slots are full, one whose spendable worth (spendableWorth) is
   * above nothing takes the slot of the watched holder worth the least, if that one is worth less and does not keep
   * its slot (`keepsSlot`: a live lease); the holder it displaces waits in the unfunded set again for a window, and
   * comes back once it is worth more than the least. So wallets that hold dust, or only an allowance, cannot keep a
   * funded lender's wallet out of the cap: they cost their sender gas, and the cap goes to the wallets that can lend.
   */
  async #promoteFunded(watch: NetworkWatch, holders: Address[], blockNumber: bigint): Promise<void> {
    // By holder in one pass: a full read after a start or an outage reads every unfunded holder at once.
    const readingsOf = new Map<Address, Reading[]>()
    for (const reading of await this.#readHoldings(watch, holders, blockNumber)) {
      const own = readingsOf.get(reading.holder)
      if (own === undefined) readingsOf.set(reading.holder, [reading])
      else own.push(reading)
    }
    for (const holder of holders) {
      const own = readingsOf.get(holder) ?? []
      if (!watch.unfunded.has(holder) || own.every((r) => r.balanceAtomic === 0n && r.allowanceAtomic === 0n)) continue
      if (watch.holders.size >= this.#options.holdersMax && !this.#displaceCheapest(watch, spendableWorth(own))) continue
      watch.unfunded.delete(holder)
      watch.holders.add(holder)
      // Stored (and announced) now: a later holder of this batch compares its worth with this one's, not with nothing.
      this.#store(watch, own)
    }
  }

  /**
   * Frees the slot of the watched holder worth the least, if it is worth less than `worth` and keeps no slot. O(watched
   * holders): it runs only when the cap is full and a holder worth more than nothing asks to be watched.
   */
  #displaceCheapest(watch: NetworkWatch, worth: bigint): boolean {
    if (worth === 0n) return false
    const network = watch.clients.network
    let cheapest: { holder: Address; worth: bigint } | undefined
    for (const holder of watch.holders) {
      const held = spendableWorth(network.tokens.map((token) => ({ token, ...(watch.holdings.get(holdingKey(token.symbol, holder)) ?? { balanceAtomic: 0n, allowanceAtomic: 0n }) })))
      if (held >= worth || (cheapest !== undefined && held >= cheapest.worth) || this.#keepsSlot(network.slug, holder)) continue
      cheapest = { holder, worth: held }
      if (held === 0n) break
    }
    if (cheapest === undefined) return false
    watch.holders.delete(cheapest.holder)
    watch.dirty.delete(cheapest.holder)
    watch.stale.delete(cheapest.holder)
    for (const token of network.tokens) watch.holdings.delete(holdingKey(token.symbol, cheapest.holder))
    watch.unfunded.set(cheapest.holder, this.#nowMs() + this.#unfundedWindowMs)
    return true
  }

  /** Balance and allowance (to the credit contract) of each holder in each configured token, at `blockNumber`. */
  async #readHoldings(watch: NetworkWatch, holders: Address[], blockNumber: bigint): Promise<Reading[]> {
    const { network, publicClient } = watch.clients
    const pairs = holders.flatMap((holder) => network.tokens.map((token) => ({ holder, token })))
    const results = await publicClient.multicall({
      allowFailure: false,
      blockNumber,
      contracts: pairs.flatMap(({ holder, token }) => [
        { address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [holder] } as const,
        { address: token.address, abi: erc20Abi, functionName: 'allowance', args: [holder, network.creditContract] } as const,
      ]),
    })
    return pairs.map(({ holder, token }, index): Reading => ({
      holder,
      token,
      balanceAtomic: results[2 * index] as bigint,
      allowanceAtomic: results[2 * index + 1] as bigint,
      blockNumber,
    }))
  }

  async #read(watch: NetworkWatch, holders: Address[], blockNumber: bigint): Promise<void> {
    this.#store(watch, await this.#readHoldings(watch, holders, blockNumber))
  }

  /** Keeps each reading, and announces those that changed. */
  #store(watch: NetworkWatch, readings: Reading[]): void {
    const { network } = watch.clients
    for (const { holder, token, balanceAtomic, allowanceAtomic, blockNumber } of readings) {
      const holding: Holding = { balanceAtomic, allowanceAtomic, blockNumber }
      const key = holdingKey(token.symbol, holder)
      const previous = watch.holdings.get(key)
      watch.holdings.set(key, holding)
      if (previous?.balanceAtomic !== holding.balanceAtomic || previous.allowanceAtomic !== holding.allowanceAtomic) {
        this.emit('update', { network: network.slug, asset: token.symbol, holder, ...holding })
      }
    }
  }
}
