// Issue 10: "while a network is unavailable, lease and offer timers on it are paused and resume when it returns".
// Offer TTLs and lease deadlines are set from, and judged on, the network's observed chain time; the service's clock
// stands in only before the network's first observation.
import t from 'tap'
import { BORROWER, NET, T0, dispatchAt, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'
import type { Engine } from '../../src/engine/index.ts'

const TTL_MS = 60_000
const observe = (engine: Engine, chainTimeMs: number, nowMs: number) =>
  unwrap(engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events: [] }, nowMs))

t.test('an offer outlives its TTL on the clock while the chain stands still, and expires when the chain passes it', async (t) => {
  const { engine } = newEngine({ offerTtlMs: TTL_MS })
  registerBacking(engine)
  observe(engine, T0, T0)
  const offerId = offerFor(engine, {}, T0)
  t.equal(engine.getOffer(offerId)?.expiresAtMs, T0 + TTL_MS, 'its deadline: the observed chain time plus the TTL')
  // The chain is not observed again (an outage): an hour on the service's clock expires nothing.
  const idle = unwrap(engine.dispatch(T0 + 3_600_000))
  t.same(idle.expiredOffers, [], 'not expired on the clock')
  t.equal(engine.getOffer(offerId)?.state, 'offered')
  // A lender arrives during the outage: the offer is still fresh on its network's time, so it is leased.
  unwrap(engine.registerLender(lenderInput(1), T0 + 3_600_000))
  const second = offerFor(engine, {}, T0 + 3_600_000)
  t.equal(engine.getOffer(second)?.expiresAtMs, T0 + TTL_MS, 'created during the outage: the TTL starts at the last observed chain time')
  t.ok(unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 3_600_000)).lease, 'and leased: not stale')
  engine.checkInvariants()

  const { engine: other } = newEngine({ offerTtlMs: TTL_MS })
  registerBacking(other)
  observe(other, T0, T0)
  const waiting = offerFor(other, {}, T0)
  observe(other, T0 + TTL_MS - 1, T0 + 5_000_000)
  t.same(unwrap(other.dispatch(T0 + 5_000_000)).expiredOffers, [], 'the chain 1 ms short of the deadline: not stale')
  observe(other, T0 + TTL_MS, T0 + 5_000_001)
  const out = unwrap(other.dispatch(T0 + 5_000_001))
  t.same(out.expiredOffers.map((o) => o.offerId), [waiting], 'the chain reached the deadline: stale')
  other.checkInvariants()
})

t.test('a lease deadline counts from the later of the service clock and the observed chain time', async (t) => {
  const { engine } = newEngine({ leaseTtlMs: 30_000 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  // The observed chain time trails the service's clock by 10 minutes (confirmations x block time, or an RPC outage):
  // counted from it, the deadline would already be past on the chain's head, and the lender could not pay at all.
  observe(engine, T0 - 600_000, T0)
  const offerId = offerFor(engine, {}, T0)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  t.equal(lease.expiresAtMs, T0 + 30_000, 'the service clock + TTL: the lender gets the whole TTL')
  // Still judged on the observed chain time: the service clock past the deadline ends nothing.
  t.equal(unwrap(engine.dispatch(T0 + 31_000)).expiredLeases.length, 0, 'the clock past the deadline: not over')
  t.equal(observe(engine, T0 + 29_000, T0 + 40_000).expiredLeases.length, 0, 'the chain short of it: not over')
  t.equal(observe(engine, T0 + 31_000, T0 + 41_000).expiredLeases.length, 1, 'over once the chain passes it')

  // A chain running ahead of the service's clock (a devnet moved forward): counted from the chain time.
  const { engine: ahead } = newEngine({ leaseTtlMs: 30_000 })
  registerBacking(ahead)
  unwrap(ahead.registerLender(lenderInput(1), T0))
  observe(ahead, T0 + 600_000, T0)
  const aheadOffer = offerFor(ahead, {}, T0)
  t.equal(unwrap(ahead.matchOffer({ offerId: aheadOffer, caller: BORROWER }, T0)).lease?.expiresAtMs, T0 + 600_000 + 30_000, 'chain time + TTL')
})

t.test('before any chain time is observed, the service clock stands in', async (t) => {
  const { engine } = newEngine({ offerTtlMs: TTL_MS, leaseTtlMs: 30_000 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const offerId = offerFor(engine, {}, T0 + 5)
  t.equal(engine.getOffer(offerId)?.expiresAtMs, T0 + 5 + TTL_MS)
  t.equal(unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0 + 7)).lease?.expiresAtMs, T0 + 7 + 30_000)
  t.equal(unwrap(dispatchAt(engine, T0 + 7 + 31_000)).expiredLeases.length, 1)
})
