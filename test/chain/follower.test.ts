// The chain follower against anvil and CreditFacilityV2, its consumer committing every event and the cursor in one
// LMDB commit (events stored create-only, so a double delivery would fail the commit): every event exactly once across
// a restart, a failing consumer, an RPC outage (dead RPC, then a paused anvil); chunked eth_getLogs; batches cut at
// block boundaries within eventsPerBatchMax; confirmations; idle delivery of chain time; a node behind the cursor is
// waited for; a replaced chain or a wrong chain stops it with a clear error instead of re-reading.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { zeroHash, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startAnvil } from '../../src/chain/anvil.ts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { parseNetworksConfig, toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { chainBehindReadsMin, ChainFollower, ChainStaleError, FollowerFatalError, RpcStalledError, type ChainBatch, type FollowerOptions } from '../../src/chain/follower.ts'
import { FollowerCursors } from '../../src/chain/follower-cursor.ts'
import { createPollingClients, SharedHead } from '../../src/chain/poll-transport.ts'
import { newKeySalt, offerKey, legacyJobKey } from '../../src/chain/ids.ts'
import { Store, StoreConflictError } from '../../src/store/index.ts'
import { tempDataDir } from '../fixtures/service.ts'
import { setupFacilityV2, USDC, type V2Fixture } from './fixtures/facility-v2.ts'
import { startRpcProxy, type RpcProxy } from './fixtures/rpc-proxy.ts'

let f: V2Fixture
let proxy: RpcProxy
const root = tempDataDir('follower-')
const salt = newKeySalt()
let sequence = 0

t.before(async () => {
  f = await setupFacilityV2(t)
  proxy = await startRpcProxy(f.network.rpcUrl)
})
t.teardown(async () => {
  try {
    // Rejects when the proxy itself failed on a call (a fault of the fixture): this file fails, naming it.
    await proxy.close()
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})

/** `rounds` x (fundJob, paySupplier, repay): three events of the contract each. */
async function activity(rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const n = ++sequence
    const client = await f.wallet(105n * USDC)
    const lender = await f.wallet(100n * USDC)
    const job = legacyJobKey(`job_follow_${n}`)
    await f.call(client, 'fundJob', [job, f.token, 100n * USDC, client.account.address])
    const now = await f.chainNow()
    const a = {
      offerKey: offerKey(salt, `off_${n}`), jobKey: job, payer: lender.account.address, supplier: privateKeyToAccount(generatePrivateKey()).address,
      asset: f.token, amount: 10n * USDC, fee: 1n * USDC, reserveShare: 0n, deadline: now + 600n, dueAt: now + 3600n,
    }
    await f.call(lender, 'paySupplier', [a, f.authorize(a)])
    await f.call(client, 'repay', [a.offerKey, 5n * USDC])
  }
}

/** The chain's head now: viem's cached block number can be a few blocks old when blocks come as fast as transactions. */
function headBlock(): Promise<bigint> {
  return f.publicClient.getBlockNumber({ cacheTime: 0 })
}

/** Every event of the contract from `fromBlock` on, as `txHash:logIndex`, in chain order. */
async function groundTruth(fromBlock: bigint): Promise<string[]> {
  const logs = await f.publicClient.getContractEvents({ address: f.facility, abi: creditFacilityV2Abi, fromBlock, strict: true })
  return logs.map((log) => `${log.transactionHash}:${log.logIndex}`)
}

async function eventually(t: Test, what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.fail(`not within ${timeoutMs} ms: ${what}`)
  throw new Error(`timed out: ${what}`)
}

/**
 * A follower whose consumer commits the batch's events (create-only) and the cursor to `store` in one commit; stopped
 * when `t` ends at the latest (before the teardowns registered earlier: the store's, the proxy's target), so that no
 * poll outlives its test when a wait fails before the test's own stop().
 */
function lmdbFollower(t: Test, store: Store, options: Partial<FollowerOptions> & { network?: NetworkConfig } = {}) {
  const network = options.network ?? f.network
  const cursors = new FollowerCursors(store)
  const events = store.collection<{ name: string; blockNumber: string }>('follower-test-event')
  const delivered: string[] = []
  const batches: ChainBatch[] = []
  const conflicts: unknown[] = []
  const follower = new ChainFollower({
    network,
    contract: f.facility,
    cursor: cursors.get(network.slug, f.facility),
    pollIntervalMs: 50,
    chainTimeIntervalMs: 200,
    backoffInitialMs: 50,
    backoffMaxMs: 200,
    // Generous: with the suite running files in parallel on two cores, anvil answers slowly, and a deadline tighter
    // than its latency keeps the follower in back-off forever (the confirmations case once never caught up). The
    // outage cases do not depend on it: a paused or dead RPC is seen at this deadline, well inside their waits.
    rpcTimeoutMs: 5_000,
    ...options,
    consume: async (batch) => {
      if (options.consume !== undefined) await options.consume(batch)
      await store.commit({
        records: [
          ...batch.events.map((e) => events.putOp(`${e.txHash}:${e.logIndex}`, { name: e.name, blockNumber: e.blockNumber.toString() }, { onlyIfAbsent: true })),
          cursors.putOp(f.facility, batch),
        ],
      }).catch((error: unknown) => {
        if (error instanceof StoreConflictError) conflicts.push(error)
        throw error
      })
      delivered.push(...batch.events.map((e) => `${e.txHash}:${e.logIndex}`))
      batches.push(batch)
    },
  })
  t.teardown(() => follower.stop())
  const stored = () => [...events.iterate()].map((e) => e.key).sort()
  return { follower, delivered, batches, conflicts, stored, cursors }
}

