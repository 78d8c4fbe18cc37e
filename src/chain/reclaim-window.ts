// The job's reclaim window on chain (CreditFacilityV2.reclaimJob): from fundedAt + reclaimDelay on, the client of a job
// none of whose advances owes anything may take its escrow back. A registration reads it, so that the service never takes on a
// job that is over on chain, or one whose client may take the escrow back while the job's credit could still be drawn
// (src/service/borrowers.ts).
import { leaseOverAtChainMs } from '../../machines/index.ts'
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, ExecutionRevertedError, type Address, type Hex, type PublicClient } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'
import type { NetworkClients } from './clients.ts'
import type { NetworkConfig } from './config.ts'
import { jobStatusNames } from './reconcile-states.ts'
import { ChainRpcError } from './proofs.ts'

/** A job the service refuses to register: over on chain (409), or reclaimable before its credit ends (422). */
export class JobRegistrationRefusedError extends Error {
  override readonly name = 'JobRegistrationRefusedError'
  constructor(
    readonly code: 'job_not_open_on_chain' | 'job_reclaimable_before_due',
    message: string,
  ) {
    super(message)
  }
}

/**
 * Whether the job's client may reclaim it on chain (reclaimJob: block.timestamp >= reclaimableAt) while a lease ending at
 * `creditEndMs` may still be paid (paySupplier: block.timestamp <= deadline, deadline = floor(creditEndMs / 1000); the
 * lease is over from leaseOverAtChainMs on). Both in the same second counts: a reclaim mined in the block before the
 * payment's makes it revert. Before, a reclaim time equal to a credit end in whole seconds was taken.
 */
export function reclaimableWhileCreditLive(reclaimableAtMs: number, creditEndMs: number): boolean {
  return reclaimableAtMs < leaseOverAtChainMs(creditEndMs)
}

/** The contract's reclaimDelay, by network and contract address: immutable, so read once. */
const reclaimDelayOf = new Map<string, bigint>()

/**
 * The contract's reclaimDelay() in seconds, read once per network and contract (it is immutable). RPC failures are
 * thrown as they are. The start-up reads it for the catalog (src/app/app.ts), a job registration for its window.
 */
export async function readReclaimDelay(publicClient: Pick<PublicClient, 'readContract'>, slug: string, contract: Address): Promise<bigint> {
  const cacheKey = `${slug}:${contract.toLowerCase()}`
  const known = reclaimDelayOf.get(cacheKey)
  if (known !== undefined) return known
  const delay = await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' })
  reclaimDelayOf.set(cacheKey, delay)
  return delay
}

/**
 * Whether the credit contract takes its jobs' borrowers' reclaimJob: its BORROWER_MAY_RECLAIM() answers true on this
 * release's deployment; one deployed before 2026-11-28 has no such function (the call reverts without data, or answers
 * no data) and takes the client's reclaim only (a borrower's reverts NotClient). Only the contract's own answer reads as
 * the older rule (contractAnswered): an RPC outage, a provider's -32603, is thrown as it is, never taken for an old
 * deployment. Immutable (a constant of the code): ReclaimDelays reads it once, next to reclaimDelay() (each kept once read).
 */
export async function readBorrowerMayReclaim(publicClient: Pick<PublicClient, 'readContract'>, contract: Address): Promise<boolean> {
  try {
    return await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'BORROWER_MAY_RECLAIM' })
  } catch (error) {
    if (contractAnswered(error)) return false
    throw error
  }
}

/** Why a network's borrowers may not reclaim their jobs (the start-up's warning, the borrower-side refusal). */
export function clientOnlyReclaimMessage(slug: string, contract: Address): string {
  return `${slug}'s credit contract ${contract} has no BORROWER_MAY_RECLAIM(): it was deployed before 2026-11-28 and takes reclaimJob from a job's client only (a borrower's reverts NotClient); deploy this release's CreditFacilityV2 for the borrower's reclaim`
}

/** How often a network's reclaimDelay() not read yet is tried again, at most (each try one eth_call). */
export const reclaimDelayRetryMs = 5_000

/** What ReclaimDelays' listeners hear: a network's values as they are after a read that found something new. */
export type ReclaimRuleRead = { reclaimDelaySeconds: number | null; borrowerMayReclaim: boolean | null }

/**
 * Each network's credit contract's reclaimDelay() in seconds, for the catalog (a job's dueAt must come before its client
 * may reclaim the escrow), and whether its borrowers may reclaim too (BORROWER_MAY_RECLAIM()), each null while not read.
 * Both are read at the start (read), each kept once read: one that failed is read again on its own, so an RPC (or a
 * contract) that answers reclaimDelay() and not BORROWER_MAY_RECLAIM() still publishes the delay (review37: read as
 * both or neither, a BORROWER_MAY_RECLAIM() that never answered as a bool kept reclaimDelaySeconds null for good, where
 * before it was read). A network with either not read (its RPC down, no code at the contract yet, the start did not try)
 * is read again by readMissing, which the service calls when the catalog is asked for and when the network's chain
 * follower recovers: one read of a network at a time, at most one begun per reclaimDelayRetryMs, so a catalog asked for
 * often behind a dead RPC costs an eth_call or two every 5 s, not one a request. Before, the value stayed null until a
 * restart (review25). Listeners (onRead) hear of each read by readMissing that found something new. Both values are
 * constants of the deployed code, read once per process: a contract replaced at the same address is seen at the next
 * start only.
 */
