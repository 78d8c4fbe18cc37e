// Networks configuration file: strict validation with clear errors, operator key from the environment only.
// Also the seams that need no chain: idKey, the unsigned transactions, the contract's README signatures.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { decodeFunctionData, erc20Abi, keccak256, parseAbi, toHex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { loadNetworksConfig, NetworksConfigError, parseNetworksConfig, toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { followerRpcStalledMsDefault, followerRpcTimeoutMsDefault, headBehindMaxMsOf, headStaleMsOf, healthHoldMsOf } from '../../src/chain/follower.ts'
import { idKey } from '../../src/chain/ids.ts'
import { newSessionKey, SESSION_KEY_LIFETIME_MS } from '../../src/service/session-keys.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'

const operatorKey = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'

function entry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    slug: 'base-sepolia',
    chainId: 84532,
    caip2: 'eip155:84532',
    rpcUrl: 'https://sepolia.base.org',
    creditContract: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
    identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
    reputationRegistry: '0x8004B663056A597Dffe9eCcC1965A193B7388713',
    tokens: [
      { symbol: 'USDC', address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', decimals: 6, eip712Name: 'USDC', eip712Version: '2' },
    ],
    x402SelfFacilitate: false,
    confirmations: 2,
    operatorKeyEnv: 'OPERATOR_PRIVATE_KEY',
    ...overrides,
  }
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn()
  } catch (error) {
    if (error instanceof NetworksConfigError) return error.problems.map((p) => `${p.path} ${p.message}`)
    throw error
  }
  return []
}

t.test('a valid file loads, with checksummed addresses, defaults and the key from the environment', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'networks-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'networks.json')
  writeFileSync(path, JSON.stringify({ networks: [entry()] }))
  const [network] = loadNetworksConfig(path, { OPERATOR_PRIVATE_KEY: operatorKey })
  t.strictSame(network, {
    slug: 'base-sepolia',
    chainId: 84532,
    caip2: 'eip155:84532',
    rpcUrl: 'https://sepolia.base.org',
    creditContract: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
    reputationRegistry: '0x8004B663056A597Dffe9eCcC1965A193B7388713',
    multicall3: '0xcA11bde05977b3631167028862bE2a173976CA11',
    tokens: [{ symbol: 'USDC', address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', decimals: 6, eip712Name: 'USDC', eip712Version: '2' }],
    x402SelfFacilitate: false,
    confirmations: 2,
    deploymentBlock: 0n,
    pollingIntervalMs: 1000,
    operatorKeyEnv: 'OPERATOR_PRIVATE_KEY',
    operatorPrivateKey: operatorKey,
    leaseSignerKeyEnv: undefined,
    leaseSignerPrivateKey: undefined,
    facilitatorKeyEnv: undefined,
    facilitatorPrivateKey: undefined,
  } satisfies NetworkConfig)
  const readOnly = parseNetworksConfig({ networks: [entry({ operatorKeyEnv: undefined })] }, {})
  t.equal(readOnly[0]?.operatorPrivateKey, undefined, 'without operatorKeyEnv the network is read-only')
  const deployed = parseNetworksConfig({ networks: [entry({ deploymentBlock: 18_000_000 })] }, { OPERATOR_PRIVATE_KEY: operatorKey })
  t.equal(deployed[0]?.deploymentBlock, 18_000_000n, 'the deployment block, where the follower and reconciliation start')
  t.equal(toNetworksFile(deployed)?.networks[0]?.deploymentBlock, 18_000_000, 'written back as it was read')
  t.equal(headBehindMaxMsOf(network as NetworkConfig), 30_000, 'a chain behind the follower is waited for 30 s by default')
  t.equal(headBehindMaxMsOf({ ...(network as NetworkConfig), pollingIntervalMs: 12_000 }), 120_000, 'or ten polling intervals')
  const patient = parseNetworksConfig({ networks: [entry({ headBehindMaxMs: 90_000 })] }, { OPERATOR_PRIVATE_KEY: operatorKey })
  t.equal(headBehindMaxMsOf(patient[0] as NetworkConfig), 90_000, "the networks file's headBehindMaxMs")
  t.equal(toNetworksFile(patient)?.networks[0]?.headBehindMaxMs, 90_000, 'written back as it was read')
  t.equal(healthHoldMsOf({ ...(network as NetworkConfig), pollingIntervalMs: 100 }), 1_000, '/health holds a state 1 s at least by default')
  t.equal(healthHoldMsOf({ ...(network as NetworkConfig), pollingIntervalMs: 12_000 }), 36_000, 'or three polling intervals')
  const quick = parseNetworksConfig({ networks: [entry({ healthHoldMs: 400 })] }, { OPERATOR_PRIVATE_KEY: operatorKey })
  t.equal(healthHoldMsOf(quick[0] as NetworkConfig), 400, "the networks file's healthHoldMs")
  t.equal(toNetworksFile(quick)?.networks[0]?.healthHoldMs, 400, 'written back as it was read')
  for (const value of [0, 99, 600_001, 1.5]) {
    t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ healthHoldMs: value })] }, { OPERATOR_PRIVATE_KEY: operatorKey })), [/\/networks\/0\/healthHoldMs/], `healthHoldMs ${value} is refused`)
  }
  t.equal(network?.logsSafeDepth, undefined, "without logsSafeDepth, the follower's default")
  const oneNode = parseNetworksConfig({ networks: [entry({ logsSafeDepth: 0 })] }, { OPERATOR_PRIVATE_KEY: operatorKey })
  t.equal(oneNode[0]?.logsSafeDepth, 0, "the networks file's logsSafeDepth (0: an RPC of one node, every block by range)")
  t.equal(toNetworksFile(oneNode)?.networks[0]?.logsSafeDepth, 0, 'written back as it was read')
})

