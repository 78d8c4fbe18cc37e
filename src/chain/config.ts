// Network configuration: what the service knows about each EVM network it works on. Real networks come from a JSON
// file (loadNetworksConfig); the devnet launcher produces the same NetworkConfig values. Secrets never live in the
// file: the operator's private key is read from the environment variable the file names.
import { readFileSync } from 'node:fs'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import { getAddress, isHex, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { multicall3Address } from './artifacts.ts'
import { FORMAT_PATTERNS } from '../engine/ids.ts'

const AddressSchema = Type.String({ pattern: FORMAT_PATTERNS.address, description: 'EVM address, any case' })

export const TokenConfigSchema = Type.Object(
  {
    symbol: Type.String({ pattern: '^[A-Za-z0-9.]{1,16}$', description: 'asset symbol used on the wire, e.g. USDC' }),
    address: AddressSchema,
    decimals: Type.Integer({ minimum: 0, maximum: 36 }),
    eip712Name: Type.String({ minLength: 1, maxLength: 64, description: 'EIP-712 domain name (x402 extra.name)' }),
    eip712Version: Type.String({ minLength: 1, maxLength: 16, description: 'EIP-712 domain version (x402 extra.version)' }),
    advanceMinAtomic: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,37}$',
        description: 'the least principal of one advance (atomic units, decimal string); default one whole unit, 10^decimals',
      }),
    ),
  },
  { additionalProperties: false },
)

export const NetworkFileEntrySchema = Type.Object(
  {
    slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,39}$', description: 'network name on the wire' }),
    chainId: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }),
    caip2: Type.String({ pattern: '^eip155:[1-9][0-9]*$', description: 'must equal eip155:<chainId>' }),
    rpcUrl: Type.String({ pattern: '^(https?|wss?)://', maxLength: 2048 }),
    creditContract: AddressSchema,
    identityRegistry: AddressSchema,
    reputationRegistry: AddressSchema,
    multicall3: Type.Optional(AddressSchema),
    tokens: Type.Array(TokenConfigSchema, { minItems: 1, maxItems: 16 }),
    x402SelfFacilitate: Type.Boolean({ description: 'the service runs an x402 facilitator for this network' }),
    confirmations: Type.Integer({ minimum: 1, maximum: 1000, description: 'blocks a proof needs, its own included' }),
    deploymentBlock: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 2 ** 53 - 1,
        description: "the credit contract's deployment block: where the chain follower starts without a cursor, and reconciliation's first block (default 0)",
      }),
    ),
    pollingIntervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 60_000 })),
    headBehindMaxMs: Type.Optional(
      Type.Integer({
        minimum: 1_000,
        maximum: 3_600_000,
        description: "how long the RPC may answer a chain behind the chain follower's cursor (a node not yet synced) before the follower stops (default: 10 polling intervals, at least 30 s)",
      }),
    ),
    healthHoldMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 600_000,
        description: "how long the chain follower must be failing before /health shows it degraded, and following before it shows it ok again (default: 3 polling intervals, at least 1 s)",
      }),
    ),
    logsSafeDepth: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100_000,
        description:
          "blocks below the head every node of the RPC has surely seen: the chain follower reads the logs of those above it one block at a time, by hash, so that a node behind the others cannot skip an event (default 64; 0: all by range, for an RPC of one node)",
      }),
    ),
    rpcTimeoutMs: Type.Optional(
      Type.Integer({ minimum: 50, maximum: 60_000, description: 'deadline of one chain read on the request path (default 750 ms)' }),
    ),
    rpcStalledMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 60_000,
        description:
          "how long one call of the chain follower may go unanswered before the follower counts as failing (degraded once that lasts the health hold), while the call goes on to its 10 s deadline (default 2,000 ms)",
      }),
    ),
    blockTimeMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 600_000,
        description:
          "the chain's expected time between blocks: a head whose block time is older than headStaleBlocks of them (by the wall clock) is a chain that stopped, and the network degraded (default by chainId for known chains; none, no such rule, for others: a chain that mines only on transactions)",
      }),
    ),
    headStaleBlocks: Type.Optional(
      Type.Integer({ minimum: 2, maximum: 10_000, description: 'how many blockTimeMs the head may go without a new block before the network is degraded (default 10)' }),
    ),
    operatorKeyEnv: Type.Optional(
      Type.String({ pattern: '^[A-Z_][A-Z0-9_]{0,127}$', description: 'environment variable holding the operator key' }),
    ),
    leaseSignerKeyEnv: Type.Optional(
      Type.String({
        pattern: '^[A-Z_][A-Z0-9_]{0,127}$',
        description: "environment variable holding the key that signs lease authorizations (the credit contract's leaseSigner)",
      }),
    ),
    facilitatorKeyEnv: Type.Optional(
      Type.String({
        pattern: '^[A-Z_][A-Z0-9_]{0,127}$',
        description: 'environment variable holding the key that sends x402 settlements (never the operator key)',
      }),
    ),
  },
  { additionalProperties: false },
)