t.test('every event exactly once, in chain order, across a restart; the cursor lives in LMDB', async (t) => {
  const dataDir = join(root, 'restart')
  const startBlock = await headBlock()
  await activity(2)
  const first = await Store.open({ dataDir })
  const one = lmdbFollower(t, first, { startBlock })
  t.equal(one.cursors.get(f.network.slug, f.facility), undefined, 'a fresh store has no cursor')
  one.follower.start()
  const truthA = await groundTruth(startBlock)
  t.equal(truthA.length, 6)
  await eventually(t, 'first follower delivers activity A', () => one.stored().length === truthA.length)
  await one.follower.stop()
  const cursorA = one.follower.cursor
  await first.close()

  await activity(2)
  const second = await Store.open({ dataDir })
  const two = lmdbFollower(t, second, { startBlock })
  t.same(two.cursors.get(f.network.slug, f.facility), cursorA, 'the restarted follower reads the committed cursor back')
  two.follower.start()
  const truth = await groundTruth(startBlock)
  await eventually(t, 'second follower delivers activity B', () => two.stored().length === truth.length)
  await two.follower.stop()
  t.same(two.stored(), [...truth].sort(), 'the store holds every event of the contract, each once')
  t.same([...one.delivered, ...two.delivered], truth, 'delivered in chain order, none twice across the restart')
  t.same([...one.conflicts, ...two.conflicts], [], 'no event was delivered twice')
  const paid = two.batches.flatMap((b) => b.events).find((e) => e.name === 'SupplierPaid')
  t.ok(paid !== undefined && paid.name === 'SupplierPaid' && paid.args.amount === 10n * USDC && paid.args.offerKey !== zeroHash, 'events come decoded and typed')
  for (const batch of [...one.batches, ...two.batches]) {
    t.ok(batch.events.every((e) => e.blockNumber >= batch.fromBlock && e.blockNumber <= batch.toBlock && e.blockTimeMs <= batch.toBlockTimeMs), `batch ${batch.fromBlock}..${batch.toBlock} holds its own blocks`)
  }
  await second.close()
})

t.test("with no cursor, the follower starts at the network's deploymentBlock: nothing before it is read", async (t) => {
  const store = await Store.open({ dataDir: join(root, 'deployment-block') })
  t.teardown(() => store.close())
  const before = await headBlock()
  await activity(1)
  const deploymentBlock = (await headBlock()) + 1n
  // The networks file names the block (as a number); the follower is given no startBlock of its own.
  const [network] = parseNetworksConfig(toNetworksFile([{ ...f.network, deploymentBlock }]), {})
  t.equal(network?.deploymentBlock, deploymentBlock)
  const follower = lmdbFollower(t, store, { network: network as NetworkConfig })
  follower.follower.start()
  await activity(1)
  const truth = await groundTruth(deploymentBlock)
  const older = (await groundTruth(before + 1n)).filter((e) => !truth.includes(e))
  t.ok(older.length >= 3, 'there are events before the deployment block')
  await eventually(t, 'the events from the deployment block on are delivered', () => follower.stored().length === truth.length)
  await follower.follower.stop()
  t.same(follower.delivered, truth, 'exactly the events from the deployment block on')
  t.equal(follower.batches[0]?.fromBlock, deploymentBlock, 'the first range starts at the deployment block')
})

t.test('a consumer that fails gets the same range again; nothing lost or doubled', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'consumer') })
  t.teardown(() => store.close())
  const startBlock = await headBlock()
  const failed: ChainBatch[] = []
  const follower = lmdbFollower(t, store, {
    startBlock,
    consume: async (batch) => {
      if (batch.events.length > 0 && failed.length < 2) {
        failed.push(batch)
        throw new Error('disk full')
      }
    },
  })
  let consumerFailures = 0
  follower.follower.on('consumerFailed', () => consumerFailures++)
  follower.follower.start()
  await activity(1)
  const truth = await groundTruth(startBlock)
  await eventually(t, 'all events committed after two failures', () => follower.stored().length === truth.length)
  await follower.follower.stop()
  t.equal(consumerFailures, 2)
  const retried = follower.batches.find((b) => b.events.length > 0) as ChainBatch
  t.equal(retried.fromBlock, failed[0]?.fromBlock, 'the range starts where the failed one did')
  t.ok(retried.toBlock >= (failed[0] as ChainBatch).toBlock, 'and covers it')
  t.same(follower.stored(), [...truth].sort())
  t.same(follower.conflicts, [])
})

t.test('an RPC outage (dead RPC, then a paused anvil): degraded, then recovered from the cursor, every event once', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'outage') })
  t.teardown(() => store.close())
  const startBlock = await headBlock()
  const follower = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url } })
  const transitions: string[] = []
  follower.follower.on('degraded', () => transitions.push('degraded'))
  follower.follower.on('recovered', () => transitions.push('recovered'))
  follower.follower.start()
  await eventually(t, 'first batch', () => follower.batches.length > 0)

  proxy.setMode('down')
  await eventually(t, 'degraded while the RPC is down', () => follower.follower.status().state === 'degraded')
  await activity(1)
  const cursorDuringOutage = follower.follower.cursor
  proxy.setMode('forward')
  await eventually(t, 'recovered', () => follower.follower.status().state === 'ok')
  t.ok(follower.follower.cursor !== undefined && cursorDuringOutage !== undefined && follower.follower.cursor.blockNumber >= cursorDuringOutage.blockNumber)

  // A paused anvil: calls hang, which the follower reads as an outage too: first as a call unanswered for rpcStalledMs
  // (2 s), then at the call's deadline.
  const pid = f.devnet.anvils[0]?.pid as number
  process.kill(pid, 'SIGSTOP')
  try {
    await eventually(t, 'degraded while anvil is paused', () => follower.follower.status().state === 'degraded', 15_000)
    t.match(follower.follower.status().error ?? '', /has not answered a call .* for 2000 ms/, 'a call unanswered for rpcStalledMs counts as failing')
    await eventually(t, 'the hanging call ended at its deadline', () => /took too long|timed out|timeout/i.test(follower.follower.status().error ?? ''), 15_000)
  } finally {
    process.kill(pid, 'SIGCONT')
  }
  await eventually(t, 'recovered after SIGCONT', () => follower.follower.status().state === 'ok')
  await activity(1)
  const truth = await groundTruth(startBlock)
  await eventually(t, 'every event after both outages', () => follower.stored().length === truth.length)
  await follower.follower.stop()
  t.same(transitions, ['degraded', 'recovered', 'degraded', 'recovered'])
  t.same(follower.stored(), [...truth].sort())
  t.same(follower.delivered, truth, 'in order, none twice')
})

/** A follower reading through the proxy from the chain's head, started and caught up; its fatal errors, its cursor then. */
async function caughtUpBehindProxy(t: Test, store: Store, options: Partial<FollowerOptions>) {
  proxy.setTarget(f.network.rpcUrl)
  const startBlock = await headBlock()
  const follower = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url }, ...options })
  const fatal: FollowerFatalError[] = []
  follower.follower.on('fatal', (error) => fatal.push(error))
  follower.follower.start()
  await activity(1)
  await eventually(t, 'caught up', async () => follower.stored().length === (await groundTruth(startBlock)).length)
  const cursor = follower.follower.cursor as NonNullable<typeof follower.follower.cursor>
  return { follower, fatal, startBlock, cursor }
}

