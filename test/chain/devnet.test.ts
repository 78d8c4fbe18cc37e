// The devnet launcher: two chains, everything deployed, demo accounts funded, its configuration loadable like a
// real network's file, the token usable by the official x402 exact EVM facilitator, clean stop, no orphans.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator'
import { createPublicClient, createWalletClient, erc20Abi, http, publicActions, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { loadArtifact, multicall3Address, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { loadNetworksConfig } from '../../src/chain/config.ts'
import { startDevnet, type Devnet } from '../../src/chain/devnet.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const here = dirname(fileURLToPath(import.meta.url))

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function eventually(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (condition()) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return condition()
}

t.test('devnet', async (t) => {
  compileContracts()
  const dir = mkdtempSync(join(tmpdir(), 'devnet-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const configPath = join(dir, 'networks.json')
  const started = Date.now()
  const devnet: Devnet = await startDevnet({ configPath })
  const startMs = Date.now() - started
  let stopped = false
  t.teardown(async () => {
    if (!stopped) await devnet.stop()
  })
  t.comment(`devnet up in ${startMs} ms`)

  t.test('two chains with distinct ids, everything deployed, demo accounts funded', async (t) => {
    t.equal(devnet.networks.length, 2)
    t.strictSame(devnet.networks.map((n) => [n.slug, n.chainId, n.caip2, n.x402SelfFacilitate]), [
      ['devnet-a', 31337, 'eip155:31337', false],
      ['devnet-b', 31338, 'eip155:31338', true],
    ])
    for (const network of devnet.networks) {
      const client = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
      t.equal(await client.getChainId(), network.chainId, `${network.slug} answers with its chain id`)
      t.match(network.rpcUrl, /^http:\/\/127\.0\.0\.1:\d+$/)
      for (const address of [network.creditContract, network.identityRegistry, network.reputationRegistry, network.tokens[0]?.address]) {
        const code = await client.getCode({ address: address as Hex })
        t.ok(code !== undefined && code.length > 2, `${network.slug}: code at ${address}`)
      }
      t.equal(await client.getCode({ address: multicall3Address }), loadArtifact('Multicall3').deployedBytecode, 'Multicall3 at the canonical address')
      const blockNumber = await client.getBlockNumber()
      const [multicallBlock] = await client.multicall({
        allowFailure: false,
        contracts: [{ address: multicall3Address, abi: loadArtifact('Multicall3').abi, functionName: 'getBlockNumber' }],
      })
      t.ok((multicallBlock as bigint) >= blockNumber, 'viem multicall works through it')

      const token = network.tokens[0]
      if (token === undefined) throw new Error('no token')
      const read = (functionName: 'name' | 'symbol' | 'decimals' | 'version') =>
        client.readContract({ address: token.address, abi: testStablecoinAbi, functionName })
      t.strictSame(
        [await read('name'), await read('symbol'), await read('decimals'), await read('version')],
        [token.eip712Name, token.symbol, token.decimals, token.eip712Version],
        'the token exposes its EIP-712 name and version',
      )
      const domain = await client.readContract({ address: token.address, abi: testStablecoinAbi, functionName: 'eip712Domain' })
      t.equal(domain[1], token.eip712Name)
      t.equal(domain[2], token.eip712Version)
      t.equal(domain[3], BigInt(network.chainId))
      for (const role of ['lender', 'borrower', 'jobClient', 'supplier', 'operator', 'attester'] as const) {
        const address = devnet.accounts[role].address
        t.equal(
          await client.readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [address] }),
          1_000_000n * 10n ** 6n,
          `${network.slug}: ${role} holds 1,000,000 USDC`,
        )
        t.ok((await client.getBalance({ address })) >= 10n ** 18n, `${network.slug}: ${role} has gas`)
      }
      t.equal(network.operatorPrivateKey, devnet.accounts.operator.privateKey, 'the devnet uses its demo operator key')
    }
    t.equal(devnet.accounts.lender.address, privateKeyToAccount(devnet.accounts.lender.privateKey).address)
    t.equal(devnet.accounts.deployer.address, '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'anvil dev mnemonic, index 0')
  })

  t.test('the written configuration loads like a real network file', async (t) => {
    const loaded = loadNetworksConfig(configPath, {})
    t.strictSame(
      loaded,
      devnet.networks.map((n) => ({ ...n, operatorPrivateKey: undefined, leaseSignerPrivateKey: undefined, facilitatorPrivateKey: undefined })),
      'same NetworkConfig values, without the keys (never written to a file)',
    )
    for (const network of devnet.networks) {
      // The block the credit contract was deployed in: no code there the block before, code from it on.
      const client = createPublicClient({ transport: http(network.rpcUrl) })
      const block = network.deploymentBlock as bigint
      t.ok(block > 0n, `${network.slug}: deploymentBlock ${block}`)
      t.equal(await client.getCode({ address: network.creditContract, blockNumber: block - 1n }), undefined, `${network.slug}: no contract before it`)
      t.ok(((await client.getCode({ address: network.creditContract, blockNumber: block })) ?? '0x').length > 2, `${network.slug}: the contract from it on`)
    }
  })

  t.test('the official x402 exact EVM facilitator verifies and settles a payment in the devnet token', async (t) => {
    const network = devnet.networks[1]
    const token = network?.tokens[0]
    if (network === undefined || token === undefined) throw new Error('no network')
    const chain = networkChain(network)
    const transport = http(network.rpcUrl)
    const operator = privateKeyToAccount(devnet.accounts.operator.privateKey)
    const facilitatorClient = createWalletClient({ account: operator, chain, transport, pollingInterval: 50 }).extend(publicActions)
    const signer = toFacilitatorEvmSigner({
      address: operator.address,
      readContract: (args) => facilitatorClient.readContract(args as never),
      verifyTypedData: (args) => facilitatorClient.verifyTypedData(args as never),
      writeContract: (args) => facilitatorClient.writeContract(args as never),
      sendTransaction: (args) => facilitatorClient.sendTransaction(args as never),
      waitForTransactionReceipt: (args) => facilitatorClient.waitForTransactionReceipt({ ...args, pollingInterval: 50 }),
      getCode: (args) => facilitatorClient.getCode(args),
    })
    const facilitator = new x402Facilitator().register(network.caip2, new ExactEvmFacilitatorScheme(signer))
    const requirements = {
      scheme: 'exact',
      network: network.caip2,
      asset: token.address,
      amount: '12345',
      payTo: devnet.accounts.supplier.address,
      maxTimeoutSeconds: 60,
      extra: { name: token.eip712Name, version: token.eip712Version },
    }
    const payer = privateKeyToAccount(devnet.accounts.borrower.privateKey)
    const created = await new ExactEvmClientScheme(payer).createPaymentPayload(2, requirements)
    const payload = { ...created, x402Version: 2, accepted: requirements, resource: { url: 'http://localhost/credit-score', description: '', mimeType: 'application/json' } }
    const client = createPublicClient({ chain, transport })
    const balanceOf = (address: Hex) => client.readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
    const before = await balanceOf(devnet.accounts.supplier.address)
    const verified = await facilitator.verify(payload as never, requirements)
    t.equal(verified.isValid, true, `verify: ${verified.invalidReason ?? ''} ${verified.invalidMessage ?? ''}`)
    const settled = await facilitator.settle(payload as never, requirements)
    t.equal(settled.success, true, `settle: ${settled.errorReason ?? ''} ${settled.errorMessage ?? ''}`)
    t.equal((await balanceOf(devnet.accounts.supplier.address)) - before, 12345n, 'the payee received the amount')
    const replay = await facilitator.settle(payload as never, requirements)
    t.equal(replay.success, false, 'the same authorization cannot settle twice')
  })

  t.test('stop leaves no anvil process behind', async (t) => {
    const pids = devnet.anvils.map((a) => a.pid)
    t.ok(pids.every(alive), 'anvils run before stop')
    await devnet.stop()
    stopped = true
    t.ok(pids.every((pid) => !alive(pid)), 'every anvil is gone after stop')
  })
})

/** Starts a child process that starts one anvil, prints its pid, then runs `then` (JavaScript). */
async function childWithAnvil(then: string): Promise<{ child: ReturnType<typeof spawn>; anvilPid: number }> {
  const anvilModule = pathToFileURL(resolve(here, '../../src/chain/anvil.ts')).href
  const source = [
    `import { startAnvil } from ${JSON.stringify(anvilModule)}`,
    'const anvil = await startAnvil({ chainId: 31399 })',
    'process.stdout.write(`anvil pid ${anvil.pid}\\n`)',
    then,
  ].join('\n')
  const child = spawn(process.execPath, [...TS_LOADER_ARGS, '--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: resolve(here, '../..'),
  })
  const anvilPid = await new Promise<number>((resolvePid, reject) => {
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /anvil pid (\d+)/.exec(output)
      if (match !== null) resolvePid(Number(match[1]))
    })
    child.once('exit', (code) => reject(new Error(`child exited early with ${code}: ${output}`)))
  })
  return { child, anvilPid }
}

t.test('anvil dies with its parent even when the parent is killed with SIGKILL', async (t) => {
  const { child, anvilPid } = await childWithAnvil('setInterval(() => {}, 60_000)')
  t.ok(alive(anvilPid), 'the child started anvil')
  child.kill('SIGKILL')
  t.ok(await eventually(() => !alive(anvilPid), 5_000), 'the watchdog ended anvil after its parent died without exit handlers')
})

t.test('anvil dies when its parent exits without stopping it', async (t) => {
  const { child, anvilPid } = await childWithAnvil('setTimeout(() => process.exit(0), 100)')
  if (child.exitCode === null) await new Promise((resolveExit) => child.once('exit', resolveExit))
  t.ok(await eventually(() => !alive(anvilPid), 5_000), 'the exit handler ended anvil')
})

t.test("anvil is out of its parent's process group, so a terminal's Ctrl-C reaches only the service", async (t) => {
  // The service saves the chain's state a last time on SIGINT, then stops anvil (README, Quick start): in the service's
  // group anvil died of the same Ctrl-C first, and the last save failed ("could not save chain state").
  const { child, anvilPid } = await childWithAnvil('setInterval(() => {}, 60_000)')
  // The watchdog ends anvil once the child is gone (the SIGKILL test above).
  t.teardown(() => void child.kill('SIGKILL'))
  const groupOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2])
  t.not(groupOf(anvilPid), groupOf(child.pid as number), 'anvil has a process group of its own')
})

