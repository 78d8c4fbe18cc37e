// review30 (after probe28): the credit contract's advancesPerJobMax is immutable, and the embedded devnet deploys it
// with the service's engine.advancesPerJobMax. A chain the devnet restored from DATA_DIR/devnet keeps the contract of
// its first start: a service started since with a larger advancesPerJobMax leased advances its paySupplier refuses
// (TooManyAdvances), the start-up's check (advanceCapMismatches) running on a networks file only. Such a chain is now
// set aside and a fresh one deployed, as a chain whose contract predates reclaimJob is; one whose contract takes more
// is kept.
import { readdirSync, rmSync } from 'node:fs'
import t from 'tap'
import { createPublicClient, createWalletClient, erc20Abi, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { savedDevnetState, type DevnetLogEntry } from '../../src/chain/devnet-state.ts'
import { demoAccounts, startDevnet } from '../../src/chain/devnet.ts'
import { tempDataDir } from '../fixtures/service.ts'

const one = [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }]
const accounts = demoAccounts()

async function eventually(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

function clientOf(network: NetworkConfig) {
  return createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl, { retryCount: 0 }), pollingInterval: 50 })
}

/** A transfer from the demo lender (a block with a transaction: the saver writes the chain), saved. */
async function savedTransfer(network: NetworkConfig, stateDir: string): Promise<void> {
  const wallet = createWalletClient({ account: privateKeyToAccount(accounts.lender.privateKey), chain: networkChain(network), transport: http(network.rpcUrl) })
  const hash = await wallet.writeContract({ address: network.tokens[0]?.address as Address, abi: erc20Abi, functionName: 'transfer', args: [accounts.supplier.address, 7n] })
  const { blockNumber } = await clientOf(network).waitForTransactionReceipt({ hash, pollingInterval: 50 })
  await eventually('the chain is saved', () => (savedDevnetState(stateDir, ['devnet-a'])[0]?.savedBlock ?? -1n) >= blockNumber)
}

const capOf = (network: NetworkConfig) => clientOf(network).readContract({ address: network.creditContract, abi: creditFacilityV2Abi, functionName: 'advancesPerJobMax' })

t.test('a saved chain whose contract takes fewer advances per job than asked is set aside; one that takes more is kept', async (t) => {
  const stateDir = tempDataDir('devnet-cap-')
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const first = await startDevnet({ stateDir, networks: one, log: () => {}, advancesPerJobMax: 499n, saver: { checkIntervalMs: 50 } })
  await savedTransfer(first.networks[0] as NetworkConfig, stateDir)
  await first.stop()

  const entries: DevnetLogEntry[] = []
  const second = await startDevnet({ stateDir, networks: one, log: (entry) => void entries.push(entry), advancesPerJobMax: 500n, saver: { checkIntervalMs: 50 } })
  const network = second.networks[0] as NetworkConfig
  t.equal(await capOf(network), 500n, 'the contract takes what the service leases')
  t.match((await second.stateReport())[0], { loadedFrom: 'fresh' }, 'a fresh chain')
  t.ok(entries.some((e) => e.level === 'warn' && /fewer advances per job than advancesPerJobMax/.test(e.msg) && e['contractAdvancesPerJobMax'] === '499'), 'said in the log')
  t.ok(readdirSync(stateDir).some((name) => name.startsWith('devnet-a.json.unusable-')), 'the earlier chain is kept aside, not deleted')
  await savedTransfer(network, stateDir)
  await second.stop()

  const third = await startDevnet({ stateDir, networks: one, log: () => {}, advancesPerJobMax: 400n })
  t.teardown(() => third.stop())
  t.not((await third.stateReport())[0]?.loadedFrom, 'fresh', 'a contract that takes more is kept')
  t.equal(await capOf(third.networks[0] as NetworkConfig), 500n)
})
