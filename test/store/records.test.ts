import t from 'tap'
import { Store, StoreAssertionError, StoreConflictError } from '../../src/store/index.ts'
import { freshStore } from './fixtures/helpers.ts'

interface Session {
  address: string
}
const isSession = (v: unknown): v is Session => typeof v === 'object' && v !== null && typeof (v as Session).address === 'string'

t.test('collections: put, get, delete and prefix iteration through commits', async (t) => {
  const { store, dataDir } = await freshStore(t)
  const sessions = store.collection<Session>('session', { validate: isSession })
  await store.commit({
    records: [sessions.putOp('h:a1', { address: '0x1' }), sessions.putOp('h:a2', { address: '0x2' }), sessions.putOp('x:b', { address: '0x3' })],
  })
  t.same(sessions.get('h:a1'), { address: '0x1' })
  t.same([...sessions.iterate('h:')].map((e) => e.key), ['h:a1', 'h:a2'])
  t.same([...sessions.iterate()].map((e) => e.key), ['h:a1', 'h:a2', 'x:b'])
  await store.commit({ records: [sessions.deleteOp('h:a1')] })
  t.equal(sessions.has('h:a1'), false)
  t.throws(() => sessions.putOp('k', { wrong: 1 } as never), StoreAssertionError)
  t.throws(() => store.collection('Bad Name'), StoreAssertionError)
  await t.rejects(store.commit({ records: [{ op: 'put', collection: 'nope', key: 'k', value: 1, version: 1, expiresAtMs: null, onlyIfAbsent: false }] }), StoreAssertionError)
  await store.close()
  const again = await Store.open({ dataDir })
  const reopened = again.collection<Session>('session', { validate: isSession })
  t.same([...reopened.iterate()].map((e) => e.value.address), ['0x2', '0x3'])
  await again.close()
})

t.test('records with expiry read as absent once expired and are swept', async (t) => {
  let nowMs = 5_000
  const { store } = await freshStore(t, { clock: () => nowMs })
  const nonces = store.collection<string>('auth-nonce')
  await store.commit({ records: [nonces.putOp('n1', 'a', { expiresAtMs: 6_000 }), nonces.putOp('n2', 'b', { expiresAtMs: 9_000 }), nonces.putOp('keep', 'c')] })
  // Refreshing a record moves its expiry: the old index entry must not delete it.
  await store.commit({ records: [nonces.putOp('n2', 'b2', { expiresAtMs: 20_000 })] })
  nowMs = 10_000
  t.equal(nonces.get('n1'), undefined)
  t.equal(nonces.get('n2'), 'b2')
  t.same([...nonces.iterate()].map((e) => e.key), ['keep', 'n2'])
  t.equal(await store.sweepExpired(), 1)
  t.equal(store.verify().records, 2)
  await t.rejects(store.commit({ records: [nonces.deleteOp('n1', { mustExist: true })] }), StoreConflictError, 'an expired nonce cannot be consumed')
})

t.test('used proofs: has() sees a queued add at once, and a second add loses', async (t) => {
  const { store } = await freshStore(t)
  const key = 'devnet:0xabc:3'
  t.equal(store.proofs.has(key), false)
  const first = store.commit({ records: [store.proofs.addOp(key, { usedBy: 'adv_1', usedAtMs: 1 })] })
  t.equal(store.proofs.has(key), true, 'visible before it is durable, so a concurrent request is refused')
  const second = store.commit({ records: [store.proofs.addOp(key, { usedBy: 'adv_2', usedAtMs: 2 })] })
  await first
  await t.rejects(second, StoreConflictError)
  t.same(store.proofs.get(key), { usedBy: 'adv_1', usedAtMs: 1 })
})

t.test('a failed commit takes its pending record writes back out of view', async (t) => {
  const { store } = await freshStore(t)
  const rep = store.collection<number>('reputation')
  const failing = store.commit({ records: [rep.putOp('0x1', 7000), rep.deleteOp('missing', { mustExist: true })] })
  t.equal(rep.get('0x1'), 7000)
  await t.rejects(failing, StoreConflictError)
  t.equal(rep.get('0x1'), undefined)
})
