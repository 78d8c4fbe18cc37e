// The collateral a job's borrower posted on chain before the service knew the job: the borrower may call
// postCollateral as soon as the client funded, and the chain follower, which applies every CollateralPosted of the
// contract, has nothing to apply it to until the job is registered. At registration the service reads them here, each
// a CollateralPosted event (so every movement it records is proven by a transaction), and checks that they sum to what
// the contract holds for the job at the same block.
import type { Address, Hex } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'
import type { NetworkClients } from './clients.ts'
import { decodeFacilityLog, facilityFact } from './events-v2.ts'
import { JobStatus } from './facility-model.ts'
import { logBlockRangeMaxDefault } from './follower.ts'
import { ChainRpcError } from './proofs.ts'
import type { FacilityFactOf } from './proofs-v2.ts'

const collateralPostedEvent = creditFacilityV2Abi.find((item) => item.type === 'event' && item.name === 'CollateralPosted')
if (collateralPostedEvent === undefined || collateralPostedEvent.type !== 'event') throw new Error('the credit contract\'s ABI has no CollateralPosted event')

/** A job with more collateral postings on chain than one registration brings (src/service/borrowers.ts). */
export class TooManyPostingsError extends Error {
  override readonly name = 'TooManyPostingsError'
  readonly code = 'too_many_collateral_postings'
}

/**
 * The job's CollateralPosted facts in blocks fromBlock..toBlock, in chain order, where `heldBefore` is what the
 * postings before fromBlock sum to (0 from the funding's block) and `usedBefore` what liquidations took from the job's
 * collateral up to toBlock (0 before any advance): the contract holds the postings less that. One read of the job at toBlock first: a job no longer
 * open there (settled, failed or reclaimed: its escrow and collateral are gone) is answered as such, with nothing read;
 * with nothing posted in the range (the usual case) no log is read. RPC failures, and logs that do not sum to what the
 * contract holds (a provider that dropped some), are ChainRpcError: retry, never a verdict.
 */
export async function collateralPostedUpTo(
  clients: NetworkClients,
  contract: Address,
  input: { jobKey: Hex; fromBlock: bigint; toBlock: bigint; heldBefore: bigint; usedBefore: bigint },
): Promise<{ open: false } | { open: true; postings: FacilityFactOf<'CollateralPosted'>[] }> {
  const { network, publicClient } = clients
  try {
    const job = await publicClient.readContract({ address: contract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [input.jobKey], blockNumber: input.toBlock })
    if (job.status !== JobStatus.Open) return { open: false }
    if (job.collateral + input.usedBefore === input.heldBefore) return { open: true, postings: [] }
    const facts: FacilityFactOf<'CollateralPosted'>[] = []
    for (let start = input.fromBlock; start <= input.toBlock; start += logBlockRangeMaxDefault) {
      const end = start + logBlockRangeMaxDefault - 1n < input.toBlock ? start + logBlockRangeMaxDefault - 1n : input.toBlock
      const logs = await publicClient.getLogs({ address: contract, event: collateralPostedEvent, args: { jobKey: input.jobKey }, fromBlock: start, toBlock: end })
      for (const log of logs) {
        const timestamp = (await publicClient.getBlock({ blockNumber: log.blockNumber })).timestamp
        const event = decodeFacilityLog(contract, log, Number(timestamp) * 1000)
        if (event?.name === 'CollateralPosted') facts.push(facilityFact(network.slug, event) as FacilityFactOf<'CollateralPosted'>)
      }
    }
    const posted = facts.reduce((sum, fact) => sum + fact.args.amount, input.heldBefore)
    if (posted !== job.collateral + input.usedBefore) {
      throw new Error(
        `the contract holds ${job.collateral} of collateral for job key ${input.jobKey} at block ${input.toBlock} after liquidations took ${input.usedBefore}, its CollateralPosted events read ${posted}`,
      )
    }
    return { open: true, postings: facts }
  } catch (error) {
    throw new ChainRpcError(network.slug, error)
  }
}