export class ReclaimDelays {
  readonly #networks: ReadonlyMap<string, NetworkConfig>
  readonly #readDelay: (network: NetworkConfig) => Promise<bigint>
  readonly #readBorrowerMayReclaim: (network: NetworkConfig) => Promise<boolean>
  readonly #nowMs: () => number
  readonly #retryMs: number
  readonly #seconds = new Map<string, number>()
  readonly #borrowerMayReclaim = new Map<string, boolean>()
  /** When the last read of each network began (nowMs), and the networks being read now. */
  readonly #triedAtMs = new Map<string, number>()
  readonly #reading = new Set<string>()
  readonly #listeners: Array<(slug: string, read: ReclaimRuleRead) => void> = []

  constructor(
    networks: readonly NetworkConfig[],
    options: { readDelay: (network: NetworkConfig) => Promise<bigint>; readBorrowerMayReclaim: (network: NetworkConfig) => Promise<boolean>; retryMs?: number; nowMs?: () => number },
  ) {
    this.#networks = new Map(networks.map((network) => [network.slug, network]))
    this.#readDelay = options.readDelay
    this.#readBorrowerMayReclaim = options.readBorrowerMayReclaim
    this.#retryMs = options.retryMs ?? reclaimDelayRetryMs
    this.#nowMs = options.nowMs ?? (() => performance.now())
  }

  /** The network's reclaimDelay() in seconds, or null while not read. */
  get(slug: string): number | null {
    return this.#seconds.get(slug) ?? null
  }

  /** Whether the network's credit contract takes its borrowers' reclaimJob (BORROWER_MAY_RECLAIM()), or null while not read. */
  borrowerMayReclaim(slug: string): boolean | null {
    return this.#borrowerMayReclaim.get(slug) ?? null
  }

  /** Whether both of the network's values are read. */
  #complete(slug: string): boolean {
    return this.#seconds.has(slug) && this.#borrowerMayReclaim.has(slug)
  }

  /**
   * Reads the network's reclaimDelay() and BORROWER_MAY_RECLAIM() not read yet, both at once, and keeps each one read. A
   * failure of either is thrown once both are over (the start-up logs it; the error names which), and counts as a try.
   */
  async read(slug: string): Promise<void> {
    const network = this.#networks.get(slug)
    if (network === undefined) throw new Error(`unknown network ${slug}`)
    this.#triedAtMs.set(slug, this.#nowMs())
    this.#reading.add(slug)
    try {
      const [delay, rule] = await Promise.allSettled([
        this.#seconds.has(slug) ? undefined : this.#readDelay(network),
        this.#borrowerMayReclaim.has(slug) ? undefined : this.#readBorrowerMayReclaim(network),
      ])
      if (delay.status === 'fulfilled' && delay.value !== undefined) this.#seconds.set(slug, Number(delay.value))
      if (rule.status === 'fulfilled' && rule.value !== undefined) this.#borrowerMayReclaim.set(slug, rule.value)
      const failed = [delay.status === 'rejected' ? `reclaimDelay(): ${String(delay.reason)}` : undefined, rule.status === 'rejected' ? `BORROWER_MAY_RECLAIM(): ${String(rule.reason)}` : undefined].filter((f) => f !== undefined)
      if (failed.length > 0) throw new Error(`${slug}'s credit contract not read: ${failed.join('; ')}`)
    } finally {
      this.#reading.delete(slug)
    }
  }

  /**
   * Reads, in the background, each network with a value not read yet whose last try began reclaimDelayRetryMs ago or
   * more and is over. A failure waits for the next call after that; a read that found something new is told to the
   * listeners (even when the other value failed).
   */
  readMissing(): void {
    const nowMs = this.#nowMs()
    for (const slug of this.#networks.keys()) {
      if (this.#complete(slug) || this.#reading.has(slug)) continue
      const triedAtMs = this.#triedAtMs.get(slug)
      if (triedAtMs !== undefined && nowMs - triedAtMs < this.#retryMs) continue
      const before = { seconds: this.get(slug), rule: this.borrowerMayReclaim(slug) }
      const tell = () => {
        if (this.get(slug) === before.seconds && this.borrowerMayReclaim(slug) === before.rule) return
        for (const listener of this.#listeners) listener(slug, { reclaimDelaySeconds: this.get(slug), borrowerMayReclaim: this.borrowerMayReclaim(slug) })
      }
      this.read(slug).then(tell, tell)
    }
  }

  /** `listener` hears of each read by readMissing that found something new (the start-up's reads are known before anything asks). */
  onRead(listener: (slug: string, read: ReclaimRuleRead) => void): void {
    this.#listeners.push(listener)
  }
}

/**
 * The job's status on chain (its name in reconcile-states' jobStatusNames), the time its client may reclaim it, and the
 * chain's time, all at the latest block. RPC failures are ChainRpcError (503, retry).
 */
export async function readReclaimWindow(
  clients: NetworkClients,
  contract: Address,
  jobKey: Hex,
): Promise<{ status: (typeof jobStatusNames)[number]; reclaimableAtMs: number; chainTimeMs: number }> {
  const { network, publicClient } = clients
  try {
    const head = await publicClient.getBlock({ blockTag: 'latest' })
    const [job, delay] = await Promise.all([
      publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey], blockNumber: head.number }),
      readReclaimDelay(publicClient, network.slug, contract),
    ])
    const status = jobStatusNames[job.status]
    if (status === undefined) throw new Error(`job key ${jobKey} has status ${job.status}, which this release does not know`)
    return { status, reclaimableAtMs: Number(job.fundedAt + delay) * 1000, chainTimeMs: Number(head.timestamp) * 1000 }
  } catch (error) {
    throw new ChainRpcError(network.slug, error)
  }
}

