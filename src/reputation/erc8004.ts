// Reading ERC-8004 evidence on chain (shared/notes/erc8004.md, the current interface): who controls an agent, and
// the feedback that trusted clients gave it. Every read is a view call (or a log query) through the network's
// request-path client; an RPC failure is a ChainRpcError (503, nothing decided), never a verdict.
import { getAddress, type Address, type Chain, type PublicClient, type Transport } from 'viem'
import { identityRegistryAbi, reputationRegistryAbi } from '../chain/artifacts.ts'
import { ChainRpcError } from '../chain/proofs.ts'
import { contractAnswered } from '../chain/reclaim-window.ts'
import type { FeedbackEvidence } from './formula.ts'

type Client = PublicClient<Transport, Chain>

/** An ERC-8004 agent as registration names it: its Identity Registry on a configured network and its token id. */
export interface AgentRef {
  network: string
  registry: Address
  agentId: bigint
}

/** How the signed-in wallet controls the agent, in the order checked. */
export type AgentRole = 'agent_wallet' | 'owner' | 'operator'

export type AgentLinkCode = 'agent_registry_unknown' | 'agent_not_found' | 'agent_not_controlled' | 'agent_already_linked'

/** A registration naming an agent that the wallet does not control (or that does not exist): nothing is recorded. */
export class AgentLinkError extends Error {
  override readonly name = 'AgentLinkError'
  constructor(
    readonly code: AgentLinkCode,
    message: string,
  ) {
    super(message)
  }
}

/**
 * The wallet's role for the agent, read on chain now: its agent wallet (getAgentWallet), its owner (ownerOf), or
 * an approved operator (isAuthorizedOrOwner); null when none. A transfer clears the agent wallet and moves the
 * owner, and ERC-721 approvals belong to the owner that gave them, so a transferred token stops counting for the
 * previous holder. Throws AgentLinkError('agent_not_found') when the token does not exist (ownerOf reverts).
 */
export async function agentRoleOf(client: Client, network: string, agent: AgentRef, wallet: Address): Promise<AgentRole | null> {
  const read = (functionName: 'ownerOf' | 'getAgentWallet', args: readonly [bigint]) =>
    client.readContract({ address: agent.registry, abi: identityRegistryAbi, functionName, args }) as Promise<Address>
  let owner: Address
  let agentWallet: Address
  let authorized: boolean
  try {
    ;[owner, agentWallet, authorized] = await Promise.all([
      read('ownerOf', [agent.agentId]),
      read('getAgentWallet', [agent.agentId]),
      client.readContract({ address: agent.registry, abi: identityRegistryAbi, functionName: 'isAuthorizedOrOwner', args: [wallet, agent.agentId] }) as Promise<boolean>,
    ])
  } catch (error) {
    // The registry's own answer only (ownerOf reverts for a token that does not exist): a provider's internal error
    // (-32603, which viem reads as a revert) is an outage, 503, not a missing agent (review30's finding, the same rule).
    if (contractAnswered(error)) throw new AgentLinkError('agent_not_found', `agent ${agent.agentId} does not exist in the identity registry ${agent.registry} on ${network}`)
    throw new ChainRpcError(network, error)
  }
  const me = getAddress(wallet)
  if (getAddress(agentWallet) === me) return 'agent_wallet'
  if (getAddress(owner) === me) return 'owner'
  return authorized ? 'operator' : null
}

export interface FeedbackReadOptions {
  /** The clients whose feedback is trusted; empty reads nothing (the registry would read every client). */
  trustedClients: readonly Address[]
  /** Ages are read from NewFeedback logs (from this block on) only when given; the formula decays by them. */
  ages?: { fromBlock: bigint; nowSeconds: number } | undefined
}

/** A feedback as read, with who gave it (for tests and audits) and its age when asked for. */
export interface ReadFeedback extends FeedbackEvidence {
  client: Address
  feedbackIndex: bigint
}

/**
 * The unrevoked feedback the trusted clients gave the agent (readAllFeedback with an explicit client list and
 * includeRevoked false). With `ages`, each item's age is the time since its NewFeedback log's block; an item
 * whose log lies before `fromBlock` has an unknown age and counts as fully decayed (weight 0 in the formula): the
 * reader chose to weigh by age, and an age it cannot show cannot earn weight.
 */
export async function readTrustedFeedback(client: Client, network: string, registry: Address, agentId: bigint, options: FeedbackReadOptions): Promise<ReadFeedback[]> {
  if (options.trustedClients.length === 0) return []
  try {
    const [clients, indexes, values, decimals] = (await client.readContract({
      address: registry,
      abi: reputationRegistryAbi,
      functionName: 'readAllFeedback',
      args: [agentId, [...options.trustedClients], '', '', false],
    })) as readonly [readonly Address[], readonly bigint[], readonly bigint[], readonly number[], readonly string[], readonly string[], readonly boolean[]]
    const items: ReadFeedback[] = clients.map((c, i) => ({ client: getAddress(c), feedbackIndex: indexes[i] as bigint, value: values[i] as bigint, valueDecimals: decimals[i] as number }))
    if (options.ages === undefined || items.length === 0) return items
    const head = await client.getBlockNumber({ cacheTime: 0 })
    // A range that starts after the head holds no logs (and some nodes refuse it).
    const logs = options.ages.fromBlock > head ? [] : await client.getContractEvents({
      address: registry,
      abi: reputationRegistryAbi,
      eventName: 'NewFeedback',
      args: { agentId, clientAddress: [...options.trustedClients] },
      fromBlock: options.ages.fromBlock,
      toBlock: head,
    })
    const blockOf = new Map<string, bigint>()
    for (const log of logs) {
      const args = log.args as { clientAddress?: Address; feedbackIndex?: bigint }
      if (args.clientAddress !== undefined && args.feedbackIndex !== undefined) blockOf.set(`${getAddress(args.clientAddress)}:${args.feedbackIndex}`, log.blockNumber)
    }
    const timeOf = new Map<bigint, number>()
    for (const block of new Set(blockOf.values())) timeOf.set(block, Number((await client.getBlock({ blockNumber: block })).timestamp))
    const unknownAgeSeconds = Number.MAX_SAFE_INTEGER
    return items.map((item) => {
      const block = blockOf.get(`${item.client}:${item.feedbackIndex}`)
      const at = block === undefined ? undefined : timeOf.get(block)
      return { ...item, ageSeconds: at === undefined ? unknownAgeSeconds : Math.max(0, options.ages!.nowSeconds - at) }
    })
  } catch (error) {
    throw new ChainRpcError(network, error)
  }
}