t.test("a stopped chain's bound (headStaleMsOf) and a stalled call's (rpcStalledMs): defaults per network, set in the file", async (t) => {
  const env = { OPERATOR_PRIVATE_KEY: operatorKey }
  const [base] = parseNetworksConfig({ networks: [entry()] }, env) as [NetworkConfig]
  t.equal(headStaleMsOf(base), 10 * 2_000 + 1_000 + 1_000, 'Base Sepolia: ten 2 s blocks, a second of timestamp resolution, a polling interval')
  t.equal(headStaleMsOf({ ...base, chainId: 1 }), 10 * 12_000 + 1_000 + 1_000, 'Ethereum: ten 12 s blocks')
  t.equal(headStaleMsOf({ ...base, chainId: 31_337 }), undefined, 'a chain of unknown block time (an anvil that mines on transactions only): no such rule')
  const [set] = parseNetworksConfig({ networks: [entry({ chainId: 31_337, caip2: 'eip155:31337', blockTimeMs: 1_000, headStaleBlocks: 3, rpcStalledMs: 500 })] }, env) as [NetworkConfig]
  t.equal(headStaleMsOf(set), 3 * 1_000 + 1_000 + 1_000, "the file's blockTimeMs and headStaleBlocks")
  t.match(toNetworksFile([set]).networks[0], { blockTimeMs: 1_000, headStaleBlocks: 3, rpcStalledMs: 500 }, 'written back as they were read')
  t.ok(followerRpcStalledMsDefault < followerRpcTimeoutMsDefault, 'a call counts as stalled well before its deadline')
  for (const [field, values] of [['blockTimeMs', [0, 99, 1.5, 600_001, '1000']], ['headStaleBlocks', [0, 1, 2.5, 10_001]], ['rpcStalledMs', [0, 99, 60_001]]] as const) {
    for (const value of values) {
      t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ [field]: value })] }, env)), [new RegExp(`/networks/0/${field}`)], `${field} ${JSON.stringify(value)} is refused`)
    }
  }
})