/** Why a network whose credit contract has no reclaimJob is refused, and what to do. */
export function olderContractMessage(slug: string, contract: Address): string {
  return `${slug}'s credit contract ${contract} has no advancesPerJobMax(): it predates this release's CreditFacilityV2 (its cap on a job's advances and its held payments; an older one predates reclaimJob too); deploy this release's CreditFacilityV2 and configure its address`
}

/**
 * What the RPC's node holds at `contract`, read at its own head: 'current', this release's deployment (its
 * advancesPerJobMax(), the newest function, answers); 'older', code that does not answer it (a deployment from before the contract
 * changed in place: a constructor argument, the Job layout), which the service cannot register a job on nor decode the
 * jobs of, so the start-up refuses it (src/app/app.ts), the chain follower stops on it (src/chain/follower.ts) and the
 * devnet starts a fresh chain (src/chain/devnet.ts); 'absent', no code there at that head: a node that has not reached
 * the deployment block yet (a lagging or syncing node answers a call to it with empty data, which once read as an older
 * contract stopped the network for good), or an address with nothing deployed, which only waiting tells apart: the
 * start goes on and the follower probes again. The code and the call are read at the same block, so two nodes of one
 * endpoint cannot answer one each. RPC failures are thrown as they are. A current contract's advancesPerJobMax() comes
 * with it.
 */
export async function probeCreditContract(
  publicClient: Pick<PublicClient, 'getBlockNumber' | 'getCode' | 'readContract'>,
  contract: Address,
): Promise<{ verdict: 'current' | 'older' | 'absent'; head: bigint; advancesPerJobMax?: bigint }> {
  const head = await publicClient.getBlockNumber({ cacheTime: 0 })
  const code = await publicClient.getCode({ address: contract, blockNumber: head })
  if (code === undefined || code === '0x') return { verdict: 'absent', head }
  try {
    const advancesPerJobMax = await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'advancesPerJobMax', blockNumber: head })
    return { verdict: 'current', head, advancesPerJobMax }
  } catch (error) {
    if (contractAnswered(error)) return { verdict: 'older', head }
    throw error
  }
}

/**
 * Whether a call's error is the contract's own answer: a revert (with revert data, or a node saying it reverted) or no
 * data where a value was due. Not an RPC error viem reads as a revert: one coded -32603 (internal error, which providers
 * answer for their own failures) whatever its message, no revert data; before review30 that read as an older contract,
 * which stops a follower for good (or refuses the start), while a geth node's empty revert (-32000 "execution
 * reverted") was not one, an outage retried for ever.
 */
export function contractAnswered(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false
  if (error.walk((e) => e instanceof ContractFunctionZeroDataError || e instanceof ExecutionRevertedError) !== null) return true
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError)
  return reverted instanceof ContractFunctionRevertedError && ((reverted.raw !== undefined && reverted.raw !== '0x') || /revert/i.test(reverted.reason ?? ''))
}

/** Why a contract whose cap on a job's advances is below the service's is refused (the service would lease past it). */
export function advanceCapMessage(slug: string, contract: Address, contractMax: bigint, serviceMax: number): string {
  return `${slug}'s credit contract ${contract} takes at most ${contractMax} advances that owe per job (advancesPerJobMax()), fewer than the service's advancesPerJobMax ${serviceMax}: a lease past it could never be paid; deploy it with at least ${serviceMax}, or lower engine.advancesPerJobMax`
}

/** Why the credit contract is not probed yet: the node has no code at its address (probeCreditContract's 'absent'). */
export function absentContractMessage(slug: string, contract: Address, head: bigint): string {
  return `${slug}'s RPC has no code at the credit contract ${contract} at its head ${head}: a node not yet at the contract's deployment block (or nothing deployed there); probing again`
}