/** caughtUpBehindProxy on a store of its own, with the errors the follower turns degraded on from then. */
async function caughtUpWatched(t: Test, name: string, options: Partial<FollowerOptions>) {
  const store = await Store.open({ dataDir: join(root, name) })
  t.teardown(() => store.close())
  const caughtUp = await caughtUpBehindProxy(t, store, options)
  const failures: unknown[] = []
  caughtUp.follower.follower.on('degraded', ({ error }) => failures.push(error))
  return { ...caughtUp, failures }
}

t.test('a hanging RPC (calls accepted, never answered) counts as failing once a call is unanswered for rpcStalledMs, long before its deadline; the call is let finish, and followed', async (t) => {
  t.teardown(() => proxy.setHanging(undefined))
  // A deadline no wait of this test reaches: the follower can see the hang only by the call being unanswered.
  const { follower, startBlock, failures } = await caughtUpWatched(t, 'hanging', { rpcTimeoutMs: 120_000, rpcStalledMs: 300, healthHoldMs: 500 })
  const before = proxy.held()
  proxy.setHanging({ headToo: true })
  await eventually(t, '/health degraded while the RPC hangs', () => follower.follower.health().state === 'degraded')
  t.notOk(follower.follower.observesChain, 'no lease on it')
  t.ok(failures.length === 1 && failures[0] instanceof RpcStalledError, 'counted as a stalled call', { failures })
  t.match(follower.follower.health().error, /has not answered a call of the chain follower for 300 ms/, 'health says why')
  t.equal(proxy.held().abandoned, before.abandoned, 'no call given up: the follower did not wait for a deadline')
  t.ok(proxy.held().now >= 1, 'the call still waits for its answer')

  // Events meanwhile; the RPC answers again, the held call first: the follower goes on from it.
  await activity(1)
  proxy.setHanging(undefined)
  await eventually(t, 'following again', () => follower.follower.status().state === 'ok')
  t.ok(proxy.held().answered > before.answered && proxy.held().abandoned === before.abandoned, 'the held calls answered, none given up', proxy.held())
  const truth = await groundTruth(startBlock)
  await eventually(t, 'every event after the hang', () => follower.stored().length === truth.length)
  await follower.follower.stop()
  t.same(follower.delivered, truth, 'every event once, in order')
})

t.test('a slow but working RPC (every call answered 150 ms late, rpcStalledMs 1 s) is never counted as failing', async (t) => {
  t.teardown(() => proxy.setDelay(undefined))
  const { follower, startBlock, failures } = await caughtUpWatched(t, 'slow', { rpcStalledMs: 1_000 })
  proxy.setDelay(150)
  proxy.reset()
  await activity(1)
  const truth = await groundTruth(startBlock)
  await eventually(t, 'every event, answered slowly', () => follower.stored().length === truth.length)
  await eventually(t, 'twenty slow calls', () => Object.values(proxy.counts()).reduce((a, b) => a + b, 0) >= 20)
  await follower.follower.stop()
  t.same(failures, [], 'never degraded')
  t.same(follower.delivered, truth)
})

t.test("a head that stops advancing (the RPC's node lost its peers) is a chain that stopped: degraded once its block is older than headStaleMs by the wall clock; the idle devnet (anvil mines on its interval) is not", async (t) => {
  t.teardown(() => proxy.setLagging(undefined))
  const headStaleMs = 3_000
  const { follower, startBlock, failures } = await caughtUpWatched(t, 'stale-head', { headStaleMs })

  // Idle for longer than the bound: the devnet's anvil mines a block a second without transactions.
  const idleFromMs = Date.now()
  await eventually(t, 'idle past the bound', () => Date.now() - idleFromMs > headStaleMs + 500)
  t.same(failures, [], 'an idle chain that mines is not stale')
  t.equal(follower.follower.health().state, 'ok')

  // The node answering stops at the current head: its number stays where it is, above the follower's cursor.
  const frozen = await headBlock()
  proxy.setLagging({ head: frozen, headToo: true })
  await activity(1)
  await eventually(t, '/health degraded once the head is stale', () => follower.follower.health().state === 'degraded')
  t.ok(failures.length === 1 && failures[0] instanceof ChainStaleError, 'counted as a stale head', { failures })
  t.match(follower.follower.health().error, new RegExp(`block ${frozen}, was mined \\d+ s ago .* does not move`), 'health says why')
  t.notOk(follower.follower.observesChain, 'no lease on it')
  t.equal(follower.follower.cursor?.blockNumber, frozen, 'what the stale node serves is applied')

  proxy.setLagging(undefined)
  const truth = await groundTruth(startBlock)
  await eventually(t, 'every event once the head moves again', () => follower.stored().length === truth.length && follower.follower.status().state === 'ok')
  await follower.follower.stop()
  t.same(follower.delivered, truth, 'every event once, in order')
})

t.test('a node behind the cursor (head below it, or its block not found) is waited for: nothing applied meanwhile, then every event once', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'lagging') })
  t.teardown(() => store.close())
  t.teardown(() => proxy.setLagging(undefined))
  // An hour: the lag below is never taken as a replaced chain.
  const { follower, fatal, startBlock, cursor } = await caughtUpBehindProxy(t, store, { headBehindMaxMs: 3_600_000 })

  // A node two blocks behind the cursor answers: it has not seen the cursor's block.
  proxy.setLagging({ head: cursor.blockNumber - 2n, headToo: true })
  await activity(1)
  await eventually(t, 'degraded while the head is behind', () => follower.follower.status().state === 'degraded')
  // Under a head read just before the lag (a poll takes one begun within its interval), the cursor's block not found.
  t.match(follower.follower.status().error ?? '', /head \d+ is behind the follower's cursor|block \d+ read earlier is not found/, 'health says the chain is behind')
  const batches = follower.batches.length
  proxy.reset()
  await eventually(t, 'more polls while behind', () => proxy.count('eth_getBlockByNumber') >= 10)
  t.equal(follower.batches.length, batches, 'nothing applied while behind')
  t.same(follower.follower.cursor, cursor, 'nothing advanced')

  // A head past the cursor from one node, the cursor's block not found by the node that answers that read.
  proxy.setLagging({ head: cursor.blockNumber - 1n, headToo: false })
  await eventually(t, 'the block not found is waited for too', () => /block \d+ read earlier is not found/.test(follower.follower.status().error ?? ''))
  t.equal(follower.follower.status().state, 'degraded')
  t.equal(follower.batches.length, batches, 'nothing applied while the block is not found')

  // The node catches up: the follower resumes from its cursor.
  proxy.setLagging(undefined)
  const truth = await groundTruth(startBlock)
  // Both at once: when the lag brought no new event, every event was stored before it, and the first check alone
  // held while the follower had not polled its way back yet (a CI run read 'degraded' here).
  await eventually(t, 'every event after the lag, the follower ok again', () => follower.stored().length === truth.length && follower.follower.status().state === 'ok')
  t.equal(follower.follower.status().state, 'ok')
  await follower.follower.stop()
  t.same(fatal, [], 'never fatal')
  t.same(follower.conflicts, [], 'nothing delivered twice')
  t.same(follower.delivered, truth, 'every event once, in order')
})

