// Each actor's transition history: created, then every transition its machine took, with the event and the
// command's time; bounded; carried in the persisted snapshot, so a restored engine (a restart) continues it.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { CREATED_EVENT, HISTORY_ENTRIES_MAX, recordTransition, storedHistory, withHistory } from '../../src/engine/history.ts'
import { createActor } from 'xstate'
import { leaseMachine } from '../../machines/index.ts'
import { BORROWER, FakeWallets, T0, addr, applyChanges, creditRequest, fundAdvance, hash, lenderInput, newEngine, registerBacking, unwrap , repaidFact } from './fixtures/world.ts'
import type { Change } from '../../src/engine/types.ts'

function recordOf(changes: readonly Change[], kind: string, id: string): unknown {
  const change = changes.find((c) => c.kind === kind && c.id === id)
  if (change === undefined) throw new Error(`no change of ${kind} ${id}`)
  return change.record
}

t.test('a funded advance: the offer, its lease and the advance each carry what happened to them, in order', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const all = new Map<string, Change>()
  const decision = unwrap(engine.requestCredit(creditRequest(), T0))
  const offerId = decision.offer!.offerId
  const created = engine.snapshots()
  t.same(storedHistory(recordOf(created, 'offer', offerId)), [{ from: null, to: 'offered', event: CREATED_EVENT, atMs: T0 }], 'a new offer: its creation only')

  const matched = engine.matchOffer({ offerId, caller: BORROWER }, T0 + 1_000)
  t.ok(matched.ok)
  if (!matched.ok) return
  applyChanges(all, matched.changes)
  const lease = matched.value.lease!
  t.same(storedHistory(all.get(`lease:${lease.leaseId}`)?.record), [{ from: null, to: 'leased', event: CREATED_EVENT, atMs: T0 + 1_000 }], 'the lease: created leased')
  t.same(storedHistory(all.get(`offer:${offerId}`)?.record).map((e) => [e.from, e.to, e.event, e.atMs]), [
    [null, 'offered', CREATED_EVENT, T0], ['offered', 'leased', 'LEASE', T0 + 1_000],
  ], 'the offer: created, then leased by the match')

  const paid = engine.recordSupplierPayment({
    network: lease.network, txHash: hash(77), logIndex: 0, offerId, payer: lease.payer, supplier: lease.supplierAddress,
    asset: lease.asset, amountAtomic: lease.amountAtomic, caller: lease.lender,
  }, T0 + 2_000)
  t.ok(paid.ok)
  if (!paid.ok) return
  const leaseRecord = paid.changes.find((c) => c.id === lease.leaseId)
  t.equal(leaseRecord?.final, true, 'the paid lease is final')
  t.same(storedHistory(leaseRecord?.record).map((e) => `${e.from}->${e.to} ${e.event}@${e.atMs - T0}`), [
    'null->leased created@1000', 'leased->paid PAY@2000',
  ], 'the final lease record holds its whole history')
  t.same(storedHistory(recordOf(paid.changes, 'offer', offerId)).at(-1), { from: 'leased', to: 'funded', event: 'FUND', atMs: T0 + 2_000 })
  t.same(storedHistory(recordOf(paid.changes, 'advance', paid.value.advanceId)), [{ from: null, to: 'active', event: CREATED_EVENT, atMs: T0 + 2_000 }])
})

t.test('a restored engine continues each live actor\'s history from its snapshot', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const advanceId = fundAdvance(engine)
  const restored = new Engine({}, new FakeWallets(), engine.snapshots())
  const repaid = restored.repayAdvance(repaidFact(restored, advanceId, hash(31)), T0 + 5_000)
  t.ok(repaid.ok)
  if (!repaid.ok) return
  t.same(storedHistory(recordOf(repaid.changes, 'advance', advanceId)).map((e) => [e.from, e.to, e.event, e.atMs]), [
    [null, 'active', CREATED_EVENT, T0], ['active', 'repaid', 'REPAY', T0 + 5_000],
  ], 'the creation recorded before the restart and the repayment after it')
})

t.test(`the history keeps the latest ${HISTORY_ENTRIES_MAX} entries`, async (t) => {
  const actor = createActor(leaseMachine, {
    input: {
      leaseId: 'lse_1', offerId: 'off_1', lender: addr(1), payer: addr(2), network: 'n', asset: 'A', amountAtomic: 1n, feeAtomic: 0n,
      supplierAddress: addr(3), createdAtMs: 0, expiresAtMs: 1,
    },
  }).start()
  for (let i = 1; i <= HISTORY_ENTRIES_MAX + 10; i++) recordTransition(actor, 'leased', 'leased', { type: 'TICK', nowMs: i })
  const history = storedHistory(withHistory({}, actor))
  t.equal(history.length, HISTORY_ENTRIES_MAX, 'bounded')
  t.equal(history[0]?.atMs, 11, 'the oldest entries (the creation and the first ten) were dropped')
  t.equal(history.at(-1)?.atMs, HISTORY_ENTRIES_MAX + 10, 'the latest is kept')
  actor.stop()
})
