// `npm run reconcile -- --rpc-url URL --contract 0x… [--expected ledger.json] [--job KEY]… [--offer KEY]… [--asset 0x…]…
// [--network SLUG] [--from N] [--to N] [--confirmations N] [--timeout-ms N]`: reconciles CreditFacilityV2 with a ledger
// (src/chain/reconcile.ts) and prints the differences as JSON; exit 0 none, 1 some, 2 the run failed (bad arguments,
// an invalid ledger file, the RPC). With --expected (an ExpectedNetworkState in its JSON form; its range and network
// win over --from/--to/--network) every difference is named; without it, only token conservation of the assets read
// is checked (from block 0 by default, so that every job's escrow and collateral is counted).
// The service runs the same check against its own ledger at start-up and on POST /operator/reconcile
// (src/service/reconciliation.ts); here the ledger file is written by whoever runs it.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createPublicClient, defineChain, getAddress, http, isAddress, type Address, type Hex } from 'viem'
import { multicall3Address } from '../chain/artifacts.ts'
import { rpcTimeoutMsDefault } from '../chain/clients.ts'
import {
  conservationDifferences,
  parseExpectedState,
  readChainState,
  reconcile,
  type Difference,
  type ExpectedNetworkState,
} from '../chain/reconcile.ts'

class UsageError extends Error {}

const keyPattern = /^0x[0-9a-fA-F]{64}$/
const blockPattern = /^(0|[1-9][0-9]{0,19})$/

type Options = {
  rpcUrl: string
  contract: Address
  expected: ExpectedNetworkState | undefined
  network: string
  jobKeys: Hex[]
  offerKeys: Hex[]
  assets: Address[]
  fromBlock: bigint
  toBlock: bigint | undefined
  confirmations: bigint
  timeoutMs: number
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      'rpc-url': { type: 'string' },
      contract: { type: 'string' },
      expected: { type: 'string' },
      network: { type: 'string', default: 'cli' },
      job: { type: 'string', multiple: true, default: [] },
      offer: { type: 'string', multiple: true, default: [] },
      asset: { type: 'string', multiple: true, default: [] },
      from: { type: 'string', default: '0' },
      to: { type: 'string' },
      confirmations: { type: 'string', default: '1' },
      'timeout-ms': { type: 'string', default: String(rpcTimeoutMsDefault) },
    },
    strict: true,
  })
  const rpcUrl = values['rpc-url']
  if (rpcUrl === undefined || !/^https?:\/\//.test(rpcUrl)) throw new UsageError('--rpc-url http(s)://… is required')
  const contract = values.contract
  if (contract === undefined || !isAddress(contract, { strict: false })) throw new UsageError('--contract 0x… (the CreditFacilityV2 address) is required')
  for (const key of [...values.job, ...values.offer]) if (!keyPattern.test(key)) throw new UsageError(`${key} is not a 32-byte 0x-hex key`)
  for (const asset of values.asset) if (!isAddress(asset, { strict: false })) throw new UsageError(`${asset} is not an address`)
  for (const [name, value] of [['--from', values.from], ['--to', values.to], ['--confirmations', values.confirmations], ['--timeout-ms', values['timeout-ms']]] as const) {
    if (value !== undefined && !blockPattern.test(value)) throw new UsageError(`${name} must be a non-negative integer`)
  }
  if (BigInt(values.confirmations) < 1n) throw new UsageError('--confirmations must be at least 1')
  let expected: ExpectedNetworkState | undefined
  if (values.expected !== undefined) {
    let text: string
    try {
      text = readFileSync(values.expected, 'utf8')
    } catch (error) {
      throw new UsageError(`cannot read ${values.expected}: ${(error as Error).message}`)
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      throw new UsageError(`${values.expected} is not JSON: ${(error as Error).message}`)
    }
    expected = parseExpectedState(json)
    if (getAddress(expected.contract) !== getAddress(contract)) throw new UsageError(`${values.expected} is the ledger of ${expected.contract}, not of ${contract}`)
  }
  return {
    rpcUrl,
    contract: getAddress(contract),
    expected,
    network: values.network,
    jobKeys: values.job as Hex[],
    offerKeys: values.offer as Hex[],
    assets: values.asset.map((a) => getAddress(a)),
    fromBlock: BigInt(values.from),
    toBlock: values.to === undefined ? undefined : BigInt(values.to),
    confirmations: BigInt(values.confirmations),
    timeoutMs: Number(values['timeout-ms']),
  }
}

export async function runReconcile(options: Options): Promise<{ network: string; contract: Address; fromBlock: bigint; toBlock: bigint; differences: Difference[] }> {
  // The request path's fail-fast reads: a stalled RPC fails the run within the deadline instead of hanging it.
  const transport = http(options.rpcUrl, { retryCount: 0, timeout: options.timeoutMs })
  const probe = createPublicClient({ transport })
  const chainId = await probe.getChainId()
  const chain = defineChain({
    id: chainId,
    name: options.network,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
    contracts: { multicall3: { address: multicall3Address } },
  })
  const publicClient = createPublicClient({ chain, transport })
  const extra = { jobKeys: options.jobKeys, offerKeys: options.offerKeys, assets: options.assets }
  if (options.expected !== undefined) {
    const report = await reconcile(options.expected, { publicClient, ...extra })
    return { network: report.network, contract: report.contract, fromBlock: report.fromBlock, toBlock: report.toBlock, differences: report.differences }
  }
  // A block with N confirmations is at most head - N + 1 (as the follower reads).
  const toBlock = options.toBlock ?? (await publicClient.getBlockNumber({ cacheTime: 0 })) - (options.confirmations - 1n)
  const actual = await readChainState({ network: options.network, publicClient, contract: options.contract, fromBlock: options.fromBlock, toBlock, ...extra })
  const differences = [...actual.assets.keys()].flatMap((asset) => conservationDifferences(actual, asset))
  return { network: actual.network, contract: actual.contract, fromBlock: actual.fromBlock, toBlock: actual.toBlock, differences }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let options: Options
  try {
    options = parseOptions(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`reconcile: ${(error as Error).message}\n`)
    process.exit(2)
  }
  runReconcile(options).then(
    (report) => {
      process.stdout.write(`${JSON.stringify(report, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`)
      process.exit(report.differences.length === 0 ? 0 : 1)
    },
    (error: unknown) => {
      process.stderr.write(`reconcile: ${(error as Error).message?.split('\n')[0] ?? String(error)}\n`)
      process.exit(2)
    },
  )
}
