// The embedded default: local anvil chains with everything the service needs deployed and demo accounts funded.
// Its result is a list of NetworkConfig, the same type a real network's configuration file yields.
import { pbkdf2Sync } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
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
import { HDKey, hdKeyToAccount, privateKeyToAccount } from 'viem/accounts'
import { AnvilStartError, startAnvil, type AnvilOptions, type AnvilProcess } from './anvil.ts'
import { probeCreditContract } from './reclaim-window.ts'
import {
  identityRegistryAbi,
  loadArtifact,
  multicall3Address,
  reputationRegistryAbi,
  testStablecoinAbi,
  creditFacilityV2Abi,
} from './artifacts.ts'
import { defaultEngineConfig } from '../engine/config.ts'
import { networkChain } from './clients.ts'
import { toNetworksFile, type NetworkConfig } from './config.ts'
import { setAside, stateCandidates, stateFiles, StateSaver, stderrDevnetLog, type DevnetLog, type StateSaverOptions } from './devnet-state.ts'

/** anvil's well-known development mnemonic: its accounts are public, fine for a devnet and nothing else. */
export const devMnemonic = 'test test test test test test test test test test test junk'

/** `scorePayee` receives the devnet's /credit-score payments: it starts with gas and no USDC, so its balance is revenue. */
// leaseSigner last: appending keeps every other role's HD index (and address) as it was.
// facilitator (sends the self-facilitated network's x402 settlements, never the operator) after it, for the same reason.
export const demoRoles = ['deployer', 'operator', 'lender', 'borrower', 'jobClient', 'supplier', 'attester', 'scorePayee', 'leaseSigner', 'facilitator'] as const
export type DemoRole = (typeof demoRoles)[number]
export type DemoAccount = { role: DemoRole; address: Address; privateKey: Hex }
export type DemoAccounts = Record<DemoRole, DemoAccount>

export type DevnetNetworkSpec = { slug: string; chainId: number; x402SelfFacilitate: boolean }

export const defaultDevnetNetworks: DevnetNetworkSpec[] = [
  { slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false },
  { slug: 'devnet-b', chainId: 31338, x402SelfFacilitate: true },
]

export const devnetToken = { symbol: 'USDC', eip712Name: 'USD Coin', eip712Version: '2', decimals: 6 } as const

/**
 * The devnet credit contract's reclaimDelay: a job's client may take its escrow back this long after funding it when none
 * of its advances owes anything (CreditFacilityV2.reclaimJob). It also bounds how far out a job's due time may be (the
 * registration refuses a job reclaimable before its credit ends): ten days leaves room for the week-long jobs of the
 * demo and the examples, and a borrower who never registers its job locks the client's money for that long at most.
 */
export const devnetReclaimDelaySeconds = 10n * 24n * 60n * 60n

/** The devnet credit contract's advancesPerJobMax (paySupplier's cap on a job's advances that owe): the engine's default. */
export const devnetAdvancesPerJobMax = BigInt(defaultEngineConfig.advancesPerJobMax)

export type DevnetOptions = {
  networks?: DevnetNetworkSpec[]
  /** Stablecoin minted to each demo account (atomic units, 6 decimals). Default 1,000,000 USDC. */
  fundTokenAtomic?: bigint
  /** Native balance set on each demo account (wei). Default 10,000 ETH. */
  fundGasWei?: bigint
  blockTimeSeconds?: number
  pollingIntervalMs?: number
  /**
   * The credit contract's advancesPerJobMax (paySupplier's cap on a job's advances that owe). Default: the engine's
   * default (`devnetAdvancesPerJobMax`); a service configured above it refuses to start on that contract.
   */
  advancesPerJobMax?: bigint
  /** Writes the networks file (no secrets) here once everything is deployed. */
  configPath?: string
  /** Keeps each chain's state in `<stateDir>/<slug>.json`, saved after every block with transactions (atomically, the
   * previous good file kept as `<slug>.prev.json`; src/chain/devnet-state.ts): a restart, after a crash too, finds its
   * contracts, balances and escrows again, so that the service's own persisted records still match the chain. */
  stateDir?: string
  /** Where the devnet says what it did with its state files. Default: lines on stderr. */
  log?: DevnetLog
  saver?: StateSaverOptions
}

/** Per network: which state the chain started from, what is saved now, and the chain's head (for reconciliation). */
export type DevnetStateReport = {
  network: string
  loadedFrom: 'current' | 'previous' | 'fresh'
  /** The block of the state file loaded at start (undefined for a fresh chain). */
  loadedBlock: bigint | undefined
  /** The block of the last state saved: what a crash now would come back to. */
  savedBlock: bigint | undefined
  headBlock: bigint
}

