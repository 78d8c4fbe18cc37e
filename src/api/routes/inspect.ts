// The live inspector (README "Live inspector"): the page, the Mermaid script it draws with, its live feed (a
// WebSocket, src/inspect/live.ts) and the three read-only JSON routes it polls while that feed is closed. Public like
// the other reads, and shows no more than they do (src/inspect/inspector.ts).
// Mounted only when the configuration turns the inspector on.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import Type from 'typebox'
import { notFound, type HttpProblem } from '../../http/problem.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { FEED_ENTRIES_MAX, kindOfId, type Inspector } from '../../inspect/inspector.ts'
import { INSPECT_LIVE_CLOSE, INSPECT_LIVE_PATH, type InspectorLive } from '../../inspect/live.ts'
import { inspectorPage } from '../../inspect/page.ts'
import { ACTOR_KINDS } from '../../store/index.ts'
import { StrictObject } from '../common.ts'
import { toWire } from '../wire.ts'
import { asResult } from './shared.ts'

const tags = ['inspect'] as const

const ActorKindSchema = Type.Union(ACTOR_KINDS.map((kind) => Type.Literal(kind)), { description: 'The actor\'s machine.' })

const Transition = StrictObject({
  from: Type.Union([Type.String(), Type.Null()], { description: 'The state left; null for the entry that created the actor.' }),
  to: Type.String({ description: 'The state entered (the same one for an event taken in place).' }),
  event: Type.String({ description: 'The machine event that moved it (`created` for the creation).' }),
  at: Type.String({ format: 'date-time', description: 'When: the time of the command that sent the event.' }),
})

export const InspectCounts = StrictObject({
  machines: StrictObject(
    Object.fromEntries(ACTOR_KINDS.map((kind) => [kind, Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: `Live ${kind}s per state, every state listed.` })])),
    { description: 'Per machine, the number of live actors in each state.' },
  ),
})

export const InspectTransitions = StrictObject({
  transitions: Type.Array(
    StrictObject({ kind: ActorKindSchema, id: Type.String(), ...Transition.properties }),
    { maxItems: FEED_ENTRIES_MAX, description: 'The latest transitions of every actor, newest first, once durable.' },
  ),
})

export const InspectActor = StrictObject({
  kind: ActorKindSchema,
  id: Type.String(),
  state: Type.String(),
  final: Type.Boolean({ description: 'true once the actor reached a final state (read from the store).' }),
  context: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The actor\'s public view, as GET /credit/jobs/{jobId}, /credit/offers/{offerId} and /credit/advances/{advanceId} show it (a lease as a lender\'s actions list shows it).',
  }),
  history: Type.Array(Transition, { description: 'Its latest transitions, oldest first (at most 64; histories start with snapshot schema version 2).' }),
})

export const InspectLiveMessage = StrictObject({
  type: Type.Union([Type.Literal('snapshot'), Type.Literal('update')], {
    description: 'snapshot: the first message (the counts and the latest transitions); update: the transitions made durable since the message before, and the counts after them.',
  }),
  machines: InspectCounts.properties.machines,
  transitions: InspectTransitions.properties.transitions,
}, { description: 'One text frame of GET /inspect/live.' })

const InspectLiveInfo = StrictObject({
  url: Type.String({ description: 'Where to open the WebSocket.' }),
  watchers: Type.Integer({ minimum: 0, description: 'Feeds open now.' }),
  watchersMax: Type.Integer({ description: 'Open feeds at once, over every client (429 too_many_watchers beyond).' }),
  watchersPerClientMax: Type.Integer({ description: 'Open feeds at once of one client address, an IPv6 /64 (429 too_many_watchers beyond).' }),
  flushIntervalMs: Type.Integer({ description: 'Shortest time between two updates: commits in between are coalesced into one.' }),
  bufferedBytesMax: Type.Integer({ description: 'Unsent bytes a watcher may hold before it is cut off with close code 4008.' }),
})

const TransitionsQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FEED_ENTRIES_MAX, default: 50, description: `Transitions to return, 1..${FEED_ENTRIES_MAX} (default 50).` })),
})

const ActorParams = StrictObject({
  id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,80}$', description: 'A job, offer, lease or advance id (job_..., off_..., lse_..., adv_...).' }),
})

/** The Mermaid bundle the page loads, read from node_modules on first use (5 MB: only when someone opens the page). */
let mermaidScript: string | undefined
function mermaid(): string {
  mermaidScript ??= readFileSync(createRequire(import.meta.url).resolve('mermaid/dist/mermaid.min.js'), 'utf8')
  return mermaidScript
}

