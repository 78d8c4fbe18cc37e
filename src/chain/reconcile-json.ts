// Reconciliation's report form: the expected state as JSON (what `npm run reconcile` reads from a ledger file and the
// service can write), its TypeBox schema, and its validation (parseExpectedState). Used by src/tools/reconcile.ts and
// the tests through reconcile.ts.
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import { getAddress, type Hex } from 'viem'
import { amount, flowTotalNames, lower, type ExpectedNetworkState, type FlowTotalName, type FlowTotals } from './reconcile-states.ts'
import { FORMAT_PATTERNS } from '../engine/ids.ts'

const AtomicSchema = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'atomic units, decimal' })
const KeySchema = Type.String({ pattern: FORMAT_PATTERNS.bytes32 })
const AddressSchema = Type.String({ pattern: FORMAT_PATTERNS.address })
const BlockSchema = Type.String({ pattern: FORMAT_PATTERNS.block })

/** The expected state as JSON (amounts and blocks as decimal strings, maps as objects keyed by jobKey / offerKey). */
export const ExpectedNetworkStateJsonSchema = Type.Object(
  {
    network: Type.String({ minLength: 1, maxLength: 40 }),
    contract: AddressSchema,
    fromBlock: BlockSchema,
    toBlock: BlockSchema,
    assets: Type.Array(
      Type.Object(
        {
          asset: AddressSchema,
          jobs: Type.Record(
            KeySchema,
            Type.Object(
              { escrowAtomic: AtomicSchema, collateralAtomic: AtomicSchema, status: Type.Union([Type.Literal('open'), Type.Literal('settled'), Type.Literal('failed'), Type.Literal('closed'), Type.Literal('reclaimed')]) },
              { additionalProperties: false },
            ),
          ),
          advances: Type.Record(
            KeySchema,
            Type.Object({ lenderOwedAtomic: AtomicSchema, reserveOwedAtomic: AtomicSchema, liquidated: Type.Boolean() }, { additionalProperties: false }),
          ),
          reserveAtomic: AtomicSchema,
          // A ledger lists the totals it keeps (ExpectedAssetState.totals).
          totals: Type.Object(
            Object.fromEntries(flowTotalNames.map((name) => [name, Type.Optional(AtomicSchema)])) as Record<FlowTotalName, Type.TOptional<typeof AtomicSchema>>,
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 64 },
    ),
  },
  { additionalProperties: false },
)

export type ExpectedNetworkStateJson = Type.Static<typeof ExpectedNetworkStateJsonSchema>

const checkExpectedJson = Compile(ExpectedNetworkStateJsonSchema)

export class ExpectedStateError extends Error {
  override readonly name = 'ExpectedStateError'
  constructor(readonly problems: readonly { path: string; message: string }[]) {
    super(`invalid expected state: ${problems.map((p) => `${p.path || '/'} ${p.message}`).join('; ')}`)
  }
}

export function expectedStateToJson(state: ExpectedNetworkState): ExpectedNetworkStateJson {
  const record = <V, J>(map: ReadonlyMap<Hex, V>, toJson: (value: V) => J): Record<string, J> =>
    Object.fromEntries([...map].map(([key, value]) => [lower(key), toJson(value)]))
  return {
    network: state.network,
    contract: state.contract,
    fromBlock: state.fromBlock.toString(),
    toBlock: state.toBlock.toString(),
    assets: state.assets.map((a) => ({
      asset: a.asset,
      jobs: record(a.jobs, (j) => ({ escrowAtomic: amount(j.escrowAtomic), collateralAtomic: amount(j.collateralAtomic), status: j.status })),
      advances: record(a.advances, (v) => ({ lenderOwedAtomic: amount(v.lenderOwedAtomic), reserveOwedAtomic: amount(v.reserveOwedAtomic), liquidated: v.liquidated })),
      reserveAtomic: amount(a.reserveAtomic),
      totals: Object.fromEntries(flowTotalNames.flatMap((name) => (a.totals[name] === undefined ? [] : [[name, amount(a.totals[name])]]))) as Partial<Record<FlowTotalName, string>>,
    })),
  }
}

/** Validates the JSON form; throws ExpectedStateError naming every problem. */
export function parseExpectedState(value: unknown): ExpectedNetworkState {
  if (!checkExpectedJson.Check(value)) {
    throw new ExpectedStateError([...checkExpectedJson.Errors(value)].filter((e) => e.keyword !== 'boolean').map((e) => ({ path: e.instancePath, message: e.message })))
  }
  const fromBlock = BigInt(value.fromBlock)
  const toBlock = BigInt(value.toBlock)
  if (fromBlock > toBlock) throw new ExpectedStateError([{ path: '/fromBlock', message: `is after toBlock ${toBlock}` }])
  return {
    network: value.network,
    contract: getAddress(value.contract),
    fromBlock,
    toBlock,
    assets: value.assets.map((a) => ({
      asset: getAddress(a.asset),
      jobs: new Map(Object.entries(a.jobs).map(([key, j]) => [lower(key), { escrowAtomic: BigInt(j.escrowAtomic), collateralAtomic: BigInt(j.collateralAtomic), status: j.status }])),
      advances: new Map(
        Object.entries(a.advances).map(([key, v]) => [lower(key), { lenderOwedAtomic: BigInt(v.lenderOwedAtomic), reserveOwedAtomic: BigInt(v.reserveOwedAtomic), liquidated: v.liquidated }]),
      ),
      reserveAtomic: BigInt(a.reserveAtomic),
      totals: Object.fromEntries(flowTotalNames.flatMap((name) => (a.totals[name] === undefined ? [] : [[name, BigInt(a.totals[name])]]))) as Partial<FlowTotals>,
    })),
  }
}
