// A backing source's committed capacity is not written when offers and advances take and give it back (issue 11):
// the restore derives it from the live offers and open advances the store holds. Every command's changes go to a
// real store; after a restart on that directory the restored engine equals the one that ran, decides a request at
// the edge of the source's capacity the same way, and keeps every invariant.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { storedSnapshots } from '../../src/app/app.ts'
import { Engine, type EngineConfig } from '../../src/engine/index.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../../src/engine/migrations.ts'
import type { SourceRecord } from '../../src/engine/types.ts'
import { Store } from '../../src/store/index.ts'
import {
  canonical, creditRequest, dispatchAt, FakeWallets, fundAdvance, lenderInput, matchedLender, offerFor, registerBacking, repaidFact, seedSuppliers, T0, unwrap,
} from '../engine/fixtures/world.ts'
import { tempDir } from '../store/fixtures/helpers.ts'

const CONFIG: Partial<EngineConfig> = { leaseTtlMs: 30_000, offerTtlMs: 600_000 }
const VALUE_ATOMIC = 10_000_000n

function openStore(dataDir: string): Promise<Store> {
  return Store.open({ dataDir, snapshotVersions: SNAPSHOT_VERSIONS, migrations: snapshotMigrations() })
}

/** The engine with every command's changes committed to `store`, in command order. */
function committing(engine: Engine, store: Store, commits: Promise<unknown>[]): Engine {
  return new Proxy(engine, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args) as { ok?: boolean; changes?: unknown[] } | undefined
        if (result?.ok === true && Array.isArray(result.changes) && result.changes.length > 0) commits.push(store.commit({ changes: result.changes as never }))
        return result
      }
    },
  })
}

t.test('a restart derives a backing source\'s committed capacity that offers and advances never wrote', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const wallets = new FakeWallets()
  const engine = new Engine(CONFIG, wallets)
  const store = await openStore(dataDir)
  const commits: Promise<unknown>[] = []
  const run = committing(engine, store, commits)

  seedSuppliers(run)
  registerBacking(run, 'src_1', VALUE_ATOMIC)
  unwrap(run.registerLender(lenderInput(1), T0))
  // An advance repaid, an advance open, an offer leased, a lease timed out and its offer expired, an offer waiting.
  const repaid = fundAdvance(run, { amountAtomic: 2_000n }, T0, 1)
  unwrap(run.repayAdvance(repaidFact(run, repaid, `0x${'ab'.repeat(32)}`), T0))
  fundAdvance(run, { amountAtomic: 3_000n }, T0, 2)
  const expiring = offerFor(run, { amountAtomic: 500n })
  t.ok(matchedLender(run, expiring), 'the offer is leased')
  unwrap(dispatchAt(run, T0 + CONFIG.leaseTtlMs! + 1_000))
  unwrap(dispatchAt(run, T0 + CONFIG.offerTtlMs! + 2_000))
  const leased = offerFor(run, { amountAtomic: 700n }, T0 + CONFIG.offerTtlMs! + 3_000)
  t.ok(matchedLender(run, leased, T0 + CONFIG.offerTtlMs! + 3_000), 'the last offer is leased')
  offerFor(run, { amountAtomic: 900n }, T0 + CONFIG.offerTtlMs! + 3_000)
  await Promise.all(commits)
  await store.close()

  const committed = engine.snapshots().find((c) => c.kind === 'source')?.record as SourceRecord
  t.equal(committed.committedAtomic, 3_000n + 700n + 900n, 'the open advance, the leased and the waiting offer hold capacity')

  const reopened = await openStore(dataDir)
  t.teardown(() => reopened.close())
  const stored = reopened.getSnapshot('source', 'src_1')?.snapshot as SourceRecord
  t.equal(stored.committedAtomic, 0n, 'the stored source is as registered: no offer or advance rewrote it')
  const restored = new Engine(CONFIG, wallets, storedSnapshots(reopened))
  restored.checkInvariants()
  t.equal(canonical(restored.snapshots()), canonical(engine.snapshots()), 'the restored engine equals the one that ran')

  // At the source's edge: what is left fits, one atomic unit more does not, in both engines alike.
  const nowMs = T0 + CONFIG.offerTtlMs! + 4_000
  const left = VALUE_ATOMIC - committed.committedAtomic
  for (const amountAtomic of [left + 1n, left]) {
    const request = creditRequest({ amountAtomic, maximumFeeAtomic: 0n })
    t.equal(canonical(restored.requestCredit(request, nowMs)), canonical(engine.requestCredit(request, nowMs)), `a request of ${amountAtomic}: the same decision`)
  }
  t.equal(restored.snapshots().filter((c) => c.kind === 'offer').length, 3, 'only the request that fits opened an offer')
})