t.test('a node behind, then an RPC outage longer than headBehindMaxMs, then behind again: not a replaced chain until behind for the bound after the outage', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'behind-outage') })
  t.teardown(() => store.close())
  t.teardown(() => {
    proxy.setLagging(undefined)
    proxy.setMode('forward')
  })
  // The follower's clock, moved by hand: how long anything lasted is what the test says, not how fast the machine is.
  let nowMs = Date.now()
  const { follower, fatal, cursor } = await caughtUpBehindProxy(t, store, { headBehindMaxMs: 60_000, nowMs: () => nowMs })

  // The node falls behind, then stops answering for an hour (it restarts), then answers behind again while it syncs.
  proxy.setLagging({ head: cursor.blockNumber - 2n, headToo: true })
  await eventually(t, 'behind', () => /is behind the follower's cursor/.test(follower.follower.status().error ?? ''))
  proxy.setMode('down')
  await eventually(t, 'the outage seen', () => !/is behind/.test(follower.follower.status().error ?? ''))
  nowMs += 3_600_000
  proxy.reset()
  proxy.setMode('forward')
  await eventually(t, 'read behind again, more than chainBehindReadsMin times (or stopped)', () => fatal.length > 0 || proxy.count('eth_getBlockByNumber') >= 2 * chainBehindReadsMin)
  t.same(fatal, [], 'an hour without answers is not an hour behind: still waiting')
  t.equal(follower.follower.status().state, 'degraded')
  t.same(follower.follower.cursor, cursor, 'nothing advanced')

  // Behind for the bound, counted from the answers after the outage: the chain was replaced.
  nowMs += 60_000
  await eventually(t, 'stopped once behind for the bound', () => fatal.length === 1)
  t.equal(fatal[0]?.code, 'chain_replaced')
  t.same(follower.follower.cursor, cursor, 'the cursor never moved')
  await follower.follower.stop()
  t.same(follower.conflicts, [], 'nothing delivered twice')
})

t.test('eth_getLogs answered by a node behind the head: with 1 confirmation no event is skipped or doubled, and nothing advances past a block whose logs were not read, across a restart', async (t) => {
  const dataDir = join(root, 'logs-lag')
  proxy.setTarget(f.network.rpcUrl)
  t.teardown(() => proxy.setLogsLag(undefined))
  const network = { ...f.network, rpcUrl: proxy.url }
  const lagBlocks = 3n
  // The real chain's head when a batch is consumed: the lagging node had seen up to lagBlocks below it at most.
  const pastUnreadLogs: string[] = []
  const consume = async (batch: ChainBatch) => {
    const head = await headBlock()
    if (batch.toBlock > head - lagBlocks) pastUnreadLogs.push(`batch ${batch.fromBlock}..${batch.toBlock} at head ${head}`)
  }
  const startBlock = await headBlock()
  // Every eth_getLogs from a node 3 blocks behind the one that answers the head and the blocks: with 1 confirmation,
  // each event's block is read while that node has not seen it.
  proxy.setLogsLag(lagBlocks)
  proxy.reset()
  const first = await Store.open({ dataDir })
  const one = lmdbFollower(t, first, { startBlock, network, confirmations: 1, consume })
  one.follower.start()
  await activity(1)
  // Past the last event's block (on the old follower: at once, the events of the last blocks skipped for good).
  const firstEnd = await headBlock()
  await eventually(t, 'the cursor past the first activity', () => (one.follower.cursor?.blockNumber ?? -1n) >= firstEnd)
  t.same(one.stored(), (await groundTruth(startBlock)).sort(), 'every event up to the cursor applied')
  t.ok(proxy.params('eth_getLogs').some((params) => (params as [{ blockHash?: Hex }])[0].blockHash !== undefined), 'the blocks near the head read by hash')

  // A restart mid-way (some events of the next activity applied, not all) while the node still lags: from the
  // committed cursor, nothing applied twice, nothing skipped.
  const applied = one.stored().length
  const more = activity(2)
  await eventually(t, 'part of the next activity applied', () => one.stored().length > applied)
  await one.follower.stop()
  await first.close()
  const second = await Store.open({ dataDir })
  const two = lmdbFollower(t, second, { startBlock, network, confirmations: 1, consume })
  two.follower.start()
  await more
  const secondEnd = await headBlock()
  await eventually(t, 'the cursor past the second activity, while the node still lags', () => (two.follower.cursor?.blockNumber ?? -1n) >= secondEnd)
  await two.follower.stop()
  const truth = await groundTruth(startBlock)
  t.ok(one.delivered.length > applied && two.delivered.length > 0, 'the restart came mid-way through the activity')
  t.same(two.stored(), [...truth].sort(), 'the store holds every event of the contract, each once')
  t.same([...one.delivered, ...two.delivered], truth, 'in chain order, none twice across the restart')
  t.same([...one.conflicts, ...two.conflicts], [], 'no event delivered twice')
  t.same(pastUnreadLogs, [], 'no batch ended on a block the node answering eth_getLogs had not seen')
  await second.close()
})

