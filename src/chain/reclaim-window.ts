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
 * deployment. Immutable (a constant of the code): ReclaimDelays reads it once with reclaimDelay().
 */
export async function readBorrowerMayReclaim(publicClient: Pick<PublicClient, 'readContract'>, contract: Address): Promise<boolean> {
  try {
    return await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'BORROWER_MAY_RECLAIM' })
  } catch (error) {
    if (contractAnswered(error)) return false
    throw error
  }
}

/** What a network's credit contract says of its reclaim: its reclaimDelay() and whether its borrowers may reclaim. */
export type ReclaimRule = { delaySeconds: bigint; borrowerMayReclaim: boolean }

/** Both reads of a network's reclaim rule (readReclaimDelay, readBorrowerMayReclaim); either failure is thrown as it is. */
export async function readReclaimRule(publicClient: Pick<PublicClient, 'readContract'>, slug: string, contract: Address): Promise<ReclaimRule> {
  const [delaySeconds, borrowerMayReclaim] = await Promise.all([readReclaimDelay(publicClient, slug, contract), readBorrowerMayReclaim(publicClient, contract)])
  return { delaySeconds, borrowerMayReclaim }
}

/** Why a network's borrowers may not reclaim their jobs (the start-up's warning, the borrower-side refusal). */
export function clientOnlyReclaimMessage(slug: string, contract: Address): string {
  return `${slug}'s credit contract ${contract} has no BORROWER_MAY_RECLAIM(): it was deployed before 2026-11-28 and takes reclaimJob from a job's client only (a borrower's reverts NotClient); deploy this release's CreditFacilityV2 for the borrower's reclaim`
}

/** How often a network's reclaimDelay() not read yet is tried again, at most (each try one eth_call). */
export const reclaimDelayRetryMs = 5_000

/**
 * Each network's credit contract's reclaimDelay() in seconds, for the catalog (a job's dueAt must come before its client
 * may reclaim the escrow), and whether its borrowers may reclaim too (BORROWER_MAY_RECLAIM(), read with it: both or
 * neither, null while not read). Read at the start (read); a network whose read failed there or was not tried (its RPC down,
 * no code at the contract yet) is read again by readMissing, which the service calls when the catalog is asked for and
 * when the network's chain follower recovers: one read of a network at a time, at most one begun per
 * reclaimDelayRetryMs, so a catalog asked for often behind a dead RPC costs an eth_call every 5 s, not one a request.
 * Before, the value stayed null until a restart (review25). Listeners (onRead) hear of each value readMissing reads.
 */
export class ReclaimDelays {
  readonly #networks: ReadonlyMap<string, NetworkConfig>
  readonly #read: (network: NetworkConfig) => Promise<ReclaimRule>
  readonly #nowMs: () => number
  readonly #retryMs: number
  readonly #seconds = new Map<string, number>()
  readonly #borrowerMayReclaim = new Map<string, boolean>()
  /** When the last read of each network began (nowMs), and the networks being read now. */
  readonly #triedAtMs = new Map<string, number>()
  readonly #reading = new Set<string>()
  readonly #listeners: Array<(slug: string, seconds: number) => void> = []

  constructor(networks: readonly NetworkConfig[], options: { read: (network: NetworkConfig) => Promise<ReclaimRule>; retryMs?: number; nowMs?: () => number }) {
    this.#networks = new Map(networks.map((network) => [network.slug, network]))
    this.#read = options.read
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

  /** Reads the network's reclaimDelay() and BORROWER_MAY_RECLAIM(); a failure is thrown as it is (the start-up logs it), and counts as a try. */
  async read(slug: string): Promise<number> {
    const network = this.#networks.get(slug)
    if (network === undefined) throw new Error(`unknown network ${slug}`)
    this.#triedAtMs.set(slug, this.#nowMs())
    this.#reading.add(slug)
    try {
      const rule = await this.#read(network)
      const seconds = Number(rule.delaySeconds)
      this.#borrowerMayReclaim.set(slug, rule.borrowerMayReclaim)
      this.#seconds.set(slug, seconds)
      return seconds
    } finally {
      this.#reading.delete(slug)
    }
  }

  /**
   * Reads, in the background, each network's reclaimDelay() not read yet whose last try began reclaimDelayRetryMs ago
   * or more and is over. A failure waits for the next call after that; a value read is told to the listeners.
   */
  readMissing(): void {
    const nowMs = this.#nowMs()
    for (const slug of this.#networks.keys()) {
      if (this.#seconds.has(slug) || this.#reading.has(slug)) continue
      const triedAtMs = this.#triedAtMs.get(slug)
      if (triedAtMs !== undefined && nowMs - triedAtMs < this.#retryMs) continue
      this.read(slug).then(
        (seconds) => {
          for (const listener of this.#listeners) listener(slug, seconds)
        },
        () => {},
      )
    }
  }

  /** `listener` hears of each value readMissing reads (the start-up's reads are known before anything asks). */
  onRead(listener: (slug: string, seconds: number) => void): void {
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
