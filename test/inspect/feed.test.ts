// The inspector's model against a real store: counts per machine and state and the transition feed follow the
// durable changes; after a restart they start from the store's live index and the feed shows each transition once.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { storedSnapshots } from '../../src/app/app.ts'
import { Engine } from '../../src/engine/index.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import { Inspector } from '../../src/inspect/inspector.ts'
import { Store, type Change } from '../../src/store/index.ts'
import { BORROWER, FakeWallets, T0, lenderInput, newEngine, offerFor, registerBacking, unwrap } from '../engine/fixtures/world.ts'
import { tempDir } from '../store/fixtures/helpers.ts'

t.test('counts and feed follow durable changes, and a restart shows no transition twice', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const options = { dataDir, snapshotVersions: SNAPSHOT_VERSIONS, migrations: snapshotMigrations() }
  let store = await Store.open(options)
  let inspector = new Inspector(store)
  const commit = async (result: { ok: boolean; changes?: Change[] }) => {
    if (!result.ok || !result.changes) throw new Error('refused')
    await store.commit({ changes: result.changes })
    inspector.onDurable(result.changes)
  }
  const { engine } = newEngine()
  const setup = engine.snapshots()
  await store.commit({ changes: setup })
  registerBacking(engine)
  await commit(engine.registerLender(lenderInput(1), T0))
  const offerId = offerFor(engine)
  await commit({ ok: true, changes: engine.snapshots() })
  t.equal(inspector.counts().offer.offered, 1, 'one offer waiting')
  const match = engine.matchOffer({ offerId, caller: BORROWER }, T0 + 10)
  await commit(match)
  const lease = unwrap(match).lease!
  t.same(inspector.counts().offer, { offered: 0, leased: 1, closing: 0, funded: 0, expired: 0, declined: 0 })
  t.same(inspector.counts().lease, { leased: 1, paid: 0, expired: 0 })
  t.same(inspector.recent(10).map((e) => `${e.kind} ${e.event}`), ['lease created', 'offer LEASE', 'offer created'], 'newest first, each once')

  await store.close()
  store = await Store.open(options)
  inspector = new Inspector(store)
  t.same(inspector.counts().lease, { leased: 1, paid: 0, expired: 0 }, 'counts come back from the live index')
  t.same(inspector.recent(10), [], 'the feed starts empty: it shows what happens from now on')
  const restored = new Engine({}, new FakeWallets(), storedSnapshots(store))
  // The chain observed past the lease's deadline (the second after it): the lease times out.
  const pastMs = lease.expiresAtMs + 1000
  await commit(restored.observeChain({ network: lease.network, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: pastMs, events: [] }, pastMs))
  t.same(inspector.recent(10).map((e) => `${e.kind} ${e.id} ${e.from}->${e.to} ${e.event}`), [
    `offer ${offerId} leased->offered LEASE_ENDED`, `lease ${lease.leaseId} leased->expired TIME_OUT`,
  ], 'only the new transitions, though the records carry the whole history')
  t.same(inspector.counts().lease, { leased: 0, paid: 0, expired: 0 }, 'a final actor leaves the counts')
  t.equal(inspector.lookup(lease.leaseId)?.final, true, 'and is still looked up, from the store')
  t.same(inspector.lookup(lease.leaseId)?.history.map((e) => e.event), ['created', 'TIME_OUT'])
  await store.close()
})