export const NetworksFileSchema = Type.Object(
  { networks: Type.Array(NetworkFileEntrySchema, { minItems: 1, maxItems: 32 }) },
  { additionalProperties: false },
)

export type NetworkFileEntry = Type.Static<typeof NetworkFileEntrySchema>
export type NetworksFile = Type.Static<typeof NetworksFileSchema>

export type TokenConfig = {
  symbol: string
  address: Address
  decimals: number
  eip712Name: string
  eip712Version: string
  /** The least principal of one advance, a decimal string as in the file (advanceMinAtomicOf): undefined, one whole unit. */
  advanceMinAtomic?: string
}

/** One network as the service uses it: addresses checksummed, defaults applied, the operator key resolved. */
export type NetworkConfig = {
  slug: string
  chainId: number
  caip2: `eip155:${number}`
  rpcUrl: string
  creditContract: Address
  identityRegistry: Address
  reputationRegistry: Address
  multicall3: Address
  tokens: TokenConfig[]
  x402SelfFacilitate: boolean
  confirmations: number
  /**
   * The credit contract's deployment block: nothing of it is older, so the chain follower starts there when it has no
   * cursor, and reconciliation reads the contract's events from there (reading from block 0 is fine on a devnet, not
   * on a real network with millions of blocks). Undefined: 0.
   */
  deploymentBlock?: bigint
  pollingIntervalMs: number
  /** See NetworkFileEntrySchema; undefined: headBehindMaxMsOf's default (src/chain/follower.ts). */
  headBehindMaxMs?: number
  /** See NetworkFileEntrySchema; undefined: healthHoldMsOf's default (src/chain/follower.ts). */
  healthHoldMs?: number
  /** See NetworkFileEntrySchema; undefined: logsSafeDepthDefault (src/chain/follower.ts). */
  logsSafeDepth?: number
  /** Deadline of one chain read on the request path; undefined: rpcTimeoutMsDefault (src/chain/clients.ts). */
  rpcTimeoutMs?: number
  /** See NetworkFileEntrySchema; undefined: followerRpcStalledMsDefault (src/chain/follower.ts). */
  rpcStalledMs?: number
  /** See NetworkFileEntrySchema; undefined: knownBlockTimeMs by chainId, else no stale-head rule (headStaleMsOf). */
  blockTimeMs?: number
  /** See NetworkFileEntrySchema; undefined: headStaleBlocksDefault (src/chain/follower.ts). */
  headStaleBlocks?: number
  operatorKeyEnv: string | undefined
  /** From the environment (real networks) or the devnet's demo operator; never from the file. */
  operatorPrivateKey: Hex | undefined
  leaseSignerKeyEnv: string | undefined
  /** The credit contract's leaseSigner: signs each lease's authorization; without it no lease can be paid. */
  leaseSignerPrivateKey: Hex | undefined
  facilitatorKeyEnv: string | undefined
  /**
   * Sends the settlements of the network's x402 facilitator (x402SelfFacilitate), which anyone may call: its own
   * account, so that strangers' settlements never spend the operator's gas nor queue behind its nonce (completions,
   * failures and liquidations). Without it the network has no facilitator here.
   */
  facilitatorPrivateKey: Hex | undefined
}