t.test('with a state directory a restarted devnet finds its contracts and balances again', async (t) => {
  const stateDir = mkdtempSync(join(tmpdir(), 'devnet-state-'))
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const first = await startDevnet({ stateDir, networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }] })
  const network = first.networks[0]
  const token = network?.tokens[0]
  if (network === undefined || token === undefined) throw new Error('no network')
  const lender = createWalletClient({
    account: privateKeyToAccount(first.accounts.lender.privateKey),
    chain: networkChain(network),
    transport: http(network.rpcUrl),
  })
  const client = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
  const hash = await lender.writeContract({ address: token.address, abi: erc20Abi, functionName: 'transfer', args: [first.accounts.supplier.address, 123n] })
  await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  await first.stop()

  const second = await startDevnet({ stateDir, networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }] })
  t.teardown(() => second.stop())
  const again = second.networks[0]
  if (again === undefined) throw new Error('no network')
  t.strictSame({ ...again, rpcUrl: '' }, { ...network, rpcUrl: '' }, 'same contracts and token addresses')
  const client2 = createPublicClient({ chain: networkChain(again), transport: http(again.rpcUrl) })
  t.equal(
    await client2.readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [second.accounts.supplier.address] }),
    1_000_000n * 10n ** 6n + 123n,
    'the transfer made before the restart is still there, and nothing was minted twice',
  )
  t.equal(await client2.getTransactionCount({ address: second.accounts.deployer.address }), 10, 'no second deployment')
})
