// A live actor's change says whether the actor was live before the command (`alreadyLive`): the store then writes no
// live-index entry for it (issue 11). Set on every change of an actor an earlier command started or a restart
// restored; never on the change of an actor the command started, even when the command also sent it an event, so a
// new actor always enters the live index.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { PendingChanges } from '../../src/engine/changes.ts'
import type { Change } from '../../src/engine/types.ts'
import { ASSET, BORROWER, CLIENT, FakeWallets, NET, T0, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

const changeOf = (changes: readonly Change[], kind: Change['kind'], id: string): Change | undefined => changes.find((c) => c.kind === kind && c.id === id)

t.test('a new offer or lease is not alreadyLive; the offer matched later, and any change after a restore, is', async (t) => {
  const { engine, wallets } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const offerId = offerFor(engine)
  const matched = engine.matchOffer({ offerId, caller: BORROWER }, T0)
  if (!matched.ok || matched.value.lease === null) throw new Error('not matched')
  const leaseId = matched.value.lease.leaseId
  t.equal(changeOf(matched.changes, 'offer', offerId)?.alreadyLive, true, 'the offer was opened by an earlier command')
  t.equal(changeOf(matched.changes, 'lease', leaseId)?.alreadyLive, undefined, 'the lease starts in this command')
  t.equal(changeOf(matched.changes, 'lender', lenderInput(1).address)?.alreadyLive, undefined, 'a record is never alreadyLive')

  const restored = new Engine(engine.config, wallets, engine.snapshots())
  const second = offerFor(restored)
  const rematch = restored.matchOffer({ offerId: second, caller: BORROWER }, T0)
  if (!rematch.ok || rematch.value.lease === null) throw new Error('not matched after the restore')
  t.equal(changeOf(rematch.changes, 'offer', second)?.alreadyLive, true)
  t.equal(changeOf(rematch.changes, 'lease', rematch.value.lease.leaseId)?.alreadyLive, undefined)
  const paid = restored.recordSupplierPayment({
    network: NET, txHash: hash(1001), logIndex: 0, offerId, payer: matched.value.lease.payer, supplier: matched.value.lease.supplierAddress,
    asset: ASSET, amountAtomic: matched.value.lease.amountAtomic, caller: matched.value.lease.lender,
  }, T0)
  if (!paid.ok) throw new Error(paid.error.message)
  const lease = changeOf(paid.changes, 'lease', leaseId)
  t.equal(lease?.final, true, 'the paid lease ends: its change removes it from the live index instead')
  t.equal(lease?.alreadyLive, undefined)
  t.equal(changeOf(paid.changes, 'advance', paid.value.advanceId)?.alreadyLive, undefined, 'the advance starts in this command')
})

t.test('a job created with collateral (an event sent to it in the command that starts it) is not alreadyLive', async (t) => {
  const { engine } = newEngine()
  const created = engine.createJob({
    jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 1000n, dueAtMs: T0 + 86_400_000,
    funding: { network: NET, txHash: hash(9000), logIndex: 0 }, caller: CLIENT,
    postedCollateral: [{ borrower: BORROWER, amountAtomic: 20n, proof: { network: NET, txHash: hash(1), logIndex: 0 } }],
  }, T0)
  if (!created.ok) throw new Error(created.error.message)
  const job = changeOf(created.changes, 'job', 'job_1')
  t.ok(job)
  t.equal(job?.alreadyLive, undefined)
})

t.test('changes keep the order each thing was first touched; a later touch, birth or final record keeps its place', async (t) => {
  const pending = new PendingChanges()
  pending.touch('lender', '0xa')
  pending.touch('offer', 'off_1')
  pending.touch('meta', 'engine')
  // The same id under another kind is another change.
  pending.touch('borrower', '0xa')
  pending.touch('lender', '0xa')
  pending.set('offer', 'off_1', { kind: 'offer', id: 'off_1', record: null, final: true })
  pending.set('lease', 'lea_1', { kind: 'lease', id: 'lea_1', born: true })
  t.equal(pending.size, 5)
  t.same(pending.take(), [
    { kind: 'lender', id: '0xa' }, { kind: 'offer', id: 'off_1', record: null, final: true }, { kind: 'meta', id: 'engine' },
    { kind: 'borrower', id: '0xa' }, { kind: 'lease', id: 'lea_1', born: true },
  ])
  t.equal(pending.size, 0, 'taken: empty for the next command')
  pending.touch('offer', 'off_1')
  pending.touch('lender', '0xa')
  t.same(pending.take(), [{ kind: 'offer', id: 'off_1' }, { kind: 'lender', id: '0xa' }], 'nothing of the last command is left')
})

t.test('a large command (more slots than a scan looks through) keeps the same order and in-place replacement', async (t) => {
  const pending = new PendingChanges()
  const ids = Array.from({ length: 40 }, (_, i) => `off_${i}`)
  for (const id of ids) {
    pending.touch('offer', id)
    pending.touch('meta', 'engine')
  }
  for (const id of ids) pending.touch('offer', id)
  pending.set('offer', 'off_3', { kind: 'offer', id: 'off_3', record: null, final: true })
  pending.set('lease', 'lse_1', { kind: 'lease', id: 'lse_1', born: true })
  pending.touch('lease', 'lse_1')
  const taken = pending.take()
  t.same(taken.map((c) => `${c.kind} ${c.id}${'final' in c ? ' final' : ''}`), [
    'offer off_0', 'meta engine', ...ids.slice(1).map((id) => id === 'off_3' ? `offer ${id} final` : `offer ${id}`), 'lease lse_1',
  ])
  pending.touch('offer', 'off_0')
  t.same(pending.take(), [{ kind: 'offer', id: 'off_0' }], 'the next command starts with no index and no slot')
})

t.test('a match and the payment of its lease list their changes in the order the command made them', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const offerId = offerFor(engine)
  const matched = engine.matchOffer({ offerId, caller: BORROWER }, T0)
  if (!matched.ok || matched.value.lease === null) throw new Error('not matched')
  const order = (changes: readonly Change[]) => changes.map((c) => `${c.kind} ${c.id}${c.final ? ' final' : ''}`)
  const leaseId = matched.value.lease.leaseId
  const lender = lenderInput(1).address
  // The offer first: matching marks it before it leases (an offer that ends final later keeps this place).
  t.same(order(matched.changes), [`offer ${offerId}`, 'meta engine', `lease ${leaseId}`, `lender ${lender}`])
  const paid = engine.recordSupplierPayment({
    network: NET, txHash: hash(1001), logIndex: 0, offerId, payer: matched.value.lease.payer, supplier: matched.value.lease.supplierAddress,
    asset: ASSET, amountAtomic: matched.value.lease.amountAtomic, caller: matched.value.lease.lender,
  }, T0)
  if (!paid.ok) throw new Error(paid.error.message)
  t.same(order(paid.changes), [`offer ${offerId} final`, `lease ${leaseId} final`, `lender ${lender}`, 'meta engine', `advance ${paid.value.advanceId}`])
})
