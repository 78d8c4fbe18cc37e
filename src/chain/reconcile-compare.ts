// Reconciliation's comparison: how the ledger's expected state and the chain's state are compared, pure (no reads).
// Every difference is named (compareStates), and token conservation is checked on the chain's state alone
// (conservationDifferences). Called by reconcile() (reconcile.ts) and the tests; the reader is reconcile-read.ts.
import { getAddress, type Address, type Hex } from 'viem'
import {
  amount, flowTotalNames, jobStatusNames, lower, zeroTotals,
  type ChainState, type Difference, type DifferenceKind, type DifferenceValue, type ExpectedNetworkState,
} from './reconcile-states.ts'

function jobRecord(job: { escrow: bigint; collateral: bigint; status: number }): Record<string, string> {
  return { status: jobStatusNames[job.status] ?? String(job.status), escrowAtomic: amount(job.escrow), collateralAtomic: amount(job.collateral) }
}

function advanceRecord(adv: { lenderOwed: bigint; reserveOwed: bigint; liquidated: boolean }): Record<string, string | boolean> {
  return { lenderOwedAtomic: amount(adv.lenderOwed), reserveOwedAtomic: amount(adv.reserveOwed), liquidated: adv.liquidated }
}

/**
 * Every difference between the ledger's state and the chain's, in a stable order: per expected asset its jobs,
 * advances, reserve and totals, then its token conservation; then the keys the chain has and the ledger does not.
 * Pure: `actual` was read for the expected keys (readChainState with them).
 */
export function compareStates(expected: ExpectedNetworkState, actual: ChainState): Difference[] {
  if (expected.fromBlock !== actual.fromBlock || expected.toBlock !== actual.toBlock) {
    throw new RangeError(
      `reconcile: the ledger's range ${expected.fromBlock}..${expected.toBlock} is not the range read ${actual.fromBlock}..${actual.toBlock}`,
    )
  }
  const network = expected.network
  const differences: Difference[] = []
  const known = { jobs: new Set<Hex>(), advances: new Set<Hex>() }
  for (const state of expected.assets) {
    const asset = getAddress(state.asset)
    const diff = (kind: DifferenceKind, key: string, exp: DifferenceValue, act: DifferenceValue) =>
      differences.push({ network, asset, kind, key, expected: exp, actual: act })
    for (const [rawKey, job] of sortedEntries(state.jobs)) {
      const key = lower(rawKey)
      known.jobs.add(key)
      const onChain = actual.jobs.get(key)
      const expectedRecord = { status: job.status, escrowAtomic: amount(job.escrowAtomic), collateralAtomic: amount(job.collateralAtomic) }
      if (onChain === undefined || onChain.status === 0) {
        diff('job_missing', key, expectedRecord, null)
        continue
      }
      if (getAddress(onChain.asset) !== asset) diff('job_asset', key, asset, getAddress(onChain.asset))
      const status = jobStatusNames[onChain.status] ?? String(onChain.status)
      if (status !== job.status) diff('job_status', key, job.status, status)
      if (onChain.escrow !== job.escrowAtomic) diff('job_escrow', key, amount(job.escrowAtomic), amount(onChain.escrow))
      if (onChain.collateral !== job.collateralAtomic) diff('job_collateral', key, amount(job.collateralAtomic), amount(onChain.collateral))
    }
    for (const [rawKey, adv] of sortedEntries(state.advances)) {
      const key = lower(rawKey)
      known.advances.add(key)
      const onChain = actual.advances.get(key)
      if (onChain === undefined || !onChain.exists) {
        diff('advance_missing', key, advanceRecord({ lenderOwed: adv.lenderOwedAtomic, reserveOwed: adv.reserveOwedAtomic, liquidated: adv.liquidated }), null)
        continue
      }
      if (getAddress(onChain.asset) !== asset) diff('advance_asset', key, asset, getAddress(onChain.asset))
      if (onChain.lenderOwed !== adv.lenderOwedAtomic) diff('advance_lender_owed', key, amount(adv.lenderOwedAtomic), amount(onChain.lenderOwed))
      if (onChain.reserveOwed !== adv.reserveOwedAtomic) diff('advance_reserve_owed', key, amount(adv.reserveOwedAtomic), amount(onChain.reserveOwed))
      if (onChain.liquidated !== adv.liquidated) diff('advance_liquidated', key, adv.liquidated, onChain.liquidated)
    }
    const chainAsset = actual.assets.get(asset)
    const reserve = chainAsset?.reserveAtomic ?? 0n
    if (reserve !== state.reserveAtomic) diff('reserve', asset, amount(state.reserveAtomic), amount(reserve))
    const totals = chainAsset?.totals ?? zeroTotals()
    for (const name of flowTotalNames) {
      const expectedTotal = state.totals[name]
      if (expectedTotal !== undefined && totals[name] !== expectedTotal) diff('total', name, amount(expectedTotal), amount(totals[name]))
    }
    if (chainAsset !== undefined) differences.push(...conservationDifferences(actual, asset))
  }
  const unexpectedJobs = [...new Set([...actual.seenJobKeys, ...actual.jobs.keys()])].filter((key) => !known.jobs.has(key)).sort()
  for (const key of unexpectedJobs) {
    const job = actual.jobs.get(key)
    if (job === undefined || job.status === 0) continue
    differences.push({ network, asset: getAddress(job.asset), kind: 'job_unexpected', key, expected: null, actual: jobRecord(job) })
  }
  const unexpectedAdvances = [...new Set([...actual.seenOfferKeys, ...actual.advances.keys()])].filter((key) => !known.advances.has(key)).sort()
  for (const key of unexpectedAdvances) {
    const adv = actual.advances.get(key)
    if (adv === undefined || !adv.exists) continue
    differences.push({ network, asset: getAddress(adv.asset), kind: 'advance_unexpected', key, expected: null, actual: advanceRecord(adv) })
  }
  return differences
}

/**
 * Token conservation of `asset` on chain alone: the contract's balance == escrow + collateral of its open and failed
 * jobs (the jobs read) + its reserve + the payments it holds for recipients the token refused (heldOf). A settled or
 * closed job holds nothing, by the contract's rules.
 */
export function conservationDifferences(actual: ChainState, asset: Address): Difference[] {
  const state = actual.assets.get(getAddress(asset))
  if (state === undefined) return []
  let held = state.reserveAtomic + state.heldAtomic
  for (const job of actual.jobs.values()) {
    if (getAddress(job.asset) !== state.asset) continue
    if (job.status === 1 || job.status === 3) held += job.escrow + job.collateral
  }
  if (held === state.contractBalanceAtomic) return []
  return [{ network: actual.network, asset: state.asset, kind: 'token_conservation', key: actual.contract, expected: amount(held), actual: amount(state.contractBalanceAtomic) }]
}

function sortedEntries<V>(map: ReadonlyMap<Hex, V>): [Hex, V][] {
  return [...map].sort(([a], [b]) => (lower(a) < lower(b) ? -1 : lower(a) > lower(b) ? 1 : 0))
}

/**
 * What the party's views show held for each recipient (`expected`, the engine's held-payment record, 0 when it has
 * none) against the contract's heldFor (`actual`), both as of the same block: a held_payment difference for each that
 * disagrees.
 */
export function heldDifferences(network: string, held: readonly { asset: Address; account: Address; expected: bigint; actual: bigint }[]): Difference[] {
  return held
    .filter((h) => h.expected !== h.actual)
    .map((h) => ({ network, asset: getAddress(h.asset), kind: 'held_payment' as const, key: getAddress(h.account), expected: amount(h.expected), actual: amount(h.actual) }))
}
