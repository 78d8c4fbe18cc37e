// The HTTP-edge settings of the service configuration: their documented defaults, the environment over the file,
// and values refused at start-up instead of misbehaving later.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { getAddress, getContractAddress, toFunctionSelector, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startApp } from '../../src/app/app.ts'
import { ConfigError, loadServiceConfig } from '../../src/app/config.ts'
import { NetworksConfigError, toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { demoAccounts, devnetReclaimDelaySeconds, startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy, type RpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { signedIn, startHarness, tempDataDir } from '../fixtures/service.ts'

t.test('defaults: CORS for any origin, no trusted proxy, idempotency answers kept 24 h', async (t) => {
  const config = loadServiceConfig({})
  t.same(config.corsOrigins, ['*'])
  t.same(config.trustedProxies, [])
  t.equal(config.idempotencyRetentionSeconds, 86_400)
})

t.test('CORS_ORIGINS, TRUSTED_PROXIES and IDEMPOTENCY_RETENTION_SECONDS from the environment', async (t) => {
  const config = loadServiceConfig({ CORS_ORIGINS: 'https://dashboard.example, http://localhost:3000/', TRUSTED_PROXIES: '10.0.0.1,10.0.0.2', IDEMPOTENCY_RETENTION_SECONDS: '3600' })
  t.same(config.corsOrigins, ['https://dashboard.example', 'http://localhost:3000'], 'a trailing slash is dropped')
  t.same(config.trustedProxies, ['10.0.0.1', '10.0.0.2'])
  t.equal(config.idempotencyRetentionSeconds, 3600)
  t.same(loadServiceConfig({ CORS_ORIGINS: '' }).corsOrigins, [], 'empty: no CORS')
})

t.test('values that cannot be right are refused at start-up', async (t) => {
  t.throws(() => loadServiceConfig({ CORS_ORIGINS: 'https://dashboard.example/path' }), ConfigError, 'a URL with a path is not an origin')
  t.throws(() => loadServiceConfig({ CORS_ORIGINS: 'dashboard.example' }), ConfigError, 'an origin has a scheme')
  t.throws(() => loadServiceConfig({ IDEMPOTENCY_RETENTION_SECONDS: '10' }), ConfigError, 'below a minute')
  t.throws(() => loadServiceConfig({ IDEMPOTENCY_RETENTION_SECONDS: '1h' }), ConfigError)
})

t.test('a networks file whose network has no lease signer key is refused at start-up, naming the field', async (t) => {
  const dir = tempDataDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const accounts = demoAccounts()
  const contract = (nonce: bigint) => getContractAddress({ from: accounts.deployer.address, nonce })
  const network: NetworkConfig = {
    slug: 'devnet-a', chainId: 31337, caip2: 'eip155:31337', rpcUrl: 'http://127.0.0.1:9', creditContract: contract(3n),
    identityRegistry: contract(1n), reputationRegistry: contract(2n), multicall3: '0xcA11bde05977b3631167028862bE2a173976CA11',
    tokens: [{ symbol: 'USDC', address: contract(0n), decimals: 6, eip712Name: 'USD Coin', eip712Version: '2' }],
    x402SelfFacilitate: false, confirmations: 1, pollingIntervalMs: 50,
    operatorKeyEnv: undefined, operatorPrivateKey: undefined, leaseSignerKeyEnv: undefined, leaseSignerPrivateKey: undefined,
    facilitatorKeyEnv: undefined, facilitatorPrivateKey: undefined,
  }
  const file = join(dir, 'networks.json')
  writeFileSync(file, JSON.stringify(toNetworksFile([network])))
  const config = loadServiceConfig({ NETWORKS_FILE: file, DATA_DIR: join(dir, 'data') })
  const refused = await startApp(config).then((app) => app.stop().then(() => 'started'), (error: unknown) => error)
  t.type(refused, NetworksConfigError, 'the service does not start')
  t.match((refused as NetworksConfigError).problems, [{ path: '/networks/0/leaseSignerKeyEnv', message: /required/ }])
  t.notOk(existsSync(join(dir, 'data')), 'nothing was written: the refusal comes before the store opens')
})

/**
 * A devnet and a networks file naming, as its credit contract, code without reclaimDelay() (as a deployment of an older
 * release has) unless `current`; its RPC is the devnet's, or what `rpcUrl` puts in front of it (a proxy). `slug`: the
 * network's (the process remembers a contract's reclaimDelay() by slug and address: another slug is read afresh).
 * `contractCap`: the devnet's credit contract's advancesPerJobMax (default the engine's, 500).
 */
async function olderContractFile(
  t: Test,
  rpcUrl?: (devnetRpcUrl: string) => Promise<string>,
  current = false,
  slug = 'devnet-a',
  entry: (network: Record<string, unknown>) => Record<string, unknown> = (network) => network,
  contractCap?: bigint,
): Promise<{ dir: string; file: string }> {
  const dir = tempDataDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const devnet = await startDevnet({ networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }], log: () => {}, ...(contractCap === undefined ? {} : { advancesPerJobMax: contractCap }) })
  t.teardown(() => devnet.stop())
  const accounts = demoAccounts()
  process.env['TEST_OLDER_CONTRACT_SIGNER_KEY'] = accounts.leaseSigner.privateKey
  t.teardown(() => {
    delete process.env['TEST_OLDER_CONTRACT_SIGNER_KEY']
  })
  const network = devnet.networks[0] as NetworkConfig
  // /health holds a state half a second (not the default 1 s): the tests behind a proxy wait for it.
  const older = { ...network, slug, rpcUrl: rpcUrl === undefined ? network.rpcUrl : await rpcUrl(network.rpcUrl), creditContract: current ? network.creditContract : network.tokens[0]?.address as Address, healthHoldMs: 500 }
  const file = join(dir, 'networks.json')
  writeFileSync(file, JSON.stringify({ networks: toNetworksFile([older]).networks.map((n) => entry({ ...n, leaseSignerKeyEnv: 'TEST_OLDER_CONTRACT_SIGNER_KEY' })) }))
  return { dir, file }
}