t.test('eth_getLogs is chunked, and a batch is bounded, over many blocks', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'chunks') })
  t.teardown(() => store.close())
  const startBlock = (await headBlock()) + 1n
  for (let i = 0; i < 3; i++) {
    await activity(1)
    await f.testClient.mine({ blocks: 7 })
  }
  const head = await headBlock()
  proxy.reset()
  // Every block by range (logsSafeDepth 0): the ones near the head are read one by one otherwise (the test below).
  const follower = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url }, logBlockRangeMax: 3n, batchBlockRangeMax: 6n, logsSafeDepth: 0 })
  follower.follower.start()
  const truth = await groundTruth(startBlock)
  // Every event stored is not yet every block read: the blocks after the last event are still being read by range.
  await eventually(t, 'every event and every block through small chunks', () => follower.stored().length === truth.length && (follower.follower.cursor?.blockNumber ?? -1n) >= head)
  await follower.follower.stop()
  const ranges = proxy.params('eth_getLogs').map((p) => {
    const [filter] = p as [{ fromBlock: Hex; toBlock: Hex }]
    return BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n
  })
  t.ok(ranges.length >= Number((head - startBlock + 1n) / 3n), `${ranges.length} eth_getLogs calls for ${head - startBlock + 1n} blocks`)
  t.ok(ranges.every((r) => r >= 1n && r <= 3n), 'none over 3 blocks')
  t.ok(follower.batches.every((b) => b.toBlock - b.fromBlock + 1n <= 6n), 'no batch over 6 blocks')
  t.same(follower.delivered, truth)
})

t.test('idle ranges are delivered as empty batches, at most once per interval, and advance chain time', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'idle') })
  t.teardown(() => store.close())
  const startBlock = await headBlock()
  const deliveredAtMs: number[] = []
  const follower = lmdbFollower(t, store, { startBlock, chainTimeIntervalMs: 400, consume: async () => void deliveredAtMs.push(Date.now()) })
  const emptyBatches = () => follower.batches.filter((b) => b.events.length === 0)
  const startedAtMs = Date.now()
  follower.follower.start()
  // Polls (every 50 ms) for 1.2 s at least, and until two empty batches came however loaded the machine (they are
  // waited for): one batch per poll would be 24 or more, against the bound's 4.
  await new Promise((resolve) => setTimeout(resolve, 1_200))
  await eventually(t, 'two empty batches', () => emptyBatches().length >= 2)
  await follower.follower.stop()
  const ranMs = Date.now() - startedAtMs
  const empty = emptyBatches()
  t.ok(empty.length <= ranMs / 400 + 1, `not one per poll: ${empty.length} empty batches in ${ranMs} ms`)
  for (let i = 1; i < deliveredAtMs.length; i++) {
    t.ok((deliveredAtMs[i] as number) - (deliveredAtMs[i - 1] as number) >= 400 - 5, 'no two idle deliveries within the interval')
  }
  const times = empty.map((b) => b.toBlockTimeMs)
  t.ok(times.every((time, i) => i === 0 || time >= (times[i - 1] as number)) && (times.at(-1) as number) > (times[0] as number), 'chain time moves forward')
  t.ok(empty.every((b, i) => i === 0 || b.fromBlock === (empty[i - 1] as ChainBatch).toBlock + 1n), 'contiguous ranges: no block skipped')
})

/**
 * A follower from block 0 on a chain of the network's id that mines only when told to (no block comes while it polls),
 * behind the counting proxy until the test ends; returned once its cursor is at the chain's fifth block, with how to
 * mine more.
 */
async function quietFollower(t: Test, name: string, chainTimeIntervalMs: number, options: Partial<FollowerOptions> = {}) {
  const store = await Store.open({ dataDir: join(root, name) })
  t.teardown(() => store.close())
  const quiet = await startAnvil({ chainId: f.network.chainId })
  t.teardown(() => quiet.stop())
  const mine = (blocks: number) => fetch(quiet.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: [`0x${blocks.toString(16)}`] }) })
  await mine(5)
  proxy.setTarget(quiet.rpcUrl)
  t.teardown(() => proxy.setTarget(f.network.rpcUrl))
  // A chain that mines only when told to has no block time: its head does not move while idle, and is not stale for it.
  const { follower } = lmdbFollower(t, store, { startBlock: 0n, chainTimeIntervalMs, confirmations: 1, network: { ...f.network, rpcUrl: proxy.url, blockTimeMs: undefined }, ...options })
  follower.start()
  await eventually(t, 'the cursor at the head', () => follower.cursor?.blockNumber === 5n)
  return { follower, mine, rpcUrl: quiet.rpcUrl }
}

/** The next dozen polls read the head and nothing else. */
async function pollsReadTheHeadOnly(t: Test, what: string): Promise<void> {
  proxy.reset()
  await eventually(t, 'a dozen polls', () => proxy.count('eth_getBlockByNumber') >= 12)
  t.same(Object.keys(proxy.counts()), ['eth_getBlockByNumber'], 'no other call')
  t.ok(proxy.params('eth_getBlockByNumber').every((params) => (params as unknown[])[0] === 'latest'), what)
}

t.test('while the head is unchanged, a poll reads the head only: the cursor is checked again when the head moves', async (t) => {
  const { follower, mine } = await quietFollower(t, 'quiet', 0)
  // The poll after a delivery checks the new cursor's block under the head; the ones after it read the head alone.
  proxy.reset()
  await eventually(t, 'polls after the delivery', () => proxy.count('eth_getBlockByNumber') >= 6)
  await pollsReadTheHeadOnly(t, 'only the head, no block of the cursor')
  // A new block: the cursor's block is checked again under it.
  proxy.reset()
  await mine(1)
  await eventually(t, 'the cursor at the new head', () => follower.cursor?.blockNumber === 6n)
  t.ok(proxy.params('eth_getBlockByNumber').some((params) => (params as unknown[])[0] === '0x5'), 'the cursor checked under the new head')
  t.match(proxy.params('eth_getLogs'), [[{ blockHash: /^0x/ }]], 'the new block\'s logs: one eth_getLogs, by its hash')
  await follower.stop()
})

t.test('blocks at least logsSafeDepth below the head are read by range, each one above it alone: its header, then its logs by hash', async (t) => {
  const { follower, mine, rpcUrl } = await quietFollower(t, 'safe-depth', 0, { logsSafeDepth: 3 })
  // Ten blocks while the RPC is down: the first poll after it reads them all under the head 15.
  proxy.setMode('down')
  t.teardown(() => proxy.setMode('forward'))
  await eventually(t, 'degraded', () => follower.status().state === 'degraded')
  await mine(10)
  proxy.reset()
  proxy.setMode('forward')
  await eventually(t, 'the cursor at the new head', () => follower.cursor?.blockNumber === 15n)
  const quiet = createPollingClients({ ...f.network, rpcUrl }, { timeoutMs: 5_000 }).publicClient
  const hashes = await Promise.all([13n, 14n, 15n].map(async (blockNumber) => (await quiet.getBlock({ blockNumber })).hash))
  const reads = proxy.params('eth_getLogs').map((params) => {
    const [filter] = params as [{ fromBlock?: Hex; toBlock?: Hex; blockHash?: Hex }]
    return filter.blockHash ?? `${filter.fromBlock}..${filter.toBlock}`
  })
  t.same(reads, ['0x6..0xc', ...hashes], 'blocks 6..12 (3 or more below the head) by range, 13, 14 and 15 each by its hash')
  t.same(proxy.params('eth_getBlockByNumber').map((params) => (params as unknown[])[0]).filter((tag) => tag !== 'latest' && tag !== '0x5' && tag !== '0xf'), ['0xc', '0xd', '0xe'], 'the range\'s end block and each block above it read once (besides the cursor\'s checks)')
  await follower.stop()
})

