// The service's senders (the operator's wallet, the x402 facilitator's: src/chain/clients.ts senderWallet) sign and
// send one transaction of an address at a time (inTurn). viem's nonceManager alone gave two transactions of an
// address that had sent none both nonce 0 when the second took its nonce after the first had taken its own but
// before the first reached the node's pool (its guard trusts the pending count unless the last nonce it handed out
// is above 0): the node refused the second ("replacement transaction underpriced" while the first waits in the pool, "nonce too low" once it is mined). Here the raw transactions reach
// anvil 300 ms late through a proxy, so the second begins in that window, every time.
import t from 'tap'
import { createPublicClient, http, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain, SenderBusyError, senderWallet } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

let devnet: Awaited<ReturnType<typeof startDevnet>>
t.before(async () => {
  devnet = await startDevnet({ networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }] })
})
t.teardown(() => devnet.stop())

t.test('two transactions of a fresh sender begun 100 ms apart: both mined, nonces 0 and 1', async (t) => {
  const network = devnet.networks[0] as NetworkConfig
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const chain = networkChain(network)
  const direct = createPublicClient({ chain, transport: http(network.rpcUrl) })
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await direct.request({ method: 'anvil_setBalance', params: [address, `0x${parseEther('1').toString(16)}`] } as never)
  const sender = senderWallet({ ...network, rpcUrl: proxy.url }, key)
  proxy.setDelayOf({ methods: ['eth_sendRawTransaction'], ms: 300 })
  const to = privateKeyToAccount(generatePrivateKey()).address
  const send = (): Promise<Hex> => sender.inTurn(() => sender.walletClient.sendTransaction({ to, value: 1n }))
  const first = send()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const second = send()
  const hashes = await Promise.all([first, second])
  const receipts = await Promise.all(hashes.map((hash) => direct.waitForTransactionReceipt({ hash, pollingInterval: 50 })))
  t.same(receipts.map((r) => r.status), ['success', 'success'], 'both mined')
  const nonces = await Promise.all(hashes.map(async (hash) => (await direct.getTransaction({ hash })).nonce))
  t.same(nonces, [0, 1], 'one nonce each, in the order begun')
})

// Behind an RPC that holds a submission, the next one waits for its turn at most turnWaitMaxMs and is refused, not
// sent (the callers answer 503): before the bound, each of k submissions begun together waited one RPC timeout more
// than the one before it (review25: 10, 20 and 30 s). The order and the nonces hold.
t.test('a submission that waits longer than turnWaitMaxMs for the one before is refused and not sent', async (t) => {
  const network = devnet.networks[0] as NetworkConfig
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const direct = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await direct.request({ method: 'anvil_setBalance', params: [address, `0x${parseEther('1').toString(16)}`] } as never)
  const sender = senderWallet({ ...network, rpcUrl: proxy.url }, key, { turnWaitMaxMs: 300 })
  const to = privateKeyToAccount(generatePrivateKey()).address
  const send = (): Promise<Hex> => sender.inTurn(() => sender.walletClient.sendTransaction({ to, value: 1n }))
  proxy.setDelayOf({ methods: ['eth_sendRawTransaction'], ms: 1500 })
  const held = send()
  await new Promise((resolve) => setTimeout(resolve, 100))
  await t.rejects(send(), SenderBusyError, 'refused after waiting 300 ms, while the first is held')
  proxy.setDelayOf(undefined)
  const first = await held
  const next = await send()
  const receipts = await Promise.all([first, next].map((hash) => direct.waitForTransactionReceipt({ hash, pollingInterval: 50 })))
  t.same(receipts.map((r) => r.status), ['success', 'success'], 'the held one and the next mined')
  t.same(await Promise.all([first, next].map(async (hash) => (await direct.getTransaction({ hash })).nonce)), [0, 1], 'the refused one took no nonce')
  t.equal(await direct.getTransactionCount({ address }), 2, 'two sent')
})