t.test('a networks file whose credit contract predates reclaimJob is refused at start-up, naming the field', async (t) => {
  const { dir, file } = await olderContractFile(t)
  const config = loadServiceConfig({ NETWORKS_FILE: file, DATA_DIR: join(dir, 'data') })
  const refused = await startApp(config).then((app) => app.stop().then(() => 'started'), (error: unknown) => error)
  t.type(refused, NetworksConfigError, 'the service does not start')
  t.match((refused as NetworksConfigError).problems, [{ path: '/networks/0/creditContract', message: /predates this release/ }])
  t.notOk(existsSync(join(dir, 'data')), 'nothing was written: the refusal comes before the store opens')
})

t.test('a networks file whose credit contract caps a job\'s advances below the service\'s advancesPerJobMax is refused at start-up', async (t) => {
  const { dir, file } = await olderContractFile(t, undefined, true)
  const config = loadServiceConfig({ NETWORKS_FILE: file, DATA_DIR: join(dir, 'data') })
  // The devnet's contract takes 500, the engine's default; a service that would lease 501 on one job is refused.
  const refused = await startApp({ ...config, engine: { ...config.engine, advancesPerJobMax: 501 } }).then((app) => app.stop().then(() => 'started'), (error: unknown) => error)
  t.type(refused, NetworksConfigError, 'the service does not start')
  t.match((refused as NetworksConfigError).problems, [{ path: '/networks/0/creditContract', message: /at most 500 advances that owe per job.*fewer than the service's advancesPerJobMax 501/ }])
  t.notOk(existsSync(join(dir, 'data')), 'nothing was written: the refusal comes before the store opens')
})

/**
 * The service on a devnet (its credit contract older unless `current`) behind an RPC proxy, `before` applied to it
 * first; `entry` edits the network's entry in the networks file.
 */
async function appBehindProxy(t: Test, current: boolean, before: (proxy: RpcProxy) => void, slug?: string, entry?: (network: Record<string, unknown>) => Record<string, unknown>, contractCap?: bigint) {
  let proxy: RpcProxy | undefined
  const { dir, file } = await olderContractFile(t, async (devnetRpcUrl) => {
    proxy = await startRpcProxy(devnetRpcUrl)
    before(proxy)
    return proxy.url
  }, current, slug, entry, contractCap)
  const rpc = proxy as RpcProxy
  t.teardown(() => rpc.close())
  const logged: Record<string, unknown>[] = []
  const app = await startApp(loadServiceConfig({ NETWORKS_FILE: file, DATA_DIR: join(dir, 'data'), PORT: '0' }), { log: (entry) => void logged.push(entry as Record<string, unknown>) })
  t.teardown(() => app.stop())
  return { rpc, app, logged }
}

type FollowerHealth = { state: string; block: string | null; lagBlocks: number | null; error?: string }

/** The first network's follower in /health once `until` holds of it, or its state is `until` (or after 30 s). */
async function followerHealthWhen(url: string, until: string | ((follower: FollowerHealth) => boolean)): Promise<FollowerHealth | undefined> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const health = (await (await fetch(`${url}/health`)).json()) as { networks: { follower: FollowerHealth }[] }
    const follower = health.networks[0]?.follower
    if (follower !== undefined && (typeof until === 'string' ? follower.state === until : until(follower))) return follower
    if (Date.now() > deadline) return follower
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test('/health shows a follower waiting for an RPC node behind its cursor, and its recovery', async (t) => {
  const { rpc, app } = await appBehindProxy(t, true, () => {})
  const applied = await followerHealthWhen(app.url, (follower) => follower.state === 'ok' && follower.block !== null)
  t.match(applied, { state: 'ok' }, 'following')
  const cursor = BigInt(applied?.block ?? '0')
  rpc.setLagging({ head: cursor - 2n, headToo: true })
  const behind = await followerHealthWhen(app.url, 'degraded')
  // Under a head read just before (by the wallet watcher), the cursor's block not found; under its own, the head behind.
  t.match(behind, { state: 'degraded', error: /(head \d+ is behind the follower's cursor \d+|block \d+ read earlier is not found): waiting for the RPC/ }, 'degraded, saying why')
  t.ok((behind?.lagBlocks ?? -1) >= 0, 'the lag stays that of the last head the cursor was found under')
  rpc.reset()
  await followerHealthWhen(app.url, () => rpc.count('eth_getBlockByNumber') >= 10)
  t.match(await followerHealthWhen(app.url, () => true), { state: 'degraded', block: behind?.block }, 'nothing applied over the polls after')
  t.equal(((await (await fetch(`${app.url}/health`)).json()) as { status: string }).status, 'degraded', 'the service says it is degraded')
  rpc.setLagging(undefined)
  t.match(await followerHealthWhen(app.url, 'ok'), { state: 'ok' }, 'resumed')
})

t.test('a credit contract the start-up probe could not reach is probed once the RPC answers, before anything is applied', async (t) => {
  // The RPC down at the start: every call answered 503 until the proxy forwards again.
  const { rpc, app, logged } = await appBehindProxy(t, false, (proxy) => proxy.setMode('down'))
  t.ok(logged.some((entry) => entry['msg'] === 'credit_contract_probe_failed'), 'the start went on, the failed probe logged')
  const followerWhen = (state: string) => followerHealthWhen(app.url, state)
  t.match(await followerWhen('degraded'), { state: 'degraded', block: null }, 'the follower waits for the RPC')

  rpc.setMode('forward')
  t.match(await followerWhen('stopped'), { state: 'stopped', block: null, error: /older_contract.*predates this release/ }, 'refused once the RPC answers, nothing applied')
  t.ok(logged.some((entry) => entry['msg'] === 'chain_follower_stopped' && entry['code'] === 'older_contract'), 'and said in the log')
})

// The role and token checks of the start-up (operator26) were skipped for a network whose RPC did not answer it: its
// follower's later probe checked the contract's version only, and the network was served with a lease signer key that
// is not the contract's (every lease reverting WrongLeaseSigner) or a token of other decimals (every amount misread),
// or on a contract whose cap on a job's advances is below the service's (probe28: leases past it, paid by nobody).
const unprobedMismatches: { what: string; code: string; error: RegExp; entry: (network: Record<string, unknown>) => Record<string, unknown>; contractCap?: bigint }[] = [
  {
    what: 'a lease signer key that is not the contract\'s leaseSigner()',
    code: 'contract_roles_mismatch',
    error: /contract_roles_mismatch.*networks file field leaseSignerKeyEnv: .*the key in TEST_UNPROBED_WRONG_SIGNER_KEY is .* leaseSigner\(\).*WrongLeaseSigner/,
    entry: (network) => ({ ...network, leaseSignerKeyEnv: 'TEST_UNPROBED_WRONG_SIGNER_KEY' }),
  },
  {
    what: 'a token whose decimals are not the configured ones',
    code: 'token_mismatch',
    error: /token_mismatch.*networks file field tokens\/0\/decimals: .* has 6 decimals, configured 18/,
    entry: (network) => ({ ...network, tokens: (network['tokens'] as Record<string, unknown>[]).map((token, j) => (j === 0 ? { ...token, decimals: 18 } : token)) }),
  },
  {
    what: 'a credit contract whose advancesPerJobMax() is below the service\'s',
    code: 'advance_cap_below_service',
    error: /advance_cap_below_service.*networks file field creditContract: .*takes at most 499 advances that owe per job.*fewer than the service's advancesPerJobMax 500/,
    entry: (network) => network,
    contractCap: 499n,
  },
]
for (const { what, code, error, entry, contractCap } of unprobedMismatches) {
  t.test(`${what}, the start-up probe unanswered, stops that network's follower once the RPC answers (${code})`, async (t) => {
    process.env['TEST_UNPROBED_WRONG_SIGNER_KEY'] = generatePrivateKey()
    t.teardown(() => {
      delete process.env['TEST_UNPROBED_WRONG_SIGNER_KEY']
    })
    const { rpc, app, logged } = await appBehindProxy(t, true, (proxy) => proxy.setMode('down'), undefined, entry, contractCap)
    t.ok(logged.some((entry) => entry['msg'] === 'credit_contract_probe_failed'), 'the start went on without the RPC')
    t.match(await followerHealthWhen(app.url, 'degraded'), { state: 'degraded', block: null }, 'the follower waits for the RPC')
    rpc.setMode('forward')
    t.match(await followerHealthWhen(app.url, 'stopped'), { state: 'stopped', block: null, error }, 'stopped once the RPC answers, naming the field, nothing applied')
    t.ok(logged.some((entry) => entry['msg'] === 'chain_follower_stopped' && entry['code'] === code), 'and said in the log')
    const lender = await signedIn(app.url, privateKeyToAccount(generatePrivateKey()))
    const body = { availableLiquidityAtomic: '100000000', asset: 'USDC', networks: ['devnet-a'], minFeeBps: 100, maxDurationSeconds: 86_400, acceptedRiskBands: ['A'] }
    const refused = await lender.post('/lenders/register', body)
    t.equal(refused.status, 503, 'a request on that network is refused')
    t.match(refused.body, { code: 'network_stopped', detail: new RegExp(code) }, 'as stopped, saying why')
  })
}

t.test('a node behind the credit contract\'s deployment block neither refuses the start nor stops the follower: it is probed again', async (t) => {
  // The node has seen the genesis block only: at its head there is no code at the contract, and a call to it answers
  // empty data (which was read as an older contract: the start refused).
  const { rpc, app, logged } = await appBehindProxy(t, true, (proxy) => proxy.setLagging({ head: 0n, headToo: true }))
  t.ok(logged.some((entry) => entry['msg'] === 'credit_contract_not_found'), 'the start went on, the node said in the log')
  const waiting = await followerHealthWhen(app.url, 'degraded')
  t.match(waiting, { state: 'degraded', block: null, error: /no code at the credit contract .* at its head 0/ }, 'the follower waits, saying why')
  rpc.reset()
  await followerHealthWhen(app.url, () => rpc.count('eth_getCode') >= 3)
  t.ok(rpc.count('eth_getCode') >= 3, 'and probes again')
  t.match(await followerHealthWhen(app.url, () => true), { state: 'degraded', block: null }, 'still waiting, not stopped, nothing applied')
  rpc.setLagging(undefined)
  t.match(await followerHealthWhen(app.url, (follower) => follower.state === 'ok' && follower.block !== null), { state: 'ok' }, 'the node caught up: the contract probed current, followed')
  t.notOk(logged.some((entry) => entry['msg'] === 'chain_follower_stopped'), 'never stopped')
})

// The catalog's networks[].reclaimDelaySeconds of a network whose RPC did not answer at the start: null, then the
// contract's reclaimDelay() once the RPC answers, without a restart (before, null until one: review25).
t.test('a reclaimDelay the start could not read is read once the RPC answers, and the catalog shows it without a restart', async (t) => {
  const { rpc, app, logged } = await appBehindProxy(t, true, (proxy) => proxy.setMode('down'), 'devnet-late')
  t.ok(logged.some((entry) => entry['msg'] === 'credit_contract_probe_failed'), 'the start went on without the RPC')
  const delayNow = async (): Promise<number | null | undefined> => {
    const catalog = (await (await fetch(`${app.url}/.well-known/service.json`)).json()) as { networks: { reclaimDelaySeconds: number | null }[] }
    return catalog.networks[0]?.reclaimDelaySeconds
  }
  const reclaimDelayCalls = (): number => rpc.params('eth_call').filter((params) => JSON.stringify(params).includes(toFunctionSelector('reclaimDelay()').slice(2))).length
  t.equal(await delayNow(), null, 'null while the RPC is down')
  const cacheControlOf = async (path: string): Promise<string | null> => (await fetch(`${app.url}${path}`)).headers.get('cache-control')
  // Kept by no cache for the 5 minutes of a complete document: revalidated at each use until the value is read.
  t.equal(await cacheControlOf('/.well-known/service.json'), 'public, no-cache', 'the incomplete catalog is served no-cache')
  t.equal(await cacheControlOf('/llms.txt'), 'public, no-cache', 'and llms.txt')
  for (let ask = 0; ask < 5; ask++) t.equal(await delayNow(), null, 'asked again at once: still null')
  t.ok(reclaimDelayCalls() <= 2, 'and tried once meanwhile (the start-up client retries once): one try per reclaimDelayRetryMs')
  rpc.setMode('forward')
  t.match(await followerHealthWhen(app.url, (follower) => follower.state === 'ok' && follower.block !== null), { state: 'ok' }, 'the RPC answers, the follower follows')
  const deadline = Date.now() + 30_000
  let seen = await delayNow()
  while (seen === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    seen = await delayNow()
  }
  t.equal(seen, Number(devnetReclaimDelaySeconds), 'the contract\'s reclaimDelay() in the catalog, without a restart')
  t.match(await (await fetch(`${app.url}/llms.txt`)).text(), /the catalog's networks\[\]\.reclaimDelaySeconds/, 'llms.txt built again with it')
  t.equal(await cacheControlOf('/.well-known/service.json'), 'public, max-age=300', 'the complete catalog is cached 5 minutes again')
  t.equal(await cacheControlOf('/llms.txt'), 'public, max-age=300', 'and llms.txt')
  t.ok(logged.some((entry) => entry['msg'] === 'reclaim_delay_read' && entry['reclaimDelaySeconds'] === Number(devnetReclaimDelaySeconds)), 'said in the log')
})

/** The configuration loaded from a CONFIG_FILE holding `content(value)`, a file per call in a directory `t` removes. */
function configFiles(t: Test, content: (value: unknown) => object): (value: unknown) => ReturnType<typeof loadServiceConfig> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-credit-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return (value) => {
    const path = join(dir, `config-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(path, JSON.stringify(content(value)))
    return loadServiceConfig({ CONFIG_FILE: path })
  }
}

t.test('suppliers: the single address of before, or addresses per network; one of the two', async (t) => {
  const file = configFiles(t, (suppliers) => ({ suppliers }))
  const a = '0x' + 'ab'.repeat(20)
  const b = '0x' + 'cd'.repeat(20)
  t.same(file([{ domain: 'Shop.Example', name: 'Shop', address: a }]).suppliers, [{ domain: 'shop.example', name: 'Shop', address: getAddress(a) }], 'as before: one address')
  t.same(file([{ domain: 'shop.example', name: 'Shop', addresses: { 'devnet-a': [a, b] } }]).suppliers, [{ domain: 'shop.example', name: 'Shop', addresses: { 'devnet-a': [getAddress(a), getAddress(b)] } }])
  t.throws(() => file([{ domain: 'shop.example', name: 'Shop' }]), ConfigError, 'neither')
  t.throws(() => file([{ domain: 'shop.example', name: 'Shop', address: a, addresses: { 'devnet-a': [a] } }]), ConfigError, 'both')
  t.throws(() => file([{ domain: 'shop.example', name: 'Shop', addresses: { 'devnet-a': [] } }]), ConfigError, 'an empty list')
})

t.test('PASSPORT_ISSUER_KEY: the passport key from the environment; absent, none configured; malformed, refused', async (t) => {
  const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
  t.equal(loadServiceConfig({ PASSPORT_ISSUER_KEY: key }).passportIssuerKey, key)
  t.equal(loadServiceConfig({}).passportIssuerKey, undefined, 'the data directory\'s own key then')
  t.throws(() => loadServiceConfig({ PASSPORT_ISSUER_KEY: '0x1234' }), ConfigError, 'too short')
  t.throws(() => loadServiceConfig({ PASSPORT_ISSUER_KEY: `0x${'0'.repeat(64)}` }), ConfigError, 'zero is no key')
})

t.test('stream: the event stream bounds from CONFIG_FILE reach the service (its catalog shows them); out of range or unknown, refused', async (t) => {
  const file = configFiles(t, (stream) => ({ stream }))
  t.same(loadServiceConfig({}).stream, {}, 'absent: the hub\'s defaults')
  const stream = { connectionsPerWalletMax: 3, connectionsPerClientMax: 7, connectionsMax: 11, queuedEventsMax: 100, retainedEventsMax: 500, retentionMs: 60_000, socketBufferedBytesMax: 65_536, bufferedBytesTotalMax: 1_048_576 }
  t.same(file(stream).stream, stream)
  t.throws(() => file({ connectionsMax: 0 }), ConfigError, 'no streams at all')
  t.throws(() => file({ connectionsPerWalletMax: 1.5 }), ConfigError, 'not an integer')
  t.throws(() => file({ retentionMs: 10 }), ConfigError, 'below a second')
  t.throws(() => file({ connectionsPerWallet: 3 }), ConfigError, 'a misspelt key')
  t.throws(() => file({ bufferedBytesTotalMax: 1000 }), ConfigError, 'a budget below 1 KiB')

  const h = await startHarness({ config: { stream: file({ connectionsPerWalletMax: 3, connectionsPerClientMax: 7, connectionsMax: 11 }).stream } })
  t.teardown(() => h.stop())
  const catalog = (await (await fetch(`${h.url}/.well-known/service.json`)).json()) as { stream: Record<string, unknown> }
  t.match(catalog.stream, { connectionsPerWalletMax: 3, connectionsPerClientMax: 7, connectionsMax: 11, queuedEventsMax: 4096, bufferedBytesTotalMax: 256 * 1024 * 1024 }, 'the configured bounds, the defaults for the rest')
})

// The wallet watcher degraded (its network's balances served as last read) is said in the log as the follower's
// state is, once per change (operator26: /health showed it, the log said only the follower's).
t.test('the wallet watcher degraded and recovered are logged, once each', async (t) => {
  const { rpc, logged } = await appBehindProxy(t, true, () => {}, 'devnet-watcher-log')
  const seen = async (msg: string): Promise<boolean> => {
    const deadline = Date.now() + 30_000
    while (!logged.some((entry) => entry['msg'] === msg) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    return logged.some((entry) => entry['msg'] === msg)
  }
  t.notOk(logged.some((entry) => entry['msg'] === 'wallet_watcher_degraded'), 'nothing said while the RPC answers')
  rpc.setMode('down')
  t.ok(await seen('wallet_watcher_degraded'), 'the RPC down: wallet_watcher_degraded')
  const degraded = logged.find((entry) => entry['msg'] === 'wallet_watcher_degraded') as Record<string, unknown>
  t.match(degraded, { level: 'warn', network: 'devnet-watcher-log' }, 'a warning naming the network')
  rpc.setMode('forward')
  t.ok(await seen('wallet_watcher_recovered'), 'the RPC back: wallet_watcher_recovered')
  t.equal(logged.filter((entry) => entry['msg'] === 'wallet_watcher_degraded').length, 1, 'said once for the whole outage')
})
