// Discovery and health: public documents generated from the route table and the configuration. (The paid
// /credit-score lives in score.ts.)
import Type from 'typebox'
import { PROVISIONAL_DOCUMENT_CACHE_CONTROL } from '../../http/document-cache.ts'
import { HttpProblem } from '../../http/problem.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import type { CreditService } from '../../service/credit-service.ts'
import type { Reconciliation } from '../../service/reconciliation.ts'
import { StoreError, type Store } from '../../store/index.ts'
import { HEALTH_DIFFERENCES_MAX, reconciliationToWire } from '../reconciliation.ts'
import { Catalog } from '../catalog.ts'
import { Health } from '../schemas.ts'
import { asResult, replyWith } from './shared.ts'

const tags = ['discovery'] as const

export interface DiscoveryDocuments {
  catalog: () => Catalog
  llmsTxt: () => string
  /** Changes when the catalog and llms.txt must be built again (a network's reclaimDelay() read after the start). */
  revision?: () => number
  /** Whether the documents wait for a value the service has not read yet: then served no-cache, not for 5 minutes. */
  provisional?: () => boolean
  version: string
  /** The last reconciliation of each network, shown by /health. */
  reconciliation: Reconciliation
  /** What /health waits on: the store's durability, and how long its write in flight has gone unsettled. */
  store: Pick<Store, 'durable' | 'writePendingMs'>
}

/**
 * How long the store's write transaction in flight may go unsettled before /health answers 503 store_stalled instead
 * of waiting for it (a probe's timeout is often 1 s; the watchdog, storeCommitStallMs, stops the service later).
 */
export const HEALTH_STORE_WAIT_MS = 1_000

/**
 * Resolves once every commit queued before the call is durable (Store.durable(), the read barrier every other GET
 * waits on in the server), or throws 503 store_stalled once the store's write in flight has gone unsettled for
 * HEALTH_STORE_WAIT_MS, at once when it already has: an operator's probe sees the stall instead of no answer.
 */
async function durableUnlessStalled(store: DiscoveryDocuments['store']): Promise<void> {
  const stalled = (pendingMs: number) =>
    new HttpProblem(503, 'store_stalled', `the store's write transaction has not settled in ${Math.round(pendingMs)} ms: the disk or LMDB's write lock does not answer (the service stops after storeCommitStallMs)`)
  const durable = store.durable().then(
    () => true,
    (error: unknown) => {
      if (error instanceof StoreError && error.code === 'store_stalled') throw stalled(store.writePendingMs())
      throw error
    },
  )
  for (;;) {
    const pendingMs = store.writePendingMs()
    if (pendingMs >= HEALTH_STORE_WAIT_MS) {
      durable.catch(() => undefined)
      throw stalled(pendingMs)
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, HEALTH_STORE_WAIT_MS - pendingMs, false)))
    const settled = await Promise.race([durable, late])
    clearTimeout(timer)
    if (settled) return
  }
}

const provisionalHeaders = (docs: DiscoveryDocuments): Record<string, string> | undefined =>
  docs.provisional?.() === true ? { 'cache-control': PROVISIONAL_DOCUMENT_CACHE_CONTROL } : undefined

export function discoveryRoutes(service: CreditService, docs: DiscoveryDocuments): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/health',
      operationId: 'getHealth',
      callers: 'public',
      summary: 'Health: the engine is serving; per network, whether the wallet watcher and the chain follower are current and the ledger equals the chain',
      description:
        'Public. ok when every network\'s wallet watcher is current, its chain follower is following and its last reconciliation (at start-up or POST /operator/reconcile) found no difference; degraded when a watcher is serving its last known values, a follower is failing or stopped, a reconciliation found differences (listed), or an operator transaction mined and not yet recorded has waited too long (operatorRepairs); per network the follower\'s last applied block, its time and its lag; also the counts of live actors.',
      tags,
      auth: 'none',
      responses: {
        200: { description: 'Health', schema: Health },
        503: { description: `The store's write transaction in flight has gone unsettled for ${HEALTH_STORE_WAIT_MS} ms (code store_stalled, without Retry-After: the disk or its write lock does not answer, and the service stops itself after storeCommitStallMs); answered at once, while every other read waits for the write.` },
      },
      // Built from memory, then shown once every commit queued before it is durable, as every GET; but a stalled write
      // is answered 503 instead of waiting with them (durableUnlessStalled).
      ownReadBarrier: true,
      handler: async () => {
        const reconciled = docs.reconciliation.last()
        const networks = service.networks.map((n, i) => ({
          network: n.slug,
          chainId: n.chainId,
          watcher: service.watcher.isDegraded(n.slug) ? ('degraded' as const) : ('ok' as const),
          reconciliation: reconciliationToWire(reconciled[i] as (typeof reconciled)[number], HEALTH_DIFFERENCES_MAX),
          follower: service.followerHealth(n.slug),
        }))
        const { counts } = service.engine.creditState()
        const followerDown = (state: string) => state === 'degraded' || state === 'stopped'
        const { degraded: repairsStale, nextAttemptAtMs, ...repairs } = service.operatorRepairs.status()
        const reply = replyWith(200, Health)({
          status: repairsStale || networks.some((n) => n.watcher === 'degraded' || followerDown(n.follower.state) || n.reconciliation.status === 'differences') ? 'degraded' : 'ok',
          version: docs.version,
          networks,
          live: { jobs: counts.liveJobs, offers: counts.liveOffers, leases: counts.liveLeases, advances: counts.liveAdvances },
          operatorRepairs: { ...repairs, nextAttemptAt: nextAttemptAtMs === null ? null : new Date(nextAttemptAtMs).toISOString() },
        })
        await durableUnlessStalled(docs.store)
        return asResult(reply)
      },
    }),

    defineRoute({
      method: 'get',
      path: '/.well-known/service.json',
      operationId: 'getServiceCatalog',
      callers: 'public',
      summary: 'Machine-readable service catalog: networks, assets, contracts, facilitators, endpoints, rules and limits',
      description:
        'Public. Everything an agent needs to start: networks with their contracts and assets, the x402 facilitators, the endpoints, the SIWE domain, the attesters, suppliers, rules and limits. Served with a strong ETag, Cache-Control and gzip or br; revalidate with If-None-Match (304). Query parameters are ignored.',
      tags,
      auth: 'none',
      immutable: true,
      ...(docs.revision === undefined ? {} : { documentRevision: docs.revision }),
      responses: { 200: { description: 'The catalog', schema: Catalog } },
      handler: () => asResult({ ...replyWith(200, Catalog)(docs.catalog()), headers: provisionalHeaders(docs) }),
    }),

    defineRoute({
      method: 'get',
      path: '/llms.txt',
      operationId: 'getLlmsTxt',
      callers: 'public',
      summary: 'Plain-text description for agents: the typical flow with exact calls',
      description:
        'Public. The service for a language model (llmstxt.org): what it is, links to the documents and the endpoints, the sign-in steps and the typical flow as exact calls. Served like the catalog (ETag, 304, gzip or br).',
      tags,
      auth: 'none',
      immutable: true,
      ...(docs.revision === undefined ? {} : { documentRevision: docs.revision }),
      responses: { 200: { description: 'llms.txt', schema: Type.String(), contentType: 'text/plain; charset=utf-8' } },
      handler: () => asResult({ status: 200, body: docs.llmsTxt(), headers: provisionalHeaders(docs) }),
    }),
  ]
}
