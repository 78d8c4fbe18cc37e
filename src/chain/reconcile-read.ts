// Reconciliation's reader: what it reads on chain. The contract's events over a block range (their flow totals and
// the keys they name) and its state AT THE RANGE'S LAST BLOCK (jobs, advances, reserves, token balances), in one
// multicall per kind. Called by reconcile() (reconcile.ts); the comparison is reconcile-compare.ts.
import { erc20Abi, getAddress, zeroHash, type Address, type Chain, type Hex, type PublicClient, type Transport } from 'viem'
import { creditFacilityV2Abi, multicall3Address } from './artifacts.ts'
import { decodeFacilityLog } from './events-v2.ts'
import { logBlockRangeMaxDefault } from './follower.ts'
import { knownAsset, lower, sumFlows, zeroTotals, type ChainAdvance, type ChainJob, type ChainState, type FlowEvent } from './reconcile-states.ts'

export type ReadChainOptions = {
  network: string
  /** The network's fail-fast public client (src/chain/clients.ts): a stalled RPC fails the run, it never hangs it. */
  publicClient: PublicClient<Transport, Chain | undefined>
  contract: Address
  fromBlock: bigint
  toBlock: bigint
  /** Jobs and advances to read beside those of the range's events. */
  jobKeys?: Iterable<Hex>
  offerKeys?: Iterable<Hex>
  /** Assets to read (reserve, balance) beside those of the jobs and advances read. */
  assets?: Iterable<Address>
  /**
   * The only tokens whose reserve and balance are read (the network's configured tokens); default: every asset named.
   * fundJob takes any address as the asset, so a stranger's job may name a contract of its own whose balanceOf
   * reverts (which failed every run of the network: an adversary's finding, test/api/adversary6-token-surplus.test.ts)
   * or answers anything.
   */
  tokens?: Iterable<Address>
  /** Largest block range of one eth_getLogs (providers cap it). Default: the follower's. */
  logBlockRangeMax?: bigint
  /** Default: the chain's multicall3, else the canonical address. */
  multicallAddress?: Address
}