/** The inspector's routes; `baseUrl` is read when a plain GET of the live feed asks where to connect. */
export function inspectRoutes(inspector: Inspector, baseUrl: () => string, live: InspectorLive): AnyRoute[] {
  const limits = live.limits
  return [
    defineRoute({
      method: 'get',
      path: '/inspect',
      operationId: 'getInspector',
      callers: 'public, when enabled',
      summary: 'The live inspector: the four machines with live counts per state, recent transitions, a lookup by id',
      description:
        'Public, read-only HTML page. Everything it loads is served by this service (the Mermaid script below); it follows GET /inspect/live, and polls the JSON routes of this tag every two seconds while that feed is closed.',
      tags,
      auth: 'none',
      immutable: true,
      responses: { 200: { description: 'The page', schema: Type.String(), contentType: 'text/html; charset=utf-8' } },
      handler: () => asResult({ status: 200, body: inspectorPage() }),
    }),

    defineRoute({
      method: 'get',
      path: '/inspect/mermaid.js',
      operationId: 'getInspectorMermaid',
      callers: 'public, when enabled',
      summary: 'The Mermaid library the inspector page draws its diagrams with (the mermaid package, served from node_modules)',
      description:
        'Public. Served uncompressed: compressing 5 MB with brotli at the quality of the discovery documents takes close to a minute. Cacheable for a day.',
      tags,
      auth: 'none',
      responses: { 200: { description: 'mermaid.min.js', schema: Type.String(), contentType: 'text/javascript; charset=utf-8', headers: ['cache-control'] } },
      handler: () => asResult({ status: 200, body: mermaid(), headers: { 'cache-control': 'public, max-age=86400' } }),
    }),

    defineRoute({
      method: 'get',
      path: '/inspect/counts',
      operationId: 'getInspectorCounts',
      callers: 'public, when enabled',
      summary: 'Live actors per machine and state',
      description: 'Public. Counted from durable changes only: an actor appears once the commit that created or moved it is on disk.',
      tags,
      auth: 'none',
      responses: { 200: { description: 'The counts', schema: InspectCounts } },
      handler: () => asResult({ status: 200, body: { machines: inspector.counts() } }),
    }),

    defineRoute({
      method: 'get',
      path: '/inspect/transitions',
      operationId: 'getInspectorTransitions',
      callers: 'public, when enabled',
      summary: 'The latest transitions of every actor, newest first',
      description: `Public. A ring of the last ${FEED_ENTRIES_MAX} transitions the service made durable since it started (each actor's own history is in the lookup).`,
      tags,
      auth: 'none',
      query: TransitionsQuery,
      responses: { 200: { description: 'The feed', schema: InspectTransitions } },
      handler: (ctx) => asResult({ status: 200, body: toWire({ transitions: inspector.recent(ctx.query.limit ?? 50) }) }),
    }),

    defineRoute({
      method: 'get',
      path: INSPECT_LIVE_PATH,
      operationId: 'openInspectorFeed',
      callers: 'public, when enabled',
      summary: 'The inspector\'s live feed (WebSocket): counts and transitions as commits become durable',
      description:
        'Public, read-only. Open a WebSocket (RFC 6455) on this path, no query. Each text frame is one InspectLiveMessage: a snapshot first (what GET /inspect/counts and ' +
        `GET /inspect/transitions answer), then an update at most every ${limits.flushIntervalMs} ms with the transitions made durable since the last message (newest first, at most ${FEED_ENTRIES_MAX}) ` +
        `and the counts after them. At most ${limits.watchersMax} feeds are open at once, ${limits.watchersPerClientMax} of one client address (an IPv6 /64) (429 too_many_watchers); a watcher that lets more than ${limits.bufferedBytesMax} bytes go unread is ` +
        `closed with code ${INSPECT_LIVE_CLOSE.slowConsumer} (reason slow_consumer). Close code ${INSPECT_LIVE_CLOSE.stopping} when the service stops. A plain GET answers how to connect.`,
      tags,
      auth: 'none',
      responses: {
        101: { description: 'Switching Protocols: the WebSocket. Each text frame is one InspectLiveMessage.', schema: InspectLiveMessage },
        200: { description: 'A plain GET (no upgrade): where to open the feed and its bounds.', schema: InspectLiveInfo },
        429: { description: 'The most feeds allowed are open, over every client or of this client address (code too_many_watchers).' },
      },
      handler: () => asResult({ status: 200, body: { url: `${baseUrl().replace(/^http/, 'ws')}${INSPECT_LIVE_PATH}`, watchers: live.watchers, ...limits } }),
    }),

    defineRoute({
      method: 'get',
      path: '/inspect/actors/{id}',
      operationId: 'getInspectorActor',
      callers: 'public, when enabled',
      summary: 'One job, offer, lease or advance (live or final): its state, its public view and its transition history',
      description: 'Public. Read from the store, so live and final actors alike, as of their last durable change.',
      tags,
      auth: 'none',
      params: ActorParams,
      responses: {
        200: { description: 'The actor', schema: InspectActor },
        404: { description: 'No actor has this id (code actor_not_found).' },
      },
      handler: (ctx) => {
        const found = kindOfId(ctx.params.id) === undefined ? undefined : inspector.lookup(ctx.params.id)
        if (found === undefined) throw actorNotFound(ctx.params.id)
        return asResult({ status: 200, body: toWire(found) })
      },
    }),
  ]
}

function actorNotFound(id: string): HttpProblem {
  return notFound(`no job, offer, lease or advance ${id}`, 'actor_not_found')
}