t.test('a block whose logs the node answering eth_getLogs has not seen: waited for (degraded), never passed; the blocks before it delivered', async (t) => {
  const { follower, mine } = await quietFollower(t, 'logs-unseen', 0)
  t.teardown(() => proxy.setLogsLag(undefined))
  proxy.setLogsLag(2n)
  await mine(1)
  await eventually(t, 'degraded on block 6', () => follower.status().state === 'degraded')
  t.match(follower.status().error ?? '', /the logs of block 6 \(0x[0-9a-f]{64}\) are not found by the RPC.*nothing after block 5 is applied/, 'health says which block is waited for')
  proxy.reset()
  await eventually(t, 'polls while waiting', () => proxy.count('eth_getLogs') >= 3)
  t.equal(follower.cursor?.blockNumber, 5n, 'nothing advanced past block 5')
  // Two more blocks: the node has seen block 6, not 7.
  await mine(2)
  await eventually(t, 'block 6 delivered', () => follower.cursor?.blockNumber === 6n)
  proxy.reset()
  await eventually(t, 'polls while block 7 is not seen', () => proxy.count('eth_getLogs') >= 3)
  t.equal(follower.cursor?.blockNumber, 6n, 'block 7 not passed')
  proxy.setLogsLag(undefined)
  await eventually(t, 'caught up once the node has the blocks', () => follower.cursor?.blockNumber === 8n && follower.status().state === 'ok')
  await follower.stop()
})

t.test("health behind a trailing node holds: degraded only once the follower has failed for healthHoldMs, ok only once it has followed as long; the chain is not observed (no lease) from the same moment, observed again at once", async (t) => {
  // The hold's clock is the test's: only the steps' order matters, not how long anything takes.
  let clockMs = 0
  const holdMs = 10_000
  const { follower, mine } = await quietFollower(t, 'health-hold', 0, { nowMs: () => clockMs, healthHoldMs: holdMs })
  t.teardown(() => proxy.setLogsLag(undefined))
  t.same(follower.health(), { state: 'ok', error: undefined }, 'the first ok is shown at once')
  // The node answering eth_getLogs trails by 2 blocks: each new block stalls the follower until that node has it.
  const transitions: string[] = []
  follower.on('degraded', () => transitions.push('degraded'))
  follower.on('recovered', () => transitions.push('recovered'))
  proxy.setLogsLag(2n)
  await mine(1)
  await eventually(t, 'stalled on block 6', () => follower.status().state === 'degraded')
  t.equal(follower.health().state, 'ok', 'a stall shorter than the hold does not show')
  t.ok(follower.observesChain, 'nor does it stop leases')
  await mine(2)
  await eventually(t, 'block 6 delivered, then stalled on block 7', () => follower.cursor?.blockNumber === 6n && follower.status().state === 'degraded')
  t.same(transitions, ['degraded', 'recovered', 'degraded'], 'the step flapped')
  t.equal(follower.health().state, 'ok', 'health did not')

  clockMs += holdMs
  t.notOk(follower.observesChain, 'stalled for the hold: the chain is not observed')
  t.match(follower.health(), { state: 'degraded', error: /the logs of block 7 .* are not found/ }, 'stalled for the hold: degraded, saying why')
  proxy.setLogsLag(undefined)
  await eventually(t, 'caught up', () => follower.cursor?.blockNumber === 8n && follower.status().state === 'ok')
  t.match(follower.health(), { state: 'degraded', error: /block 7/ }, 'following again, but not yet for the hold: still degraded')
  t.ok(follower.observesChain, 'but the chain is observed at once')
  clockMs += holdMs
  t.same(follower.health(), { state: 'ok', error: undefined }, 'following for the hold: ok')
  await follower.stop()
  t.equal(follower.health().state, 'stopped', 'stopped shows at once')
  t.notOk(follower.observesChain, 'stopped: the chain is not observed')
})

t.test('blocks scanned and not yet delivered (chain time not due): the polls after the scan read the head only', async (t) => {
  // The first range is delivered at once (nothing delivered yet); after it, empty ranges wait an hour.
  const { follower, mine } = await quietFollower(t, 'quiet-scanned', 3_600_000)
  proxy.reset()
  await mine(1)
  await eventually(t, 'the new block scanned', () => proxy.count('eth_getLogs') >= 1)
  await eventually(t, 'a poll after the scan', () => proxy.count('eth_getBlockByNumber') >= 6)
  await pollsReadTheHeadOnly(t, 'only the head: neither the cursor\'s block nor the scanned one again')
  t.equal(follower.cursor?.blockNumber, 5n, 'the scanned block is not delivered before its chain time is due')
  await follower.stop()
})

t.test('with a head shared with the wallet watcher, a poll takes a head read begun within its interval instead of its own', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'shared-head') })
  t.teardown(() => store.close())
  proxy.setTarget(f.network.rpcUrl)
  const network = { ...f.network, rpcUrl: proxy.url }
  const head = new SharedHead(createPollingClients(network, { timeoutMs: 5_000 }))
  const read = await head.latest(Number.NEGATIVE_INFINITY)
  proxy.reset()
  // One poll an hour: the first poll comes at once, and the watcher's read (above) began within its interval.
  const follower = lmdbFollower(t, store, { startBlock: read.number, chainTimeIntervalMs: 0, confirmations: 1, network, pollIntervalMs: 3_600_000, head })
  follower.follower.start()
  await eventually(t, 'the first poll delivered up to the shared head', () => follower.follower.cursor?.blockNumber === read.number)
  t.equal(follower.follower.cursor?.blockHash, read.hash)
  t.notOk(proxy.params('eth_getBlockByNumber').some((params) => (params as unknown[])[0] === 'latest'), 'no head read of its own')
  await follower.follower.stop()
})

