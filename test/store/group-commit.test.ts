import t from 'tap'
import { Store, StoreConflictError, type Change } from '../../src/store/index.ts'
import { freshStore } from './fixtures/helpers.ts'

const change = (i: number): Change => ({ kind: 'advance', id: `adv_${i}`, record: { i, owedAtomic: BigInt(i) * 10n ** 18n }, final: false })

/**
 * A record that throws when the encoder reads it inside the transaction (a record is first read there: the encoder
 * checks it as it writes it, issue 11).
 */
function encoderTrap(): object {
  const trap = {}
  Object.defineProperty(trap, 'x', {
    enumerable: true,
    get: () => {
      throw new Error('encoder trap')
    },
  })
  return trap
}

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

t.test('commits issued in the turn that acknowledges a group join the commits queued during its write', async (t) => {
  const { store } = await freshStore(t)
  const first = store.commit({ changes: [change(0)] })
  await new Promise((r) => setImmediate(r))
  // Queued while the first group is written.
  const queued = store.commit({ changes: [change(1)] })
  // Issued once the first is acknowledged, a few microtasks later (as an awaiting caller's next command is), in the
  // same turn: it shares the next group with the queued one instead of following in a transaction of its own.
  const issued = first.then(async () => {
    await null
    await null
    return store.commit({ changes: [change(2)] })
  })
  const [a, b, c] = await Promise.all([first, queued, issued])
  t.not(b.txnId, a.txnId)
  t.equal(c.txnId, b.txnId, 'one transaction for both')
  t.equal(store.stats().transactions, 2)
})

t.test('stats report where the group transactions\' time went: each part summed, growing with every transaction', async (t) => {
  const { store } = await freshStore(t)
  const before = store.stats().cycleMs
  t.same(before, { toCallback: 0, callback: 0, toResolved: 0, acks: 0 }, 'nothing written yet')
  await store.commit({ changes: [change(0)] })
  const after = store.stats().cycleMs
  for (const part of ['toCallback', 'callback', 'toResolved', 'acks'] as const) t.ok(after[part] >= 0, `${part} ${after[part]} ms`)
  // The callback (applyGroup: the checks, encoding and puts) and the commit's sync each take some time.
  t.ok(after.callback > 0 && after.toResolved > 0, 'the callback and the commit are timed')
  await store.commit({ changes: [change(1)] })
  t.ok(store.stats().cycleMs.toResolved > after.toResolved, 'the second transaction adds to the sums')
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

// Issue 11: a group writes each key once (the last accepted write) and checks each commit against the state the
// commits before it leave; these pin what that must not change.
t.test('in one group the last accepted write of a key wins, and a refused commit leaves nothing of its own', async (t) => {
  let nowMs = 1_700_000_000_000
  const { store, dataDir } = await freshStore(t, { clock: () => nowMs })
  const tags = store.collection<{ v: string }>('tag')
  await store.commit({ records: [tags.putOp('gone', { v: 'stored' })] })
  const lease = (v: number, final: boolean): Change => ({ kind: 'lease', id: 'lse_1', record: { v }, final })
  const offer = (v: number, final: boolean): Change => ({ kind: 'offer', id: 'off_1', record: { v }, final })
  const commits = [
    store.commit({ changes: [lease(1, false)], records: [store.proofs.addOp('p1', { usedBy: 'lse_1', usedAtMs: 1 })] }),
    // Loses on the proof the commit before it added in the same group: its lease snapshot must not overwrite.
    store.commit({ changes: [lease(2, true)], records: [store.proofs.addOp('p1', { usedBy: 'lse_1', usedAtMs: 2 })] }),
    store.commit({ changes: [offer(1, false)] }),
    store.commit({ changes: [offer(2, true)] }),
    store.commit({ records: [tags.putOp('k', { v: 'a' }, { expiresAtMs: nowMs + 1000 })] }),
    store.commit({ records: [tags.putOp('k', { v: 'b' })] }),
    store.commit({ records: [tags.deleteOp('gone', { mustExist: true })] }),
    // Sees the delete of the commit before it in the same group: the key is absent again, so this create succeeds.
    store.commit({ records: [tags.putOp('gone', { v: 'again' }, { onlyIfAbsent: true })] }),
    // And this one sees that create: the key is present, so it loses, with its lease snapshot.
    store.commit({ changes: [lease(3, false)], records: [tags.putOp('gone', { v: 'third' }, { onlyIfAbsent: true })] }),
  ]
  const settled = await Promise.allSettled(commits)
  t.same(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
  t.ok(settled[1]?.status === 'rejected' && settled[1].reason instanceof StoreConflictError)
  t.ok(settled[8]?.status === 'rejected' && settled[8].reason instanceof StoreConflictError)
  const txnIds = new Set(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.txnId] : [])))
  t.equal(txnIds.size, 1, 'all in one group transaction')
  nowMs += 2000
  t.equal(await store.sweepExpired(), 0, 'the overwritten expiry of k left no expiry entry behind to sweep')
  await store.close()
  const reopened = await Store.open({ dataDir, clock: () => nowMs })
  t.teardown(() => reopened.close())
  t.same(reopened.getSnapshot('lease', 'lse_1')?.snapshot, { v: 1 })
  t.equal(reopened.isLive('lease', 'lse_1'), true)
  t.same(reopened.getSnapshot('offer', 'off_1')?.snapshot, { v: 2 })
  t.equal(reopened.getSnapshot('offer', 'off_1')?.final, true)
  t.equal(reopened.isLive('offer', 'off_1'), false, 'the last write made it final: out of the live index')
  const reTags = reopened.collection<{ v: string }>('tag')
  t.same(reTags.get('k'), { v: 'b' })
  t.equal(reTags.getEntry('k')?.expiresAtMs, null)
  t.same(reTags.get('gone'), { v: 'again' })
  t.same(reopened.proofs.get('p1'), { usedBy: 'lse_1', usedAtMs: 1 })
  t.same(reopened.verify(), { snapshots: 2, live: 1, records: 3 })
})

