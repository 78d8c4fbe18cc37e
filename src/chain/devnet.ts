// The embedded default: local anvil chains with everything the service needs deployed and demo accounts funded.
// Its result is a list of NetworkConfig, the same type a real network's configuration file yields.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getContractAddress,
  http,
  toHex,
  type Address,
  type Chain,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
  type TestClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { startAnvil, type AnvilProcess } from './anvil.ts'
import {
  identityRegistryAbi,
  loadArtifact,
  multicall3Address,
  reputationRegistryAbi,
  testStablecoinAbi,
  creditFacilityAbi,
} from './artifacts.ts'
import { networkChain } from './clients.ts'
import { toNetworksFile, type NetworkConfig } from './config.ts'

/** anvil's well-known development mnemonic: its accounts are public, fine for a devnet and nothing else. */
export const devMnemonic = 'test test test test test test test test test test test junk'

/** `scorePayee` receives the devnet's /credit-score payments: it starts with gas and no USDC, so its balance is revenue. */
export const demoRoles = ['deployer', 'operator', 'lender', 'borrower', 'jobClient', 'supplier', 'attester', 'scorePayee'] as const
export type DemoRole = (typeof demoRoles)[number]
export type DemoAccount = { role: DemoRole; address: Address; privateKey: Hex }
export type DemoAccounts = Record<DemoRole, DemoAccount>

export type DevnetNetworkSpec = { slug: string; chainId: number; x402SelfFacilitate: boolean }

export const defaultDevnetNetworks: DevnetNetworkSpec[] = [
  { slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false },
  { slug: 'devnet-b', chainId: 31338, x402SelfFacilitate: true },
]

export const devnetToken = { symbol: 'USDC', eip712Name: 'USD Coin', eip712Version: '2', decimals: 6 } as const

export type DevnetOptions = {
  networks?: DevnetNetworkSpec[]
  /** Stablecoin minted to each demo account (atomic units, 6 decimals). Default 1,000,000 USDC. */
  fundTokenAtomic?: bigint
  /** Native balance set on each demo account (wei). Default 10,000 ETH. */
  fundGasWei?: bigint
  blockTimeSeconds?: number
  pollingIntervalMs?: number
  /** Writes the networks file (no secrets) here once everything is deployed. */
  configPath?: string
  /** Keeps each chain's state in `<stateDir>/<slug>.json` (anvil --state): a restart finds its contracts, balances
   * and escrows again instead of a fresh chain, so that the service's own persisted records still match the chain. */
  stateDir?: string
}

export type Devnet = {
  networks: NetworkConfig[]
  accounts: DemoAccounts
  anvils: AnvilProcess[]
  stop(): Promise<void>
}

export function demoAccounts(): DemoAccounts {
  const entries = demoRoles.map((role, index) => {
    const hd = mnemonicToAccount(devMnemonic, { addressIndex: index })
    const key = hd.getHdKey().privateKey
    if (key === null) throw new Error('HD key without private key')
    return [role, { role, address: hd.address, privateKey: toHex(key) }] as const
  })
  return Object.fromEntries(entries) as DemoAccounts
}

