// First leases (README "Reputation and reliability", an adversary's finding): a stranger registers a throw-away lender
// at 0 bps (first in the books), funds its session wallet and never pays a supplier. Each lease it takes holds a
// borrower's offer until it times out. A new lender starts at reliability 5000, so it fell below the minimum only
// after 9 misses in a row, and it held as many offers at once as its wallet covered; then the same capital went to a
// fresh wallet. Now a lender holds at most its lease allowance at once (lenderLeaseAllowanceInitial, 1, plus one per
// lease paid, less one per lease left unpaid), and a miss that uses the allowance up puts it below the minimum at
// once. Fails on the old code: the throw-away lender holds all 16 offers asked at once, and 9 in its first hour.
import t, { type Test } from 'tap'
import { Engine, type EngineConfig } from '../../src/engine/index.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { BORROWER, CLIENT, FakeWallets, T0, createJob, dispatchAt, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const HOUR = 3_600_000
const AT_ONCE = 16
/** The service's default: every test here runs with it (the fixture's engines start lenders with a large allowance). */
const FIRST: Partial<EngineConfig> = { lenderLeaseAllowanceInitial: defaultEngineConfig.lenderLeaseAllowanceInitial }
const griefer = lenderInput(1, { minFeeBps: 0, availableLiquidityAtomic: 10n ** 9n })
const honest = lenderInput(2, { minFeeBps: 100, availableLiquidityAtomic: 10n ** 9n })
let paymentSeq = 0

/**
 * The griefer and, behind it at 100 bps, the honest lender, established: it paid every lease of 5 rounds of
 * AT_ONCE offers before the griefer registered (payRounds), so its allowance covers every offer of a round.
 */
function world(wallets = new FakeWallets()): Engine {
  const { engine } = newEngine({ ...FIRST, liveOffersPerBorrowerMax: 1000 }, wallets)
  registerBacking(engine, 'src_1', 10n ** 12n)
  unwrap(engine.registerLender(honest, T0 - HOUR))
  payRounds(engine, honest.address, 5, T0 - HOUR)
  unwrap(engine.registerLender(griefer, T0))
  return engine
}

/** Rounds of AT_ONCE offers asked at once, a second apart, from `startMs`; every lease paid: how many `who` held each round. */
function payRounds(engine: Engine, who: string, rounds: number, startMs: number): number[] {
  const held: number[] = []
  for (let round = 0; round < rounds; round++) {
    const nowMs = startMs + round * 1000
    const leased = burst(engine, AT_ONCE, nowMs)
    held.push(heldBy(leased, who))
    for (const { offerId, lender } of leased) if (lender !== null) payIf(engine, offerId, lender, nowMs)
  }
  return held
}

/** Pays the offer's live lease now, when `who` holds it. */
function payIf(engine: Engine, offerId: string, who: string, nowMs: number): void {
  const offer = engine.getOffer(offerId)
  const lease = offer?.currentLeaseId ? engine.getLease(offer.currentLeaseId) : undefined
  if (lease?.lender !== who) return
  unwrap(engine.recordSupplierPayment({
    network: lease.network, txHash: hash(7000 + paymentSeq++), logIndex: 0, offerId, payer: lease.payer,
    supplier: lease.supplierAddress, asset: lease.asset, amountAtomic: lease.amountAtomic, caller: lease.lender,
  }, nowMs))
}

/** `count` offers asked and matched at `nowMs`: the lender each was leased to, in order. */
function burst(engine: Engine, count: number, nowMs: number): { offerId: string; lender: string | null }[] {
  return Array.from({ length: count }, () => {
    const offerId = offerFor(engine, {}, nowMs)
    return { offerId, lender: unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs)).lease?.lender ?? null }
  })
}

const heldBy = (leased: { lender: string | null }[], who: string) => leased.filter((l) => l.lender === who).length

/** The chain is observed at `atMs`, past the griefer's leases: its misses (`expired` in all) put it below the minimum. */
function missedBelowMinimum(t: Test, engine: Engine, atMs: number, expired: number, why: string): void {
  unwrap(dispatchAt(engine, atMs))
  t.match(engine.getLender(griefer.address), { leasesExpired: expired, reliabilityBps: 500 }, why)
  t.equal(heldBy(burst(engine, AT_ONCE, atMs + 1), griefer.address), 0, 'inactive: none of the next offers until its probation')
  engine.checkInvariants()
}

t.test('the service starts every lender with an allowance of one lease', async (t) => {
  t.equal(defaultEngineConfig.lenderLeaseAllowanceInitial, 1)
})

