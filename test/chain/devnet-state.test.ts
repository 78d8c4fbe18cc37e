// The embedded devnet survives a crash (issue 10, hole 8): its chain state is saved after every block with
// transactions, atomically, the previous good file kept; a SIGKILL of the whole process group (service + anvils)
// then a restart finds the escrow the service acknowledged; a torn, empty, garbage or refused state file never blocks a
// start (previous file, else a fresh chain, each said in the log); a failing write keeps the good files.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createPublicClient, createTestClient, createWalletClient, erc20Abi, http, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { checkStateFile, savedDevnetState, stateFiles, writeStateAtomically, type DevnetLogEntry } from '../../src/chain/devnet-state.ts'
import { demoAccounts, devnetReclaimDelaySeconds, startDevnet } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { tempDataDir } from '../fixtures/service.ts'
import { MAIN, REPO } from '../persistence/fixtures/child-service.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const one = [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }]
const accounts = demoAccounts()

async function eventually(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out: ${what}`)
}

function clientsOf(network: NetworkConfig) {
  const chain = networkChain(network)
  const transport = http(network.rpcUrl, { retryCount: 0 })
  return {
    public: createPublicClient({ chain, transport, pollingInterval: 50 }),
    lender: createWalletClient({ account: privateKeyToAccount(accounts.lender.privateKey), chain, transport }),
  }
}

/** A transfer from the demo lender to the demo supplier, mined. */
async function transfer(network: NetworkConfig, amount: bigint): Promise<bigint> {
  const c = clientsOf(network)
  const hash = await c.lender.writeContract({ address: network.tokens[0]?.address as Address, abi: erc20Abi, functionName: 'transfer', args: [accounts.supplier.address, amount] })
  return (await c.public.waitForTransactionReceipt({ hash, pollingInterval: 50 })).blockNumber
}

async function supplierBalance(network: NetworkConfig): Promise<bigint> {
  return clientsOf(network).public.readContract({ address: network.tokens[0]?.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [accounts.supplier.address] })
}

const initialBalance = 1_000_000n * 10n ** 6n

function recordingLog(): { log: (entry: DevnetLogEntry) => void; entries: DevnetLogEntry[] } {
  const entries: DevnetLogEntry[] = []
  return { log: (entry) => void entries.push(entry), entries }
}

t.before(() => {
  compileContracts()
})

t.test('saves after every block with transactions, atomically, keeping the previous good file', async (t) => {
  const stateDir = tempDataDir('devnet-save-')
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const { log, entries } = recordingLog()
  const devnet = await startDevnet({ stateDir, networks: one, log, saver: { checkIntervalMs: 50 } })
  let stopped = false
  t.teardown(async () => {
    if (!stopped) await devnet.stop()
  })
  const network = devnet.networks[0] as NetworkConfig
  const files = stateFiles(stateDir, 'devnet-a')
  t.ok(checkStateFile(files.current).ok, 'the deployed chain is saved at once')
  const block = await transfer(network, 7n)
  await eventually('the transfer is saved', () => (savedDevnetState(stateDir, ['devnet-a'])[0]?.savedBlock ?? -1n) >= block)
  t.ok(checkStateFile(files.previous).ok, 'the previous good state is kept beside it')
  const [report] = await devnet.stateReport()
  t.match(report, { network: 'devnet-a', loadedFrom: 'fresh' })
  t.ok(report !== undefined && report.savedBlock !== undefined && report.savedBlock >= block && report.headBlock >= report.savedBlock, 'the report gives the saved block and the head')
  t.same(readdirSync(stateDir).filter((name) => name.includes('.tmp-')), [], 'no temporary file left behind')

  // A write that fails (here a directory where the temporary file goes; a full disk behaves the same) keeps both good
  // files, is logged once, and saving resumes when it can.
  const savedBefore = readFileSync(files.current)
  const blocked = `${files.current}.tmp-${process.pid}`
  mkdirSync(blocked)
  const failedBlock = await transfer(network, 3n)
  await eventually('the failure is logged', () => entries.some((e) => e.level === 'error' && /could not save chain state/.test(e.msg)))
  t.same(readFileSync(files.current), savedBefore, 'the current state file is untouched by the failed write')
  t.ok(checkStateFile(files.previous).ok)
  rmSync(blocked, { recursive: true })
  await eventually('saving resumes', () => (savedDevnetState(stateDir, ['devnet-a'])[0]?.savedBlock ?? -1n) >= failedBlock)
  t.ok(entries.some((e) => /saving chain state again/.test(e.msg)), 'the recovery is logged')
  t.throws(() => {
    mkdirSync(blocked)
    try {
      writeStateAtomically(stateDir, 'devnet-a', Buffer.from('{}'))
    } finally {
      rmSync(blocked, { recursive: true })
    }
  }, 'a failed atomic write throws')
  await devnet.stop()
  stopped = true
})

t.test('a torn, empty, garbage or refused state file never blocks a start', async (t) => {
  const stateDir = tempDataDir('devnet-torn-')
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const files = stateFiles(stateDir, 'devnet-a')
  const first = await startDevnet({ stateDir, networks: one, log: () => {} })
  await transfer(first.networks[0] as NetworkConfig, 11n)
  await first.stop()

  await t.test('an empty current file: the previous one is loaded, the empty one set aside', async (t) => {
    writeFileSync(files.current, '')
    const { log, entries } = recordingLog()
    const devnet = await startDevnet({ stateDir, networks: one, log })
    t.teardown(() => devnet.stop())
    t.match((await devnet.stateReport())[0], { loadedFrom: 'previous' })
    t.ok(entries.some((e) => e.msg === 'state file unusable, moved aside' && e.reason === 'empty (0 bytes)'), 'the log names the file and why')
    t.ok(entries.some((e) => e.level === 'warn' && /previous one was loaded/.test(e.msg)))
    t.ok(readdirSync(stateDir).some((name) => name.startsWith('devnet-a.json.unusable-')), 'the bad file is kept aside, not deleted')
    const code = await clientsOf(devnet.networks[0] as NetworkConfig).public.getCode({ address: devnet.networks[0]?.creditContract as Address })
    t.ok((code?.length ?? 0) > 2, 'contracts are there')
  })

  await t.test('a torn current file and a garbage previous one: a fresh chain, said in the log', async (t) => {
    const good = readFileSync(files.current, 'utf8')
    writeFileSync(files.current, good.slice(0, Math.floor(good.length / 2)))
    writeFileSync(files.previous, 'garbage\u0000\u0001')
    const { log, entries } = recordingLog()
    const devnet = await startDevnet({ stateDir, networks: one, log })
    t.teardown(() => devnet.stop())
    t.match((await devnet.stateReport())[0], { loadedFrom: 'fresh', loadedBlock: undefined })
    t.equal(entries.filter((e) => e.msg === 'state file unusable, moved aside').length, 2, 'both files set aside')
    t.ok(entries.some((e) => e.level === 'warn' && /fresh chain/.test(e.msg)), 'the fresh start is a warning, not silent')
    t.equal(await supplierBalance(devnet.networks[0] as NetworkConfig), initialBalance, 'a fresh chain, deployed and funded again')
  })

  await t.test('a file that parses but anvil refuses: set aside, and the start goes on', async (t) => {
    writeFileSync(files.current, JSON.stringify({ accounts: { 'not-an-address': {} }, block: { number: '0x5' } }))
    rmSync(files.previous, { force: true })
    const { log, entries } = recordingLog()
    const devnet = await startDevnet({ stateDir, networks: one, log })
    t.teardown(() => devnet.stop())
    t.match((await devnet.stateReport())[0], { loadedFrom: 'fresh' })
    t.ok(entries.some((e) => e.msg === 'state file unusable, moved aside' && /anvil refused/.test(String(e.reason))))
  })
})

t.test('a saved chain whose credit contract predates reclaimJob is set aside: a fresh chain with the current contract, said in the log', async (t) => {
  const stateDir = tempDataDir('devnet-older-')
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const first = await startDevnet({ stateDir, networks: one, log: () => {}, saver: { checkIntervalMs: 50 } })
  const old = first.networks[0] as NetworkConfig
  // The older release's contract, as far as the probe sees it: code at the fixed address without reclaimDelay().
  const tokenCode = await clientsOf(old).public.getCode({ address: old.tokens[0]?.address as Address })
  await createTestClient({ chain: networkChain(old), transport: http(old.rpcUrl), mode: 'anvil' }).setCode({ address: old.creditContract, bytecode: tokenCode as Hex })
  const block = await transfer(old, 7n)
  await eventually('the older chain is saved', () => (savedDevnetState(stateDir, ['devnet-a'])[0]?.savedBlock ?? -1n) >= block)
  await first.stop()

  const { log, entries } = recordingLog()
  const devnet = await startDevnet({ stateDir, networks: one, log })
  t.teardown(() => devnet.stop())
  const network = devnet.networks[0] as NetworkConfig
  t.ok(entries.some((e) => e.level === 'warn' && /older than this release/.test(e.msg)), 'the fresh start is a warning, not silent')
  t.ok(readdirSync(stateDir).some((name) => name.startsWith('devnet-a.json.unusable-')), 'the older chain is kept aside, not deleted')
  t.match((await devnet.stateReport())[0], { loadedFrom: 'fresh' })
  const delay = await clientsOf(network).public.readContract({ address: network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' })
  t.equal(delay, devnetReclaimDelaySeconds, 'the credit contract is this release\'s')
  t.equal(await supplierBalance(network), initialBalance, 'a fresh chain, deployed and funded again')
})

/** The service as `npm start` runs it (embedded devnet), leader of its own process group. */
function spawnService(dataDir: string): { child: ChildProcess; ready: Promise<{ url: string; rpcUrl: string; creditContract: Address; token: Address }>; stderr: () => string; stdout: () => string } {
  const child = spawn(process.execPath, [...TS_LOADER_ARGS, MAIN], {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', REQUEST_LOG: '1', RATE_LIMIT_PER_SECOND: '0', NETWORKS_FILE: '', CONFIG_FILE: '' },
  })
  let out = ''
  let err = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const ready = new Promise<{ url: string; rpcUrl: string; creditContract: Address; token: Address }>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const url = /agent-credit listening on (\S+)/.exec(out)
      const network = /network devnet-a \(eip155:31337\) rpc (\S+) credit contract (0x[0-9a-fA-F]{40}) USDC (0x[0-9a-fA-F]{40})/.exec(out)
      if (url !== null && network !== null) resolve({ url: url[1] as string, rpcUrl: network[1] as string, creditContract: network[2] as Address, token: network[3] as Address })
    })
    child.once('exit', (code, signal) => reject(new Error(`service exited (${code ?? signal}) before listening: ${err.slice(-2000)}`)))
  })
  return { child, ready, stderr: () => err, stdout: () => out }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    process.kill(-(child.pid as number), signal)
  })
}

t.test('SIGKILL of the process group (the service; its watchdogs end the anvils, in groups of their own), then a restart finds the acknowledged escrow on chain', async (t: Test) => {
  const dataDir = tempDataDir('devnet-kill-')
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = spawnService(dataDir)
  t.teardown(() => killGroup(first.child, 'SIGKILL'))
  const running = await first.ready
  const networkConfig: NetworkConfig = {
    slug: 'devnet-a', chainId: 31337, caip2: 'eip155:31337', rpcUrl: running.rpcUrl, creditContract: running.creditContract,
    identityRegistry: running.creditContract, reputationRegistry: running.creditContract, multicall3: '0xcA11bde05977b3631167028862bE2a173976CA11',
    tokens: [{ symbol: 'USDC', address: running.token, decimals: 6, eip712Name: 'USD Coin', eip712Version: '2' }],
    x402SelfFacilitate: false, confirmations: 1, pollingIntervalMs: 50, operatorKeyEnv: undefined, operatorPrivateKey: undefined, leaseSignerKeyEnv: undefined, leaseSignerPrivateKey: undefined,
    facilitatorKeyEnv: undefined, facilitatorPrivateKey: undefined,
  }
  const jobClient = privateKeyToAccount(accounts.jobClient.privateKey)
  const borrower = privateKeyToAccount(accounts.borrower.privateKey)
  const jobId = 'job_survives_sigkill'
  const amount = 1_234n * 10n ** 6n
  const fundingTxHash = await new ChainAgent(networkConfig, jobClient).fundJob(jobId, 'USDC', amount, borrower.address)
  const api = new CreditClient(running.url)
  await api.signIn(borrower)
  const reply = await api.post('/credit/jobs', {
    jobId, network: 'devnet-a', asset: 'USDC', agent: borrower.address, receivableAtomic: amount.toString(),
    dueAt: new Date(Date.now() + 86_400_000).toISOString(), fundingTxHash,
  })
  t.equal(reply.status, 201, 'the service acknowledged the funded job')
  const receipt = await clientsOf(networkConfig).public.getTransactionReceipt({ hash: fundingTxHash as Hex })
  const stateDir = join(dataDir, 'devnet')
  await eventually('the funding block is saved', () => (savedDevnetState(stateDir, ['devnet-a'])[0]?.savedBlock ?? -1n) >= receipt.blockNumber)

  await killGroup(first.child, 'SIGKILL')
  t.equal(first.child.signalCode, 'SIGKILL')
  await eventually('the anvils died after the service', async () => !(await fetch(running.rpcUrl, { method: 'POST', body: '{}' }).then(() => true, () => false)))
  t.ok(statSync(stateFiles(stateDir, 'devnet-a').current).size > 0, 'the state file is whole after the kill')

  const second = spawnService(dataDir)
  t.teardown(() => killGroup(second.child, 'SIGTERM'))
  const again = await second.ready
  t.equal(again.creditContract, running.creditContract, 'the same contracts')
  t.match(second.stdout(), /"level":"info","msg":"chain state loaded","network":"devnet-a"/, 'the service log says the chain state was loaded')
  const job = await new CreditClient(again.url).get(`/credit/jobs/${jobId}`)
  t.equal(job.status, 200, 'the service still knows the job')
  const chain = clientsOf({ ...networkConfig, rpcUrl: again.rpcUrl }).public
  const onChain = await chain.readContract({ address: again.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(networkConfig, jobId)] })
  t.equal(onChain.client, jobClient.address, 'the escrow the service acknowledged is on the restarted chain')
  t.equal(onChain.escrow, amount)
  t.equal(await chain.readContract({ address: again.token, abi: erc20Abi, functionName: 'balanceOf', args: [again.creditContract] }), amount, 'and its tokens')
  await killGroup(second.child, 'SIGTERM')
})