t.test('a replaced chain, or a wrong one, stops the follower with a clear error instead of re-reading', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'replaced') })
  t.teardown(() => store.close())
  proxy.setTarget(f.network.rpcUrl)
  const startBlock = await headBlock()
  // An hour to wait for a chain behind: the replacement below is caught at once, by the cursor's block's hash.
  const follower = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url }, headBehindMaxMs: 3_600_000 })
  follower.follower.start()
  await activity(1)
  const truth = await groundTruth(startBlock)
  await eventually(t, 'caught up', () => follower.stored().length === truth.length)
  // Freeze it (the RPC down: nothing more can be delivered), so that the cursor read here is the committed one.
  proxy.setMode('down')
  await eventually(t, 'degraded', () => follower.follower.status().state === 'degraded')
  const cursor = follower.follower.cursor as NonNullable<typeof follower.follower.cursor>

  // The same chain id, started afresh and made longer than the cursor: same heights, other hashes.
  const replacement = await startAnvil({ chainId: f.network.chainId })
  t.teardown(() => replacement.stop())
  await fetch(replacement.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: [`0x${(cursor.blockNumber + 50n).toString(16)}`] }) })
  const fatal = new Promise<FollowerFatalError>((resolve) => follower.follower.once('fatal', resolve))
  const batchesBefore = follower.batches.length
  proxy.setTarget(replacement.rpcUrl)
  proxy.setMode('forward')
  const error = await fatal
  t.equal(error.code, 'chain_replaced')
  t.match(error.message, new RegExp(`block ${cursor.blockNumber} has hash`), 'the message names the block and both hashes')
  t.equal(follower.follower.status().state, 'stopped')
  t.equal(follower.batches.length, batchesBefore, 'nothing of the other chain was delivered')
  t.same(new FollowerCursors(store).get(f.network.slug, f.facility), cursor, 'the committed cursor is untouched')
  await follower.follower.stop()

  // A chain behind the cursor (restarted without state, shorter): waited for as a node not yet synced, then refused
  // once that has lasted headBehindMaxMs.
  const shorter = await startAnvil({ chainId: f.network.chainId })
  t.teardown(() => shorter.stop())
  proxy.setTarget(shorter.rpcUrl)
  const again = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url }, headBehindMaxMs: 1_000 })
  const seen: string[] = []
  again.follower.on('degraded', ({ error }) => seen.push(`degraded: ${(error as Error).message}`))
  const behind = new Promise<FollowerFatalError>((resolve) => again.follower.once('fatal', resolve))
  again.follower.start()
  const replaced = await behind
  t.equal(replaced.code, 'chain_replaced')
  t.match(replaced.message, /behind the follower's cursor \d+, on \d+ reads over \d+ ms/)
  t.match(seen[0] ?? '', /^degraded: .*behind the follower's cursor \d+: waiting/, 'waited for before the bound')
  t.equal(again.follower.status().state, 'stopped')
  t.equal(again.batches.length, 0)
  await again.follower.stop()

  // An RPC of another chain id: refused before reading anything.
  const other = await startAnvil({ chainId: 31_399 })
  t.teardown(() => other.stop())
  const wrong = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: other.rpcUrl } })
  const wrongChain = new Promise<FollowerFatalError>((resolve) => wrong.follower.once('fatal', resolve))
  wrong.follower.start()
  t.equal((await wrongChain).code, 'wrong_chain')
  await wrong.follower.stop()

  // Started while its RPC is down: the chain id is checked once the RPC answers, before anything is read.
  proxy.setMode('down')
  proxy.setTarget(other.rpcUrl)
  const late = lmdbFollower(t, store, { startBlock, network: { ...f.network, rpcUrl: proxy.url } })
  const lateWrong = new Promise<FollowerFatalError>((resolve) => late.follower.once('fatal', resolve))
  late.follower.start()
  await eventually(t, 'degraded while the RPC is down', () => late.follower.status().state === 'degraded')
  proxy.setMode('forward')
  t.equal((await lateWrong).code, 'wrong_chain')
  t.equal(late.batches.length, 0)
  await late.follower.stop()
  proxy.setTarget(f.network.rpcUrl)
})

t.test('refuseOlderContract: a node without the contract yet (behind its deployment block) is waited for and probed again; code without reclaimDelay() stops it', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'probe') })
  t.teardown(() => store.close())
  proxy.setTarget(f.network.rpcUrl)
  const startBlock = await headBlock()
  // A node that has seen the genesis block only: no code at the contract at its head, and a call to it answers empty
  // data, which was taken for an older contract (stopped for good).
  proxy.setLagging({ head: 0n, headToo: true })
  t.teardown(() => proxy.setLagging(undefined))
  proxy.reset()
  const lagging = lmdbFollower(t, store, { startBlock, refuseOlderContract: true, network: { ...f.network, rpcUrl: proxy.url } })
  lagging.follower.start()
  await eventually(t, 'probed again', () => proxy.count('eth_getCode') >= 3 || lagging.follower.status().state === 'stopped')
  t.match(lagging.follower.status(), { state: 'degraded', error: /no code at the credit contract .* at its head 0/ }, 'waiting, not stopped')
  t.equal(lagging.batches.length, 0, 'nothing delivered meanwhile')
  proxy.setLagging(undefined)
  await eventually(t, 'following once the node has the contract', () => lagging.follower.status().state === 'ok' || lagging.follower.status().state === 'stopped')
  t.equal(lagging.follower.status().state, 'ok')
  await lagging.follower.stop()

  // Code that does not answer reclaimDelay() (the stablecoin, standing for a deployment before reclaimJob): stopped.
  const older = lmdbFollower(t, store, { startBlock, refuseOlderContract: true, contract: f.token, network: { ...f.network, rpcUrl: proxy.url } })
  const fatal = new Promise<FollowerFatalError>((resolve) => older.follower.once('fatal', resolve))
  older.follower.start()
  t.equal((await fatal).code, 'older_contract')
  t.equal(older.batches.length, 0)
  await older.follower.stop()
})

