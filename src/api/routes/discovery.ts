// Discovery and health: public documents generated from the route table and the configuration. (The paid
// /credit-score lives in score.ts.)
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { Catalog } from '../catalog.ts'
import { Health } from '../schemas.ts'
import { asResult, replyWith } from './shared.ts'

const tags = ['discovery'] as const

export interface DiscoveryDocuments {
  catalog: () => Catalog
  llmsTxt: () => string
  version: string
}

export function discoveryRoutes(service: CreditService, docs: DiscoveryDocuments): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/health',
      operationId: 'getHealth',
      summary: 'Health: the engine is serving; per network, whether the wallet watcher is current',
      tags,
      auth: 'none',
      responses: { 200: { description: 'Health', schema: Health } },
      handler: () => {
        const networks = service.networks.map((n) => ({
          network: n.slug,
          chainId: n.chainId,
          watcher: service.watcher.isDegraded(n.slug) ? ('degraded' as const) : ('ok' as const),
        }))
        const { counts } = service.engine.creditState()
        return asResult(
          replyWith(200, Health)({
            status: networks.some((n) => n.watcher === 'degraded') ? 'degraded' : 'ok',
            version: docs.version,
            networks,
            live: { jobs: counts.liveJobs, offers: counts.liveOffers, leases: counts.liveLeases, advances: counts.liveAdvances },
          }),
        )
      },
    }),

    defineRoute({
      method: 'get',
      path: '/.well-known/service.json',
      operationId: 'getServiceCatalog',
      summary: 'Machine-readable service catalog: networks, assets, contracts, facilitators, endpoints, rules and limits',
      tags,
      auth: 'none',
      responses: { 200: { description: 'The catalog', schema: Catalog } },
      handler: () => asResult(replyWith(200, Catalog)(docs.catalog())),
    }),

    defineRoute({
      method: 'get',
      path: '/llms.txt',
      operationId: 'getLlmsTxt',
      summary: 'Plain-text description for agents: the typical flow with exact calls',
      tags,
      auth: 'none',
      responses: { 200: { description: 'llms.txt', schema: Type.String(), contentType: 'text/plain; charset=utf-8' } },
      handler: () => asResult({ status: 200, body: docs.llmsTxt() }),
    }),
  ]
}