t.test('a throw-away lender holds one of the offers asked at once, not as many as its wallet covers', async (t) => {
  const engine = world()
  const leased = burst(engine, AT_ONCE, T0)
  t.equal(heldBy(leased, griefer.address), 1, `the griefer holds 1 of the ${AT_ONCE} offers`)
  t.equal(heldBy(leased, honest.address), AT_ONCE - 1, 'the honest lender behind it the others')
  missedBelowMinimum(t, engine, T0 + 31_000, 1, 'its one miss puts it below the minimum at once')
})

t.test("a throw-away lender's first hour: one borrower's offer held unpaid, not nine", async (t) => {
  const engine = world()
  let offerId: string | undefined
  for (let nowMs = T0; nowMs < T0 + HOUR; nowMs += 31_000) {
    unwrap(dispatchAt(engine, nowMs))
    const state = offerId === undefined ? undefined : engine.getOffer(offerId)?.state
    if (offerId === undefined || (state !== 'offered' && state !== 'leased')) {
      offerId = offerFor(engine, {}, nowMs)
      unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs))
    }
    payIf(engine, offerId, honest.address, nowMs)
  }
  const g = engine.getLender(griefer.address)!
  t.equal(g.leasesGranted, 1, `${g.leasesGranted} offers held unpaid in the hour`)
  t.equal(g.leasesPaid, 0)
  t.ok(engine.getLender(honest.address)!.leasesPaid > 50, 'the honest lender had the rest')
  engine.checkInvariants()
})

t.test('each offer a lender leaves unpaid costs it a lease it paid before', async (t) => {
  const engine = world()
  const [first] = burst(engine, 1, T0)
  payIf(engine, first!.offerId, griefer.address, T0)
  t.equal(engine.getLender(griefer.address)?.leasesPaid, 1, 'it paid one (a real advance)')
  const leased = burst(engine, AT_ONCE, T0 + 1)
  t.equal(heldBy(leased, griefer.address), 2, 'then it holds two at once: 1 + 1 paid')
  missedBelowMinimum(t, engine, T0 + 31_001, 2, 'two misses, one more than it paid: below the minimum')
})

t.test('an honest new lender that pays its leases holds twice as many each round: 1, 2, 4, 8, 16', async (t) => {
  const engine = world()
  // This time the cheapest lender pays every lease it holds.
  t.same(payRounds(engine, griefer.address, 5, T0), [1, 2, 4, 8, 16], 'its allowance grows with every lease it pays, up to all the offers')
  t.match(engine.getLender(griefer.address), { leasesPaid: 31, leasesExpired: 0 })
  engine.checkInvariants()
})

t.test('a cancelled lease (its job failed by the client) is no miss and frees its place', async (t) => {
  const engine = world()
  createJob(engine, 'job_c', 100_000n)
  const offerId = offerFor(engine, { repaymentSource: 'job_c', amountAtomic: 1000n }, T0)
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease
  t.equal(lease?.lender, griefer.address, 'the new lender holds it')
  unwrap(engine.failJob({ jobId: 'job_c', reason: 'not_delivered', caller: CLIENT }, T0 + 1))
  const over = lease!.expiresAtMs + 1000
  t.match(unwrap(dispatchAt(engine, over)).expiredLeases, [{ leaseId: lease!.leaseId, endReason: 'offer_closed' }], 'cancelled')
  t.match(engine.getLender(griefer.address), { leasesExpired: 0, reliabilityBps: 5000 }, 'no miss, no penalty')
  // The failed job suspended its borrower: another borrower asks.
  const agent = '0x00000000000000000000000000000000000000b1' as const
  registerBacking(engine, 'src_other', 10n ** 9n, agent)
  const next = unwrap(engine.matchOffer({ offerId: offerFor(engine, { agent, repaymentSource: 'src_other' }, over + 1), caller: agent }, over + 1)).lease
  t.equal(next?.lender, griefer.address, 'its place is free: it is leased again')
  engine.checkInvariants()
})

t.test('the allowance survives a restart: it is read from the counts of the stored lender and its live leases', async (t) => {
  const wallets = new FakeWallets()
  const engine = world(wallets)
  t.equal(heldBy(burst(engine, 1, T0), griefer.address), 1)
  const restored = new Engine(FIRST, wallets, engine.snapshots())
  restored.checkInvariants()
  t.equal(heldBy(burst(restored, AT_ONCE, T0 + 1), griefer.address), 0, 'its one lease is still live: none of the others')
  unwrap(dispatchAt(restored, T0 + 31_001))
  const again = new Engine(FIRST, wallets, restored.snapshots())
  t.match(again.getLender(griefer.address), { leasesExpired: 1, reliabilityBps: 500 }, 'its miss put it below the minimum, as stored')
  t.equal(heldBy(burst(again, AT_ONCE, T0 + 31_002), griefer.address), 0, 'still out after another restart')
})
