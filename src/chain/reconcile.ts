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
//
// This file is the entry: reconcile() reads and compares; the parts live beside it, one concern each, and are
// re-exported here for the service, the tool and the tests:
//   reconcile-states.ts   the two sides as data (expected state, chain state, differences), flow sums, the model's state
//   reconcile-read.ts     what is read on chain (readChainState)
//   reconcile-compare.ts  how the two sides are compared (compareStates, conservationDifferences)
//   reconcile-json.ts     how the expected state is written and read as JSON (the offline tool's ledger file)
import type { Address } from 'viem'
import { compareStates } from './reconcile-compare.ts'
import { readChainState, type ReadChainOptions } from './reconcile-read.ts'
import type { ChainState, Difference, ExpectedNetworkState } from './reconcile-states.ts'

export { jobStatusNames, flowTotalNames, zeroTotals, sumFlows, expectedFromModel, type JobStatusName, type ExpectedJob, type ExpectedAdvance, type FlowTotals, type FlowTotalName, type ExpectedAssetState, type ExpectedNetworkState, type DifferenceKind, type DifferenceValue, type Difference, type ChainJob, type ChainAdvance, type ChainAssetState, type ChainState, type FlowEvent, type ModelRange } from './reconcile-states.ts'
export { readChainState, readHeldFor, type ReadChainOptions } from './reconcile-read.ts'
export { compareStates, conservationDifferences, heldDifferences } from './reconcile-compare.ts'
export { ExpectedNetworkStateJsonSchema, ExpectedStateError, expectedStateToJson, parseExpectedState, type ExpectedNetworkStateJson } from './reconcile-json.ts'

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
