// The service's senders (the operator's wallet, the x402 facilitator's) send each transaction with 50 % gas over its
// estimate (gasWithMargin), capped at the chain's block gas limit, never below the estimate: a node refuses a
// transaction whose gas limit no block could hold, so on a chain whose blocks take less than an estimate and a half the
// margin alone refused transactions that fit (review25: the cap was EIP-7825's 2^24 only). The limit is the latest
// block's, noted from the heads the pollers read, else read by the sender.
import t, { type Test } from 'tap'
import { createPublicClient, createTestClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { createNetworkClients, gasWithMargin, networkChain, senderWallet, transactionGasCap } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { sendSettleJob } from '../../src/chain/operator.ts'
import { sharedHeads } from '../../src/chain/poll-transport.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

t.test('gasWithMargin: 50 % over the estimate, under the block gas limit and 2^24, never below the estimate', async (t) => {
  t.equal(gasWithMargin(100_000n, 30_000_000n), 150_000n, 'room for the margin')
  t.equal(gasWithMargin(100_000n, 120_000n), 120_000n, 'capped at the block gas limit')
  t.equal(gasWithMargin(100_000n, 100_000n), 100_000n, 'the estimate when it is the block gas limit')
  t.equal(gasWithMargin(130_000n, 120_000n), 130_000n, 'never below the estimate')
  t.equal(gasWithMargin(12_000_000n, 60_000_000n), transactionGasCap, 'capped at EIP-7825\'s 2^24 above it')
  t.equal(gasWithMargin(20_000_000n, 60_000_000n), 20_000_000n, 'an estimate above 2^24 as it is')
  // A block gas limit that no transaction fits in says nothing of the chain (an RPC answering 0): the margin stays.
  t.equal(gasWithMargin(100_000n, 0n), 150_000n, 'a block gas limit of 0 is no cap')
  t.equal(gasWithMargin(100_000n, 20_999n), 150_000n, 'nor one under a plain transfer\'s 21,000')
  t.equal(gasWithMargin(100_000n, 21_000n), 100_000n, 'one a transfer fits in is')
})

let devnet: Awaited<ReturnType<typeof startDevnet>>
t.before(async () => {
  compileContracts()
  devnet = await startDevnet({ networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }] })
})
t.teardown(() => devnet.stop())

// On main the operator's settleJob went with its estimate x 1.5, above the block gas limit, and the node refused it.
t.test('an operator transaction whose estimate fits a block and its margin does not is sent at the block gas limit and mined', async (t) => {
  const network = devnet.networks[0] as NetworkConfig
  const chain = networkChain(network)
  const testClient = createTestClient({ chain, transport: http(network.rpcUrl), mode: 'anvil' })
  const clients = createNetworkClients(network)
  const jobId = 'gas-cap-job'
  const borrower = privateKeyToAccount(devnet.accounts.borrower.privateKey).address
  const funding = await new ChainAgent(network, privateKeyToAccount(devnet.accounts.jobClient.privateKey)).fundJob(jobId, 'USDC', 1_000_000n, borrower)
  await clients.publicClient.waitForTransactionReceipt({ hash: funding, pollingInterval: 50 })
  const estimate = await clients.publicClient.estimateContractGas({
    account: devnet.accounts.operator.address,
    address: network.creditContract,
    abi: creditFacilityV2Abi,
    functionName: 'settleJob',
    args: [jobKey(network, jobId), []],
  })
  const blockGasLimit = (estimate * 6n) / 5n
  await testClient.setBlockGasLimit({ gasLimit: blockGasLimit })
  await testClient.mine({ blocks: 1 })
  t.equal((await clients.publicClient.getBlock({ blockTag: 'latest' })).gasLimit, blockGasLimit, 'the chain\'s blocks take 1.2 x the estimate')
  const receipt = await sendSettleJob(clients, { jobKey: jobKey(network, jobId), offerKeys: [] })
  const sent = await clients.publicClient.getTransaction({ hash: receipt.txHash })
  t.equal(sent.gas, blockGasLimit, 'sent with the block gas limit, not the estimate x 1.5')
  t.same(receipt.facts.map((fact) => fact.name), ['JobSettled'], 'the settlement mined')
})

/** The devnet's first network and the same network through an RPC proxy of the test's own (closed at its end). */
async function behindProxy(t: Test) {
  const network = devnet.networks[0] as NetworkConfig
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  return { network, proxy, proxied: { ...network, rpcUrl: proxy.url } }
}

// The pollers' head read notes the limit: a sender whose network is followed reads no block of its own.
t.test('a sender takes the block gas limit the pollers noted from the head, without a read of its own', async (t) => {
  const { network, proxy, proxied } = await behindProxy(t)
  const direct = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
  const { gasLimit } = await direct.getBlock({ blockTag: 'latest' })
  const head = sharedHeads([proxied], { timeoutMs: 2_000 }).get(network.slug)
  await head?.latest(Number.NEGATIVE_INFINITY)
  proxy.reset()
  const sender = senderWallet(proxied, devnet.accounts.facilitator.privateKey)
  t.equal(await sender.gasFor(gasLimit), gasLimit, 'an estimate at the block gas limit gets no margin')
  t.equal(await sender.gasFor(1_000n), 1_500n, 'a small one its 50 %')
  t.equal(proxy.count('eth_getBlockByNumber'), 0, 'no block read by the sender')
})

// A head whose gas limit is no hex quantity: the head is read all the same (before, BigInt threw and every head read
// failed), nothing is noted, and a sender reads its own limit.
t.test('a head whose gasLimit is malformed is read all the same, and noted nothing', async (t) => {
  const { network, proxy, proxied } = await behindProxy(t)
  proxy.setRewrite((text) => text.replace(/"gasLimit":"0x[0-9a-f]*"/i, '"gasLimit":"0x"'))
  const head = sharedHeads([proxied], { timeoutMs: 2_000 }).get(network.slug)
  t.ok((await head?.latest(Number.NEGATIVE_INFINITY))?.number !== undefined, 'the head read')
  proxy.setRewrite(undefined)
  proxy.reset()
  const sender = senderWallet(proxied, devnet.accounts.facilitator.privateKey)
  t.equal(await sender.gasFor(1_000n), 1_500n, 'a small estimate its 50 %')
  t.equal(proxy.count('eth_getBlockByNumber'), 1, 'the sender read the limit itself: none was noted')
})

// Without a head noted, the sender reads the latest block once, for every transaction asking meanwhile.
t.test('a sender on a network nobody polls reads the latest block once for its cap', async (t) => {
  const { network, proxy, proxied } = await behindProxy(t)
  const sender = senderWallet(proxied, devnet.accounts.facilitator.privateKey)
  const direct = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
  const { gasLimit } = await direct.getBlock({ blockTag: 'latest' })
  const gas = await Promise.all([sender.gasFor(gasLimit), sender.gasFor(gasLimit - 1n), sender.gasFor(1_000n)])
  t.same(gas, [gasLimit, gasLimit, 1_500n], 'capped at the block gas limit read')
  t.equal(proxy.count('eth_getBlockByNumber'), 1, 'one read for the three')
  await sender.gasFor(2_000n)
  t.equal(proxy.count('eth_getBlockByNumber'), 1, 'none more within the minute')
})
