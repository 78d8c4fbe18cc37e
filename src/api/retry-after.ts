// What an agent is told about waiting: the codes of 429 and 503 answers by whether they carry Retry-After, written
// once for llms.txt and the OpenAPI document's Retry-After header. test/api/openapi-problem-codes.test.ts reads the
// codes from the code that answers them and fails when one is added there and not here.

/** With Retry-After: nothing was recorded, and the same request may be sent again after that many seconds. */
export const RETRY_AFTER_CODES: Readonly<Record<429 | 503, readonly string[]>> = {
  429: ['rate_limited', 'lender_registrations_client_full', 'sign_ins_client_limited', 'idempotency_keys_limited'],
  503: ['chain_unavailable', 'chain_reads_exhausted', 'store_overloaded', 'lender_registrations_full', 'facilitator_unavailable', 'compute_failed', 'compute_disabled', 'payment_settlement_unconfirmed', 'sign_ins_exhausted', 'idempotency_keys_exhausted'],
}

/** 429 and 503 codes without Retry-After (the service names no time), with what to do instead. */
export const NO_RETRY_AFTER_CODES: ReadonlyArray<readonly [code: string, status: 429 | 503, instead: string]> = [
  ['network_stopped', 503, 'the network\'s chain follower stopped for good (/health says why); do not retry until an operator acts'],
  ['operator_unavailable', 503, 'no operator key for the network'],
  ['wallet_watch_full', 503, 'the service watches no more wallets on the network'],
  ['shutting_down', 503, 'this instance is stopping; retry on another instance, or later'],
  ['store_stalled', 503, 'GET /health: the store\'s write has not settled for a second; the service stops itself if it never does'],
  ['auth_unavailable', 503, 'a WebSocket upgrade whose session could not be checked; open it again'],
  ['too_many_streams', 429, 'a WebSocket upgrade; close one of the wallet\'s streams first'],
  ['too_many_client_streams', 429, 'a WebSocket upgrade; close one of the streams this client address holds first'],
  ['streams_full', 503, 'a WebSocket upgrade; the service holds as many streams as it serves: open it again later, or read over HTTP'],
  ['too_many_watchers', 429, 'a WebSocket upgrade; close one of the inspector feeds first (of this client address, or any)'],
  ['too_many_connections', 429, 'a connection past connectionsPerClientMax for this client address was refused; close one, or reuse a keep-alive connection'],
]

/** `rate_limited (429); chain_unavailable, ... (503)` */
export function retryAfterCodeList(): string {
  return Object.entries(RETRY_AFTER_CODES).map(([status, codes]) => `${codes.join(', ')} (${status})`).join('; ')
}

/** `network_stopped (503: ...), ...` */
export function noRetryAfterCodeList(): string {
  return NO_RETRY_AFTER_CODES.map(([code, status, instead]) => `${code} (${status}: ${instead})`).join(', ')
}
