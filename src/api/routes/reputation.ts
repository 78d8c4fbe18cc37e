// Routes of the ERC-8004 link of a lender (issue 13): read it, and have it re-checked on chain now. Registration
// itself names the agent (POST /lenders/register, `agent`); src/reputation/links.ts says when links are re-checked.
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { HttpProblem } from '../../http/problem.ts'
import type { AgentLinkRecord, AgentLinks, RecheckOutcome } from '../../reputation/links.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { Address as AddressSchema, Bps, checksum, IsoTime, StrictObject } from '../common.ts'
import { EmptyBody, Erc8004Agent } from '../schemas.ts'
import { asResult, CHAIN_READS_EXHAUSTED, errors, mutate, mutationHeaders, NETWORK_STOPPED, replyWith } from './shared.ts'

const AddressParams = StrictObject({ address: AddressSchema })
const tags = ['lenders'] as const

export const AgentLink = StrictObject(
  {
    lender: AddressSchema,
    agent: Erc8004Agent,
    role: Type.Union([Type.Literal('agent_wallet'), Type.Literal('owner'), Type.Literal('operator')], { description: 'How the lender\'s wallet controlled the agent when linked.' }),
    linkedAt: IsoTime,
    feedbackCount: Type.Integer({ minimum: 0, description: 'Trusted, unrevoked feedbacks the initial reputation was computed from.' }),
    offsetBps: Type.Integer({ minimum: -10000, maximum: 10000, description: 'What the evidence added to the neutral 5000; taken back when the link ends.' }),
    active: Type.Boolean({ description: 'Whether the evidence still counts: false once the wallet no longer controls the agent.' }),
    endedAt: Type.Union([IsoTime, Type.Null()]),
    checkedAt: Type.Union([IsoTime, Type.Null()], { description: 'When this process last saw the link valid on chain (null: not since it started).' }),
    reputationBps: Bps,
  },
  { description: 'The ERC-8004 agent a lender registered with, and whether its evidence still counts.' },
)

export function reputationRoutes(service: CreditService, links: AgentLinks): AnyRoute[] {
  const linkOr404 = (address: string): AgentLinkRecord => {
    const link = links.get(checksum(address))
    if (link === undefined) throw new HttpProblem(404, 'agent_link_not_found', `lender ${address} registered without an ERC-8004 agent`, { title: 'Not found' })
    return link
  }
  const view = (link: AgentLinkRecord) => {
    const checkedAtMs = links.checkedAtMs(link.lender)
    return {
      lender: link.lender,
      agent: { network: link.network, registry: link.registry, agentId: link.agentId },
      role: link.role,
      linkedAt: new Date(link.linkedAtMs).toISOString(),
      feedbackCount: link.feedbackCount,
      offsetBps: link.offsetBps,
      active: link.endedAtMs === null,
      endedAt: link.endedAtMs === null ? null : new Date(link.endedAtMs).toISOString(),
      checkedAt: checkedAtMs === undefined ? null : new Date(checkedAtMs).toISOString(),
      reputationBps: service.engine.getLender(link.lender)?.reputationBps ?? 0,
    }
  }
  const responses = {
    200: { description: 'The link', schema: AgentLink },
    404: { description: 'The lender registered without an agent (code agent_link_not_found).' },
  }
  return [
    defineRoute({
      method: 'get',
      path: '/lenders/{address}/agent',
      operationId: 'getLenderAgent',
      callers: 'public',
      summary: 'The ERC-8004 agent a lender registered with, and whether its evidence still counts',
      description: 'Public. The link as recorded; the service re-checks it on chain periodically (the catalog\'s reputation.linkRecheckIntervalSeconds) and on POST .../agent/recheck.',
      tags,
      auth: 'none',
      params: AddressParams,
      responses,
      handler: (ctx) => asResult(replyWith(200, AgentLink)(view(linkOr404(ctx.params.address)))),
    }),
    defineRoute({
      method: 'post',
      path: '/lenders/{address}/agent/recheck',
      operationId: 'recheckLenderAgent',
      callers: 'any session',
      summary: 'Re-check on chain that the lender still controls its ERC-8004 agent; if not, its evidence stops counting',
      description:
        'Any signed-in wallet (it only reads the chain and can only take evidence away: e.g. the agent\'s new owner after a transfer). When the lender\'s wallet is no longer the agent\'s wallet, owner or approved operator, the offset the agent\'s feedback gave its reputation is taken back (matching order changes with it) and the link ends. The body is optional.',
      tags,
      auth: 'session',
      params: AddressParams,
      body: EmptyBody,
      headers: mutationHeaders,
      responses: { ...responses, ...errors.idempotency, 503: { description: `The chain RPC is unavailable (code chain_unavailable); nothing changed. Or: ${CHAIN_READS_EXHAUSTED} Or: ${NETWORK_STOPPED}` } },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known (its chain reads' part).
        const caller = { wallet: ctx.session.address, client: ctx.clientKey }
        return mutate(service, ctx, async (ticket) => {
          const link = linkOr404(ctx.params.address)
          const result = await links.recheck(link.lender, { ticket, encode: (outcome: RecheckOutcome) => replyWith(200, AgentLink)(view(outcome.link)) }, caller)
          return result?.response ?? replyWith(200, AgentLink)(view(link))
        })
      },
    }),
  ]
}
