// Pieces every domain route uses: typed replies checked against the documented schema at compile time, the
// idempotent mutation wrapper, and the error responses each kind of route documents.
import Type, { type Static, type TSchema } from 'typebox'
import { StrictObject } from '../common.ts'
import type { ResponseSpec, RouteContext } from '../../http/route.ts'
import type { IdempotencyTicket, StoredResponse } from '../../store/index.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { concretePath, idempotent, IDEMPOTENCY_HEADER } from '../idempotency.ts'
import { problemOf } from '../problems.ts'
import { serializerFor } from '../serializers.ts'
import { toWire, type Wire } from '../wire.ts'
import { JsonText } from '../../http/request.ts'

/** A reply whose body the type checker holds to `schema`: the wire form and the document cannot drift apart. */
export function replyWith<S extends TSchema>(status: number, _schema: S) {
  return (body: Static<S>): StoredResponse => ({ status, body })
}

/**
 * A reply built from an engine value (bigint amounts, `...AtMs` instants) whose wire form the type checker holds to
 * `schema`. Without an idempotency ticket nothing stores the body, so it is written as JSON in one pass by the
 * schema's compiled writer (api/serializers.ts: the bytes toWire + JSON.stringify would give, without the wire
 * object); with one, the wire object is stored.
 */
export function wireReply<S extends TSchema>(status: number, schema: S, ticket?: IdempotencyTicket) {
  return <T>(value: T & (Wire<T> extends Static<S> ? unknown : never)): StoredResponse =>
    ticket === undefined ? { status, body: new JsonText(serializerFor(schema)(value)) } : replyWith(status, schema)(toWire(value) as Static<S>)
}

/** Casts a stored reply to the route's declared result type (its body was checked by `replyWith`). */
export function asResult(reply: StoredResponse & { headers?: Record<string, string> }): never {
  return reply as never
}

export const mutationHeaders = [IDEMPOTENCY_HEADER] as const

/**
 * Runs a mutation under the request's Idempotency-Key (if any), scoped to the caller and the concrete path of its
 * route; the errors it raises become problem+json here (src/api/problems.ts). A keyed request's first run is charged
 * to the store budget (CreditService.keyedRequests) unless its route declares `keyedRequestsCharged: false`.
 */
export async function mutate(
  service: CreditService,
  ctx: RouteContext<Record<string, string>, unknown, unknown, 'session'>,
  run: (ticket: IdempotencyTicket | undefined) => Promise<StoredResponse>,
): Promise<never> {
  try {
    // Without a key (the load mix's requests) no request for the idempotency wrapper is built: nothing is looked up
    // or stored, and the concrete path and the budget are not needed (issue 11).
    if (ctx.headers[IDEMPOTENCY_HEADER] === undefined) return asResult(await run(undefined))
    const reply = await idempotent(
      service.store,
      {
        identity: ctx.session.address,
        method: 'POST',
        path: concretePath(ctx.route.path, ctx.params),
        headers: ctx.headers,
        body: ctx.body,
        context: ctx,
        budget: ctx.route.keyedRequestsCharged === false ? undefined : service.keyedRequests,
        standing: service.hasStanding,
      },
      run,
    )
    return asResult(reply)
  } catch (error) {
    throw problemOf(error)
  }
}

const e = (description: string): ResponseSpec => ({ description })

/** The 503 of a request whose chain read the budget refused (src/service/chain-read-budget.ts). */
export const CHAIN_READS_EXHAUSTED = 'The chain reads requests may make on the network are used up for now, or this wallet, or this client address (whatever wallets its requests name), used its quarter of them (code chain_reads_exhausted, with Retry-After in seconds; nothing changed).'

/** The 503 of a request on a network whose chain follower stopped for good (src/service/core.ts refuseStoppedNetwork). */
export const NETWORK_STOPPED = 'The network\'s chain follower stopped for good (code network_stopped, without Retry-After: /health says why; nothing changed, and a retry will not succeed until an operator acts).'

/**
 * Refuses a request on a network whose chain follower stopped for good as problem+json (503 network_stopped): for
 * routes outside the service's mutations and proofs (the x402 facilitator, the paid /credit-score), whose payments
 * are on that network's chain and are neither verified nor settled then.
 */
export function stoppedNetworkRefusal(service: Pick<CreditService, 'refuseStoppedNetwork'>): (slug: string) => void {
  return (slug) => {
    try {
      service.refuseStoppedNetwork(slug)
    } catch (error) {
      throw problemOf(error)
    }
  }
}

/** Error responses by cause; each route picks those that can happen to it. */
export const errors = {
  forbidden: { 403: e('The signed-in wallet is not the actor this request names (code forbidden).') },
  notFound: (what: string) => ({ 404: e(`Unknown ${what} (code ${what}_not_found).`) }),
  proof: {
    409: e('Wrong state, or the transaction proof was already used (code proof_already_used).'),
    422: e('The transaction does not prove what it must: proof_not_found, proof_reverted, proof_wrong_contract, proof_wrong_arguments, proof_too_few_confirmations; or idempotency_key_reused.'),
    503: e(`The chain RPC is unavailable (code chain_unavailable); retry. Or: ${CHAIN_READS_EXHAUSTED} Or: ${NETWORK_STOPPED}`),
  },
  /** Routes that send an operator transaction (settleJob, failJob, liquidate). */
  operator: { 503: e(`The chain or the operator key is unavailable (code chain_unavailable or operator_unavailable); retry. Or: ${NETWORK_STOPPED}`) },
  /** Routes that read no chain but name a network (a credit request, the unsigned transactions). */
  networkStopped: { 503: e(NETWORK_STOPPED) },
  idempotency: {
    409: e('Wrong state for this operation, or a request with the same Idempotency-Key is still running (code idempotency_in_flight).'),
    422: e('The Idempotency-Key was used with another body (code idempotency_key_reused).'),
  },
} as const

/** Items per page of a list: the default and the largest a caller may ask for. */
export interface PageLimits {
  readonly default: number
  readonly max: number
}

/** /lenders and /credit/backing-sources: plain records. */
export const RECORD_PAGE: PageLimits = { default: 100, max: 1000 }
/** /lenders/wallets: each item reads the watcher per network and the lender's live leases, so pages are smaller. */
export const WALLET_PAGE: PageLimits = { default: 20, max: 200 }
/** A filtered list looks at most this many times `limit` records per page; a page may then hold fewer items. */
export const PAGE_SCAN_FACTOR = 4

/** `?limit=&after=` of a list in registration order: integers, with the list's real bounds. */
export function pageQuery(limits: PageLimits) {
  return StrictObject({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: limits.max, default: limits.default, description: `Items per page, 1..${limits.max} (default ${limits.default}).` })),
    after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'registrationSeq of the last item of the previous page; the next page starts after it.' })),
  })
}

/** A list answer costs the rate limit its item count (at least the one token that admitted it). */
export const itemCount = (body: unknown): number => (Array.isArray(body) ? body.length : 1)

/** The response headers a list answer documents. */
export const pageHeaders = ['link', 'next-after'] as const

/**
 * The headers that point to the next page, absent on the last one: `next-after` and the RFC 8288 `Link` with
 * rel="next" (a relative reference, resolved against the request's URL).
 */
export function nextPageHeaders(path: string, limit: number, nextAfterSeq: number | undefined): Record<string, string> {
  if (nextAfterSeq === undefined) return {}
  return { 'next-after': String(nextAfterSeq), link: `<${path}?limit=${limit}&after=${nextAfterSeq}>; rel="next"` }
}
