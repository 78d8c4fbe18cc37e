// Reconciliation's two sides as data (src/chain/reconcile.ts has the whole story): what the ledger believes (the
// expected state), what the chain holds (the chain state), the differences between them, and the flow totals both
// sides add up with the one sumFlows. Also the expected state of the contract's TypeScript model (expectedFromModel),
// for tests and the offline tool. Used by the reader (reconcile-read.ts), the comparison (reconcile-compare.ts), the
// JSON form (reconcile-json.ts) and, through reconcile.ts, the service's ledger (src/service/reconciliation.ts).
import { getAddress, type Address, type Hex } from 'viem'
import type { FacilityModel, ModelAdvance, ModelEvent, ModelJob } from './facility-model.ts'

// ------------------------------------------------------------------------------------------------ the expected state

export const jobStatusNames = ['none', 'open', 'settled', 'failed', 'closed', 'reclaimed'] as const
export type JobStatusName = (typeof jobStatusNames)[number]

export type ExpectedJob = { escrowAtomic: bigint; collateralAtomic: bigint; status: Exclude<JobStatusName, 'none'> }
export type ExpectedAdvance = { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint; liquidated: boolean }

/**
 * The contract's token flows of one asset over a block range, each the sum of one event field, so that the ledger (its
 * facts are these events) and the chain compute them alike. A liquidation's collateral is one figure: its event does
 * not split it between the lender and the reserve (the reserve balance is compared on its own).
 */
export type FlowTotals = {
  /** JobFunded.amount: client -> contract. */
  escrowFundedAtomic: bigint
  /** CollateralPosted.amount: borrower -> contract. */
  collateralPostedAtomic: bigint
  /** SupplierPaid.amount: lender's session wallet -> supplier (the principal). */
  suppliersPaidAtomic: bigint
  /** Repaid.toLender: repayer -> lender. */
  repaidToLendersAtomic: bigint
  /** Repaid.toReserve: repayer -> contract (reserve). */
  repaidToReserveAtomic: bigint
  /** AdvanceSettled.toLender: contract -> lender. */
  settledToLendersAtomic: bigint
  /** AdvanceSettled.toReserve: stays in the contract, escrow -> reserve. */
  settledToReserveAtomic: bigint
  /** JobSettled.toBorrower: contract -> borrower (what the advances did not need). */
  settledToBorrowersAtomic: bigint
  /** JobFailed.escrowRefunded and JobReclaimed.escrowRefunded: contract -> client. */
  escrowRefundedAtomic: bigint
  /** JobClosed.collateralReleased and JobReclaimed.collateralReleased: contract -> borrower. */
  collateralReleasedAtomic: bigint
  /** Liquidated.fromCollateral: collateral -> lender, then reserve. */
  liquidatedFromCollateralAtomic: bigint
  /** Liquidated.fromBacking: off chain (the lender's claim moves to the backing). */
  liquidatedFromBackingAtomic: bigint
  /** Liquidated.fromReserve: reserve -> lender. */
  liquidatedFromReserveAtomic: bigint
  /** Liquidated.shortfall: what nobody covered (still owed by the borrower). */
  liquidationShortfallAtomic: bigint
}

export type FlowTotalName = keyof FlowTotals

export const flowTotalNames: readonly FlowTotalName[] = [
  'escrowFundedAtomic', 'collateralPostedAtomic', 'suppliersPaidAtomic', 'repaidToLendersAtomic', 'repaidToReserveAtomic',
  'settledToLendersAtomic', 'settledToReserveAtomic', 'settledToBorrowersAtomic', 'escrowRefundedAtomic',
  'collateralReleasedAtomic', 'liquidatedFromCollateralAtomic', 'liquidatedFromBackingAtomic', 'liquidatedFromReserveAtomic',
  'liquidationShortfallAtomic',
]

export function zeroTotals(): FlowTotals {
  return Object.fromEntries(flowTotalNames.map((name) => [name, 0n])) as FlowTotals
}

/** What the ledger believes of one asset on one network. Keys are lower-case 0x-hex (jobKey, offerKey). */
export type ExpectedAssetState = {
  asset: Address
  jobs: ReadonlyMap<Hex, ExpectedJob>
  advances: ReadonlyMap<Hex, ExpectedAdvance>
  reserveAtomic: bigint
  /**
   * Over fromBlock..toBlock of the network state. Only the totals the ledger keeps are compared: a ledger that does
   * not count one flow leaves it out (the service's ledger counts every one; see src/service/reconciliation.ts).
   */
  totals: Partial<FlowTotals>
}

