// Which reclaim rule a network's credit contract has (review34's open point): this release's CreditFacilityV2 takes
// reclaimJob from the job's borrower too and says so (BORROWER_MAY_RECLAIM() true); one deployed before 2026-11-28 has
// no such function and takes the client's only. The service reads it at the start with reclaimDelay() (both or
// neither), publishes it per network in the catalog (networks[].borrowerMayReclaim, null while not read) and warns once
// for an older deployment (credit_contract_client_only_reclaim). An RPC's own failure is not read as the older rule.
// Against a real deployment of the older rule's contract on anvil (fixtures/client-only-reclaim.ts).
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createPublicClient, createTestClient, createWalletClient, custom, erc20Abi, getAddress, http, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { startApp, type App } from '../../src/app/app.ts'
import { loadServiceConfig } from '../../src/app/config.ts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet, type Devnet } from '../../src/chain/devnet.ts'
import { legacyJobKey as jobKeyOf } from '../../src/chain/ids.ts'
import { ContractRevertError, toContractRevert } from '../../src/chain/operator.ts'
import { readBorrowerMayReclaim } from '../../src/chain/reclaim-window.ts'
import { tempDataDir } from '../fixtures/service.ts'
import { deployClientOnlyReclaim } from './fixtures/client-only-reclaim.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

const reclaimDelaySeconds = 1_000n
let devnet: Devnet
let network: NetworkConfig
let older: Address

t.before(async () => {
  devnet = await startDevnet({ networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }], log: () => {} })
  network = devnet.networks[0] as NetworkConfig
  const chain = networkChain(network)
  const transport = http(network.rpcUrl)
  const deployer = createWalletClient({ account: privateKeyToAccount(devnet.accounts.deployer.privateKey), chain, transport })
  older = await deployClientOnlyReclaim(deployer, createPublicClient({ chain, transport }), {
    operator: devnet.accounts.operator.address, leaseSigner: devnet.accounts.leaseSigner.address, reclaimDelaySeconds,
  })
})
t.teardown(() => devnet?.stop())

t.test('the older deployment: no BORROWER_MAY_RECLAIM(), a borrower\'s reclaimJob reverts NotClient; this release\'s: true', async (t) => {
  const chain = networkChain(network)
  const transport = http(network.rpcUrl)
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 })
  t.equal(await readBorrowerMayReclaim(publicClient, older), false, 'the older contract: its call reverts without data, read as the older rule')
  t.equal(await readBorrowerMayReclaim(publicClient, network.creditContract), true, 'this release\'s contract')

  // The rule itself, on the older deployment: a job funded there, past its reclaim time, its borrower refused.
  const testClient = createTestClient({ chain, transport, mode: 'anvil' })
  await testClient.setIntervalMining({ interval: 0 })
  await testClient.setAutomine(true)
  const wallet = (role: 'jobClient' | 'borrower') => createWalletClient({ account: privateKeyToAccount(devnet.accounts[role].privateKey), chain, transport })
  const client = wallet('jobClient')
  const borrower = wallet('borrower')
  const token = network.tokens[0]?.address as Address
  const deployer = createWalletClient({ account: privateKeyToAccount(devnet.accounts.deployer.privateKey), chain, transport })
  const mined = async (hash: Hex) => t.equal((await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success')
  await mined(await deployer.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'mint', args: [client.account.address, 100n] }))
  await mined(await client.writeContract({ address: token, abi: erc20Abi, functionName: 'approve', args: [older, 100n] }))
  const jobKey = jobKeyOf('job_client_only_reclaim')
  await mined(await client.writeContract({ address: older, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [jobKey, token, 100n, borrower.account.address] }))
  await testClient.increaseTime({ seconds: Number(reclaimDelaySeconds) })
  await testClient.mine({ blocks: 1 })
  const reclaimBy = async (who: typeof client) =>
    publicClient.simulateContract({ account: who.account, address: older, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey] }).then(() => 'taken', (error: unknown) => {
      const revert = toContractRevert(network.slug, error)
      return revert instanceof ContractRevertError ? revert.errorName : String(error)
    })
  t.equal(await reclaimBy(borrower), 'NotClient', 'the borrower\'s reclaim reverts there')
  t.equal(await reclaimBy(client), 'taken', 'the client\'s is taken')
})

