import t from 'tap'
import { hashRequestBody, IdempotencyInFlightError, type IdempotencyScope, type Store } from '../../src/store/index.ts'
import { freshStore } from './fixtures/helpers.ts'

const scope: IdempotencyScope = { identity: '0xAbc', method: 'POST', path: '/credit/jobs', key: 'key-1' }
const body = JSON.stringify({ jobId: 'job_1', amountAtomic: '100' })

/** What an HTTP handler does: begin, apply once, commit changes and response together, or replay. */
async function handle(store: Store, requestBody: string, applied: { count: number }) {
  const begin = await store.idempotency.begin(scope, hashRequestBody(requestBody))
  if (begin.outcome === 'replay') return begin.response
  if (begin.outcome === 'mismatch') return { status: begin.inFlight ? 409 : 422, body: { code: 'idempotency_key_reused' } }
  applied.count++
  await new Promise((r) => setTimeout(r, 20)) // a chain read before the engine command
  const response = { status: 201, body: { jobId: 'job_1', n: applied.count, amountAtomic: 100n } }
  await store.commit({
    changes: [{ kind: 'job', id: 'job_1', record: { applied: applied.count }, final: false }],
    idempotency: begin.ticket.complete(response),
  })
  return response
}

t.test('concurrent retries of one key apply once and all get the first response', async (t) => {
  const { store } = await freshStore(t)
  const applied = { count: 0 }
  const responses = await Promise.all(Array.from({ length: 20 }, () => handle(store, body, applied)))
  t.equal(applied.count, 1)
  for (const r of responses) t.same(r, { status: 201, body: { jobId: 'job_1', n: 1, amountAtomic: 100n } })
  t.equal((store.getSnapshot('job', 'job_1')?.snapshot as { applied: number }).applied, 1)
  // A later retry, after the first is durable, replays from the store.
  t.same(await handle(store, body, applied), responses[0])
  t.equal(applied.count, 1)
  t.equal(store.idempotency.inFlightCount, 0)
  const stored = store.idempotency.lookup(scope)
  t.equal(stored?.requestHash, hashRequestBody(body))
})

t.test('the same key with a different body is detected, stored or in flight', async (t) => {
  const { store } = await freshStore(t)
  const applied = { count: 0 }
  const first = handle(store, body, applied)
  const other = await store.idempotency.begin(scope, hashRequestBody('{"jobId":"job_2"}'))
  t.same(other, { outcome: 'mismatch', inFlight: true })
  await first
  t.same(await handle(store, '{"jobId":"job_2"}', applied), { status: 422, body: { code: 'idempotency_key_reused' } })
  t.equal(applied.count, 1)
  // Scope matters: the same key from another caller or path is a different request.
  const elsewhere = await store.idempotency.begin({ ...scope, identity: '0xDef' }, hashRequestBody(body))
  t.equal(elsewhere.outcome, 'proceed')
})

t.test('an abandoned first request lets exactly one waiting retry proceed', async (t) => {
  const { store } = await freshStore(t)
  const hash = hashRequestBody(body)
  const first = await store.idempotency.begin(scope, hash)
  if (first.outcome !== 'proceed') throw new Error('expected proceed')
  const waiting = [store.idempotency.begin(scope, hash), store.idempotency.begin(scope, hash)]
  first.ticket.abandon()
  const [a] = await Promise.all([waiting[0]])
  t.equal(a!.outcome, 'proceed')
  if (a!.outcome === 'proceed') await store.commit({ idempotency: a!.ticket.complete({ status: 400, body: { code: 'x' } }) })
  const b = await waiting[1]!
  t.same(b, { outcome: 'replay', response: { status: 400, body: { code: 'x' } } })
})

t.test('a retry waits at most idempotencyWaitMs for a first request that never finishes', async (t) => {
  const { store } = await freshStore(t, { idempotencyWaitMs: 50 })
  const hash = hashRequestBody(body)
  const first = await store.idempotency.begin(scope, hash)
  t.equal(first.outcome, 'proceed')
  await t.rejects(store.idempotency.begin(scope, hash), IdempotencyInFlightError)
})