export type Devnet = {
  networks: NetworkConfig[]
  accounts: DemoAccounts
  anvils: AnvilProcess[]
  /** With a state directory: per network, where the chain came from and how far its saved state lags (else empty). */
  stateReport(): Promise<DevnetStateReport[]>
  /** Saves each chain's state a last time (with a state directory), then stops the chains. */
  stop(): Promise<void>
}

/**
 * Derived once per process. The seed is BIP-39's PBKDF2 (2,048 rounds of HMAC-SHA512), which viem's mnemonicToAccount
 * computes in JavaScript once per account: a third of a second of CPU per call, paid by every devnet start and every
 * test that starts one; node:crypto computes the same seed natively, once.
 */
let demoAccountList: readonly DemoAccount[] | undefined

export function demoAccounts(): DemoAccounts {
  demoAccountList ??= (() => {
    // BIP-39: PBKDF2-HMAC-SHA512 of the NFKD-normalised mnemonic, salt 'mnemonic' + passphrase (none), 64 bytes.
    const root = HDKey.fromMasterSeed(pbkdf2Sync(devMnemonic.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'))
    return demoRoles.map((role, index) => {
      const hd = hdKeyToAccount(root, { addressIndex: index })
      const key = hd.getHdKey().privateKey
      if (key === null) throw new Error('HD key without private key')
      return { role, address: hd.address, privateKey: toHex(key) }
    })
  })()
  // Fresh objects each call: a caller may change what it got.
  return Object.fromEntries(demoAccountList.map((account) => [account.role, { ...account }])) as DemoAccounts
}

export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const specs = options.networks ?? defaultDevnetNetworks
  const accounts = demoAccounts()
  const log = options.log ?? stderrDevnetLog
  const anvils: AnvilProcess[] = []
  const savers: StateSaver[] = []
  const origins: { loadedFrom: DevnetStateReport['loadedFrom']; loadedBlock: bigint | undefined }[] = []
  const stop = async (): Promise<void> => {
    await Promise.all(savers.map((saver) => saver.stop()))
    await Promise.all(anvils.map((a) => a.stop()))
  }
  if (options.stateDir !== undefined) mkdirSync(options.stateDir, { recursive: true })
  try {
    const started = await Promise.all(specs.map((spec) => startChain(spec, options, log)))
    for (const chain of started) {
      anvils.push(chain.anvil)
      origins.push({ loadedFrom: chain.loadedFrom, loadedBlock: chain.loadedBlock })
    }
    const networks = await Promise.all(
      specs.map(async (spec, index) => {
        const network = await deployDevnetNetwork(spec, anvils[index] as AnvilProcess, accounts, options)
        if (options.stateDir === undefined) return network
        const publicClient = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl, { retryCount: 0 }) })
        const probe = await probeCreditContract(publicClient, network.creditContract)
        // A saved chain's contract was deployed with the advancesPerJobMax of its first start, an immutable: a service
        // started since with a larger one would lease advances its paySupplier refuses (review30: the start-up's and
        // the follower's check, advanceCapMismatches, ran on a networks file only).
        const wantedMax = options.advancesPerJobMax ?? devnetAdvancesPerJobMax
        const capBelow = probe.verdict === 'current' && probe.advancesPerJobMax !== undefined && probe.advancesPerJobMax < wantedMax
        if (probe.verdict === 'current' && !capBelow) return network
        // A chain saved by a release before reclaimJob keeps that release's credit contract at the fixed address: every
        // registration would fail and its jobs would not decode. Its files are set aside, and the chain starts fresh; so
        // is one whose contract takes fewer advances per job than asked.
        log({
          level: 'warn',
          msg: capBelow
            ? 'the saved chain\'s credit contract takes fewer advances per job than advancesPerJobMax: started a fresh chain (records kept of the earlier chain will not match it)'
            : 'the saved chain holds a credit contract older than this release (no reclaimJob): started a fresh chain (records kept of the earlier chain will not match it)',
          network: spec.slug,
          stateDir: options.stateDir,
          ...(capBelow ? { contractAdvancesPerJobMax: String(probe.advancesPerJobMax), advancesPerJobMax: String(wantedMax) } : {}),
        })
        await (anvils[index] as AnvilProcess).stop()
        for (const path of Object.values(stateFiles(options.stateDir, spec.slug))) {
          if (existsSync(path)) setAside(path, capBelow ? `its credit contract takes fewer than ${wantedMax} advances per job` : 'its credit contract is older than this release', log, spec.slug)
        }
        const fresh = await startChain(spec, options, log)
        anvils[index] = fresh.anvil
        origins[index] = { loadedFrom: fresh.loadedFrom, loadedBlock: fresh.loadedBlock }
        return deployDevnetNetwork(spec, fresh.anvil, accounts, options)
      }),
    )
    if (options.stateDir !== undefined) {
      const stateDir = options.stateDir
      for (const [index, spec] of specs.entries()) {
        const saver = new StateSaver(spec.slug, stateDir, (anvils[index] as AnvilProcess).rpcUrl, log, options.saver)
        savers.push(saver)
        await saver.start()
      }
    }
    if (options.configPath !== undefined) {
      writeFileSync(options.configPath, JSON.stringify(toNetworksFile(networks), null, 2) + '\n')
    }
    const stateReport = async (): Promise<DevnetStateReport[]> =>
      Promise.all(
        savers.map(async (saver, index) => {
          const network = networks[index] as NetworkConfig
          const client = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl, { retryCount: 0 }) })
          return {
            network: network.slug,
            ...(origins[index] as (typeof origins)[number]),
            savedBlock: saver.savedBlock,
            headBlock: await client.getBlockNumber({ cacheTime: 0 }),
          }
        }),
      )
    return { networks, accounts, anvils, stop, stateReport }
  } catch (error) {
    await stop()
    throw error
  }
}

