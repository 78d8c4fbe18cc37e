// The service's senders (the operator's wallet, the x402 facilitator's: src/chain/clients.ts senderWallet) sign and
// send one transaction of an address at a time (inTurn). viem's nonceManager alone gave two transactions of an
// address that had sent none both nonce 0 when the second took its nonce after the first had taken its own but
// before the first reached the node's pool (its guard trusts the pending count unless the last nonce it handed out
// is above 0): the node refused the second ("replacement transaction underpriced" while the first waits in the pool, "nonce too low" once it is mined). Here the raw transactions reach
// anvil 300 ms late through a proxy, so the second begins in that window, every time.
import t, { type Test } from 'tap'
import { BaseError, createPublicClient, http, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain, refusedForNonce, SenderBusyError, senderWallet } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

let devnet: Awaited<ReturnType<typeof startDevnet>>
t.before(async () => {
  devnet = await startDevnet({ networks: [{ slug: 'devnet-a', chainId: 31337, x402SelfFacilitate: false }] })
})
t.teardown(() => devnet.stop())

/**
 * A fresh sender with 1 ETH whose calls go through an RPC proxy (`options`: senderWallet's), a client straight to the
 * chain, and `send(value)`: a transfer of `value` wei taken in turn.
 */
async function proxiedSender(t: Test, options: Parameters<typeof senderWallet>[2] = {}) {
  const network = devnet.networks[0] as NetworkConfig
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const direct = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await direct.request({ method: 'anvil_setBalance', params: [address, `0x${parseEther('1').toString(16)}`] } as never)
  const sender = senderWallet({ ...network, rpcUrl: proxy.url }, key, options)
  const to = privateKeyToAccount(generatePrivateKey()).address
  const send = (value = 1n): Promise<Hex> => sender.inTurn(() => sender.walletClient.sendTransaction({ to, value }))
  return { proxy, direct, address, send }
}

t.test('two transactions of a fresh sender begun 100 ms apart: both mined, nonces 0 and 1', async (t) => {
  const { proxy, direct, send } = await proxiedSender(t)
  proxy.setDelayOf({ methods: ['eth_sendRawTransaction'], ms: 300 })
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
  const { proxy, direct, address, send } = await proxiedSender(t, { turnWaitMaxMs: 300 })
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

// A send that timed out (its raw transaction held on the way, past the sender's deadline and its retries) and reaches
// the node late, after the next send in turn read the pending nonce and before that one reached the node: both carry
// the same nonce, and the node refuses the second ("nonce too low" once the first is mined, "replacement transaction
// underpriced" while it waits in the pool). viem's nonce manager re-reads the pending count after any failed send, but
// the late one is not counted yet when it does. The next send is submitted again once, with its nonce read afresh.
t.test('a send that timed out and reaches the node late does not take the next send\'s nonce from it', async (t) => {
  // A deadline of 2 s (the operator's is 10 s).
  const { proxy, direct, address, send } = await proxiedSender(t, { rpcTimeoutMs: 2_000 })
  proxy.setHoldOf(['eth_sendRawTransaction'])
  await t.rejects(send(1n), 'the first send timed out')
  const late = proxy.heldOf()
  t.ok(late >= 1, 'its transaction held on the way')
  const next = send(2n)
  while (proxy.heldOf() === late) await new Promise((resolve) => setTimeout(resolve, 10))
  // The late one reaches the node first, then the next send's own, which took the same nonce.
  proxy.setHoldOf(undefined)
  t.equal(await proxy.releaseHeldOf(), late + 1, 'the late one and the next one forwarded, in that order')
  const hash = await next
  const receipt = await direct.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  t.equal(receipt.status, 'success', 'the next send mined')
  t.equal((await direct.getTransaction({ hash })).value, 2n, 'its own transaction')
  t.equal(await direct.getTransactionCount({ address }), 2, 'the late one mined too, each with a nonce of its own')
})

// The other half: a send that timed out and never reaches the node leaves no gap in the nonces (viem's nonce manager
// reads the pending count again after a failed send), so the next one is not stuck behind a nonce nobody holds.
t.test('a send that timed out and never reaches the node leaves no gap: the next one takes its nonce', async (t) => {
  const { proxy, direct, send } = await proxiedSender(t, { rpcTimeoutMs: 500 })
  t.ok(await send(), 'a first one sent: the nonce manager counts from 1 now')
  // Its raw transaction held on the way and never forwarded (the node never hears of it).
  proxy.setHoldOf(['eth_sendRawTransaction'])
  await t.rejects(send(), 'the second timed out')
  proxy.setHoldOf(undefined)
  t.ok(proxy.heldOf() >= 1, 'its transaction held, never forwarded')
  const hash = await send()
  t.equal((await direct.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success', 'the third mined')
  t.equal((await direct.getTransaction({ hash })).nonce, 1, 'with the nonce the dropped one had')
})

// A raw transaction the node accepted and an RPC gateway sent again (it lost the first answer): the second is refused
// "nonce too low" (the first mined) though the transaction is this very one. Before sentOnce, the send took the
// refusal for another transaction's and signed and sent the transfer once more with a fresh nonce: paid twice.
t.test('a raw transaction a gateway sends twice is one transfer: the send answers its hash', async (t) => {
  const { proxy, direct, address, send } = await proxiedSender(t)
  proxy.setRepeatedOf(['eth_sendRawTransaction'])
  const sent = await send(5n).catch((error: unknown) => error)
  t.equal(await direct.getTransactionCount({ address }), 1, 'one transfer, not two')
  t.equal(proxy.count('eth_sendRawTransaction'), 1, 'one raw transaction sent (the proxy forwarded it twice)')
  t.type(sent, 'string', 'the send answered a hash, not the refusal')
  const hash = sent as Hex
  const receipt = await direct.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  t.equal(receipt.status, 'success', 'the hash answered is the mined transfer')
  t.equal((await direct.getTransaction({ hash })).value, 5n, 'of 5 wei')
  proxy.setRepeatedOf(undefined)
  const next = await send(6n)
  t.equal((await direct.getTransaction({ hash: next })).nonce, 1, 'the next send takes the next nonce')
})

// What is submitted again: a transaction the node refused for its nonce, never one already in its pool.
t.test('refusedForNonce: nonce too low and an underpriced replacement, not "already known"', async (t) => {
  const refusal = (details: string) => new BaseError('Transaction failed.', { details })
  t.equal(refusedForNonce(refusal('nonce too low')), true)
  t.equal(refusedForNonce(refusal('replacement transaction underpriced')), true)
  t.equal(refusedForNonce(refusal('already known')), false, 'this very transaction in the pool: sent once is enough')
  t.equal(refusedForNonce(refusal('insufficient funds for gas * price + value')), false)
  t.equal(refusedForNonce(new Error('nonce too low')), false, 'a node\'s refusal comes as viem\'s error')
})