// Issue 11: a live actor's change that says it was live already writes no live-index entry; the store trusts it,
// except where an earlier commit of the same group made the actor live and that commit's put was superseded.
t.test('alreadyLive: no live-index write, unless the same group made the actor live', async (t) => {
  const { store, dataDir } = await freshStore(t)
  const offer = (id: string, v: number, alreadyLive?: boolean): Change => ({ kind: 'offer', id, record: { v }, final: false, ...(alreadyLive === undefined ? {} : { alreadyLive }) })
  await store.commit({ changes: [offer('off_1', 1)] })
  const settled = await Promise.all([
    store.commit({ changes: [offer('off_1', 2, true)] }),
    // Created and changed again in one group: the creation's write is superseded by the change's, which must put it.
    store.commit({ changes: [offer('off_2', 1)] }),
    store.commit({ changes: [offer('off_2', 2, true)] }),
    store.commit({ changes: [offer('off_2', 3, true)] }),
    // Said to be live already but never made live: the store writes no entry for it (it trusts the engine).
    store.commit({ changes: [offer('off_3', 1, true)] }),
    store.commit({ changes: [offer('off_4', 1, false)] }),
  ])
  t.equal(new Set(settled.map((r) => r.txnId)).size, 1, 'the six commits shared one group transaction')
  await store.close()
  const reopened = await Store.open({ dataDir })
  t.teardown(() => reopened.close())
  t.same(reopened.getSnapshot('offer', 'off_1')?.snapshot, { v: 2 })
  t.equal(reopened.isLive('offer', 'off_1'), true)
  t.same(reopened.getSnapshot('offer', 'off_2')?.snapshot, { v: 3 })
  t.equal(reopened.isLive('offer', 'off_2'), true, 'made live by the group, though its last change said alreadyLive')
  t.same(reopened.getSnapshot('offer', 'off_3')?.snapshot, { v: 1 })
  t.equal(reopened.isLive('offer', 'off_3'), false, 'no live-index write for a change that says alreadyLive')
  t.equal(reopened.isLive('offer', 'off_4'), true)
  t.same([...reopened.iterateLive('offer')].map((e) => e.id), ['off_1', 'off_2', 'off_4'])
})

t.test('a write that throws inside LMDB fails its own commit only, and nothing of that commit is stored', async (t) => {
  const { store, dataDir } = await freshStore(t)
  const trap = encoderTrap()
  const settled = await Promise.allSettled([
    store.commit({ changes: [change(1)] }),
    store.commit({ changes: [change(2), { kind: 'job', id: 'job_trap', record: trap, final: false }] }),
    store.commit({ changes: [change(3)] }),
  ])
  t.same(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match(settled[1]?.status === 'rejected' ? String(settled[1].reason) : '', /encoder trap/)
  t.equal(store.stats().failedCommits, 1)
  await store.close()
  const reopened = await Store.open({ dataDir })
  t.teardown(() => reopened.close())
  t.ok(reopened.getSnapshot('advance', 'adv_1'))
  t.equal(reopened.getSnapshot('advance', 'adv_2'), undefined, 'the failed commit wrote none of its changes')
  t.equal(reopened.getSnapshot('job', 'job_trap'), undefined)
  t.ok(reopened.getSnapshot('advance', 'adv_3'))
  t.same(reopened.verify(), { snapshots: 2, live: 2, records: 0 })
})

// Issue 11: a commit's checks are staged on the group's key slots without a per-commit map; these pin that a refused
// commit's writes checked before its failing one stay out of the group, and that a commit's own earlier write of a
// key counts for its later checks of that key.
t.test('a refused commit leaves no staged write for the next in its group; a commit sees its own earlier writes', async (t) => {
  const { store } = await freshStore(t)
  const tags = store.collection<{ v: string }>('tag')
  await store.commit({ records: [tags.putOp('taken', { v: 'stored' }), tags.putOp('consumed', { v: 'stored' })] })
  const commits = [
    // x passes its check, then taken fails: x must not be staged.
    store.commit({ records: [tags.putOp('x', { v: 'refused' }), tags.putOp('taken', { v: 'again' }, { onlyIfAbsent: true })] }),
    // So x is still absent for this create.
    store.commit({ records: [tags.putOp('x', { v: 'created' }, { onlyIfAbsent: true })] }),
    // Its own delete makes consumed absent for its own create.
    store.commit({ records: [tags.deleteOp('consumed', { mustExist: true }), tags.putOp('consumed', { v: 'renewed' }, { onlyIfAbsent: true })] }),
    // Its own put makes fresh present for its own consume-once delete.
    store.commit({ records: [tags.putOp('fresh', { v: 'brief' }), tags.deleteOp('fresh', { mustExist: true })] }),
    // And it put y twice: the second create sees the first.
    store.commit({ records: [tags.putOp('y', { v: 'one' }), tags.putOp('y', { v: 'two' }, { onlyIfAbsent: true })] }),
  ]
  const settled = await Promise.allSettled(commits)
  t.same(settled.map((s) => s.status), ['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
  t.ok(settled[0]?.status === 'rejected' && settled[0].reason instanceof StoreConflictError)
  t.ok(settled[4]?.status === 'rejected' && settled[4].reason instanceof StoreConflictError)
  t.equal(new Set(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.txnId] : []))).size, 1, 'one group transaction')
  t.same(tags.get('x'), { v: 'created' })
  t.same(tags.get('taken'), { v: 'stored' })
  t.same(tags.get('consumed'), { v: 'renewed' })
  t.equal(tags.get('fresh'), undefined)
  t.equal(tags.get('y'), undefined, 'nothing of the refused commit')
})

