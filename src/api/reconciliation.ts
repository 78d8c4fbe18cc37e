// The wire form of a reconciliation (src/service/reconciliation.ts): what /health shows of each network's last run and
// what POST /operator/reconcile answers.
import Type from 'typebox'
import { Address, Atomic, IsoTime, StrictObject } from './common.ts'
import type { NetworkReconciliation } from '../service/reconciliation.ts'
import { FORMAT_PATTERNS } from '../engine/ids.ts'

/** /health lists at most this many differences per network (their count is always complete). */
export const HEALTH_DIFFERENCES_MAX = 20

const Block = Type.String({ pattern: FORMAT_PATTERNS.block, description: 'A block number, decimal.' })
const DifferenceValue = Type.Union([
  Type.String(),
  Type.Boolean(),
  Type.Null(),
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Boolean()])),
], { description: 'Amounts are decimal strings of atomic units; a record is a job or advance as one side holds it; null: absent on that side.' })

export const ReconciliationDifference = StrictObject(
  {
    network: Type.String(),
    asset: Address,
    kind: Type.Union(
      [
        'job_missing', 'job_unexpected', 'job_asset', 'job_status', 'job_escrow', 'job_collateral', 'advance_missing', 'advance_unexpected',
        'advance_asset', 'advance_lender_owed', 'advance_reserve_owed', 'advance_liquidated', 'reserve', 'total', 'token_conservation', 'held_payment',
      ].map((kind) => Type.Literal(kind)),
    ),
    key: Type.String({ description: 'The jobKey or offerKey (0x-hex), the asset (reserve), the flow total\'s name (total), the contract (token_conservation), or the recipient (held_payment: expected is what GET /credit/held-payments/{address} shows held for it, actual the contract\'s heldFor).' }),
    expected: DifferenceValue,
    actual: DifferenceValue,
  },
  { description: 'One way the service\'s ledger (expected) and the credit contract (actual) disagree.' },
)

export const NetworkReconciliationWire = StrictObject(
  {
    network: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('ok'), Type.Literal('differences'), Type.Literal('unavailable')], {
      description: 'pending: not run yet; ok: the ledger equals the chain; differences: see the list; unavailable: the chain could not be read (see error).',
    }),
    checkedAt: Type.Union([IsoTime, Type.Null()]),
    fromBlock: Type.Union([Block, Type.Null()]),
    toBlock: Type.Union([Block, Type.Null()], { description: 'The confirmed block the chain was read at.' }),
    differenceCount: Type.Integer({ minimum: 0 }),
    differences: Type.Array(ReconciliationDifference),
    unregisteredJobs: Type.Integer({ minimum: 0, description: 'Open jobs funded on chain that nobody registered with the service (not differences).' }),
    unaccountedTokens: Type.Array(StrictObject({ asset: Address, amountAtomic: Atomic }), {
      description: 'Per asset, tokens the credit contract holds beyond its jobs\' escrow and collateral and its reserve: sent to it outside its functions, owed to nobody, and not a difference (anyone can send them, nobody can take them out). The contract holding less than that is a token_conservation difference.',
    }),
    heldPayments: Type.Array(StrictObject({ asset: Address, amountAtomic: Atomic }), {
      description: 'Per asset, what the credit contract holds for recipients its token refused (a blacklisted lender, borrower or client: its heldOf, counted in token conservation): still theirs, settled or repaid in the ledger, delivered by anyone\'s claimHeld(asset, account) once the token accepts them (heldFor(asset, account) on chain says how much each is owed).',
    }),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  { description: 'The last reconciliation of one network: the service\'s ledger against the credit contract\'s state, events and token balance.' },
)

export const ReconciliationReport = StrictObject(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('differences')]),
    networks: Type.Array(NetworkReconciliationWire),
  },
  { description: 'A reconciliation run on demand: ok when every network\'s ledger equals its chain.' },
)

export const ReconcileRequest = StrictObject(
  { network: Type.Optional(Type.String({ pattern: FORMAT_PATTERNS.network, description: 'Only this network (default: every network).' })) },
  { description: 'Which networks to reconcile.' },
)

export function reconciliationToWire(r: NetworkReconciliation, differencesMax = Number.POSITIVE_INFINITY): Type.Static<typeof NetworkReconciliationWire> {
  return {
    network: r.network,
    status: r.status,
    checkedAt: r.checkedAtMs === null ? null : new Date(r.checkedAtMs).toISOString(),
    fromBlock: r.fromBlock === null ? null : r.fromBlock.toString(),
    toBlock: r.toBlock === null ? null : r.toBlock.toString(),
    differenceCount: r.differences.length,
    differences: r.differences.slice(0, differencesMax) as Type.Static<typeof ReconciliationDifference>[],
    unregisteredJobs: r.unregisteredJobs,
    unaccountedTokens: r.unaccountedTokens.map((u) => ({ asset: u.asset, amountAtomic: u.amountAtomic.toString() })),
    heldPayments: r.heldPayments.map((u) => ({ asset: u.asset, amountAtomic: u.amountAtomic.toString() })),
    error: r.error,
  }
}