/** What the ledger believes of one network's credit contract, as of block toBlock (its follower cursor). */
export type ExpectedNetworkState = {
  network: string
  contract: Address
  /** First block of the flow totals (inclusive). */
  fromBlock: bigint
  /** The block the ledger's state is as of; totals end there (inclusive). */
  toBlock: bigint
  assets: readonly ExpectedAssetState[]
}

// ------------------------------------------------------------------------------------------------ differences

export type DifferenceKind =
  | 'job_missing' // the ledger has the job, the chain does not
  | 'job_unexpected' // the chain has the job (seen in the range or named), the ledger does not
  | 'job_asset'
  | 'job_status'
  | 'job_escrow'
  | 'job_collateral'
  | 'advance_missing'
  | 'advance_unexpected'
  | 'advance_asset'
  | 'advance_lender_owed'
  | 'advance_reserve_owed'
  | 'advance_liquidated'
  | 'reserve'
  | 'total' // key: the FlowTotals field
  | 'token_conservation' // key: the contract; expected: escrow + collateral + reserve; actual: its token balance
  | 'held_payment' // key: the recipient; expected: what the party's views show held for it; actual: heldFor(asset, recipient)

export type DifferenceValue = string | boolean | null | Readonly<Record<string, string | boolean>>

/** One difference, JSON as it is: amounts are decimal strings of atomic units, absence is null. */
export type Difference = {
  network: string
  asset: Address
  kind: DifferenceKind
  key: string
  expected: DifferenceValue
  actual: DifferenceValue
}

// ------------------------------------------------------------------------------------------------ the chain's state

/** The contract's Job and Advance structs, as getJob and getAdvance return them (the model holds the same). */
export type ChainJob = ModelJob
export type ChainAdvance = ModelAdvance

export type ChainAssetState = {
  asset: Address
  reserveAtomic: bigint
  /** heldOf(asset): payments the token refused to their recipients, held in the contract until claimed. */
  heldAtomic: bigint
  /** The token's balanceOf(contract). */
  contractBalanceAtomic: bigint
  totals: FlowTotals
}

/** The contract as the chain holds it at toBlock, with the flow totals of fromBlock..toBlock. */
export type ChainState = {
  network: string
  contract: Address
  fromBlock: bigint
  toBlock: bigint
  /** Every job read (status none included: a named key the contract does not know). */
  jobs: ReadonlyMap<Hex, ChainJob>
  advances: ReadonlyMap<Hex, ChainAdvance>
  assets: ReadonlyMap<Address, ChainAssetState>
  /** Keys that occur in the range's events. */
  seenJobKeys: ReadonlySet<Hex>
  seenOfferKeys: ReadonlySet<Hex>
  /** What each JobReclaimed of the range moved, by job key: what a reclaimed job held, which its state no longer shows. */
  reclaims: ReadonlyMap<Hex, { escrowRefunded: bigint; collateralReleased: bigint }>
  /** The recipients of the range's PaymentHeld events, by asset (checksummed): whose heldFor the views must show. */
  heldRecipients: ReadonlyMap<Address, ReadonlySet<Address>>
}

// ------------------------------------------------------------------------------------------------ flows

/** An event of the contract by name and arguments: a decoded log, or a model's event (the same names and fields). */
export type FlowEvent = { name: string; args: Readonly<Record<string, unknown>> }

type AssetLookup = { jobAsset(jobKey: Hex): Address | undefined; advanceAsset(offerKey: Hex): Address | undefined }

/** An amount as the differences and the JSON form show it: decimal atomic units. */
export const amount = (value: bigint): string => value.toString()
export const lower = (hex: string): Hex => hex.toLowerCase() as Hex

/** The asset an event moves: named in it, or its job's or its advance's. */
function eventAsset(event: FlowEvent, lookup: AssetLookup): Address | undefined {
  const { args } = event
  if (typeof args.asset === 'string') return getAddress(args.asset)
  if (event.name === 'Repaid' || event.name === 'Liquidated' || event.name === 'AdvanceSettled') {
    return lookup.advanceAsset(lower(args.offerKey as string))
  }
  if (typeof args.jobKey === 'string') return lookup.jobAsset(lower(args.jobKey))
  return undefined
}

