// The job's reclaim window on chain (CreditFacilityV2.reclaimJob): from fundedAt + reclaimDelay on, the client of a job
// no advance was ever paid on may take its escrow back. A registration reads it, so that the service never takes on a
// job that is over on chain, or one whose client may take the escrow back while the job's credit could still be drawn
// (src/service/borrowers.ts).
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, type Address, type Hex, type PublicClient } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'
import type { NetworkClients } from './clients.ts'
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

/** The contract's reclaimDelay, by network and contract address: immutable, so read once. */
const reclaimDelayOf = new Map<string, bigint>()

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
    const cacheKey = `${network.slug}:${contract.toLowerCase()}`
    const head = await publicClient.getBlock({ blockTag: 'latest' })
    const [job, delay] = await Promise.all([
      publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey], blockNumber: head.number }),
      reclaimDelayOf.get(cacheKey) ?? publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' }),
    ])
    reclaimDelayOf.set(cacheKey, delay)
    const status = jobStatusNames[job.status]
    if (status === undefined) throw new Error(`job key ${jobKey} has status ${job.status}, which this release does not know`)
    return { status, reclaimableAtMs: Number(job.fundedAt + delay) * 1000, chainTimeMs: Number(head.timestamp) * 1000 }
  } catch (error) {
    throw new ChainRpcError(network.slug, error)
  }
}

/** Why a network whose credit contract has no reclaimJob is refused, and what to do. */
export function olderContractMessage(slug: string, contract: Address): string {
  return `${slug}'s credit contract ${contract} has no reclaimDelay(): it predates reclaimJob; deploy this release's CreditFacilityV2 and configure its address`
}

/**
 * Whether the credit contract at `contract` is a deployment with reclaimJob: its reclaimDelay() answers. One deployed
 * before it (the contract changed in place: a constructor argument, the Job layout) reverts, or has no code there; the
 * service cannot register a job on it nor decode its jobs, so the start-up refuses it (src/app/app.ts) or, on the
 * devnet, starts a fresh chain (src/chain/devnet.ts). RPC failures are thrown as they are.
 */
export async function facilityHasReclaim(publicClient: Pick<PublicClient, 'readContract'>, contract: Address): Promise<boolean> {
  try {
    await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' })
    return true
  } catch (error) {
    if (error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError) !== null) return false
    throw error
  }
}