t.test('a range holding more events than eventsPerBatchMax comes in several batches, cut at block boundaries', async (t) => {
  t.throws(() => new ChainFollower({ network: f.network, contract: f.facility, cursor: undefined, consume: async () => {}, eventsPerBatchMax: 0 }), RangeError)
  const store = await Store.open({ dataDir: join(root, 'events-cap') })
  t.teardown(() => store.close())
  // Blocks of chosen sizes: 2, 2, 3, 1 events, an empty block, 6 events (over the cap of 5 alone), 2. The test mines
  // (interval mining and automine off) so that several transactions share a block; automine is back on afterwards
  // (anvil's mixed mode cannot come back: the confirmations test, after this one, sets the same mode).
  const sizes = [2, 2, 3, 1, 0, 6, 2]
  const wallets: Awaited<ReturnType<typeof f.wallet>>[] = []
  // One at a time: the deployer mints to each (its nonces in sequence).
  for (let i = sizes.reduce((a, b) => a + b); i > 0; i--) wallets.push(await f.wallet(10n * USDC))
  await f.testClient.setIntervalMining({ interval: 0 })
  await f.testClient.setAutomine(false)
  t.teardown(() => f.testClient.setAutomine(true))
  const startBlock = (await headBlock()) + 1n
  for (const size of sizes) {
    const hashes = await Promise.all(wallets.splice(0, size).map((who) => who.wallet.writeContract({
      address: f.facility, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [legacyJobKey(`job_cap_${++sequence}`), f.token, 10n * USDC, who.account.address],
    })))
    await f.testClient.mine({ blocks: 1 })
    for (const hash of hashes) t.equal((await f.publicClient.waitForTransactionReceipt({ hash })).status, 'success')
  }
  await f.testClient.setAutomine(true)
  const logs = await f.publicClient.getContractEvents({ address: f.facility, abi: creditFacilityV2Abi, fromBlock: startBlock, strict: true })
  const perBlock = new Map<bigint, number>()
  for (const log of logs) perBlock.set(log.blockNumber, (perBlock.get(log.blockNumber) ?? 0) + 1)
  t.same([...perBlock.values()], sizes.filter((size) => size > 0), 'the blocks hold the events as sent')

  const follower = lmdbFollower(t, store, { startBlock, logBlockRangeMax: 2n, eventsPerBatchMax: 5 })
  follower.follower.start()
  const truth = logs.map((log) => `${log.transactionHash}:${log.logIndex}`)
  await eventually(t, 'every event delivered', () => follower.stored().length === truth.length)
  await follower.follower.stop()
  t.same(follower.delivered, truth, 'every event exactly once, in chain order')
  t.same(follower.conflicts, [])
  const batches = follower.batches
  t.same(batches.filter((b) => b.events.length > 0).map((b) => b.events.length), [4, 4, 6, 2], 'cut before the block that would not fit; the oversized block alone')
  for (const [i, batch] of batches.entries()) {
    t.equal(batch.fromBlock, i === 0 ? startBlock : (batches[i - 1] as ChainBatch).toBlock + 1n, 'continuous: each batch starts after the previous cursor')
    const own = logs.filter((log) => log.blockNumber >= batch.fromBlock && log.blockNumber <= batch.toBlock).map((log) => `${log.transactionHash}:${log.logIndex}`)
    t.same(batch.events.map((e) => `${e.txHash}:${e.logIndex}`), own, `batch ${batch.fromBlock}..${batch.toBlock} holds every event of its blocks: whole blocks`)
    t.ok(batch.events.length <= 5 || new Set(batch.events.map((e) => e.blockNumber)).size === 1, 'within the cap, or one block alone')
    const block = await f.publicClient.getBlock({ blockNumber: batch.toBlock })
    t.same([batch.toBlockHash, batch.toBlockTimeMs], [block.hash, Number(block.timestamp) * 1000], 'the cursor is the last block\'s hash and time')
  }

  // The same blocks for a consumer whose events weigh 2 each (eventWeight; the service weighs a JobReclaimed so):
  // blocks of 4, 4, 6, 2, 12 and 4 against the cap of 5.
  const weighedStore = await Store.open({ dataDir: join(root, 'events-weight') })
  t.teardown(() => weighedStore.close())
  // Read by range (logsSafeDepth 0), where the first follower read these blocks near the head one by one: both cut.
  const weighed = lmdbFollower(t, weighedStore, { startBlock, logBlockRangeMax: 2n, eventsPerBatchMax: 5, eventWeight: (event) => (event.name === 'JobFunded' ? 2 : 1), logsSafeDepth: 0 })
  weighed.follower.start()
  await eventually(t, 'every weighed event delivered', () => weighed.stored().length === truth.length)
  await weighed.follower.stop()
  t.same(weighed.delivered, truth, 'every weighed event exactly once, in chain order')
  t.same(weighed.batches.filter((b) => b.events.length > 0).map((b) => b.events.length), [2, 2, 3, 1, 6, 2], 'cut by weight; a block over the cap alone')
})

t.test('confirmations: an event is delivered only once its block has them', async (t) => {
  const store = await Store.open({ dataDir: join(root, 'confirmations') })
  t.teardown(() => store.close())
  // Blocks only when a transaction comes (interval mining off, automine on): the test decides when confirmations grow.
  // Last in the file: anvil cannot be put back into its mixed mining mode afterwards.
  await f.testClient.setIntervalMining({ interval: 0 })
  await f.testClient.setAutomine(true)
  t.teardown(() => f.testClient.setIntervalMining({ interval: 1 }))
  const startBlock = (await headBlock()) + 1n
  const follower = lmdbFollower(t, store, { startBlock, confirmations: 3, chainTimeIntervalMs: 0 })
  follower.follower.start()
  const client = await f.wallet(10n * USDC)
  await f.call(client, 'fundJob', [legacyJobKey(`job_conf_${++sequence}`), f.token, 10n * USDC, client.account.address])
  const eventBlock = await headBlock()
  // Wait until the follower has caught up with what it may read (two blocks below the event), then check it stops there.
  await eventually(t, 'caught up to head - 2', () => (follower.follower.cursor?.blockNumber ?? -1n) === eventBlock - 2n)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(follower.follower.cursor?.blockNumber, eventBlock - 2n, 'one confirmation of 3: not read')
  t.equal(follower.delivered.length, 0)
  await f.testClient.mine({ blocks: 1 })
  await eventually(t, 'two confirmations: read up to head - 2', () => follower.follower.cursor?.blockNumber === eventBlock - 1n)
  t.equal(follower.delivered.length, 0, 'two confirmations of 3: not delivered')
  await f.testClient.mine({ blocks: 1 })
  await eventually(t, 'three confirmations: delivered', () => follower.delivered.length === 1)
  t.equal(follower.follower.cursor?.blockNumber, eventBlock)
  await follower.follower.stop()
})