export const pollingIntervalMsDefault = 1_000

/**
 * The least principal of one advance in a token: a lease must be worth its lender's paySupplier gas. A lender leaves a
 * dust lease unpaid, and each lease that expires unpaid costs it reliability, so leases of 1 atomic unit put a lender
 * below the active minimum for free (nothing is funded, no fee is paid). One whole unit by default.
 */
export function advanceMinAtomicOf(token: TokenConfig): bigint {
  return token.advanceMinAtomic === undefined ? 10n ** BigInt(token.decimals) : BigInt(token.advanceMinAtomic)
}

/**
 * The service's own addresses on a network (lower-case address -> what it is): its credit contract, tokens and
 * registries, and the addresses of its operator and lease-signer keys. The engine never takes one as a supplier.
 */
export function serviceAddressesOf(n: NetworkConfig): Record<string, string> {
  const named: Record<string, string> = {}
  const name = (address: Address, what: string) => (named[address.toLowerCase()] ??= what)
  name(n.creditContract, 'the credit contract')
  for (const token of n.tokens) name(token.address, `the ${token.symbol} token contract`)
  name(n.identityRegistry, 'the identity registry')
  name(n.reputationRegistry, 'the reputation registry')
  name(n.multicall3, 'the Multicall3 contract')
  if (n.operatorPrivateKey !== undefined) name(privateKeyToAddress(n.operatorPrivateKey), "the service's operator key")
  if (n.leaseSignerPrivateKey !== undefined) name(privateKeyToAddress(n.leaseSignerPrivateKey), "the service's lease signer")
  if (n.facilitatorPrivateKey !== undefined) name(privateKeyToAddress(n.facilitatorPrivateKey), "the service's x402 facilitator key")
  return named
}

export type ConfigProblem = { path: string; message: string }

export class NetworksConfigError extends Error {
  override readonly name = 'NetworksConfigError'
  constructor(
    readonly source: string,
    readonly problems: ConfigProblem[],
  ) {
    super(`invalid networks configuration (${source}):\n` + problems.map((p) => `  ${p.path || '/'}: ${p.message}`).join('\n'))
  }
}

const checkFile = Compile(NetworksFileSchema)

/** Reads and validates a networks file; throws NetworksConfigError naming every problem. */
export function loadNetworksConfig(path: string, env: NodeJS.ProcessEnv = process.env): NetworkConfig[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new NetworksConfigError(path, [{ path: '', message: `cannot read file: ${(error as Error).message}` }])
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new NetworksConfigError(path, [{ path: '', message: `not JSON: ${(error as Error).message}` }])
  }
  return parseNetworksConfig(value, env, path)
}

/** Validates an already parsed networks file (see loadNetworksConfig). */
export function parseNetworksConfig(value: unknown, env: NodeJS.ProcessEnv = process.env, source = 'value'): NetworkConfig[] {
  if (!checkFile.Check(value)) {
    const problems = [...checkFile.Errors(value)]
      // "schema is false" repeats the additionalProperties error with less to say.
      .filter((e) => e.keyword !== 'boolean')
      .map((e) => ({
        path: e.instancePath,
        message:
          e.keyword === 'additionalProperties'
            ? `unknown field(s) ${JSON.stringify((e.params as { additionalProperties: string[] }).additionalProperties)}` +
              ' (a private key never belongs in this file: name an environment variable with operatorKeyEnv)'
            : e.message,
      }))
    throw new NetworksConfigError(source, problems)
  }
  const problems: ConfigProblem[] = []
  const networks = value.networks.map((entry, index) => toNetworkConfig(entry, `/networks/${index}`, env, problems))
  const seen = { slug: new Set<string>(), chainId: new Set<number>() }
  networks.forEach((network, index) => {
    if (seen.slug.has(network.slug)) problems.push({ path: `/networks/${index}/slug`, message: `duplicate slug ${network.slug}` })
    if (seen.chainId.has(network.chainId)) {
      problems.push({ path: `/networks/${index}/chainId`, message: `duplicate chainId ${network.chainId}` })
    }
    seen.slug.add(network.slug)
    seen.chainId.add(network.chainId)
  })
  problems.push(...oneUnitOfAccount(networks))
  if (problems.length > 0) throw new NetworksConfigError(source, problems)
  return networks
}

