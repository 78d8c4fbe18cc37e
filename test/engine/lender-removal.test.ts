// Engine.removeLenders: only a lender that did nothing but register is removed (the service's sweep of registrations
// that never funded, src/service/lenders.ts); its record goes with a change that deletes it, and its address and
// session key may register again. A leased lender is kept whatever its wallet holds; one that only withdrew is removed
// (a withdrawal is free and moves nothing on chain: counting it let a script keep free registrations for ever).
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { addr, FakeWallets, lenderInput, matchedLender, newEngine, offerFor, registerBacking, T0, unwrap } from './fixtures/world.ts'

t.test('untouched lenders are removed with a deleting change, a withdrawal does not count; leased ones are kept', async (t) => {
  const { engine, wallets } = newEngine()
  const [idle, leased, withdrew] = [1, 2, 3].map((n) => unwrap(engine.registerLender(lenderInput(n, { minFeeBps: n === 2 ? 100 : 500 }), T0)))
  registerBacking(engine)
  t.equal(matchedLender(engine, offerFor(engine)), leased!.address, 'the cheapest lender is leased')
  unwrap(engine.withdrawLiquidity({ lender: withdrew!.address, amountAtomic: 1n, caller: withdrew!.address }, T0))
  // Every wallet empty now: what the wallet holds does not decide here (the service's sweep reads the chain).
  for (const lender of [idle, leased, withdrew]) wallets.set(lender!.sessionAddress, 0n)
  t.same([idle, leased, withdrew].map((l) => engine.isUntouchedLender(l!.address)), [true, false, true])

  const result = engine.removeLenders([idle!.address, leased!.address, withdrew!.address, addr(0x9999)])
  t.ok(result.ok)
  if (!result.ok) return
  t.same(result.value, [idle!.address, withdrew!.address], 'only the untouched lenders are removed')
  t.same(result.changes, [idle, withdrew].map((l) => ({ kind: 'lender', id: l!.address, record: null, final: false, removed: true })), 'one change each, deleting its record')
  t.equal(engine.getLender(idle!.address), undefined)
  t.same(engine.lendersPage(0, 10, 10).items.map((l) => l.address), [leased!.address], 'gone from the registration order')
  t.notOk(engine.snapshots().some((s) => s.kind === 'lender' && s.id === idle!.address), 'not in the snapshots')
  engine.checkInvariants()
  t.same(unwrap(engine.removeLenders([idle!.address, withdrew!.address])), [], 'removing them again changes nothing')

  // The same address and session key register again, and the restored engine has it once.
  const again = unwrap(engine.registerLender(lenderInput(1), T0 + 1))
  t.equal(again.address, idle!.address)
  const restored = new Engine({}, new FakeWallets(), engine.snapshots())
  t.same(restored.lendersPage(0, 10, 10).items.map((l) => l.address), [leased!.address, idle!.address])
  restored.checkInvariants()
})
