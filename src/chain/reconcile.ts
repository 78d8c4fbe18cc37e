// Reconciliation (issue 9; design-engine-9-10.md, "Reconciliation"): the service's ledger against CreditFacilityV2, per
// network and asset. The ledger states what it believes (ExpectedNetworkState: every job's escrow, collateral and
// status, what every advance still owes and whether it was liquidated, the insurance reserve, and the sums of the
// contract's token flows over a block range); the reader reads the same from the chain AT THE RANGE'S LAST BLOCK (state
// and events of one history, never a state that already includes later events) and names every difference. A
// token-conservation check needs no ledger at all: the contract's token balance must equal the escrow and collateral
// of its open and failed jobs plus its reserve, so a token that reached the contract outside its functions (a plain
// transfer) or one that a bug left behind shows up.
//
// The expected state lists EVERY job and advance the ledger knows on the network (final ones included) plus those
// discovered in the range's events: a key seen on chain that the ledger lacks is a difference (an advance the service
// never recorded is issue 9's case 1). Conservation sums the jobs read, so the range must start at the contract's
// deployment (or the keys name every job holding tokens), else the missing jobs show up as a conservation difference.
//
// expectedFromModel() derives the expected state from the TypeScript model of the contract (facility-model.ts); the
// service's ledger provides the same type (src/service/reconciliation.ts: at start-up and POST /operator/reconcile);
// `npm run reconcile` (src/tools/reconcile.ts) runs it offline against a ledger file.
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import {
  erc20Abi,
  getAddress,
  zeroHash,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
} from 'viem'
import { creditFacilityV2Abi, multicall3Address } from './artifacts.ts'
import { decodeFacilityLog } from './events-v2.ts'
import type { FacilityModel, ModelAdvance, ModelEvent, ModelJob } from './facility-model.ts'
import { logBlockRangeMaxDefault } from './follower.ts'
import { amount, knownAsset, lower, jobStatusNames, flowTotalNames, zeroTotals, sumFlows, expectedFromModel, type JobStatusName, type ExpectedJob, type ExpectedAdvance, type FlowTotals, type FlowTotalName, type ExpectedAssetState, type ExpectedNetworkState, type DifferenceKind, type DifferenceValue, type Difference, type ChainJob, type ChainAdvance, type ChainAssetState, type ChainState, type FlowEvent, type ModelRange } from './reconcile-states.ts'
import { readChainState, type ReadChainOptions } from './reconcile-read.ts'
import { compareStates } from './reconcile-compare.ts'

export { jobStatusNames, flowTotalNames, zeroTotals, sumFlows, expectedFromModel, type JobStatusName, type ExpectedJob, type ExpectedAdvance, type FlowTotals, type FlowTotalName, type ExpectedAssetState, type ExpectedNetworkState, type DifferenceKind, type DifferenceValue, type Difference, type ChainJob, type ChainAdvance, type ChainAssetState, type ChainState, type FlowEvent, type ModelRange } from './reconcile-states.ts'
export { readChainState, type ReadChainOptions } from './reconcile-read.ts'
export { compareStates, conservationDifferences } from './reconcile-compare.ts'

export type ReconcileOptions = Omit<ReadChainOptions, 'network' | 'contract' | 'fromBlock' | 'toBlock'>

export type ReconcileReport = { network: string; contract: Address; fromBlock: bigint; toBlock: bigint; differences: Difference[]; actual: ChainState }

/** Reads the chain for the ledger's keys and range, and names every difference (empty: the ledger equals the chain). */
export async function reconcile(expected: ExpectedNetworkState, options: ReconcileOptions): Promise<ReconcileReport> {
  const actual = await readChainState({
    ...options,
    network: expected.network,
    contract: expected.contract,
    fromBlock: expected.fromBlock,
    toBlock: expected.toBlock,
    jobKeys: [...expected.assets.flatMap((a) => [...a.jobs.keys()]), ...(options.jobKeys ?? [])],
    offerKeys: [...expected.assets.flatMap((a) => [...a.advances.keys()]), ...(options.offerKeys ?? [])],
    assets: [...expected.assets.map((a) => a.asset), ...(options.assets ?? [])],
  })
  const { network, contract, fromBlock, toBlock } = actual
  return { network, contract, fromBlock, toBlock, differences: compareStates(expected, actual), actual }
}

// ------------------------------------------------------------------------------------------------ the JSON form

const AtomicSchema = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'atomic units, decimal' })
const KeySchema = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })
const AddressSchema = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })
const BlockSchema = Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' })

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
              { escrowAtomic: AtomicSchema, collateralAtomic: AtomicSchema, status: Type.Union([Type.Literal('open'), Type.Literal('settled'), Type.Literal('failed'), Type.Literal('closed')]) },
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