// The one table that turns the errors the service and the engine raise into application/problem+json. Nothing
// below the HTTP edge chooses a status: the engine refuses with a class and a code, the chain and the store raise
// typed errors, and this table says how the API answers each.
import { AttestationExpiredError, AttestationInvalidError } from '../chain/attestation.ts'
import { BorrowerConsentError } from '../chain/consent.ts'
import { ChainUnobservedError, NetworkStoppedError } from '../chain/follower.ts'
import { TooManyPostingsError } from '../chain/posted-collateral.ts'
import { JobRegistrationRefusedError } from '../chain/reclaim-window.ts'
import { ChainBehindError, ContractRevertError, OperatorUnavailableError } from '../chain/operator.ts'
import { UnknownAssetError, UnknownNetworkError } from '../chain/config.ts'
import { ChainRpcError, ProofRefusedError } from '../chain/proofs.ts'
import { WatchLimitError } from '../chain/watcher.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import type { ErrorClass } from '../engine/types.ts'
import { HttpProblem } from '../http/problem.ts'
import { AgentLinkError } from '../reputation/erc8004.ts'
import { JobIdFundedElsewhereError } from '../service/borrowers.ts'
import { ChainReadsExhaustedError } from '../service/chain-read-budget.ts'
import { IdempotencyInFlightError, StoreOverloadedError } from '../store/index.ts'
import { ClientRegistrationsFullError, LenderRegistrationsFullError } from '../service/lenders.ts'

const RETRY_SOON = { 'retry-after': '1' } as const

const ENGINE_STATUS: Readonly<Record<ErrorClass, number>> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
}

/**
 * Engine codes answered with another status than their class's. The engine classes a supplier equal to the
 * borrower as invalid input; the API has answered it 422 from the start (well-formed, but an unacceptable supplier).
 * A directory entry naming a lender, a session key or the credit contract is refused the same way, and a request for
 * less than the asset's least advance (well-formed, but below the minimum).
 */
const ENGINE_STATUS_BY_CODE: Readonly<Record<string, number>> = {
  supplier_is_borrower: 422,
  supplier_not_allowed: 422,
  amount_below_minimum: 422,
}

/** A registration naming an agent: not the wallet's to name is 403; no such agent or registry 422; taken 409. */
const AGENT_LINK_STATUS: Readonly<Record<AgentLinkError['code'], number>> = {
  agent_not_controlled: 403,
  agent_not_found: 422,
  agent_registry_unknown: 422,
  agent_already_linked: 409,
}

/** `JobAlreadySettled` -> `contract_job_already_settled`. */
function contractCode(errorName: string): string {
  return `contract_${errorName.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().replace(/[^a-z0-9_]/g, '_')}`
}

/** A chain the request needs, not read now (its RPC failed, or its follower does not observe it): retry. */
const chainUnavailable = (e: Error): HttpProblem => new HttpProblem(503, 'chain_unavailable', e.message, { title: 'Chain unavailable', headers: RETRY_SOON })

type Rule<E extends Error> = readonly [new (...args: never[]) => E, (error: E) => HttpProblem]
const rule = <E extends Error>(type: new (...args: never[]) => E, answer: (error: E) => HttpProblem): Rule<E> => [type, answer]

const RULES: readonly Rule<never>[] = [
  rule(EngineRefusedError, (e) =>
    new HttpProblem(ENGINE_STATUS_BY_CODE[e.error.code] ?? ENGINE_STATUS[e.error.class], e.error.code, e.error.message, {
      title: e.error.code.replace(/_/g, ' '),
    }),
  ),
  rule(ProofRefusedError, (e) =>
    new HttpProblem(e.reason === 'already_used' ? 409 : 422, `proof_${e.reason}`, e.message, { title: 'Transaction proof refused' }),
  ),
  rule(ChainRpcError, chainUnavailable),
  rule(ChainUnobservedError, chainUnavailable),
  rule(ChainBehindError, chainUnavailable),
  rule(ChainReadsExhaustedError, (e) =>
    new HttpProblem(503, 'chain_reads_exhausted', e.message, { title: 'Chain reads exhausted', headers: { 'retry-after': String(e.retryAfterSeconds) } }),
  ),
  // No Retry-After: the network's chain follower stopped for good, and only an operator brings it back.
  rule(NetworkStoppedError, (e) => new HttpProblem(503, 'network_stopped', e.message, { title: 'Network stopped' })),
  rule(ContractRevertError, (e) =>
    new HttpProblem(409, contractCode(e.errorName), `${e.message}; nothing was recorded`, { title: 'Refused by the credit contract' }),
  ),
  rule(OperatorUnavailableError, (e) => new HttpProblem(503, 'operator_unavailable', e.message, { title: 'Operator unavailable' })),
  rule(UnknownNetworkError, (e) => new HttpProblem(400, 'unknown_network', `${e.message}; see /.well-known/service.json`, { title: 'Bad request' })),
  rule(UnknownAssetError, (e) => new HttpProblem(400, 'unknown_asset', e.message, { title: 'Bad request' })),
  rule(AttestationInvalidError, (e) => new HttpProblem(422, 'attestation_invalid', e.message, { title: 'Attestation refused' })),
  rule(AttestationExpiredError, (e) => new HttpProblem(422, 'attestation_expired', e.message, { title: 'Attestation refused' })),
  rule(BorrowerConsentError, (e) => new HttpProblem(403, e.code, e.message, { title: 'Consent refused' })),
  rule(TooManyPostingsError, (e) => new HttpProblem(422, e.code, e.message, { title: 'Registration refused' })),
  rule(JobRegistrationRefusedError, (e) =>
    new HttpProblem(e.code === 'job_not_open_on_chain' ? 409 : 422, e.code, e.message, { title: 'Registration refused' }),
  ),
  rule(JobIdFundedElsewhereError, (e) => new HttpProblem(409, e.code, e.message, { title: 'Registration refused' })),
  rule(AgentLinkError, (e) =>
    new HttpProblem(AGENT_LINK_STATUS[e.code], e.code, e.message, { title: 'ERC-8004 agent refused' }),
  ),
  rule(WatchLimitError, (e) => new HttpProblem(503, 'wallet_watch_full', e.message, { title: 'Capacity reached' })),
  rule(LenderRegistrationsFullError, (e) =>
    new HttpProblem(503, 'lender_registrations_full', e.message, { title: 'Capacity reached', headers: { 'retry-after': String(e.retryAfterSeconds) } }),
  ),
  // 429, not 503: the bound is the client's own (its registrations wait), the service still registers other clients.
  rule(ClientRegistrationsFullError, (e) =>
    new HttpProblem(429, 'lender_registrations_client_full', e.message, { title: 'Too many waiting registrations', headers: { 'retry-after': String(e.retryAfterSeconds) } }),
  ),
  rule(StoreOverloadedError, (e) => new HttpProblem(503, 'store_overloaded', e.message, { title: 'Overloaded', headers: RETRY_SOON })),
  rule(IdempotencyInFlightError, (e) => new HttpProblem(409, 'idempotency_in_flight', e.message, { title: 'Conflict' })),
] as never

/** The problem the API answers for `error`; any other error is passed on unchanged (the server answers it 500). */
export function problemOf(error: unknown): unknown {
  for (const [type, answer] of RULES) if (error instanceof type) return answer(error as never)
  return error
}