t.test('invalid files are refused with every problem named', async (t) => {
  t.match(problemsOf(() => loadNetworksConfig('/nonexistent/networks.json')), [/cannot read file/])
  const dir = mkdtempSync(join(tmpdir(), 'networks-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'broken.json'), '{"networks": [')
  t.match(problemsOf(() => loadNetworksConfig(join(dir, 'broken.json'))), [/not JSON/])

  const env = { OPERATOR_PRIVATE_KEY: operatorKey }
  t.match(problemsOf(() => parseNetworksConfig({}, env)), [/networks/], 'missing networks')
  t.match(problemsOf(() => parseNetworksConfig({ networks: [] }, env)), [/networks/], 'empty list')
  t.match(
    problemsOf(() => parseNetworksConfig({ networks: [entry({ operatorPrivateKey: operatorKey })] }, env)),
    [/\/networks\/0 unknown field\(s\) \["operatorPrivateKey"\].*never belongs in this file/],
    'a private key in the file is refused',
  )
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ creditContract: '0x1234' })] }, env)), [/\/networks\/0\/creditContract/])
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ slug: 'Base Sepolia' })] }, env)), [/\/networks\/0\/slug/])
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ confirmations: 0 })] }, env)), [/\/networks\/0\/confirmations/])
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ rpcUrl: 'ftp://x' })] }, env)), [/\/networks\/0\/rpcUrl/])
  for (const headBehindMaxMs of [0, 999, 1_500.5, 3_600_001]) {
    t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ headBehindMaxMs })] }, env)), [/\/networks\/0\/headBehindMaxMs/], `headBehindMaxMs ${headBehindMaxMs} is refused`)
  }
  for (const logsSafeDepth of [-1, 1.5, 100_001, '64']) {
    t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ logsSafeDepth })] }, env)), [/\/networks\/0\/logsSafeDepth/], `logsSafeDepth ${JSON.stringify(logsSafeDepth)} is refused`)
  }
  for (const deploymentBlock of [-1, 1.5, '100', 2 ** 53, null]) {
    t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ deploymentBlock })] }, env)), [/\/networks\/0\/deploymentBlock/], `deploymentBlock ${JSON.stringify(deploymentBlock)} is refused`)
  }
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ caip2: 'eip155:1' })] }, env)), [/\/networks\/0\/caip2 must be eip155:84532/])
  t.match(
    problemsOf(() => parseNetworksConfig({ networks: [entry(), entry({ chainId: 1, caip2: 'eip155:1' })] }, env)),
    [/\/networks\/1\/slug duplicate slug base-sepolia/],
  )
  t.match(
    problemsOf(() => parseNetworksConfig({ networks: [entry(), entry({ slug: 'other' })] }, env)),
    [/\/networks\/1\/chainId duplicate chainId 84532/],
  )
  const token = (entry().tokens as unknown[])[0]
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry({ tokens: [token, token] })] }, env)), [/duplicate symbol USDC/])
  // A backing source's attested values name no asset: a second unit would read them in it (a 6-decimal valuation as an
  // 18-decimal one's). Same decimals on another network, or another symbol, is one unit.
  const dai = { symbol: 'DAI', address: '0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb', decimals: 18, eip712Name: 'Dai', eip712Version: '1' }
  t.strictSame(
    problemsOf(() => parseNetworksConfig({ networks: [entry({ tokens: [token, dai] })] }, env)),
    ['/networks/0/tokens/1/decimals DAI has 18 decimals and USDC 6: every token must have the same decimals, since a backing source\'s attested values name no asset and back requests in any of them'],
  )
  t.match(
    problemsOf(() => parseNetworksConfig({ networks: [entry(), entry({ slug: 'other', chainId: 1, caip2: 'eip155:1', tokens: [dai] })] }, env)),
    [/\/networks\/1\/tokens\/0\/decimals DAI has 18 decimals/],
    'across networks too',
  )
  t.strictSame(
    problemsOf(() => parseNetworksConfig({ networks: [entry(), entry({ slug: 'other', chainId: 1, caip2: 'eip155:1', tokens: [{ ...dai, symbol: 'USDT', decimals: 6 }] })] }, env)),
    [],
    'tokens of the same decimals load',
  )
  t.match(problemsOf(() => parseNetworksConfig({ networks: [entry()] }, {})), [/OPERATOR_PRIVATE_KEY is not set/], 'key env var missing')
  t.match(
    problemsOf(() => parseNetworksConfig({ networks: [entry()] }, { OPERATOR_PRIVATE_KEY: '0xabc' })),
    [/not a 32-byte 0x-hex private key/],
  )
  const many = problemsOf(() => parseNetworksConfig({ networks: [entry({ chainId: 'x', tokens: [] })] }, env))
  t.ok(many.length >= 2, 'several problems are reported together')
})

t.test('idKey is keccak256 of the UTF-8 bytes of the id', async (t) => {
  t.equal(idKey('job_1'), keccak256(toHex('job_1')))
  t.equal(idKey('job_é'), keccak256(new Uint8Array([...Buffer.from('job_é', 'utf8')])))
  t.not(idKey('off_1'), idKey('off_2'))
})

