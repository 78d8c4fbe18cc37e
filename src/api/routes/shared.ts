// Pieces every domain route uses: typed replies checked against the documented schema at compile time, the
// idempotent mutation wrapper, and the error responses each kind of route documents.
import Type, { type Static, type TSchema } from 'typebox'
import { StrictObject } from '../common.ts'
import type { ResponseSpec, RouteContext } from '../../http/route.ts'
import type { IdempotencyTicket, StoredResponse } from '../../store/index.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { concretePath, idempotent, IDEMPOTENCY_HEADER } from '../idempotency.ts'
import { problemOf } from '../problems.ts'

/** A reply whose body the type checker holds to `schema`: the wire form and the document cannot drift apart. */
export function replyWith<S extends TSchema>(status: number, _schema: S) {
  return (body: Static<S>): StoredResponse => ({ status, body })
}

/** Casts a stored reply to the route's declared result type (its body was checked by `replyWith`). */
export function asResult(reply: StoredResponse & { headers?: Record<string, string> }): never {
  return reply as never
}

export const mutationHeaders = [IDEMPOTENCY_HEADER] as const

/**
 * Runs a mutation under the request's Idempotency-Key (if any), scoped to the caller and the concrete path; the
 * errors it raises become problem+json here (src/api/problems.ts).
 */
export async function mutate(
  service: CreditService,
  template: string,
  ctx: RouteContext<Record<string, string>, unknown, unknown, 'session'>,
  run: (ticket: IdempotencyTicket | undefined) => Promise<StoredResponse>,
): Promise<never> {
  try {
    const reply = await idempotent(
      service.store,
      { identity: ctx.session.address, method: 'POST', path: concretePath(template, ctx.params), headers: ctx.headers, body: ctx.body },
      run,
    )
    return asResult(reply)
  } catch (error) {
    throw problemOf(error)
  }
}

const e = (description: string): ResponseSpec => ({ description })

/** Error responses by cause; each route picks those that can happen to it. */
export const errors = {
  forbidden: { 403: e('The signed-in wallet is not the actor this request names (code forbidden).') },
  notFound: (what: string) => ({ 404: e(`Unknown ${what} (code ${what}_not_found).`) }),
  proof: {
    409: e('Wrong state, or the transaction proof was already used (code proof_already_used).'),
    422: e('The transaction does not prove what it must: proof_not_found, proof_reverted, proof_wrong_contract, proof_wrong_arguments, proof_too_few_confirmations; or idempotency_key_reused.'),
    503: e('The chain RPC is unavailable (code chain_unavailable); retry.'),
  },
  idempotency: {
    409: e('Wrong state for this operation, or a request with the same Idempotency-Key is still running (code idempotency_in_flight).'),
    422: e('The Idempotency-Key was used with another body (code idempotency_key_reused).'),
  },
} as const

export const PAGE_LIMIT_DEFAULT = 100
export const PAGE_LIMIT_MAX = 1000

/** `?limit=&after=` of the list routes: registration order, `after` = the last registrationSeq already seen. */
export const PageQuery = StrictObject({
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: `Items per page, 1..${PAGE_LIMIT_MAX} (default ${PAGE_LIMIT_DEFAULT}).` })),
  after: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description: 'registrationSeq of the last item of the previous page; the next page starts after it.' })),
})

/**
 * One page of a list in registration order, and the header that points to the next one (`next-after`), absent on
 * the last page. Every list has a bounded answer, whatever the number of lenders or sources.
 */
export function page<T extends { registrationSeq: number }>(items: readonly T[], query: { limit?: string; after?: string }): { items: T[]; headers: Record<string, string> } {
  const limit = Math.min(Number(query.limit ?? PAGE_LIMIT_DEFAULT), PAGE_LIMIT_MAX)
  const after = query.after === undefined ? -1 : Number(query.after)
  const rest = items.filter((item) => item.registrationSeq > after)
  const slice = rest.slice(0, limit)
  const last = slice[slice.length - 1]
  return { items: slice, headers: rest.length > limit && last !== undefined ? { 'next-after': String(last.registrationSeq) } : {} }
}