/**
 * Every token, on every network, in one unit: a backing source's attested `valueAtomic` and `liquidationValueAtomic`
 * name no asset (the spec's backing source has none, nor does the attestation), and a request in any configured asset
 * may draw on it. So an amount attested for a 6-decimal token would be read a trillion times larger in an 18-decimal
 * one. Tokens of other decimals are refused until sources carry their asset.
 */
function oneUnitOfAccount(networks: readonly NetworkConfig[]): ConfigProblem[] {
  const first = networks[0]?.tokens[0]
  if (first === undefined) return []
  const problems: ConfigProblem[] = []
  networks.forEach((network, n) => network.tokens.forEach((token, index) => {
    if (token.decimals === first.decimals) return
    problems.push({
      path: `/networks/${n}/tokens/${index}/decimals`,
      message: `${token.symbol} has ${token.decimals} decimals and ${first.symbol} ${first.decimals}: every token must have the same decimals, since a backing source's attested values name no asset and back requests in any of them`,
    })
  }))
  return problems
}

function toNetworkConfig(entry: NetworkFileEntry, path: string, env: NodeJS.ProcessEnv, problems: ConfigProblem[]): NetworkConfig {
  if (entry.caip2 !== `eip155:${entry.chainId}`) {
    problems.push({ path: `${path}/caip2`, message: `must be eip155:${entry.chainId} (the chainId)` })
  }
  const symbols = new Set<string>()
  entry.tokens.forEach((token, index) => {
    if (symbols.has(token.symbol)) problems.push({ path: `${path}/tokens/${index}/symbol`, message: `duplicate symbol ${token.symbol}` })
    symbols.add(token.symbol)
  })
  const keyFrom = (field: 'operatorKeyEnv' | 'leaseSignerKeyEnv' | 'facilitatorKeyEnv'): Hex | undefined => {
    const name = entry[field]
    if (name === undefined) return undefined
    const key = env[name]
    if (key === undefined || key === '') {
      problems.push({ path: `${path}/${field}`, message: `environment variable ${name} is not set` })
    } else if (!isHex(key) || key.length !== 66) {
      problems.push({ path: `${path}/${field}`, message: `${name} is not a 32-byte 0x-hex private key` })
    } else {
      return key
    }
    return undefined
  }
  const operatorPrivateKey = keyFrom('operatorKeyEnv')
  const leaseSignerPrivateKey = keyFrom('leaseSignerKeyEnv')
  const facilitatorPrivateKey = keyFrom('facilitatorKeyEnv')
  return {
    slug: entry.slug,
    chainId: entry.chainId,
    caip2: `eip155:${entry.chainId}`,
    rpcUrl: entry.rpcUrl,
    creditContract: getAddress(entry.creditContract),
    identityRegistry: getAddress(entry.identityRegistry),
    reputationRegistry: getAddress(entry.reputationRegistry),
    multicall3: getAddress(entry.multicall3 ?? multicall3Address),
    tokens: entry.tokens.map((t) => ({ ...t, address: getAddress(t.address) })),
    x402SelfFacilitate: entry.x402SelfFacilitate,
    confirmations: entry.confirmations,
    deploymentBlock: BigInt(entry.deploymentBlock ?? 0),
    pollingIntervalMs: entry.pollingIntervalMs ?? pollingIntervalMsDefault,
    ...(entry.headBehindMaxMs === undefined ? {} : { headBehindMaxMs: entry.headBehindMaxMs }),
    ...(entry.healthHoldMs === undefined ? {} : { healthHoldMs: entry.healthHoldMs }),
    ...(entry.logsSafeDepth === undefined ? {} : { logsSafeDepth: entry.logsSafeDepth }),
    ...(entry.rpcTimeoutMs === undefined ? {} : { rpcTimeoutMs: entry.rpcTimeoutMs }),
    ...(entry.rpcStalledMs === undefined ? {} : { rpcStalledMs: entry.rpcStalledMs }),
    ...(entry.blockTimeMs === undefined ? {} : { blockTimeMs: entry.blockTimeMs }),
    ...(entry.headStaleBlocks === undefined ? {} : { headStaleBlocks: entry.headStaleBlocks }),
    operatorKeyEnv: entry.operatorKeyEnv,
    operatorPrivateKey,
    leaseSignerKeyEnv: entry.leaseSignerKeyEnv,
    leaseSignerPrivateKey,
    facilitatorKeyEnv: entry.facilitatorKeyEnv,
    facilitatorPrivateKey,
  }
}

