// The wallet watcher against anvil: it sees balance and allowance changes within a bounded time, serves the last
// known values through an RPC outage (a TCP proxy we cut), and catches up once the RPC is back.
import { createServer, connect, type Server, type Socket } from 'node:net'
import t from 'tap'
import { createWalletClient, erc20Abi, http, zeroHash, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { newKeySalt, offerKey } from '../../src/chain/ids.ts'
import { WalletWatcher, type WalletView } from '../../src/chain/watcher.ts'
import { createPollingClients, SharedHead } from '../../src/chain/poll-transport.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'
import { newSessionKey } from '../../src/service/session-keys.ts'
import { setupDevnet, USDC } from './fixtures/devnet.ts'

/** Forwards 127.0.0.1:port to the target; `cut()` closes it and every connection, `restore()` listens again. */
class TcpProxy {
  #server: Server | undefined
  readonly #sockets = new Set<Socket>()
  port = 0
  constructor(readonly targetPort: number) {}

  async listen(): Promise<void> {
    const server = createServer((inbound) => {
      const outbound = connect(this.targetPort, '127.0.0.1')
      for (const socket of [inbound, outbound]) {
        this.#sockets.add(socket)
        socket.on('close', () => this.#sockets.delete(socket))
        socket.on('error', () => socket.destroy())
      }
      inbound.pipe(outbound).pipe(inbound)
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (server.address() as { port: number }).port
    this.#server = server
  }

  async cut(): Promise<void> {
    const server = this.#server
    this.#server = undefined
    for (const socket of this.#sockets) socket.destroy()
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

// Generous for a loaded 2-core CI machine; the watcher itself polls every 50 ms on the devnet.
const observeWithinMs = 5_000

t.test('wallet watcher', async (t) => {
  const f = await setupDevnet(t)
  const { network } = f
  const anvilPort = f.devnet.anvils[0]?.port as number
  const proxy = new TcpProxy(anvilPort)
  await proxy.listen()
  t.teardown(() => proxy.cut())

  const watched = { ...network, rpcUrl: `http://127.0.0.1:${proxy.port}` }
  const watcher = new WalletWatcher([watched, ...f.devnet.networks.slice(1)], { pollIntervalMs: 50, backoffMaxMs: 200, rpcTimeoutMs: 500 })
  t.teardown(() => watcher.stop())
  const view: WalletView = watcher
  watcher.start()

  const assets = Object.fromEntries(f.devnet.networks.map((n) => [n.slug, 'USDC']))
  const { privateKey, sessionKey } = newSessionKey(f.accounts.lender.address, f.devnet.networks, assets, 300n * USDC, Date.now())
  const holder = sessionKey.address
  const lender = f.actor('lender')
  const spendable = (): bigint => view.spendableAtomic(network.slug, 'USDC', holder)
  const balance = (): bigint | undefined => watcher.holding(network.slug, 'USDC', holder)?.balanceAtomic

  t.test('unknown is 0n; a watched holder is read at once', async (t) => {
    t.equal(spendable(), 0n, 'never watched')
    t.equal(view.spendableAtomic('no-such-network', 'USDC', holder), 0n, 'unknown network')
    t.equal(view.spendableAtomic(network.slug, 'DAI', holder), 0n, 'unknown asset')
    await f.transfer(lender, holder, 250n * USDC)
    watcher.watch(network.slug, holder)
    watcher.watch('devnet-b', holder)
    await watcher.waitFor(() => balance() === 250n * USDC, observeWithinMs)
    t.equal(spendable(), 0n, 'no allowance yet: nothing spendable')
  })

  t.test('allowance and balance changes are observed within a bounded time', async (t) => {
    await f.fundGas(holder)
    const started = Date.now()
    await f.waitSuccess(await f.signAndSend(privateKey, sessionKey.setupTransactions[0] as never))
    await watcher.waitFor(() => spendable() === 250n * USDC, observeWithinMs)
    t.ok(Date.now() - started < observeWithinMs, 'approval seen: spendable = min(balance 250, allowance 300)')

    await f.transfer(lender, holder, 100n * USDC)
    await watcher.waitFor(() => spendable() === 300n * USDC, observeWithinMs)
    t.equal(balance(), 350n * USDC, 'incoming transfer seen; spendable capped by the allowance')

    // A paySupplier spends both balance and allowance (OpenZeppelin emits no Approval on transferFrom).
    const lease = {
      offerKey: offerKey(newKeySalt(), 'off_w'), jobKey: zeroHash, payer: holder, supplier: f.accounts.supplier.address, asset: f.token,
      amount: 40n * USDC, fee: 0n, reserveShare: 0n, deadline: BigInt(Math.floor(Date.now() / 1000) + 600), dueAt: BigInt(Math.floor(Date.now() / 1000) + 3600),
    }
    await f.call(f.actor(privateKey), 'paySupplier', [lease, f.authorize(lease)])
    await watcher.waitFor(() => watcher.holding(network.slug, 'USDC', holder)?.allowanceAtomic === 260n * USDC, observeWithinMs)
    t.equal(balance(), 310n * USDC)
    t.equal(spendable(), 260n * USDC)
    // The same holder on the other network has its own values.
    const networkB = f.devnet.networks[1] as NetworkConfig
    const lenderB = createWalletClient({ account: privateKeyToAccount(f.accounts.lender.privateKey), chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
    await lenderB.writeContract({ address: networkB.tokens[0]?.address as Address, abi: erc20Abi, functionName: 'transfer', args: [holder, 7n] })
    await watcher.waitFor(() => watcher.holding('devnet-b', 'USDC', holder)?.balanceAtomic === 7n, observeWithinMs)
    t.equal(view.spendableAtomic('devnet-b', 'USDC', holder), 0n, 'no allowance on devnet-b yet')
    t.equal(balance(), 310n * USDC, 'devnet-a unchanged by a devnet-b transfer')
  })

  t.test('a holder told of a recorded movement is not current until a reading made after it is in', async (t) => {
    t.ok(watcher.isCurrent(network.slug, holder), 'current before')
    const before = watcher.holding(network.slug, 'USDC', holder)?.blockNumber as bigint
    watcher.invalidate(network.slug, holder)
    t.notOk(watcher.isCurrent(network.slug, holder), 'not current at once')
    t.ok(watcher.isCurrent('devnet-b', holder), 'its holding on another network is unaffected')
    await watcher.waitFor(() => watcher.isCurrent(network.slug, holder), observeWithinMs)
    t.ok((watcher.holding(network.slug, 'USDC', holder)?.blockNumber as bigint) >= before, 'current again after a new reading')
    const stranger = f.accounts.supplier.address
    watcher.invalidate(network.slug, stranger)
    t.ok(watcher.isCurrent(network.slug, stranger), 'an unwatched holder is not tracked')
  })

  t.test('with a head shared with the follower, a poll reuses a recent head read, but not one begun before an invalidation', async (t) => {
    const rpc = await startRpcProxy(network.rpcUrl)
    t.teardown(() => rpc.close())
    const counted = { ...network, rpcUrl: rpc.url }
    const head = new SharedHead(createPollingClients(counted, { timeoutMs: 2_000 }))
    // Polls an hour apart: after its first, this watcher polls only when an invalidation wakes it.
    const shared = new WalletWatcher([counted], { pollIntervalMs: 3_600_000, heads: new Map([[network.slug, head]]) })
    t.teardown(() => shared.stop())
    shared.watch(network.slug, holder)
    const read = await head.latest(Number.NEGATIVE_INFINITY)
    rpc.reset()
    shared.start()
    await shared.waitFor(() => shared.status()[0]?.lastBlock !== undefined, observeWithinMs)
    // The first poll is over once its tick is out and the loop sleeps (after this turn's microtasks).
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(shared.holding(network.slug, 'USDC', holder)?.blockNumber, read.number, 'the first poll read at the shared head')
    t.equal(rpc.count('eth_getBlockByNumber'), 0, 'without reading the head itself')
    t.equal(rpc.count('eth_blockNumber'), 0)

    shared.invalidate(network.slug, holder)
    await shared.waitFor(() => shared.isCurrent(network.slug, holder), observeWithinMs)
    t.equal(rpc.count('eth_getBlockByNumber'), 1, 'the invalidation made the poll read the head anew')
    t.equal(rpc.count('eth_blockNumber'), 0)
  })

  t.test('survives an RPC outage and re-reads after it', async (t) => {
    const before = spendable()
    await proxy.cut()
    await watcher.waitFor(() => watcher.isDegraded(network.slug), observeWithinMs)
    t.equal(spendable(), before, 'the last known value is served while degraded')
    t.notOk(watcher.isDegraded('devnet-b'), 'only the failing network is degraded')
    t.strictSame(
      watcher.status().map((s) => [s.network, s.degraded, s.holders]),
      [
        [network.slug, true, 1],
        ['devnet-b', false, 1],
      ],
    )

    // The chain moves on while the watcher cannot see it.
    const other: Address = f.accounts.attester.address
    await f.transfer(f.actor(privateKey), other, 10n * USDC)
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.equal(balance(), 310n * USDC, 'unchanged while cut off')
    t.ok(watcher.isDegraded(network.slug), 'still degraded')

    await proxy.listen()
    await watcher.waitFor(() => !watcher.isDegraded(network.slug), 5_000)
    await watcher.waitFor(() => balance() === 300n * USDC, observeWithinMs)
    t.pass('the change made during the outage is seen after recovery')

    await f.transfer(lender, holder, 1n)
    await watcher.waitFor(() => balance() === 300n * USDC + 1n, observeWithinMs)
    t.pass('and later changes keep being observed')
  })
})
