// A removed engine record (Change.removed: a lender registration that never funded, src/service/lenders.ts): its
// snapshot is deleted, durably; the last change of a key in a commit or group decides; only a record with a null
// record may be removed.
import t from 'tap'
import { Store, StoreAssertionError, type Change } from '../../src/store/index.ts'
import { freshStore } from './fixtures/helpers.ts'

const lender = (id: string, liquidityAtomic: bigint): Change => ({ kind: 'lender', id, record: { liquidityAtomic }, final: false })
const removal = (id: string): Change => ({ kind: 'lender', id, record: null, final: false, removed: true })

t.test('a removed record is deleted, and stays deleted after a reopen', async (t) => {
  const { store, dataDir } = await freshStore(t)
  await store.commit({ changes: [lender('0xA1', 1n), lender('0xA2', 2n)] })
  await store.commit({ changes: [removal('0xA1')] })
  t.equal(store.getSnapshot('lender', '0xA1'), undefined)
  t.same([...store.iterateKind('lender')].map((e) => e.id), ['0xA2'])
  // Removed then written again in one commit: the last change wins (a re-registration right after a removal).
  await store.commit({ changes: [removal('0xA2'), lender('0xA2', 3n)] })
  t.equal((store.getSnapshot('lender', '0xA2')?.snapshot as { liquidityAtomic: bigint }).liquidityAtomic, 3n)
  await store.commit({ changes: [removal('0xA9')] })
  t.same(store.verify(), { snapshots: 1, live: 0, records: 0 }, 'removing an absent record changes nothing')
  await store.close()
  const reopened = await Store.open({ dataDir })
  t.teardown(() => reopened.close())
  t.same([...reopened.iterateKind('lender')].map((e) => e.id), ['0xA2'])
})

t.test('only a record with a null record is removed; an actor never is', async (t) => {
  const { store } = await freshStore(t)
  for (const bad of [
    { kind: 'job', id: 'job_1', record: null, final: false, removed: true },
    { kind: 'lender', id: '0xA1', record: { liquidityAtomic: 1n }, final: false, removed: true },
    { kind: 'lender', id: '0xA1', record: null, final: false, removed: 'yes' },
  ]) {
    await t.rejects(store.commit({ changes: [bad as unknown as Change] }), StoreAssertionError, JSON.stringify(bad, (_k, v) => (typeof v === 'bigint' ? String(v) : v)))
  }
})
