import t from 'tap'
import { Store, type Change } from '../../src/store/index.ts'
import { freshStore } from './fixtures/helpers.ts'

const change = (i: number): Change => ({ kind: 'advance', id: `adv_${i}`, record: { i, owedAtomic: BigInt(i) * 10n ** 18n }, final: false })

t.test('N concurrent commits share fewer LMDB transactions than N, and every one is durable', async (t) => {
  const { store, dataDir } = await freshStore(t)
  const n = 500
  const results = await Promise.all(Array.from({ length: n }, (_, i) => store.commit({ changes: [change(i)] })))
  const stats = store.stats()
  t.equal(stats.commits, n)
  t.ok(stats.transactions < n, `transactions ${stats.transactions} < ${n}`)
  t.ok(stats.transactions >= 1)
  const txnIds = new Set(results.map((r) => r.txnId))
  t.equal(txnIds.size, stats.transactions, 'distinct LMDB txn ids = counted transactions')
  t.ok(stats.largestBatch > 1, `largest batch ${stats.largestBatch}`)
  await store.close()
  const reopened = await Store.open({ dataDir })
  t.teardown(() => reopened.close())
  t.equal(reopened.countLive('advance'), n)
  for (let i = 0; i < n; i++) {
    const entry = reopened.getSnapshot('advance', `adv_${i}`)
    if (!entry || (entry.snapshot as { owedAtomic: bigint }).owedAtomic !== BigInt(i) * 10n ** 18n) {
      t.fail(`adv_${i} missing or wrong after reopen`)
    }
  }
})

t.test('commits arriving while a transaction is in flight join the next one', async (t) => {
  const { store } = await freshStore(t)
  const first = store.commit({ changes: [change(0)] })
  await new Promise((r) => setImmediate(r))
  // The first transaction has started; these queue behind it and share one transaction.
  const later = Array.from({ length: 50 }, (_, i) => store.commit({ changes: [change(i + 1)] }))
  const [a, ...rest] = await Promise.all([first, ...later])
  const laterIds = new Set(rest.map((r) => r.txnId))
  t.equal(laterIds.size, 1, 'the 50 later commits shared one transaction')
  t.not([...laterIds][0], a!.txnId)
})

t.test('a batch is limited to commitsPerTxnMax commits', async (t) => {
  const { store } = await freshStore(t, { commitsPerTxnMax: 10 })
  await Promise.all(Array.from({ length: 35 }, (_, i) => store.commit({ changes: [change(i)] })))
  t.equal(store.stats().largestBatch, 10)
  t.ok(store.stats().transactions >= 4)
})

t.test('the queue is bounded: beyond pendingCommitsMax a commit is refused as overloaded', async (t) => {
  const { store } = await freshStore(t, { pendingCommitsMax: 5 })
  t.equal(store.hasRoom(), true)
  const accepted = Array.from({ length: 5 }, (_, i) => store.commit({ changes: [change(i)] }))
  t.equal(store.hasRoom(), false, 'hasRoom says in advance what the next commit would meet')
  await t.rejects(store.commit({ changes: [change(99)] }), { code: 'store_overloaded' })
  await Promise.all(accepted)
  t.equal(store.hasRoom(), true, 'room again once the queue drained')
  t.equal(store.getSnapshot('advance', 'adv_99'), undefined)
})