const flowFields: Readonly<Record<string, readonly (readonly [string, FlowTotalName])[]>> = {
  JobFunded: [['amount', 'escrowFundedAtomic']],
  CollateralPosted: [['amount', 'collateralPostedAtomic']],
  SupplierPaid: [['amount', 'suppliersPaidAtomic']],
  Repaid: [['toLender', 'repaidToLendersAtomic'], ['toReserve', 'repaidToReserveAtomic']],
  AdvanceSettled: [['toLender', 'settledToLendersAtomic'], ['toReserve', 'settledToReserveAtomic']],
  JobSettled: [['toBorrower', 'settledToBorrowersAtomic']],
  JobFailed: [['escrowRefunded', 'escrowRefundedAtomic']],
  JobClosed: [['collateralReleased', 'collateralReleasedAtomic']],
  JobReclaimed: [['escrowRefunded', 'escrowRefundedAtomic'], ['collateralReleased', 'collateralReleasedAtomic']],
  Liquidated: [
    ['fromCollateral', 'liquidatedFromCollateralAtomic'],
    ['fromBacking', 'liquidatedFromBackingAtomic'],
    ['fromReserve', 'liquidatedFromReserveAtomic'],
    ['shortfall', 'liquidationShortfallAtomic'],
  ],
}

/**
 * The flow totals of `events`, per asset. One function for the ledger's side and the chain's, so that a difference is
 * one of the events, never of two ways of adding them up. An event whose asset is unknown is an error: it would drop
 * money from the sums silently.
 */
export function sumFlows(events: Iterable<FlowEvent>, lookup: AssetLookup): Map<Address, FlowTotals> {
  const byAsset = new Map<Address, FlowTotals>()
  for (const event of events) {
    const fields = flowFields[event.name]
    if (fields === undefined) continue
    const asset = eventAsset(event, lookup)
    if (asset === undefined) throw new Error(`reconcile: the asset of a ${event.name} event is unknown (${JSON.stringify(event.args, bigintJson)})`)
    let totals = byAsset.get(asset)
    if (totals === undefined) {
      totals = zeroTotals()
      byAsset.set(asset, totals)
    }
    for (const [field, total] of fields) totals[total] += event.args[field] as bigint
  }
  return byAsset
}

function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value
}

// ------------------------------------------------------------------------------------------------ from the model

export type ModelRange = {
  network: string
  fromBlock: bigint
  toBlock: bigint
  /** The model's events of the calls that succeeded in the range, in order (the model keeps no history). */
  events: readonly ModelEvent[]
  /** Assets to include even when no job or advance uses them. */
  assets?: readonly Address[]
}

/** The expected state of the contract's TypeScript model: what a ledger that followed every call exactly believes. */
export function expectedFromModel(model: FacilityModel, range: ModelRange): ExpectedNetworkState {
  const assets = new Map<Address, { jobs: Map<Hex, ExpectedJob>; advances: Map<Hex, ExpectedAdvance> }>()
  const assetState = (asset: Address) => {
    const address = getAddress(asset)
    let state = assets.get(address)
    if (state === undefined) {
      state = { jobs: new Map(), advances: new Map() }
      assets.set(address, state)
    }
    return state
  }
  for (const asset of range.assets ?? []) assetState(asset)
  for (const jobKey of model.jobKeys()) {
    const job = model.getJob(jobKey)
    // The model creates an empty record when a call looks a job up; status none is no job.
    if (job.status === 0) continue
    assetState(job.asset).jobs.set(lower(jobKey), {
      escrowAtomic: job.escrow,
      collateralAtomic: job.collateral,
      status: jobStatusNames[job.status] as ExpectedJob['status'],
    })
  }
  for (const offerKey of model.offerKeys()) {
    const advance = model.getAdvance(offerKey)
    if (!advance.exists) continue
    assetState(advance.asset).advances.set(lower(offerKey), {
      lenderOwedAtomic: advance.lenderOwed,
      reserveOwedAtomic: advance.reserveOwed,
      liquidated: advance.liquidated,
    })
  }
  const flows = sumFlows(range.events, {
    jobAsset: (jobKey) => knownAsset(model.getJob(jobKey).asset),
    advanceAsset: (offerKey) => knownAsset(model.getAdvance(offerKey).asset),
  })
  for (const asset of flows.keys()) assetState(asset)
  return {
    network: range.network,
    contract: model.address,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    assets: [...assets].map(([asset, state]) => ({
      asset,
      jobs: state.jobs,
      advances: state.advances,
      reserveAtomic: model.reserveOf(asset),
      totals: flows.get(asset) ?? zeroTotals(),
    })),
  }
}

export const knownAsset = (asset: Address): Address | undefined => (BigInt(asset) === 0n ? undefined : getAddress(asset))