export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const specs = options.networks ?? defaultDevnetNetworks
  const accounts = demoAccounts()
  const anvils: AnvilProcess[] = []
  const stop = async (): Promise<void> => {
    await Promise.all(anvils.map((a) => a.stop()))
  }
  if (options.stateDir !== undefined) mkdirSync(options.stateDir, { recursive: true })
  try {
    const started = await Promise.all(
      specs.map((spec) =>
        startAnvil({
          chainId: spec.chainId,
          blockTimeSeconds: options.blockTimeSeconds ?? 1,
          ...(options.stateDir === undefined ? {} : { stateFile: join(options.stateDir, `${spec.slug}.json`) }),
        }),
      ),
    )
    anvils.push(...started)
    const networks = await Promise.all(
      specs.map((spec, index) => deployDevnetNetwork(spec, started[index] as AnvilProcess, accounts, options)),
    )
    if (options.configPath !== undefined) {
      writeFileSync(options.configPath, JSON.stringify(toNetworksFile(networks), null, 2) + '\n')
    }
    return { networks, accounts, anvils, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

async function deployDevnetNetwork(
  spec: DevnetNetworkSpec,
  anvil: AnvilProcess,
  accounts: DemoAccounts,
  options: DevnetOptions,
): Promise<NetworkConfig> {
  const pollingIntervalMs = options.pollingIntervalMs ?? 50
  const deployer = privateKeyToAccount(accounts.deployer.privateKey)
  // Fixed nonces make the addresses a function of the deployer alone, so a chain restored from its state file is
  // recognised (code at every expected address) and reused as it is.
  const addresses = {
    token: getContractAddress({ from: deployer.address, nonce: 0n }),
    identityRegistry: getContractAddress({ from: deployer.address, nonce: 1n }),
    reputationRegistry: getContractAddress({ from: deployer.address, nonce: 2n }),
    creditContract: getContractAddress({ from: deployer.address, nonce: 3n }),
  }
  const network: NetworkConfig = {
    slug: spec.slug,
    chainId: spec.chainId,
    caip2: `eip155:${spec.chainId}`,
    rpcUrl: anvil.rpcUrl,
    creditContract: addresses.creditContract,
    identityRegistry: addresses.identityRegistry,
    reputationRegistry: addresses.reputationRegistry,
    multicall3: multicall3Address,
    tokens: [{ ...devnetToken, address: addresses.token }],
    x402SelfFacilitate: spec.x402SelfFacilitate,
    confirmations: 1,
    pollingIntervalMs,
    operatorKeyEnv: undefined,
    operatorPrivateKey: accounts.operator.privateKey,
  }
  const chain = networkChain(network)
  const transport = http(anvil.rpcUrl, { retryCount: 0 })
  const publicClient = createPublicClient({ chain, transport, pollingInterval: pollingIntervalMs })
  const testClient = createTestClient({ chain, transport, mode: 'anvil' })
  const wallet = createWalletClient({ account: deployer, chain, transport, pollingInterval: pollingIntervalMs })

  const codes = await Promise.all(Object.values(addresses).map((address) => publicClient.getCode({ address })))
  const restored = codes.every((code) => code !== undefined && code.length > 2)
  if (!restored) await deployFresh(spec, { publicClient, testClient, wallet, deployer: deployer.address, accounts, addresses, options })
  return network
}

async function deployFresh(
  spec: DevnetNetworkSpec,
  context: {
    publicClient: PublicClient<Transport, Chain>
    testClient: TestClient<'anvil', Transport, Chain>
    wallet: WalletClient<Transport, Chain, PrivateKeyAccount>
    deployer: Address
    accounts: DemoAccounts
    addresses: { token: Address; identityRegistry: Address; reputationRegistry: Address; creditContract: Address }
    options: DevnetOptions
  },
): Promise<void> {
  const { publicClient, testClient, wallet, deployer, accounts, addresses, options } = context
  const nonce = await publicClient.getTransactionCount({ address: deployer })
  if (nonce !== 0) throw new Error(`devnet ${spec.slug}: the deployer has nonce ${nonce}, but no contracts at the expected addresses`)
  await testClient.setCode({ address: multicall3Address, bytecode: loadArtifact('Multicall3').deployedBytecode })
  const gasWei = options.fundGasWei ?? 10_000n * 10n ** 18n
  await Promise.all(Object.values(accounts).map((a) => testClient.setBalance({ address: a.address, value: gasWei })))

  const tokenAtomic = options.fundTokenAtomic ?? 1_000_000n * 10n ** BigInt(devnetToken.decimals)
  const funded = demoRoles.filter((role) => role !== 'deployer' && role !== 'scorePayee')
  const hashes = await Promise.all([
    wallet.deployContract({
      abi: testStablecoinAbi,
      bytecode: loadArtifact('TestStablecoin').bytecode,
      args: [devnetToken.eip712Name, devnetToken.symbol, devnetToken.eip712Version, deployer],
      nonce: 0,
    }),
    wallet.deployContract({ abi: identityRegistryAbi, bytecode: loadArtifact('IdentityRegistry').bytecode, args: [], nonce: 1 }),
    wallet.deployContract({
      abi: reputationRegistryAbi,
      bytecode: loadArtifact('ReputationRegistry').bytecode,
      args: [addresses.identityRegistry],
      nonce: 2,
    }),
    wallet.deployContract({
      abi: creditFacilityAbi,
      bytecode: loadArtifact('CreditFacility').bytecode,
      args: [accounts.operator.address],
      nonce: 3,
    }),
    ...funded.map((role, index) =>
      wallet.writeContract({
        address: addresses.token,
        abi: testStablecoinAbi,
        functionName: 'mint',
        args: [accounts[role].address, tokenAtomic],
        nonce: 4 + index,
        // Fixed gas: estimating would run before the token exists.
        gas: 100_000n,
      }),
    ),
  ])
  await Promise.all(hashes.map((hash) => waitSuccess(publicClient, hash)))
  const codes = await Promise.all(Object.values(addresses).map((address) => publicClient.getCode({ address })))
  if (!codes.every((code) => code !== undefined && code.length > 2)) throw new Error(`devnet ${spec.slug}: deployment incomplete`)
}

async function waitSuccess(client: PublicClient<Transport, Chain>, hash: Hex) {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success') throw new Error(`devnet transaction ${hash} reverted`)
  return receipt
}