/** The file form of networks (no secret): what the devnet writes and loadNetworksConfig reads back. */
export function toNetworksFile(networks: NetworkConfig[]): NetworksFile {
  return {
    networks: networks.map((n) => ({
      slug: n.slug,
      chainId: n.chainId,
      caip2: n.caip2,
      rpcUrl: n.rpcUrl,
      creditContract: n.creditContract,
      identityRegistry: n.identityRegistry,
      reputationRegistry: n.reputationRegistry,
      multicall3: n.multicall3,
      tokens: n.tokens.map((t) => ({ ...t })),
      x402SelfFacilitate: n.x402SelfFacilitate,
      confirmations: n.confirmations,
      ...(n.deploymentBlock === undefined ? {} : { deploymentBlock: Number(n.deploymentBlock) }),
      pollingIntervalMs: n.pollingIntervalMs,
      ...(n.headBehindMaxMs === undefined ? {} : { headBehindMaxMs: n.headBehindMaxMs }),
      ...(n.healthHoldMs === undefined ? {} : { healthHoldMs: n.healthHoldMs }),
      ...(n.logsSafeDepth === undefined ? {} : { logsSafeDepth: n.logsSafeDepth }),
      ...(n.rpcTimeoutMs === undefined ? {} : { rpcTimeoutMs: n.rpcTimeoutMs }),
      ...(n.rpcStalledMs === undefined ? {} : { rpcStalledMs: n.rpcStalledMs }),
      ...(n.blockTimeMs === undefined ? {} : { blockTimeMs: n.blockTimeMs }),
      ...(n.headStaleBlocks === undefined ? {} : { headStaleBlocks: n.headStaleBlocks }),
      ...(n.operatorKeyEnv === undefined ? {} : { operatorKeyEnv: n.operatorKeyEnv }),
      ...(n.leaseSignerKeyEnv === undefined ? {} : { leaseSignerKeyEnv: n.leaseSignerKeyEnv }),
      ...(n.facilitatorKeyEnv === undefined ? {} : { facilitatorKeyEnv: n.facilitatorKeyEnv }),
    })),
  }
}

export function findNetwork(networks: readonly NetworkConfig[], slug: string): NetworkConfig {
  const network = networks.find((n) => n.slug === slug)
  if (network === undefined) throw new UnknownNetworkError(slug)
  return network
}

export function findToken(network: Pick<NetworkConfig, 'slug' | 'tokens'>, symbol: string): TokenConfig {
  const token = network.tokens.find((t) => t.symbol === symbol)
  if (token === undefined) throw new UnknownAssetError(network.slug, symbol)
  return token
}

export class UnknownNetworkError extends Error {
  override readonly name = 'UnknownNetworkError'
  constructor(readonly slug: string) {
    super(`unknown network ${slug}`)
  }
}

export class UnknownAssetError extends Error {
  override readonly name = 'UnknownAssetError'
  constructor(
    readonly network: string,
    readonly symbol: string,
  ) {
    super(`unknown asset ${symbol} on network ${network}`)
  }
}
