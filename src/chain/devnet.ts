// The embedded default: local anvil chains with everything the service needs deployed and demo accounts funded.
// Its result is a list of NetworkConfig, the same type a real network's configuration file yields.
import { writeFileSync } from 'node:fs'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  nonceManager,
  toHex,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
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

export const demoRoles = ['deployer', 'operator', 'lender', 'borrower', 'jobClient', 'supplier', 'attester'] as const
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
  try {
    const started = await Promise.all(
      specs.map((spec) => startAnvil({ chainId: spec.chainId, blockTimeSeconds: options.blockTimeSeconds ?? 1 })),
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
  const provisional: NetworkConfig = {
    slug: spec.slug,
    chainId: spec.chainId,
    caip2: `eip155:${spec.chainId}`,
    rpcUrl: anvil.rpcUrl,
    creditContract: multicall3Address,
    identityRegistry: multicall3Address,
    reputationRegistry: multicall3Address,
    multicall3: multicall3Address,
    tokens: [],
    x402SelfFacilitate: spec.x402SelfFacilitate,
    confirmations: 1,
    pollingIntervalMs,
    operatorKeyEnv: undefined,
    operatorPrivateKey: accounts.operator.privateKey,
  }
  const chain = networkChain(provisional)
  const transport = http(anvil.rpcUrl, { retryCount: 0 })
  const publicClient = createPublicClient({ chain, transport, pollingInterval: pollingIntervalMs })
  const testClient = createTestClient({ chain, transport, mode: 'anvil' })
  const deployer = privateKeyToAccount(accounts.deployer.privateKey, { nonceManager })
  const wallet = createWalletClient({ account: deployer, chain, transport, pollingInterval: pollingIntervalMs })

  await testClient.setCode({ address: multicall3Address, bytecode: loadArtifact('Multicall3').deployedBytecode })
  const gasWei = options.fundGasWei ?? 10_000n * 10n ** 18n
  await Promise.all(Object.values(accounts).map((a) => testClient.setBalance({ address: a.address, value: gasWei })))

  const deployments = await Promise.all([
    wallet.deployContract({
      abi: testStablecoinAbi,
      bytecode: loadArtifact('TestStablecoin').bytecode,
      args: [devnetToken.eip712Name, devnetToken.symbol, devnetToken.eip712Version, deployer.address],
    }),
    wallet.deployContract({ abi: identityRegistryAbi, bytecode: loadArtifact('IdentityRegistry').bytecode, args: [] }),
  ])
  const [tokenAddress, identityRegistry] = await Promise.all(deployments.map((hash) => deployedAddress(publicClient, hash)))
  const secondWave = await Promise.all([
    wallet.deployContract({
      abi: reputationRegistryAbi,
      bytecode: loadArtifact('ReputationRegistry').bytecode,
      args: [identityRegistry as Address],
    }),
    wallet.deployContract({
      abi: creditFacilityAbi,
      bytecode: loadArtifact('CreditFacility').bytecode,
      args: [accounts.operator.address],
    }),
  ])
  const [reputationRegistry, creditContract] = await Promise.all(secondWave.map((hash) => deployedAddress(publicClient, hash)))

  const tokenAtomic = options.fundTokenAtomic ?? 1_000_000n * 10n ** BigInt(devnetToken.decimals)
  const mints = await Promise.all(
    demoRoles
      .filter((role) => role !== 'deployer')
      .map((role) =>
        wallet.writeContract({
          address: tokenAddress as Address,
          abi: testStablecoinAbi,
          functionName: 'mint',
          args: [accounts[role].address, tokenAtomic],
        }),
      ),
  )
  await Promise.all(mints.map((hash) => waitSuccess(publicClient, hash)))

  return {
    ...provisional,
    creditContract: getAddress(creditContract as Address),
    identityRegistry: getAddress(identityRegistry as Address),
    reputationRegistry: getAddress(reputationRegistry as Address),
    tokens: [{ ...devnetToken, address: getAddress(tokenAddress as Address) }],
  }
}

async function waitSuccess(client: PublicClient<Transport, Chain>, hash: Hex) {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success') throw new Error(`devnet transaction ${hash} reverted`)
  return receipt
}

async function deployedAddress(client: PublicClient<Transport, Chain>, hash: Hex): Promise<Address> {
  const receipt = await waitSuccess(client, hash)
  if (receipt.contractAddress === null || receipt.contractAddress === undefined) {
    throw new Error(`deployment ${hash} created no contract`)
  }
  return receipt.contractAddress
}