t.test('durable() settles once every commit queued before it has settled, written or refused, and not later ones', async (t) => {
  let held = true
  const { store } = await freshStore(t, { commitsPerTxnMax: 1, holdCommitsWhile: () => held })
  const tags = store.collection<{ v: string }>('tag')
  await t.resolves(store.durable(), 'nothing pending: at once')
  const events: string[] = []
  const track = (name: string, promise: Promise<unknown>): Promise<unknown> =>
    promise.then(
      () => void events.push(`${name} written`),
      () => void events.push(`${name} refused`),
    )
  const first = track('first', store.commit({ records: [tags.putOp('k', { v: 'a' }, { onlyIfAbsent: true })] }))
  const second = track('second', store.commit({ records: [tags.putOp('k', { v: 'b' }, { onlyIfAbsent: true })] }))
  const afterSecond = track('durable', store.durable())
  const third = track('third', store.commit({ records: [tags.putOp('z', { v: 'c' })] }))
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.same(events, [], 'nothing settles while the commits are held')
  held = false
  await Promise.all([first, second, afterSecond, third])
  t.same(events, ['first written', 'second refused', 'durable written', 'third written'])
  await t.resolves(store.durable(), 'nothing pending again: at once')
})

// Review of issue 11's alreadyLive: the commit that made an actor live can fail in its group while a later commit of
// the same group, which changed the actor again (alreadyLive), is written. That later commit then holds the actor's
// only write, so it must put the live-index entry: without it the snapshot is stored but the actor is not restored
// after the restart that the failed commit causes (the service exits on a failed commit), though its change was
// acknowledged.
t.test('alreadyLive after the commit that made the actor live failed in the same group: the live entry is put', async (t) => {
  const { store, dataDir } = await freshStore(t)
  const tags = store.collection<{ v: string }>('tag')
  await store.commit({ records: [tags.putOp('taken', { v: 'stored' })] })
  const trap = encoderTrap()
  const offer = (id: string, v: number, alreadyLive?: true): Change => ({ kind: 'offer', id, record: { v }, final: false, ...(alreadyLive ? { alreadyLive } : {}) })
  const settled = await Promise.allSettled([
    // Refused by its check: nothing of it is staged.
    store.commit({ changes: [offer('off_refused', 1)], records: [tags.putOp('taken', { v: 'again' }, { onlyIfAbsent: true })] }),
    store.commit({ changes: [offer('off_refused', 2, true)] }),
    // Fails inside LMDB: the group is written again commit by commit, and this one alone fails.
    store.commit({ changes: [offer('off_thrown', 1), { kind: 'job', id: 'job_trap', record: trap, final: false }] }),
    store.commit({ changes: [offer('off_thrown', 2, true)] }),
  ])
  t.same(settled.map((s) => s.status), ['rejected', 'fulfilled', 'rejected', 'fulfilled'])
  await store.close()
  const reopened = await Store.open({ dataDir })
  t.teardown(() => reopened.close())
  for (const id of ['off_refused', 'off_thrown']) {
    t.same(reopened.getSnapshot('offer', id)?.snapshot, { v: 2 }, `${id}: the later commit is stored`)
    t.equal(reopened.isLive('offer', id), true, `${id}: and listed live, so a restart restores it`)
  }
  t.same([...reopened.iterateLive('offer')].map((e) => e.id), ['off_refused', 'off_thrown'])
  t.same(reopened.verify(), { snapshots: 2, live: 2, records: 1 })
})
