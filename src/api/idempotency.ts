// `Idempotency-Key` on every mutating route: the first request with a key runs and its response is stored in the
// same transaction as its changes; a retry with the same key and body gets that response back and applies nothing;
// the same key with another body is refused. The scope is the caller's identity, the method and the concrete path.
import { getAddress, isAddress } from 'viem'
import { normalDomain } from '../engine/suppliers.ts'
import { HttpProblem } from '../http/problem.ts'
import type { BudgetProblems, StoreBudget } from '../http/rate-limit.ts'
import { hashRequestBody, type IdempotencyTicket, type Store, type StoredResponse } from '../store/index.ts'

export const IDEMPOTENCY_HEADER = 'idempotency-key'
/** A valid Idempotency-Key (the MCP tools' `idempotencyKey` input takes the same). */
export const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

export interface IdempotentRequest {
  identity: string
  method: string
  path: string
  headers: Readonly<Record<string, string>>
  body: unknown
  /**
   * The request's context, whose `clientKey` (RouteContext.clientKey) is read for `budget` only: most keyed requests
   * (the credit path) are not charged, and a request without a key never is.
   */
  context: { readonly clientKey: string }
  /**
   * Charged for the first request with a key, before it runs (a replay is free): its answer may be stored for
   * idempotencyRetentionSeconds. When it refuses (KEYED_REQUEST_REFUSALS), nothing runs or is stored.
   */
  budget?: StoreBudget | undefined
  /**
   * Whether the caller's wallet is no stranger (CreditService.hasStanding: a lender that has paid a lease, a borrower that
   * repaid): asked only when all callers' bucket of `budget` refuses, which then admits it on its own buckets.
   */
  standing?: ((identity: string) => boolean) | undefined
}

/**
 * How a keyed request's first run the store budget refuses is answered: a stored answer costs the store ~2.2 KB for a
 * day, and a free wallet with a change it can repeat (a 1-unit withdrawal of an unfunded lender) would otherwise store
 * one per request. Either way the same request may be sent again after Retry-After.
 */
const KEYED_REQUEST_REFUSALS: BudgetProblems = {
  limited: (bucket, retryAfterSeconds) =>
    new HttpProblem(429, 'idempotency_keys_limited', `This ${bucket === 'wallet' ? 'wallet' : 'client address'} sent as many requests with a new Idempotency-Key as it may for now; retry later (the same key), or send the request without one.`, { title: 'Too many keyed requests', headers: { 'retry-after': String(retryAfterSeconds) } }),
  exhausted: (retryAfterSeconds) =>
    new HttpProblem(503, 'idempotency_keys_exhausted', 'The service takes no more requests with a new Idempotency-Key for now, whoever sends them; retry later (the same key), or send the request without one.', { title: 'Idempotency keys exhausted', headers: { 'retry-after': String(retryAfterSeconds) } }),
}

/**
 * Runs `run` at most once per key, handing it the key's ticket (the first request with a key stores its response
 * through it); the reply carries `idempotent-replayed: true` when it is a stored response.
 */
export function idempotent(
  store: Store,
  request: IdempotentRequest,
  run: (ticket: IdempotencyTicket | undefined) => Promise<StoredResponse>,
): Promise<StoredResponse & { headers?: Record<string, string> }> {
  const key = request.headers[IDEMPOTENCY_HEADER]
  // Without a key nothing is looked up or stored: the run's own promise, without another async layer per request.
  if (key === undefined) return run(undefined)
  return keyed(store, request, key, run)
}

async function keyed(
  store: Store,
  request: IdempotentRequest,
  key: string,
  run: (ticket: IdempotencyTicket | undefined) => Promise<StoredResponse>,
): Promise<StoredResponse & { headers?: Record<string, string> }> {
  if (!KEY_PATTERN.test(key)) {
    throw new HttpProblem(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 visible ASCII characters', { title: 'Bad request' })
  }
  const { budget } = request
  // Read before the first await: the address of a client gone meanwhile is no longer known.
  const client = budget === undefined ? '' : request.context.clientKey
  const scope = { identity: request.identity, method: request.method, path: request.path, key }
  const begun = await store.idempotency.begin(scope, hashRequestBody(JSON.stringify(request.body ?? null)))
  if (begun.outcome === 'replay') return { ...begun.response, headers: { 'idempotent-replayed': 'true' } }
  if (begun.outcome === 'mismatch') {
    throw begun.inFlight
      ? new HttpProblem(409, 'idempotency_in_flight', 'a request with this Idempotency-Key and another body is running', { title: 'Conflict' })
      : new HttpProblem(422, 'idempotency_key_reused', 'this Idempotency-Key was used with another request body', { title: 'Unprocessable' })
  }
  const { ticket } = begun
  try {
    const { standing, identity } = request
    budget?.charge(identity, client, KEYED_REQUEST_REFUSALS, standing === undefined ? undefined : () => standing(identity))
    return await run(ticket)
  } finally {
    // A request that failed before its commit stores nothing: retries may go ahead.
    if (ticket.state === 'open') ticket.abandon()
  }
}

/**
 * `/credit/jobs/{jobId}/complete` with `{ jobId: 'job_1' }` -> `/credit/jobs/job_1/complete`. An address is written
 * checksummed and a domain in lower case, as the service names the resource: the same key on the same lender's
 * `/lenders/0xabc.../withdraw` and `/lenders/0xABC.../withdraw` ran twice (an outsider's finding,
 * test/api/outsider20-idempotency-path-case.test.ts).
 */
export function concretePath(template: string, params: Record<string, string>): string {
  // Most mutations (the request and the match among them) have no parameter: no regular expression per request.
  if (!template.includes('{')) return template
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => canonicalParam(name, params[name] ?? ''))
}

function canonicalParam(name: string, value: string): string {
  if (name === 'address') return isAddress(value, { strict: false }) ? getAddress(value) : value
  if (name === 'domain') return normalDomain(value)
  return value
}
