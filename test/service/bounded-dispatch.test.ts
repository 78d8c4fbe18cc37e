// The crash of issue 11's load mix: a chain follower's batch whose chain time passed the deadlines of thousands of live
// leases timed them all out in one command, the store refused the commit (more changes than one commit may hold) and
// the service exited (commit_failed_exiting). Here the service runs on a real store whose commits hold at most as many
// changes as the engine's budget: the batch commits, nothing is fatal, and the dispatch ticker, woken by the batch,
// expires the rest at once (one bounded command per turn of the event loop, not an interval apart).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { checkChangeBudget } from '../../src/app/app.ts'
import { loadServiceConfig } from '../../src/app/config.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import type { ChainBatch } from '../../src/chain/follower.ts'
import { FollowerCursors } from '../../src/chain/follower-cursor.ts'
import { WalletWatcher } from '../../src/chain/watcher.ts'
import { CHAIN_EVENT_CHANGES_MAX, chainEventsPerBatchMax } from '../../src/engine/chain-facts.ts'
import { Engine } from '../../src/engine/index.ts'
import { PassportBook } from '../../src/passport/book.ts'
import { CreditService } from '../../src/service/credit-service.ts'
import { Store } from '../../src/store/index.ts'
import { CHANGES_PER_COMMIT_MAX_DEFAULT } from '../../src/store/store.ts'
import { ESTABLISHED_ALLOWANCE } from '../fixtures/allowance.ts'
import { BORROWER, FakeWallets, NET, T0, lenderInput, offerFor, registerBacking, seedSuppliers, unwrap } from '../engine/fixtures/world.ts'

const CHANGES_MAX = 40
const LEASE_TTL_MS = 30_000
const CONTRACT = '0x00000000000000000000000000000000000000cc' as Address

async function world(t: Test) {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-credit-bounds-'))
  // The store refuses a commit of more than CHANGES_MAX changes, as the real one refuses more than 10,000.
  const store = await Store.open({ dataDir, changesPerCommitMax: CHANGES_MAX, verifyOnOpen: 'header' })
  t.teardown(async () => {
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  let nowMs = T0
  const clock = () => nowMs
  // Its lender is established (ESTABLISHED_ALLOWANCE): it holds the 60 leases at once.
  const engine = new Engine({ changesPerCommandMax: CHANGES_MAX, lendersScannedPerMatchMax: 8, leaseTtlMs: LEASE_TTL_MS, lenderLeaseAllowanceInitial: ESTABLISHED_ALLOWANCE }, new FakeWallets())
  seedSuppliers(engine)
  // Never reached: no chain read happens on this path (the watcher is not started, the batch is handed in).
  const network = { slug: NET, chainId: 31337, rpcUrl: 'http://127.0.0.1:9', creditContract: CONTRACT, tokens: [] } as unknown as NetworkConfig
  const service = new CreditService({
    config: loadServiceConfig({}, { dataDir, dispatchIntervalMs: 0 }), engine, store, networks: [network], clients: new Map(),
    watcher: new WalletWatcher([network]), clock, passport: new PassportBook(store, generatePrivateKey()),
  })
  const fatal: unknown[] = []
  service.onFatal((error) => fatal.push(error))
  const cursors = new FollowerCursors(store)
  const observe = (chainTimeMs: number) => {
    const batch: ChainBatch = { network: NET, fromBlock: BigInt(chainTimeMs), toBlock: BigInt(chainTimeMs), toBlockHash: `0x${'ab'.repeat(32)}`, toBlockTimeMs: chainTimeMs, events: [] }
    return service.observeChain(batch, cursors.putOp(CONTRACT, batch))
  }
  return { engine, service, store, fatal, observe, advance: (ms: number) => (nowMs += ms) }
}

t.test('a batch passing more lease deadlines than a commit holds: committed, not fatal, and the ticker expires the rest at once', async (t) => {
  const { engine, service, store, fatal, observe, advance } = await world(t)
  // The world's setup is not the subject: it goes to the engine directly, and the leases are asserted on below.
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 9n }), T0))
  await observe(T0)
  const leaseIds: string[] = []
  for (let i = 0; i < 60; i++) {
    const offerId = offerFor(engine, {}, T0)
    leaseIds.push((unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease as { leaseId: string }).leaseId)
  }

  advance(LEASE_TTL_MS + 5_000)
  const outcome = await observe(T0 + LEASE_TTL_MS + 5_000)
  t.same(fatal, [], 'the batch committed: nothing fatal')
  const first = outcome?.expiredLeases.length ?? 0
  t.ok(first > 0 && first < leaseIds.length, 'it timed out what fit, the rest stays due')
  t.ok(engine.dispatchDue(T0 + LEASE_TTL_MS + 5_000), 'the rest is due')

  // An interval of an hour: only the wake, and the immediate runs after each tick, can finish the work in this test.
  // No turn budget (one command per turn): this backlog is a few ms of work, which the service's budget would finish
  // in one turn.
  const ticker = service.startTicker(3_600_000, (error) => fatal.push(error), 0)
  t.teardown(ticker.stop)
  const midway = new Promise<number>((resolve) => setTimeout(() => resolve(leaseIds.filter((id) => engine.getLease(id) === undefined).length), 0))
  ticker.wake()
  t.ok((await midway) < leaseIds.length, 'other callbacks run while it catches up: one bounded command per turn')
  while (engine.dispatchDue(T0 + LEASE_TTL_MS + 5_000)) await new Promise((resolve) => setImmediate(resolve))
  await store.durable()
  t.same(fatal, [], 'no dispatch commit was refused')
  t.same(leaseIds.filter((id) => engine.getLease(id) !== undefined), [], 'every lease expired')
  t.same(leaseIds.filter((id) => store.getSnapshot('lease', id)?.final !== true), [], 'and is stored final')
})

t.test("the service refuses to start with an engine change budget above the store's changes per commit", async (t) => {
  t.throws(() => checkChangeBudget({ changesPerCommandMax: CHANGES_PER_COMMIT_MAX_DEFAULT + 1 }), RangeError)
  t.doesNotThrow(() => checkChangeBudget({ changesPerCommandMax: CHANGES_PER_COMMIT_MAX_DEFAULT }))
})

t.test("a follower batch carries no more events than their most changes fit in the engine's change budget", async (t) => {
  for (const changesPerCommandMax of [CHAIN_EVENT_CHANGES_MAX, CHANGES_MAX, CHANGES_PER_COMMIT_MAX_DEFAULT]) {
    const events = chainEventsPerBatchMax({ changesPerCommandMax })
    t.ok(events >= 1 && events * CHAIN_EVENT_CHANGES_MAX <= changesPerCommandMax && (events + 1) * CHAIN_EVENT_CHANGES_MAX > changesPerCommandMax, `${events} events for ${changesPerCommandMax} changes`)
  }
  t.throws(() => chainEventsPerBatchMax({ changesPerCommandMax: CHAIN_EVENT_CHANGES_MAX - 1 }), RangeError, 'a budget that no event fits in is refused at start-up')
})
