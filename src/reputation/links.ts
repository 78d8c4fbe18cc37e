// Links between lenders and their ERC-8004 agents: verified on chain before the registration's engine command (the
// initial reputation comes from the agent's feedback), kept in the record collection `agent-links`, and re-checked.
//
// When the link is re-checked: periodically (reputation.linkRecheckIntervalMs, 60 s) and on demand
// (POST /lenders/{address}/agent/recheck, which anyone may call: it only reads the chain and can only take evidence
// away). Not at each matching or reputation read: matching never waits on the chain, and the link matters only
// through the reputation it put into the book order, so a bounded delay is what counts; whoever gains from the
// evidence being withdrawn (the agent's new owner, a competing lender) can make it immediate. When the wallet no
// longer controls the agent (after a transfer, or a changed agent wallet or approval), the offset the evidence gave
// (initial reputation - 5000) is taken back from the lender's reputation in one engine command, committed with the
// link marked ended; the agent is then free to be linked by its new holder.
import { getAddress, type Address } from 'viem'
import type { LenderRecord } from '../engine/types.ts'
import type { CreditService } from '../service/credit-service.ts'
import type { Mutation } from '../service/mutation.ts'
import type { RecordWrite, StoredResponse } from '../store/index.ts'
import { AgentLinkError, type AgentRef, type AgentRole } from './erc8004.ts'
import { NEUTRAL_REPUTATION_BPS } from './formula.ts'
import type { ReputationReader } from './index.ts'

export interface AgentLinkRecord {
  lender: Address
  network: string
  registry: Address
  /** Decimal string: a uint256. */
  agentId: string
  /** The wallet's role when linked. */
  role: AgentRole
  linkedAtMs: number
  feedbackCount: number
  /** What the evidence added to the neutral 5000 at registration; taken back when the link ends. */
  offsetBps: number
  /** Null while the link counts. */
  endedAtMs: number | null
}

const ROLES: readonly string[] = ['agent_wallet', 'owner', 'operator']

function isAgentLinkRecord(value: unknown): value is AgentLinkRecord {
  const v = value as AgentLinkRecord
  return (
    typeof v === 'object' && v !== null && typeof v.lender === 'string' && typeof v.network === 'string' && typeof v.registry === 'string' &&
    typeof v.agentId === 'string' && /^\d{1,78}$/.test(v.agentId) && ROLES.includes(v.role) && Number.isInteger(v.linkedAtMs) &&
    Number.isInteger(v.feedbackCount) && Number.isInteger(v.offsetBps) && (v.endedAtMs === null || Number.isInteger(v.endedAtMs))
  )
}

const agentKey = (a: { network: string; registry: Address; agentId: bigint | string }): string => `${a.network}:${getAddress(a.registry)}:${a.agentId.toString()}`

export function agentOf(link: AgentLinkRecord): AgentRef {
  return { network: link.network, registry: link.registry, agentId: BigInt(link.agentId) }
}

/** The outcome of a re-check: the link as it stands, and the lender when its reputation changed. */
export interface RecheckOutcome {
  link: AgentLinkRecord
  lender: LenderRecord | undefined
}

export class AgentLinks {
  readonly #links
  /** Agent -> the lender whose active link holds it: one agent's evidence counts for one lender at a time. */
  readonly #holders = new Map<string, Address>()
  /** Last time each lender's link was seen valid on chain (memory only: a sweep writes nothing when nothing changed). */
  readonly #checkedAtMs = new Map<Address, number>()