/** The contract's state at toBlock and its flows over fromBlock..toBlock. */
export async function readChainState(options: ReadChainOptions): Promise<ChainState> {
  const { publicClient, contract, fromBlock, toBlock } = options
  if (fromBlock > toBlock) throw new RangeError(`reconcile: fromBlock ${fromBlock} is after toBlock ${toBlock}`)
  const logRange = options.logBlockRangeMax ?? logBlockRangeMaxDefault
  if (logRange < 1n) throw new RangeError('logBlockRangeMax must be at least 1')
  const events: FlowEvent[] = []
  for (let start = fromBlock; start <= toBlock; start += logRange) {
    const end = start + logRange - 1n < toBlock ? start + logRange - 1n : toBlock
    const logs = await publicClient.getLogs({ address: contract, fromBlock: start, toBlock: end })
    for (const log of logs) {
      // Sums need no time: 0 stands for a block time nobody reads.
      const event = decodeFacilityLog(contract, log as Parameters<typeof decodeFacilityLog>[1], 0)
      if (event !== undefined) events.push({ name: event.name, args: event.args as Record<string, unknown> })
    }
  }
  const seenJobKeys = new Set<Hex>()
  const seenOfferKeys = new Set<Hex>()
  const reclaims = new Map<Hex, { escrowRefunded: bigint; collateralReleased: bigint }>()
  const heldRecipients = new Map<Address, Set<Address>>()
  for (const { name, args } of events) {
    if (name === 'PaymentHeld') {
      const asset = getAddress(args.asset as string)
      let recipients = heldRecipients.get(asset)
      if (recipients === undefined) heldRecipients.set(asset, (recipients = new Set()))
      recipients.add(getAddress(args.to as string))
    }
    if (typeof args.jobKey === 'string' && args.jobKey !== zeroHash) seenJobKeys.add(lower(args.jobKey))
    if (typeof args.offerKey === 'string') seenOfferKeys.add(lower(args.offerKey))
    if (name === 'JobReclaimed') {
      reclaims.set(lower(args.jobKey as string), { escrowRefunded: args.escrowRefunded as bigint, collateralReleased: args.collateralReleased as bigint })
    }
  }
  const jobKeys = [...new Set([...seenJobKeys, ...[...(options.jobKeys ?? [])].map(lower)])]
  const offerKeys = [...new Set([...seenOfferKeys, ...[...(options.offerKeys ?? [])].map(lower)])]

  const multicallAddress = options.multicallAddress ?? publicClient.chain?.contracts?.multicall3?.address ?? multicall3Address
  // One block for every read: the state the events led to, not a later one.
  const read = async <T>(calls: readonly unknown[]): Promise<T[]> =>
    calls.length === 0
      ? []
      : ((await publicClient.multicall({ contracts: calls as never, allowFailure: false, blockNumber: toBlock, multicallAddress })) as T[])
  const jobViews = await read<ChainJob>(jobKeys.map((key) => ({ address: contract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [key] })))
  const advanceViews = await read<ChainAdvance>(
    offerKeys.map((key) => ({ address: contract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [key] })),
  )
  const jobs = new Map(jobKeys.map((key, i) => [key, { ...(jobViews[i] as ChainJob), asset: getAddress((jobViews[i] as ChainJob).asset) }]))
  const advances = new Map(
    offerKeys.map((key, i) => [key, { ...(advanceViews[i] as ChainAdvance), jobKey: lower((advanceViews[i] as ChainAdvance).jobKey) }]),
  )

  const flows = sumFlows(events, {
    jobAsset: (jobKey) => knownAsset(jobs.get(jobKey)?.asset ?? '0x0'),
    advanceAsset: (offerKey) => knownAsset(advances.get(offerKey)?.asset ?? '0x0'),
  })
  const assetSet = new Set<Address>([...(options.assets ?? [])].map((a) => getAddress(a)))
  for (const job of jobs.values()) if (job.status !== 0) assetSet.add(job.asset)
  for (const advance of advances.values()) if (advance.exists) assetSet.add(getAddress(advance.asset))
  for (const asset of flows.keys()) assetSet.add(asset)
  const tokens = options.tokens === undefined ? undefined : new Set([...options.tokens].map((a) => getAddress(a)))
  const assetList = [...assetSet].filter((asset) => tokens === undefined || tokens.has(asset))
  const amounts = await read<bigint>(
    assetList.flatMap((asset) => [
      { address: contract, abi: creditFacilityV2Abi, functionName: 'reserveOf', args: [asset] },
      { address: contract, abi: creditFacilityV2Abi, functionName: 'heldOf', args: [asset] },
      { address: asset, abi: erc20Abi, functionName: 'balanceOf', args: [contract] },
    ]),
  )
  const assets = new Map(
    assetList.map((asset, i) => [
      asset,
      {
        asset, reserveAtomic: amounts[3 * i] as bigint, heldAtomic: amounts[3 * i + 1] as bigint, contractBalanceAtomic: amounts[3 * i + 2] as bigint,
        totals: flows.get(asset) ?? zeroTotals(),
      },
    ]),
  )
  return { network: options.network, contract: getAddress(contract), fromBlock, toBlock, jobs, advances, assets, seenJobKeys, seenOfferKeys, reclaims, heldRecipients }
}

/**
 * The contract's heldFor(asset, account) of each of `held` at `blockNumber` (the block the party's views were built
 * up to), in one multicall.
 */
export async function readHeldFor(
  options: Pick<ReadChainOptions, 'publicClient' | 'contract' | 'multicallAddress'> & { held: readonly { asset: Address; account: Address }[]; blockNumber: bigint },
): Promise<bigint[]> {
  const { publicClient, contract, held, blockNumber } = options
  if (held.length === 0) return []
  const multicallAddress = options.multicallAddress ?? publicClient.chain?.contracts?.multicall3?.address ?? multicall3Address
  const calls = held.map(({ asset, account }) => ({ address: contract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [asset, account] }))
  return (await publicClient.multicall({ contracts: calls as never, allowFailure: false, blockNumber, multicallAddress })) as bigint[]
}
