// The engine's held-payment records (heldviews12): the follower's PaymentHeld and HeldPaymentClaimed facts as the
// contract's heldFor per network, token and recipient, linked to the lender whose session wallet the recipient is,
// written as `held` changes and restored from the engine's snapshots. The views list amounts above 0 only.
import t from 'tap'
import { Engine } from '../../src/engine/engine.ts'
import type { ChainEventFact, HeldPaymentFact } from '../../src/engine/engine.ts'
import { addr, ASSET, BORROWER, FakeWallets, lenderInput, NET, newEngine, T0, unwrap } from './fixtures/world.ts'

const TOKEN = addr(0x70)
let seq = 0
const fact = (kind: HeldPaymentFact['kind'], account: `0x${string}`, amountAtomic: bigint): HeldPaymentFact =>
  ({ kind, proofKey: `${NET}:0x${(++seq).toString(16).padStart(64, '0')}:0`, account, asset: ASSET, token: TOKEN, amountAtomic, blockTimeMs: T0 + seq * 1000 })

t.test('held and claimed payments per recipient, its lender, its changes and a restore', async (t) => {
  const { engine } = newEngine()
  const lender = lenderInput(1)
  unwrap(engine.registerLender(lender, T0))
  const observe = (events: ChainEventFact[]) => engine.observeChain({ network: NET, toBlock: BigInt(seq), toBlockHash: '0x', toBlockTimeMs: T0 + seq * 1000, events }, T0)

  const held = observe([fact('payment_held', lender.sessionAddress, 40n), fact('payment_held', BORROWER, 159n), fact('payment_held', lender.sessionAddress, 2n)])
  t.ok(held.ok)
  if (!held.ok) return
  t.same(held.changes.filter((c) => c.kind === 'held').map((c) => c.id), [`${NET}:${TOKEN}:${lender.sessionAddress}`, `${NET}:${TOKEN}:${BORROWER}`], 'one held record per recipient and token')
  t.same(held.value.heldPayments.map((r) => r.amountAtomic), [40n, 159n, 42n], 'the outcome has each fact\'s record after it')
  t.match(engine.heldPayments([lender.sessionAddress, lender.address]), [{ account: lender.sessionAddress, lender: lender.address, network: NET, asset: ASSET, token: TOKEN, amountAtomic: 42n }])
  t.match(engine.heldPayments([BORROWER]), [{ account: BORROWER, lender: null, amountAtomic: 159n }])

  const claimed = unwrap(observe([fact('held_payment_claimed', lender.sessionAddress, 42n), fact('held_payment_claimed', addr(0x99), 5n)]))
  t.same(claimed.heldPayments.map((r) => r.amountAtomic), [0n, 0n], 'a claim pays all; one of a payment held before the service followed reads 0, never below')
  t.same(engine.heldPayments([lender.sessionAddress]), [], 'a claimed payment leaves the views')

  // A second token for the borrower, seen after the first but ordered before it: the views list by network, then token.
  unwrap(observe([{ ...fact('payment_held', BORROWER, 7n), token: addr(0x6f) }]))
  t.same(engine.heldPayments([BORROWER]).map((r) => r.token), [addr(0x6f), TOKEN], 'by token, not by arrival')

  const restored = new Engine(engine.config, new FakeWallets(), engine.snapshots())
  t.same(restored.heldPayments([BORROWER, lender.sessionAddress, addr(0x99)]), engine.heldPayments([BORROWER, lender.sessionAddress, addr(0x99)]), 'restored from the snapshots')
  t.same(restored.snapshots().filter((c) => c.kind === 'held'), engine.snapshots().filter((c) => c.kind === 'held'), 'the same records')
  t.equal(restored.snapshots().filter((c) => c.kind === 'held').length, 4)
})