t.test('BORROWER_MAY_RECLAIM() met by an RPC\'s own error is thrown, never read as the older rule', async (t) => {
  const failing = (error: { code: number; message: string }) =>
    createPublicClient({ transport: custom({ async request() { throw Object.assign(new Error(error.message), { code: error.code }) } }, { retryCount: 0 }) })
  const readWith = (error: { code: number; message: string }) => readBorrowerMayReclaim(failing(error), older).then(String, () => 'thrown')
  t.equal(await readWith({ code: -32603, message: 'Internal error' }), 'thrown', 'a provider\'s internal error: an outage, not an older contract')
  t.equal(await readWith({ code: -32005, message: 'limit exceeded' }), 'thrown', 'a rate limit')
  t.equal(await readWith({ code: -32000, message: 'execution reverted' }), 'false', 'a node\'s revert without data: the older contract')
})

type Logged = Record<string, unknown>

/** The service on a networks file naming `creditContract` on the devnet, its RPC at `rpcUrl`; its log lines. */
async function serviceOn(t: Test, creditContract: Address, rpcUrl = network.rpcUrl): Promise<{ app: App; logged: Logged[] }> {
  const dir = tempDataDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  process.env['TEST_RECLAIM_RULE_SIGNER_KEY'] = devnet.accounts.leaseSigner.privateKey
  t.teardown(() => {
    delete process.env['TEST_RECLAIM_RULE_SIGNER_KEY']
  })
  const file = join(dir, 'networks.json')
  const entry = { ...network, rpcUrl, creditContract, healthHoldMs: 500 }
  writeFileSync(file, JSON.stringify({ networks: toNetworksFile([entry]).networks.map((n) => ({ ...n, leaseSignerKeyEnv: 'TEST_RECLAIM_RULE_SIGNER_KEY' })) }))
  const logged: Logged[] = []
  const app = await startApp(loadServiceConfig({ NETWORKS_FILE: file, DATA_DIR: join(dir, 'data'), PORT: '0' }), { log: (entry) => logged.push(entry as Logged) })
  t.teardown(() => app.stop())
  return { app, logged }
}

async function borrowerMayReclaimIn(app: App): Promise<boolean | null | undefined> {
  const catalog = (await (await fetch(`${app.url}/.well-known/service.json`)).json()) as { networks: { borrowerMayReclaim?: boolean | null }[] }
  return catalog.networks[0]?.borrowerMayReclaim
}

const warnings = (logged: Logged[]) => logged.filter((entry) => entry['msg'] === 'credit_contract_client_only_reclaim')

t.test('the catalog says which rule each network has; an older deployment is said once in the log', async (t) => {
  const onOlder = await serviceOn(t, older)
  t.equal(await borrowerMayReclaimIn(onOlder.app), false, 'the older deployment: false')
  t.match(warnings(onOlder.logged), [{ level: 'warn', network: 'devnet-a', creditContract: getAddress(older), error: /before 2026-11-28.*client only/ }], 'one warning, naming the contract')
  await borrowerMayReclaimIn(onOlder.app)
  t.equal(warnings(onOlder.logged).length, 1, 'once')

  const onCurrent = await serviceOn(t, network.creditContract)
  t.equal(await borrowerMayReclaimIn(onCurrent.app), true, 'this release\'s: true')
  t.equal(warnings(onCurrent.logged).length, 0, 'no warning')

  // No route serves a reclaim (review37): llms.txt tells a client and a borrower how to send it themselves, and when.
  const llms = await (await fetch(`${onCurrent.app.url}/llms.txt`)).text()
  t.match(llms, /Reclaim: from getJob\(jobKey\)\.fundedAt \+ reclaimDelay\(\) on/, 'from when')
  t.match(llms, /getJob\(jobKey\)\.outstanding 0/, 'on a job none of whose advances owes')
  t.match(llms, /jobKey: contracts\.keys/, 'where the key comes from')
  t.match(llms, /sends reclaimJob\(jobKey\) to the credit contract itself/, 'sent by the caller itself')
  t.match(llms, /the borrower, for its\s+collateral, where the catalog's networks\[\]\.borrowerMayReclaim is true/, 'the borrower, by the catalog\'s field')
  t.notMatch(llms, /every on-chain step is served/, 'not "every step is served"')
})

t.test('an RPC down at the start: null (not false), no warning; read and said once the RPC answers', async (t) => {
  const rpc = await startRpcProxy(network.rpcUrl)
  t.teardown(() => rpc.close())
  rpc.setMode('down')
  const { app, logged } = await serviceOn(t, older, rpc.url)
  t.equal(await borrowerMayReclaimIn(app), null, 'null while the RPC is down')
  t.equal(warnings(logged).length, 0, 'an outage is not the older rule')
  rpc.setMode('forward')
  const deadline = Date.now() + 30_000
  let seen = await borrowerMayReclaimIn(app)
  while (seen === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    seen = await borrowerMayReclaimIn(app)
  }
  t.equal(seen, false, 'read once the RPC answers, without a restart')
  t.equal(warnings(logged).length, 1, 'and said once')
})
