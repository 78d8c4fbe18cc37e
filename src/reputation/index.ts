// ERC-8004 reputation for the service: the agent link check at registration (and its re-check), and the initial
// reputation from trusted feedback through the formula of formula.ts.
import { getAddress, type Address } from 'viem'
import type { NetworkClients } from '../chain/clients.ts'
import { agentRoleOf, AgentLinkError, readTrustedFeedback, type AgentRef, type AgentRole, type ReadFeedback } from './erc8004.ts'
import { reputationFromFeedback, reputationFormulaDefaults } from './formula.ts'

export { AgentLinkError, agentRoleOf, readTrustedFeedback, type AgentRef, type AgentRole, type ReadFeedback } from './erc8004.ts'
export { feedbackBps, feedbackWeight, NEUTRAL_REPUTATION_BPS, reputationFromFeedback, type FeedbackEvidence } from './formula.ts'

/** Configuration file key `reputation`. */
export interface ReputationConfig {
  /** Clients whose feedback counts (the registry's summary needs an explicit list); none: everyone starts neutral. */
  trustedClients: Address[]
  /** Weight of the neutral prior, in fresh feedbacks. */
  priorWeight: number
  /** Half-life of a feedback's weight; undefined: no decay (and no log reads). */
  halfLifeSeconds: number | undefined
  /** First block scanned for NewFeedback logs when decaying by age. */
  feedbackFromBlock: bigint
  /** Period of the re-check of every agent link (0: only on demand). */
  linkRecheckIntervalMs: number
}

export const reputationDefaults: ReputationConfig = {
  trustedClients: [],
  priorWeight: reputationFormulaDefaults.priorWeight,
  halfLifeSeconds: undefined,
  feedbackFromBlock: 0n,
  linkRecheckIntervalMs: 60_000,
}

/** What the evidence of a linked agent gave: its role then, the feedback counted and the resulting reputation. */
export interface AgentEvidence {
  agent: AgentRef
  role: AgentRole
  feedbackCount: number
  reputationBps: number
}

export class ReputationReader {
  constructor(
    readonly config: ReputationConfig,
    private readonly clientsOf: (network: string) => NetworkClients,
  ) {}

  /** The network's clients, once the registry named is that network's configured identity registry. */
  #identity(agent: AgentRef): NetworkClients {
    // An unknown network is UnknownNetworkError (400 unknown_network) from clientsOf.
    const clients = this.clientsOf(agent.network)
    if (getAddress(agent.registry) !== clients.network.identityRegistry) {
      throw new AgentLinkError('agent_registry_unknown', `${agent.registry} is not the identity registry configured for ${agent.network} (${clients.network.identityRegistry}); see /.well-known/service.json`)
    }
    return clients
  }

  /** The wallet's role for the agent now, or null when it has none (not the agent wallet, owner or operator). */
  async roleOf(agent: AgentRef, wallet: Address): Promise<AgentRole | null> {
    const clients = this.#identity(agent)
    return agentRoleOf(clients.publicClient, agent.network, agent, wallet)
  }

  /** Refuses (AgentLinkError) unless `wallet` controls the agent; otherwise its evidence and initial reputation. */
  async evidenceFor(agent: AgentRef, wallet: Address, nowMs: number): Promise<AgentEvidence> {
    const role = await this.roleOf(agent, wallet)
    if (role === null) {
      throw new AgentLinkError('agent_not_controlled', `${wallet} is neither the agent wallet, the owner nor an approved operator of agent ${agent.agentId} on ${agent.network}`)
    }
    const feedback = await this.feedback(agent, nowMs)
    return { agent, role, feedbackCount: feedback.length, reputationBps: this.reputationOf(feedback) }
  }

  async feedback(agent: AgentRef, nowMs: number): Promise<ReadFeedback[]> {
    const clients = this.#identity(agent)
    const { halfLifeSeconds, feedbackFromBlock, trustedClients } = this.config
    return readTrustedFeedback(clients.publicClient, agent.network, clients.network.reputationRegistry, agent.agentId, {
      trustedClients,
      ages: halfLifeSeconds === undefined ? undefined : { fromBlock: feedbackFromBlock, nowSeconds: Math.trunc(nowMs / 1000) },
    })
  }

  reputationOf(feedback: readonly ReadFeedback[]): number {
    return reputationFromFeedback(feedback, { priorWeight: this.config.priorWeight, halfLifeSeconds: this.config.halfLifeSeconds })
  }
}
