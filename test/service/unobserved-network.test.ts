// A network whose chain follower stopped, or has failed for the health hold, is not observed: a lease there could end
// only once its chain is seen past the deadline, so it would hold the lender's capacity and the offer for as long as
// the follower does not see the chain. The match route refused such a network (503 network_stopped,
// test/api/network-stopped.test.ts; 503 chain_unavailable, test/api/degraded-network.test.ts), but dispatch (the
// ticker and POST /credit/dispatch) leased its waiting offers all the same. Here it leases none of them while the
// follower does not observe the chain (ChainFollower.observesChain, test/chain/follower.test.ts), and leases them as
// before once it does.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { loadServiceConfig } from '../../src/app/config.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import type { ChainFollower } from '../../src/chain/follower.ts'
import { WalletWatcher } from '../../src/chain/watcher.ts'
import { Engine } from '../../src/engine/index.ts'
import { PassportBook } from '../../src/passport/book.ts'
import type { DispatchOutcome } from '../../src/engine/types.ts'
import { CreditService } from '../../src/service/credit-service.ts'
import type { Mutation } from '../../src/service/mutation.ts'
import { Store } from '../../src/store/index.ts'
import { FakeWallets, NET, T0, lenderInput, offerFor, registerBacking, seedSuppliers, unwrap } from '../engine/fixtures/world.ts'

const CONTRACT = '0x00000000000000000000000000000000000000cc' as Address

async function world(t: Test) {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-credit-unobserved-'))
  const store = await Store.open({ dataDir, verifyOnOpen: 'header' })
  t.teardown(async () => {
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  const engine = new Engine({}, new FakeWallets())
  seedSuppliers(engine)
  // Never reached: dispatch reads no chain.
  const network = { slug: NET, chainId: 31337, rpcUrl: 'http://127.0.0.1:9', creditContract: CONTRACT, tokens: [] } as unknown as NetworkConfig
  const service = new CreditService({
    config: loadServiceConfig({}, { dataDir, dispatchIntervalMs: 0 }), engine, store, networks: [network], clients: new Map(),
    watcher: new WalletWatcher([network]), clock: () => T0, passport: new PassportBook(store, generatePrivateKey()),
  })
  // The follower as dispatch sees it: only whether it observes the chain (the real one's loop is not the subject).
  const follower = { observesChain: false }
  service.followers.set(NET, follower as unknown as ChainFollower)
  // An offer that waits for a lender (none is registered when it is made), then a lender that could take it.
  registerBacking(engine)
  const offerId = offerFor(engine, {}, T0)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 10n ** 9n }), T0))
  return { engine, service, store, follower, offerId }
}

t.test("the dispatch ticker leases no offer of a network whose chain is not observed, and leases it once it is", async (t) => {
  const { engine, service, store, follower, offerId } = await world(t)
  await service.tick()
  t.equal(engine.getOffer(offerId)?.currentLeaseId, null, 'chain not observed: the offer still waits')
  t.equal(engine.creditState().counts.liveLeases, 0, 'no lease holds the lender')

  follower.observesChain = true
  await service.tick()
  await store.durable()
  t.not(engine.getOffer(offerId)?.currentLeaseId, null, 'observed again: leased as before')
})

t.test('POST /credit/dispatch leases no offer of a network whose chain is not observed either', async (t) => {
  const { engine, service, follower, offerId } = await world(t)
  const mutation = { ticket: undefined, encode: (value: unknown) => ({ status: 200, body: JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) }) } as unknown as Mutation<DispatchOutcome>
  await service.dispatch(mutation)
  t.equal(engine.getOffer(offerId)?.currentLeaseId, null, 'chain not observed: the offer still waits')

  follower.observesChain = true
  await service.dispatch(mutation)
  t.not(engine.getOffer(offerId)?.currentLeaseId, null, 'observed again: leased')
})