  constructor(
    private readonly service: CreditService,
    readonly reader: ReputationReader,
  ) {
    this.#links = service.store.collection<AgentLinkRecord>('agent-links', { version: 1, validate: isAgentLinkRecord })
    for (const { value } of this.#links.iterate('')) if (value.endedAtMs === null) this.#holders.set(agentKey(value), value.lender)
  }

  get(lender: Address): AgentLinkRecord | undefined {
    return this.#links.get(lender)
  }

  checkedAtMs(lender: Address): number | undefined {
    return this.#checkedAtMs.get(lender)
  }

  /**
   * Verifies on chain that `lender` controls the agent and reads its evidence. Returns the initial reputation for
   * the engine command and `claim`, to be called synchronously right before that command: it refuses (409
   * agent_already_linked) an agent whose evidence already counts for another lender, and returns the writes for
   * the command's commit (they also mark the agent held, in the same synchronous section).
   */
  async prepare(lender: Address, client: string, agent: AgentRef): Promise<{ reputationBps: number; claim: () => () => RecordWrite[] }> {
    const nowMs = this.service.now()
    this.service.chainReads.take(this.service.network(agent.network).slug, lender, client)
    const evidence = await this.reader.evidenceFor(agent, lender, nowMs)
    const key = agentKey(agent)
    return {
      reputationBps: evidence.reputationBps,
      claim: () => {
        const holder = this.#holders.get(key)
        if (holder !== undefined && holder !== lender) {
          throw new AgentLinkError('agent_already_linked', `agent ${agent.agentId} on ${agent.network} already backs lender ${holder}; its evidence counts once`)
        }
        const record: AgentLinkRecord = {
          lender, network: agent.network, registry: getAddress(agent.registry), agentId: agent.agentId.toString(), role: evidence.role,
          linkedAtMs: nowMs, feedbackCount: evidence.feedbackCount, offsetBps: evidence.reputationBps - NEUTRAL_REPUTATION_BPS, endedAtMs: null,
        }
        return () => {
          this.#holders.set(key, lender)
          return [this.#links.putOp(lender, record)]
        }
      },
    }
  }

  /**
   * Re-reads the lender's role for its linked agent. Still in control (or already ended): nothing changes. No
   * longer: the evidence's offset leaves its reputation and the link ends, in one commit. With a mutation (the
   * HTTP route) the answer goes through the commit path either way, so an Idempotency-Key replays it. Undefined
   * when the lender has no link. A request's re-check (`caller`: the signed-in wallet and the request's clientKeyOf)
   * reads the chain from that wallet's share and that client's part of the chain read budget; the periodic sweep is
   * the service's own.
   */
  async recheck(lender: Address, mutation?: Mutation<RecheckOutcome>, caller?: { wallet: Address; client: string }): Promise<{ outcome: RecheckOutcome; response: StoredResponse | undefined } | undefined> {
    const link = this.#links.get(lender)
    if (link === undefined) return undefined
    if (link.endedAtMs === null && caller !== undefined) this.service.chainReads.take(link.network, caller.wallet, caller.client)
    const role = link.endedAtMs !== null ? link.role : await this.reader.roleOf(agentOf(link), lender).catch((error: unknown) => {
      // A token that no longer exists is controlled by nobody.
      if (error instanceof AgentLinkError && error.code === 'agent_not_found') return null
      throw error
    })
    const nowMs = this.service.now()
    if (role !== null) this.#checkedAtMs.set(lender, nowMs)
    if (role !== null && mutation === undefined) return { outcome: { link, lender: undefined }, response: undefined }
    let outcome: RecheckOutcome = { link, lender: undefined }
    const response = await this.service.apply<RecheckOutcome>(
      mutation ?? { ticket: undefined, encode: (value) => ({ status: 200, body: value }) },
      () => {
        // Read again in the command's synchronous section: a concurrent re-check may have ended the link meanwhile.
        const current = this.#links.get(lender) ?? link
        if (role !== null || current.endedAtMs !== null) return { ok: true, value: (outcome = { link: current, lender: undefined }), changes: [] }
        const withdrawn = this.service.engine.withdrawLenderEvidence({ lender, offsetBps: current.offsetBps }, nowMs)
        if (!withdrawn.ok) return withdrawn
        outcome = { link: { ...current, endedAtMs: nowMs }, lender: withdrawn.value }
        return { ...withdrawn, value: outcome }
      },
      (value) => {
        if (value.lender === undefined) return []
        this.#holders.delete(agentKey(value.link))
        return [this.#links.putOp(lender, value.link)]
      },
    )
    return { outcome, response }
  }

  /** Every active link, re-checked one after the other (the periodic sweep); returns how many ended. */
  async recheckAll(): Promise<number> {
    let ended = 0
    const lenders = [...this.#holders.values()]
    for (const lender of lenders) {
      const result = await this.recheck(lender)
      if (result?.outcome.lender !== undefined) ended += 1
    }
    return ended
  }
}
