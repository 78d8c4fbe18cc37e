// `npx tsx src/tools/deploy.ts --rpc-url URL --slug SLUG --operator 0x… --lease-signer 0x… [--reclaim-delay-seconds N]
// [--advances-per-job-max N] [--token 0x… --token-symbol S --token-decimals N --token-eip712-name S
// --token-eip712-version S | --test-token] [--identity-registry 0x… --reputation-registry 0x… | --test-registries]
// [--multicall3 0x… | --test-multicall3] [--confirmations N] [--x402-self-facilitate]`, with the deployer's key in
// DEPLOYER_PRIVATE_KEY: deploys this release's CreditFacilityV2 (constructor operator, leaseSigner, reclaimDelay,
// advancesPerJobMax) on the chain, and, for a test chain only, a test stablecoin, minimal ERC-8004 registries and
// Multicall3; prints the network's entry of a networks file (deploymentBlock the block the credit contract was mined in,
// the key variables OPERATOR_PRIVATE_KEY, LEASE_SIGNER_PRIVATE_KEY and, with --x402-self-facilitate,
// FACILITATOR_PRIVATE_KEY) on stdout as `{"networks": [...]}`. Exit 0 deployed, 2 bad arguments or a failed deployment.
// Run `npm run build:contracts` first (`npm start` does it).
import { parseArgs } from 'node:util'
import { createPublicClient, createWalletClient, defineChain, getAddress, http, isAddress, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import {
  creditFacilityV2Abi,
  identityRegistryAbi,
  loadArtifact,
  multicall3Address,
  reputationRegistryAbi,
  testStablecoinAbi,
} from '../chain/artifacts.ts'
import { devnetToken } from '../chain/devnet.ts'
import { defaultEngineConfig } from '../engine/config.ts'
import { isMainModule } from './main-module.ts'

export class DeployUsageError extends Error {
  override name = 'DeployUsageError'
}

export type DeployOptions = {
  rpcUrl: string
  slug: string
  operator: Address
  leaseSigner: Address
  reclaimDelaySeconds: bigint
  advancesPerJobMax: bigint
  token: { address: Address; symbol: string; decimals: number; eip712Name: string; eip712Version: string } | 'test'
  registries: { identityRegistry: Address; reputationRegistry: Address } | 'test'
  multicall3: Address | 'test'
  confirmations: number
  x402SelfFacilitate: boolean
}

const keyPattern = /^0x[0-9a-fA-F]{64}$/
const wholePattern = /^[1-9][0-9]{0,19}$/

function address(name: string, value: string | undefined): Address {
  if (value === undefined) throw new DeployUsageError(`--${name} is required`)
  if (!isAddress(value, { strict: false })) throw new DeployUsageError(`--${name}: not an address: ${value}`)
  return getAddress(value)
}

function whole(name: string, value: string | undefined, fallback: bigint): bigint {
  if (value === undefined) return fallback
  if (!wholePattern.test(value)) throw new DeployUsageError(`--${name}: not a whole number > 0: ${value}`)
  return BigInt(value)
}

export function parseDeployArgs(args: string[]): DeployOptions {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      'rpc-url': { type: 'string' },
      slug: { type: 'string' },
      operator: { type: 'string' },
      'lease-signer': { type: 'string' },
      'reclaim-delay-seconds': { type: 'string' },
      'advances-per-job-max': { type: 'string' },
      token: { type: 'string' },
      'token-symbol': { type: 'string' },
      'token-decimals': { type: 'string' },
      'token-eip712-name': { type: 'string' },
      'token-eip712-version': { type: 'string' },
      'test-token': { type: 'boolean' },
      'identity-registry': { type: 'string' },
      'reputation-registry': { type: 'string' },
      'test-registries': { type: 'boolean' },
      multicall3: { type: 'string' },
      'test-multicall3': { type: 'boolean' },
      confirmations: { type: 'string' },
      'x402-self-facilitate': { type: 'boolean' },
    },
  })
  const rpcUrl = values['rpc-url']
  if (rpcUrl === undefined || !/^(https?|wss?):\/\//.test(rpcUrl)) throw new DeployUsageError('--rpc-url is required (http(s) or ws(s) URL)')
  const slug = values.slug
  if (slug === undefined || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw new DeployUsageError('--slug is required (lower-case letters, digits, dashes)')
  const operator = address('operator', values.operator)
  const leaseSigner = address('lease-signer', values['lease-signer'])
  if (operator === leaseSigner) throw new DeployUsageError('--operator and --lease-signer must be different addresses (the contract refuses one key in both roles)')
  let token: DeployOptions['token']
  if (values['test-token'] === true) {
    if (values.token !== undefined) throw new DeployUsageError('--token and --test-token exclude each other')
    token = 'test'
  } else {
    const decimals = values['token-decimals']
    if (decimals === undefined || !/^[0-9]{1,2}$/.test(decimals)) throw new DeployUsageError('--token-decimals is required with --token (0 .. 36)')
    const symbol = values['token-symbol']
    const eip712Name = values['token-eip712-name']
    const eip712Version = values['token-eip712-version']
    if (symbol === undefined || eip712Name === undefined || eip712Version === undefined) {
      throw new DeployUsageError('--token needs --token-symbol, --token-eip712-name and --token-eip712-version (the token\'s EIP-712 domain), or use --test-token on a test chain')
    }
    token = { address: address('token', values.token), symbol, decimals: Number(decimals), eip712Name, eip712Version }
  }
  let registries: DeployOptions['registries']
  if (values['test-registries'] === true) {
    if (values['identity-registry'] !== undefined || values['reputation-registry'] !== undefined) throw new DeployUsageError('--identity-registry/--reputation-registry and --test-registries exclude each other')
    registries = 'test'
  } else {
    registries = { identityRegistry: address('identity-registry', values['identity-registry']), reputationRegistry: address('reputation-registry', values['reputation-registry']) }
  }
  let multicall3: DeployOptions['multicall3'] = multicall3Address
  if (values['test-multicall3'] === true) {
    if (values.multicall3 !== undefined) throw new DeployUsageError('--multicall3 and --test-multicall3 exclude each other')
    multicall3 = 'test'
  } else if (values.multicall3 !== undefined) multicall3 = address('multicall3', values.multicall3)
  return {
    rpcUrl,
    slug,
    operator,
    leaseSigner,
    reclaimDelaySeconds: whole('reclaim-delay-seconds', values['reclaim-delay-seconds'], 10n * 24n * 60n * 60n),
    advancesPerJobMax: whole('advances-per-job-max', values['advances-per-job-max'], BigInt(defaultEngineConfig.advancesPerJobMax)),
    token,
    registries,
    multicall3,
    confirmations: Number(whole('confirmations', values.confirmations, 2n)),
    x402SelfFacilitate: values['x402-self-facilitate'] === true,
  }
}

export async function deploy(options: DeployOptions, deployerKey: Hex, log: (line: string) => void): Promise<{ networks: unknown[] }> {
  const account = privateKeyToAccount(deployerKey)
  const transport = http(options.rpcUrl)
  const probe = createPublicClient({ transport })
  const chainId = await probe.getChainId()
  const chain = defineChain({ id: chainId, name: options.slug, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [options.rpcUrl] } } })
  const publicClient = createPublicClient({ chain, transport })
  const wallet = createWalletClient({ account, chain, transport })
  const mined = async (what: string, hash: Hex): Promise<{ address: Address; block: bigint }> => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 250, timeout: 120_000 })
    if (receipt.status !== 'success' || receipt.contractAddress === null || receipt.contractAddress === undefined) throw new Error(`${what}: deployment ${hash} reverted`)
    log(`${what}: ${receipt.contractAddress} (block ${receipt.blockNumber}, tx ${hash})`)
    return { address: getAddress(receipt.contractAddress), block: receipt.blockNumber }
  }
  // One at a time: each waits for the previous one's receipt, so the nonces never race.
  let token: Exclude<DeployOptions['token'], 'test'>
  if (options.token === 'test') {
    const t = devnetToken
    const hash = await wallet.deployContract({ abi: testStablecoinAbi, bytecode: loadArtifact('TestStablecoin').bytecode, args: [t.eip712Name, t.symbol, t.eip712Version, account.address] })
    token = { ...t, address: (await mined('TestStablecoin (minter: the deployer)', hash)).address }
  } else {
    token = options.token
  }
  let registries: Exclude<DeployOptions['registries'], 'test'>
  if (options.registries === 'test') {
    const identity = await mined('IdentityRegistry', await wallet.deployContract({ abi: identityRegistryAbi, bytecode: loadArtifact('IdentityRegistry').bytecode, args: [] }))
    const reputation = await mined('ReputationRegistry', await wallet.deployContract({ abi: reputationRegistryAbi, bytecode: loadArtifact('ReputationRegistry').bytecode, args: [identity.address] }))
    registries = { identityRegistry: identity.address, reputationRegistry: reputation.address }
  } else {
    registries = options.registries
  }
  let multicall3: Address
  if (options.multicall3 === 'test') {
    const artifact = loadArtifact('Multicall3')
    multicall3 = (await mined('Multicall3', await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: [] }))).address
  } else {
    multicall3 = options.multicall3
    const code = await publicClient.getCode({ address: multicall3 })
    if (code === undefined || code.length <= 2) throw new Error(`no Multicall3 at ${multicall3} on chain ${chainId}: pass --multicall3 with its address, or --test-multicall3 on a test chain`)
  }
  const credit = await mined(
    'CreditFacilityV2',
    await wallet.deployContract({
      abi: creditFacilityV2Abi,
      bytecode: loadArtifact('CreditFacilityV2').bytecode,
      args: [options.operator, options.leaseSigner, options.reclaimDelaySeconds, options.advancesPerJobMax],
    }),
  )
  const entry: Record<string, unknown> = {
    slug: options.slug,
    chainId,
    caip2: `eip155:${chainId}`,
    rpcUrl: options.rpcUrl,
    creditContract: credit.address,
    identityRegistry: registries.identityRegistry,
    reputationRegistry: registries.reputationRegistry,
    ...(multicall3 === multicall3Address ? {} : { multicall3 }),
    tokens: [{ symbol: token.symbol, address: token.address, decimals: token.decimals, eip712Name: token.eip712Name, eip712Version: token.eip712Version }],
    x402SelfFacilitate: options.x402SelfFacilitate,
    confirmations: options.confirmations,
    deploymentBlock: Number(credit.block),
    operatorKeyEnv: 'OPERATOR_PRIVATE_KEY',
    leaseSignerKeyEnv: 'LEASE_SIGNER_PRIVATE_KEY',
    ...(options.x402SelfFacilitate ? { facilitatorKeyEnv: 'FACILITATOR_PRIVATE_KEY' } : {}),
  }
  return { networks: [entry] }
}

async function main(): Promise<number> {
  let options: DeployOptions
  const key = process.env.DEPLOYER_PRIVATE_KEY
  try {
    options = parseDeployArgs(process.argv.slice(2))
    if (key === undefined || !keyPattern.test(key)) throw new DeployUsageError('DEPLOYER_PRIVATE_KEY must hold the deployer\'s 0x-hex private key (it pays the gas)')
  } catch (error) {
    process.stderr.write(`deploy: ${error instanceof Error ? error.message : String(error)}\n`)
    return 2
  }
  try {
    const file = await deploy(options, key as Hex, (line) => process.stderr.write(`${line}\n`))
    process.stdout.write(`${JSON.stringify(file, null, 2)}\n`)
    return 0
  } catch (error) {
    process.stderr.write(`deploy: failed: ${error instanceof Error ? error.message : String(error)}\n`)
    return 2
  }
}

if (isMainModule(import.meta.url)) process.exitCode = await main()
