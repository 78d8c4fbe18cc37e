// The dispatch ticker's pace (src/service/ticker-pace.ts): the leases one step of a network's observed chain time
// makes due are timed out across the time after that step was seen, in their deadlines' order, not in one burst; a
// lease never times out before the observed chain time is past its deadline.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { loadServiceConfig } from '../../src/app/config.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import type { ChainBatch } from '../../src/chain/follower.ts'
import { FollowerCursors } from '../../src/chain/follower-cursor.ts'
import { WalletWatcher } from '../../src/chain/watcher.ts'
import { Engine } from '../../src/engine/index.ts'
import { PassportBook } from '../../src/passport/book.ts'
import { CreditService } from '../../src/service/credit-service.ts'
import { LeasePacer } from '../../src/service/ticker-pace.ts'
import { Store } from '../../src/store/index.ts'
import { ESTABLISHED_ALLOWANCE } from '../fixtures/allowance.ts'
import { BORROWER, FakeWallets, NET, T0, lenderInput, offerFor, registerBacking, seedSuppliers, unwrap } from '../engine/fixtures/world.ts'

const LEASE_TTL_MS = 30_000
const CONTRACT = '0x00000000000000000000000000000000000000cc' as Address

t.test('the pacer: a first observation is not paced; a step is spread over the time since it was seen, at most one spread', async (t) => {
  const clock = { ms: 0 }
  const pacer = new LeasePacer(() => clock.ms, 1000)
  t.equal(pacer.pace('a', 10_000), 10_000, "the network's first chain time: every lease due before it is taken")
  clock.ms = 300
  t.equal(pacer.pace('a', 11_000), 10_000, 'a new step, just seen: only the deadlines before its start')
  clock.ms = 550
  t.equal(pacer.pace('a', 11_000), 10_250, 'a quarter of a second later: the deadlines of its first quarter')
  clock.ms = 1_400
  t.equal(pacer.pace('a', 11_000), 11_100, 'past the step: every deadline of it')
  clock.ms = 1_500
  t.equal(pacer.pace('a', 12_000), 11_000, 'the next step starts at its own start, the step before being done')
  clock.ms = 1_600
  t.equal(pacer.pace('a', 13_000), 12_000, 'a step seen before the one before was done: that one is due at once, this one paced')
  clock.ms = 1_700
  t.equal(pacer.pace('a', 60_000), 59_000, 'a long step (a follower catching up): all but its last spread at once')
  t.equal(pacer.pace('b', 5_000), 5_000, 'each network has its own pace')
})

async function world(t: Test) {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-credit-pace-'))
  const store = await Store.open({ dataDir, verifyOnOpen: 'header' })
  t.teardown(async () => {
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  let nowMs = T0
  // Its lender is established (ESTABLISHED_ALLOWANCE): it holds the 40 leases at once.
  const engine = new Engine({ lendersScannedPerMatchMax: 8, leaseTtlMs: LEASE_TTL_MS, lenderLeaseAllowanceInitial: ESTABLISHED_ALLOWANCE }, new FakeWallets())
  seedSuppliers(engine)
  // Never reached: no chain read happens on this path (the watcher is not started, the batch is handed in).
  const network = { slug: NET, chainId: 31337, rpcUrl: 'http://127.0.0.1:9', creditContract: CONTRACT, tokens: [] } as unknown as NetworkConfig
  const service = new CreditService({
    config: loadServiceConfig({}, { dataDir, dispatchIntervalMs: 0 }), engine, store, networks: [network], clients: new Map(),
    watcher: new WalletWatcher([network]), clock: () => nowMs, passport: new PassportBook(store, generatePrivateKey()),
  })
  const fatal: unknown[] = []
  service.onFatal((error) => fatal.push(error))
  const cursors = new FollowerCursors(store)
  const observe = (chainTimeMs: number) => {
    const batch: ChainBatch = { network: NET, fromBlock: BigInt(chainTimeMs), toBlock: BigInt(chainTimeMs), toBlockHash: `0x${'ab'.repeat(32)}`, toBlockTimeMs: chainTimeMs, events: [] }
    return service.observeChain(batch, cursors.putOp(CONTRACT, batch))
  }
  return { engine, service, fatal, observe, setNow: (ms: number) => (nowMs = ms) }
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test("the ticker times out one chain second's leases across the next second, in their deadlines' order", async (t) => {
  const { engine, service, fatal, observe, setNow } = await world(t)
  // The world's setup is not the subject: it goes to the engine directly.
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 9n }), T0))
  await observe(T0)
  // 40 leases granted 25 ms apart: deadlines spread over one chain second, all over at the same whole second.
  const leaseIds: string[] = []
  for (let i = 0; i < 40; i++) {
    setNow(T0 + 25 * i)
    const offerId = offerFor(engine, {}, T0 + 25 * i)
    leaseIds.push((unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 25 * i)).lease as { leaseId: string }).leaseId)
  }
  const pacerClock = { ms: 0 }
  const ticker = service.startTicker(3_600_000, (error) => fatal.push(error), 1, new LeasePacer(() => pacerClock.ms))
  t.teardown(ticker.stop)
  const expired = () => leaseIds.filter((id) => engine.getLease(id) === undefined)

  // The chain at the seconds' start, seen by the ticker: nothing due.
  await observe(T0 + LEASE_TTL_MS)
  ticker.wake()
  await settle(30)
  t.same(expired(), [], 'no deadline passed on chain: no time-out')

  // One block: every deadline passed on chain at once. The follower's batch times out what its command takes.
  const followerTook = (await observe(T0 + LEASE_TTL_MS + 1000))?.expiredLeases.length ?? 0
  t.ok(followerTook < 40, `the batch itself took ${followerTook}`)
  ticker.wake()
  await settle(30)
  t.equal(expired().length, Math.max(followerTook, 1), 'the step just seen: the ticker takes none of its leases yet (the batch took the first ones)')
  t.ok(engine.dispatchDue(T0 + LEASE_TTL_MS + 1000), 'the rest are due on chain')

  pacerClock.ms = 500
  await settle(60)
  // Deadlines T0 + 30,000 + 25 i: by 500 ms into the step those up to i = 20.
  t.equal(expired().length, Math.max(followerTook, 21), 'half the second later: the leases of its first half, no more')
  t.same(expired(), leaseIds.slice(0, expired().length), "in their deadlines' order")

  pacerClock.ms = 1000
  await settle(60)
  t.equal(expired().length, 40, 'a second later: all of them, with no wake (the ticker looked again while leases were held back)')
  t.same(fatal, [], 'nothing failed')
})