/**
 * Starts one chain: from its saved state when there is a usable one (the current file, else the previous), else
 * fresh. A file anvil refuses is moved aside like an unparseable one, so that no state file ever blocks a start.
 */
async function startChain(
  spec: DevnetNetworkSpec,
  options: DevnetOptions,
  log: DevnetLog,
): Promise<{ anvil: AnvilProcess; loadedFrom: DevnetStateReport['loadedFrom']; loadedBlock: bigint | undefined }> {
  const base: AnvilOptions = { chainId: spec.chainId, blockTimeSeconds: options.blockTimeSeconds ?? 1 }
  if (options.stateDir === undefined) return { anvil: await startAnvil(base), loadedFrom: 'fresh', loadedBlock: undefined }
  const { candidates, discarded } = stateCandidates(options.stateDir, spec.slug, log)
  let refused = false
  for (const candidate of candidates) {
    try {
      const anvil = await startAnvil({ ...base, loadStateFile: candidate.path })
      log({
        level: candidate.source === 'current' ? 'info' : 'warn',
        msg: candidate.source === 'current' ? 'chain state loaded' : 'the current state file was unusable: the previous one was loaded',
        network: spec.slug,
        file: candidate.path,
        block: candidate.blockNumber.toString(),
      })
      return { anvil, loadedFrom: candidate.source, loadedBlock: candidate.blockNumber }
    } catch (error) {
      if (!(error instanceof AnvilStartError)) throw error
      refused = true
      setAside(candidate.path, `anvil refused to load it: ${error.message}`, log, spec.slug)
    }
  }
  const anvil = await startAnvil(base)
  if (refused || discarded > 0) {
    log({
      level: 'warn',
      msg: 'no usable chain state: started a fresh chain (records kept of the earlier chain will not match it)',
      network: spec.slug,
      stateDir: options.stateDir,
    })
  } else {
    log({ level: 'info', msg: 'no saved chain state: started a fresh chain', network: spec.slug, stateDir: options.stateDir })
  }
  return { anvil, loadedFrom: 'fresh', loadedBlock: undefined }
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
    // Anvil mines on its interval, with or without transactions: the head moves while the devnet is idle.
    blockTimeMs: (options.blockTimeSeconds ?? 1) * 1000,
    operatorKeyEnv: undefined,
    operatorPrivateKey: accounts.operator.privateKey,
    leaseSignerKeyEnv: undefined,
    leaseSignerPrivateKey: accounts.leaseSigner.privateKey,
    facilitatorKeyEnv: undefined,
    facilitatorPrivateKey: spec.x402SelfFacilitate ? accounts.facilitator.privateKey : undefined,
  }
  const chain = networkChain(network)
  const transport = http(anvil.rpcUrl, { retryCount: 0 })
  const publicClient = createPublicClient({ chain, transport, pollingInterval: pollingIntervalMs })
  const testClient = createTestClient({ chain, transport, mode: 'anvil' })
  const wallet = createWalletClient({ account: deployer, chain, transport, pollingInterval: pollingIntervalMs })

  const codes = await Promise.all(Object.values(addresses).map((address) => publicClient.getCode({ address })))
  const restored = codes.every((code) => code !== undefined && code.length > 2)
  // A chain restored from its state file keeps its deployment, and the block it recorded beside the state then; without
  // that record it follows from 0 (earlier is always safe: nothing is missed, a few empty blocks are read).
  const recorded = options.stateDir === undefined ? undefined : join(options.stateDir, `${spec.slug}.deployment-block`)
  if (restored) {
    const text = recorded !== undefined && existsSync(recorded) ? readFileSync(recorded, 'utf8').trim() : ''
    network.deploymentBlock = /^[0-9]{1,15}$/.test(text) ? BigInt(text) : 0n
  } else {
    network.deploymentBlock = await deployFresh(spec, { publicClient, testClient, wallet, deployer: deployer.address, accounts, addresses, options })
    if (recorded !== undefined) writeFileSync(recorded, `${network.deploymentBlock}\n`)
  }
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
): Promise<bigint> {
  const { publicClient, testClient, wallet, deployer, accounts, addresses, options } = context
  const nonce = await publicClient.getTransactionCount({ address: deployer })
  if (nonce !== 0) throw new Error(`devnet ${spec.slug}: the deployer has nonce ${nonce}, but no contracts at the expected addresses`)
  await testClient.setCode({ address: multicall3Address, bytecode: loadArtifact('Multicall3').deployedBytecode })
  const gasWei = options.fundGasWei ?? 10_000n * 10n ** 18n
  await Promise.all(Object.values(accounts).map((a) => testClient.setBalance({ address: a.address, value: gasWei })))

  const tokenAtomic = options.fundTokenAtomic ?? 1_000_000n * 10n ** BigInt(devnetToken.decimals)
  // The lease signer only signs (no gas, no tokens); the score payee starts empty so that its income is visible; the
  // facilitator needs gas only.
  const funded = demoRoles.filter((role) => role !== 'deployer' && role !== 'scorePayee' && role !== 'leaseSigner' && role !== 'facilitator')
  // Sent one after another, in nonce order: sent at once, they reach anvil in any order, and a transaction that
  // arrives before a lower nonce waits in the pool for it (a devnet start was once seen hanging on such a receipt).
  const sends: Array<() => Promise<Hex>> = [
    () => wallet.deployContract({
      abi: testStablecoinAbi,
      bytecode: loadArtifact('TestStablecoin').bytecode,
      args: [devnetToken.eip712Name, devnetToken.symbol, devnetToken.eip712Version, deployer],
      nonce: 0,
    }),
    () => wallet.deployContract({ abi: identityRegistryAbi, bytecode: loadArtifact('IdentityRegistry').bytecode, args: [], nonce: 1 }),
    () => wallet.deployContract({
      abi: reputationRegistryAbi,
      bytecode: loadArtifact('ReputationRegistry').bytecode,
      args: [addresses.identityRegistry],
      nonce: 2,
    }),
    () => wallet.deployContract({
      abi: creditFacilityV2Abi,
      bytecode: loadArtifact('CreditFacilityV2').bytecode,
      args: [accounts.operator.address, accounts.leaseSigner.address, devnetReclaimDelaySeconds, options.advancesPerJobMax ?? devnetAdvancesPerJobMax],
      nonce: 3,
    }),
    ...funded.map((role, index) => () =>
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
  ]
  const hashes: Hex[] = []
  for (const send of sends) hashes.push(await send())
  const receipts = await Promise.all(hashes.map((hash) => waitSuccess(publicClient, hash)))
  const codes = await Promise.all(Object.values(addresses).map((address) => publicClient.getCode({ address })))
  if (!codes.every((code) => code !== undefined && code.length > 2)) throw new Error(`devnet ${spec.slug}: deployment incomplete`)
  // The credit contract's deployment block (nonce 3): the networks file names it, the follower starts there.
  return (receipts[3] as { blockNumber: bigint }).blockNumber
}

async function waitSuccess(client: PublicClient<Transport, Chain>, hash: Hex) {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success') throw new Error(`devnet transaction ${hash} reverted`)
  return receipt
}

/** Deploys another CreditFacilityV2 with the given roles (tests of the constructor and of a look-alike contract); the devnet's reclaimDelay and advancesPerJobMax unless given. */
export async function deployCreditFacilityV2(
  wallet: WalletClient<Transport, Chain, PrivateKeyAccount>,
  publicClient: PublicClient<Transport, Chain>,
  roles: { operator: Address; leaseSigner: Address; reclaimDelaySeconds?: bigint; advancesPerJobMax?: bigint },
): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: creditFacilityV2Abi,
    bytecode: loadArtifact('CreditFacilityV2').bytecode,
    args: [roles.operator, roles.leaseSigner, roles.reclaimDelaySeconds ?? devnetReclaimDelaySeconds, roles.advancesPerJobMax ?? devnetAdvancesPerJobMax],
  })
  const receipt = await waitSuccess(publicClient, hash)
  if (receipt.contractAddress === null || receipt.contractAddress === undefined) throw new Error(`deployment ${hash} created no contract`)
  return receipt.contractAddress
}
