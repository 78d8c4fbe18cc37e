// The one table from typed errors to problem+json: each error the service and the engine raise has its status and
// stable code here, and anything else is left for the server's 500.
import t from 'tap'
import { problemOf } from '../../src/api/problems.ts'
import { UnknownAssetError, UnknownNetworkError } from '../../src/chain/config.ts'
import { ContractRevertError, OperatorUnavailableError } from '../../src/chain/operator.ts'
import { FollowerFatalError, NetworkStoppedError } from '../../src/chain/follower.ts'
import { ChainRpcError, ProofRefusedError } from '../../src/chain/proofs.ts'
import { WatchLimitError } from '../../src/chain/watcher.ts'
import { EngineRefusedError } from '../../src/engine/errors.ts'
import { HttpProblem } from '../../src/http/problem.ts'
import { AttestationInvalidError } from '../../src/chain/attestation.ts'
import { IdempotencyInFlightError, StoreOverloadedError } from '../../src/store/index.ts'

const cases: [string, unknown, number, string, Record<string, string>?][] = [
  ['engine invalid', new EngineRefusedError({ class: 'invalid', code: 'invalid_amount', message: 'm' }), 400, 'invalid_amount'],
  ['engine forbidden', new EngineRefusedError({ class: 'forbidden', code: 'forbidden', message: 'm' }), 403, 'forbidden'],
  ['engine not found', new EngineRefusedError({ class: 'not_found', code: 'job_not_found', message: 'm' }), 404, 'job_not_found'],
  ['engine conflict', new EngineRefusedError({ class: 'conflict', code: 'job_not_open', message: 'm' }), 409, 'job_not_open'],
  ['engine code with its own status', new EngineRefusedError({ class: 'invalid', code: 'supplier_is_borrower', message: 'm' }), 422, 'supplier_is_borrower'],
  ['proof refused', new ProofRefusedError('wrong_arguments', 'd'), 422, 'proof_wrong_arguments'],
  ['proof already used', new ProofRefusedError('already_used', 'd'), 409, 'proof_already_used'],
  ['chain RPC', new ChainRpcError('devnet-a', new Error('down')), 503, 'chain_unavailable', { 'retry-after': '1' }],
  ['network stopped', new NetworkStoppedError(new FollowerFatalError('devnet-a', 'older_contract', 'm')), 503, 'network_stopped'],
  ['contract revert', new ContractRevertError('devnet-a', 'JobAlreadySettled', [], undefined), 409, 'contract_job_already_settled'],
  ['no operator key', new OperatorUnavailableError('devnet-a'), 503, 'operator_unavailable'],
  ['unknown network', new UnknownNetworkError('x'), 400, 'unknown_network'],
  ['unknown asset', new UnknownAssetError('devnet-a', 'DAI'), 400, 'unknown_asset'],
  ['attestation', new AttestationInvalidError('d'), 422, 'attestation_invalid'],
  ['supplier not allowed', new EngineRefusedError({ class: 'invalid', code: 'supplier_not_allowed', message: 'm' }), 422, 'supplier_not_allowed'],
  ['watcher full', new WatchLimitError('d'), 503, 'wallet_watch_full'],
  ['store overloaded', new StoreOverloadedError('d'), 503, 'store_overloaded', { 'retry-after': '1' }],
  ['idempotency in flight', new IdempotencyInFlightError('d'), 409, 'idempotency_in_flight'],
]

t.test('each typed error becomes its problem', async (t) => {
  for (const [name, error, status, code, headers] of cases) {
    const problem = problemOf(error)
    t.ok(problem instanceof HttpProblem, `${name}: a problem`)
    t.match(problem, { status, code }, `${name}: ${status} ${code}`)
    if (headers) t.same((problem as HttpProblem).headers, headers, `${name}: headers`)
  }
})

t.test('a network whose chain follower stopped is not an outage to retry: no Retry-After', async (t) => {
  const problem = problemOf(new NetworkStoppedError(new FollowerFatalError('devnet-a', 'wrong_chain', 'm'))) as HttpProblem
  t.equal(problem.headers?.['retry-after'], undefined)
  t.match(problem.detail, /wrong_chain.*do not retry/, 'the detail says why, and not to retry')
})

t.test('anything else is left as it is, for the server to answer 500', async (t) => {
  const error = new TypeError('a bug')
  t.equal(problemOf(error), error)
})