t.test('a failed commit releases the key: nothing stored, a retry proceeds', async (t) => {
  const { store } = await freshStore(t)
  const nonces = store.collection('auth-nonce')
  const hash = hashRequestBody(body)
  const first = await store.idempotency.begin(scope, hash)
  if (first.outcome !== 'proceed') throw new Error('expected proceed')
  await t.rejects(
    store.commit({ records: [nonces.deleteOp('absent', { mustExist: true })], idempotency: first.ticket.complete({ status: 201, body: {} }) }),
    { code: 'store_conflict' },
  )
  t.equal(store.idempotency.lookup(scope), undefined)
  t.equal((await store.idempotency.begin(scope, hash)).outcome, 'proceed')
})

t.test('idempotency records expire after the retention and the sweep deletes them', async (t) => {
  let nowMs = 1_000_000
  const { store } = await freshStore(t, { clock: () => nowMs, idempotencyRetentionMs: 60_000 })
  const hash = hashRequestBody(body)
  const first = await store.idempotency.begin(scope, hash)
  if (first.outcome !== 'proceed') throw new Error('expected proceed')
  await store.commit({ idempotency: first.ticket.complete({ status: 201, body: { ok: true } }) })
  nowMs += 59_999
  t.equal((await store.idempotency.begin(scope, hash)).outcome, 'replay')
  t.equal(await store.sweepExpired(), 0)
  nowMs += 1
  t.equal(store.idempotency.lookup(scope), undefined, 'expired records read as absent')
  t.equal(await store.sweepExpired(), 1)
  t.equal(store.verify().records, 0)
})

t.test('a ticket carries exactly one commit; invalid scopes are refused', async (t) => {
  const { store } = await freshStore(t)
  const first = await store.idempotency.begin(scope, hashRequestBody(body))
  if (first.outcome !== 'proceed') throw new Error('expected proceed')
  const completion = first.ticket.complete({ status: 200, body: null })
  await store.commit({ idempotency: completion })
  await t.rejects(store.commit({ idempotency: completion }), { code: 'store_assertion_failed' })
  await t.rejects(store.idempotency.begin({ ...scope, key: '' }, hashRequestBody(body)), { code: 'store_assertion_failed' })
  await t.rejects(store.idempotency.begin({ ...scope, key: 'k'.repeat(256) }, hashRequestBody(body)), { code: 'store_assertion_failed' })
  await t.rejects(store.idempotency.begin(scope, 'not-a-hash'), { code: 'store_assertion_failed' })
})

t.test('the sweeper catches up a backlog larger than one batch in one tick', async (t) => {
  let nowMs = 1_000_000
  const { store } = await freshStore(t, { clock: () => nowMs, idempotencyRetentionMs: 60_000, durability: 'none' })
  // More than the 10,000 one sweep deletes: before, the rest waited for the next tick (a minute in the service),
  // so a service storing more than 10,000 answers a minute kept them for ever.
  const count = 12_500
  for (let i = 0; i < count; i++) {
    const begun = await store.idempotency.begin({ ...scope, key: `key-${i}` }, hashRequestBody(body))
    if (begun.outcome !== 'proceed') throw new Error('expected proceed')
    void store.commit({ idempotency: begun.ticket.complete({ status: 201, body: { i } }) })
  }
  await store.commit({})
  t.equal(store.verify().records, count)
  nowMs += 60_000
  const stop = store.startSweeper(10, (error) => t.fail(String(error)))
  await new Promise((resolve) => setTimeout(resolve, 15))
  stop()
  // No tick after this one: wait until the count settles.
  let left = store.verify().records
  for (let settled = 0; settled < 5; ) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    const now = store.verify().records
    settled = now === left ? settled + 1 : 0
    left = now
  }
  t.equal(left, 0, 'every expired record is gone after the first tick')
})