t.test('the compile step does nothing when the sources are unchanged', async (t) => {
  compileContracts()
  const again = compileContracts()
  t.equal(again.compiled, false, 'skipped: the sources hash is unchanged')
  t.ok(again.milliseconds < 2_000, `fast when nothing changed (${again.milliseconds} ms)`)
})

t.test('the compiled credit contract has exactly the signatures of src/README.md', async (t) => {
  const functions = [
    'function fundJob(bytes32 jobKey, address asset, uint256 amount, address borrower)',
    'function postCollateral(bytes32 jobKey, address asset, uint256 amount)',
    'function paySupplier((bytes32 offerKey, bytes32 jobKey, address payer, address supplier, address asset, uint256 amount, uint256 fee, uint256 reserveShare, uint256 deadline, uint256 dueAt) a, bytes signature)',
    'function repay(bytes32 offerKey, uint256 amount)',
    'function settleJob(bytes32 jobKey, bytes32[] offerKeys)',
    'function failJob(bytes32 jobKey)',
    'function liquidate(bytes32 offerKey, uint256 backingCovered)',
  ]
  const events = [
    'event JobFunded(bytes32 indexed jobKey, address indexed client, address indexed borrower, address asset, uint256 amount)',
    'event CollateralPosted(bytes32 indexed jobKey, address indexed borrower, address asset, uint256 amount)',
    'event SupplierPaid(bytes32 indexed offerKey, address indexed payer, address indexed supplier, bytes32 jobKey, address asset, uint256 amount, uint256 fee, uint256 reserveShare, uint256 dueAt)',
    'event Repaid(bytes32 indexed offerKey, address indexed payer, address indexed lender, uint256 toLender, uint256 toReserve, uint256 lenderOwed, uint256 reserveOwed)',
    'event AdvanceSettled(bytes32 indexed offerKey, bytes32 indexed jobKey, address indexed lender, uint256 toLender, uint256 toReserve)',
    'event JobSettled(bytes32 indexed jobKey, address indexed borrower, uint256 toLenders, uint256 toReserve, uint256 toBorrower)',
    'event JobFailed(bytes32 indexed jobKey, address indexed client, uint256 escrowRefunded)',
    'event JobClosed(bytes32 indexed jobKey, address indexed borrower, uint256 collateralReleased)',
    'event Liquidated(bytes32 indexed offerKey, bytes32 indexed jobKey, address indexed lender, uint256 fromCollateral, uint256 fromBacking, uint256 fromReserve, uint256 shortfall)',
  ]
  const shape = (item: { type: string; name?: string; inputs?: readonly { name?: string; type: string; indexed?: boolean }[] }) =>
    JSON.stringify([item.type, item.name, (item.inputs ?? []).map((i) => [i.name, i.type, i.indexed === true])])
  const compiled = new Set(creditFacilityV2Abi.map((item) => shape(item as never)))
  for (const item of parseAbi([...functions, ...events])) t.ok(compiled.has(shape(item as never)), `${item.type} ${'name' in item ? item.name : ''}`)
})

t.test('session keys and unsigned transactions', async (t) => {
  const network = parseNetworksConfig({ networks: [entry({ operatorKeyEnv: undefined })] }, {})[0] as NetworkConfig
  const lender = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
  const nowMs = 1_800_000_000_000 - SESSION_KEY_LIFETIME_MS
  const first = newSessionKey(lender, [network], { 'base-sepolia': 'USDC' }, 100n, nowMs)
  const second = newSessionKey(lender, [network], { 'base-sepolia': 'USDC' }, 100n, nowMs)
  t.not(first.privateKey, second.privateKey, 'a fresh key each time')
  t.notMatch(JSON.stringify(first.sessionKey, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)), first.privateKey.slice(2), 'the record holds no private key')
  t.strictSame(first.sessionKey.policy, {
    assets: { 'base-sepolia': 'USDC' },
    perPaymentCapAtomic: 100n,
    totalCapAtomic: 100n,
    allowedContracts: { 'base-sepolia': network.creditContract },
    expiresAtMs: 1_800_000_000_000,
  })
  const setup = first.sessionKey.setupTransactions[0]
  t.strictSame(decodeFunctionData({ abi: erc20Abi, data: setup?.data ?? '0x' }), { functionName: 'approve', args: [network.creditContract, 100n] })
  t.equal(setup?.from, first.sessionKey.address)
  t.throws(() => newSessionKey(lender, [network], { 'base-sepolia': 'DAI' }, 100n, nowMs), /unknown asset DAI/)
})
