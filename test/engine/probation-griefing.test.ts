// Probation griefing (an adversary's finding, README "Reputation and reliability"): lenders that never pay, asking
// 0 bps and holding (never spending) the amount in their session wallets, stay inactive, but each got its probation
// lease every lenderProbationSeconds for ever. Each such lease holds a borrower's offer for the lease's life and uses
// one of the offer's leasesPerOfferMax, so 16 of them (free wallets) used up an offer's leases every hour and kept it
// from the honest lender behind them. Now the wait doubles after each probation lease left unpaid in a row. Fails on
// the old code: each griefer gets a lease an hour (24 in the day instead of 4), and an offer a hour runs out of leases.
import t from 'tap'
import type { Engine } from '../../src/engine/index.ts'
import { BORROWER, T0, dispatchAt, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap } from './fixtures/world.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const GRIEFERS = 16
const griefers = Array.from({ length: GRIEFERS }, (_, i) => lenderInput(i + 1, { minFeeBps: 0, reliabilityBps: 900 }))
const honest = lenderInput(GRIEFERS + 1, { minFeeBps: 100, availableLiquidityAtomic: 10n ** 12n })

/** Pays the offer's lease at once when the honest lender holds it (the griefers never pay). */
function payIfHonest(engine: Engine, offerId: string, nowMs: number, n: number): void {
  const offer = engine.getOffer(offerId)
  const lease = offer?.currentLeaseId ? engine.getLease(offer.currentLeaseId) : undefined
  if (lease?.lender !== honest.address) return
  unwrap(engine.recordSupplierPayment({
    network: lease.network, txHash: hash(5000 + n), logIndex: 0, offerId, payer: lease.payer,
    supplier: lease.supplierAddress, asset: lease.asset, amountAtomic: lease.amountAtomic, caller: lease.lender,
  }, nowMs))
}

/**
 * A day of one borrower asking for credit whenever it has no live offer, with the chain observed and dispatch run
 * every 31 s (a lease's 30 s then ends on the next step): the griefers (inactive since their registration, at 0 bps
 * first in the book) against one honest lender asking 100 bps that pays each lease at once.
 */
function griefedDay(): { engine: Engine; exhaustedOffers: number } {
  const { engine } = newEngine()
  registerBacking(engine, 'src_1', 10n ** 12n)
  for (const input of [...griefers, honest]) unwrap(engine.registerLender(input, T0))
  let offerId: string | undefined
  let exhaustedOffers = 0
  for (let nowMs = T0, n = 0; nowMs < T0 + DAY; nowMs += 31_000, n++) {
    const dispatched = unwrap(dispatchAt(engine, nowMs))
    exhaustedOffers += dispatched.expiredOffers.filter((o) => o.endReason === 'leases_exhausted').length
    // A final offer is no longer live: its state reads undefined.
    const state = offerId === undefined ? undefined : engine.getOffer(offerId)?.state
    if (offerId === undefined || (state !== 'offered' && state !== 'leased')) {
      offerId = offerFor(engine, {}, nowMs)
      unwrap(engine.matchOffer({ offerId, caller: BORROWER }, nowMs))
    }
    payIfHonest(engine, offerId, nowMs, n)
  }
  return { engine, exhaustedOffers }
}

t.test('lenders that never pay get a probation lease after 1, 2, 4, 8 h ...: a few a day each, not one an hour', async (t) => {
  const { engine, exhaustedOffers } = griefedDay()
  engine.checkInvariants()
  // Probation leases at 1, 1+2, 1+2+4, 1+2+4+8 h (each wait counted from the last miss, a step or two after the
  // grant): floor(log2(24 + 1)) of them in 24 h, where a lease an hour would be 24.
  const perDayMax = Math.floor(Math.log2(DAY / HOUR + 1))
  for (const { address } of griefers) {
    const lender = engine.getLender(address)!
    t.ok(lender.leasesGranted <= perDayMax, `${address}: ${lender.leasesGranted} probation leases in a day, at most ${perDayMax}`)
    t.equal(lender.leasesPaid, 0, 'none paid')
  }
  t.ok(exhaustedOffers <= perDayMax, `${exhaustedOffers} offers ran out of leases on the griefers, at most one a probation round (${perDayMax})`)
  const paid = engine.getLender(honest.address)!
  t.ok(paid.leasesPaid > 0 && paid.leasesPaid === paid.leasesGranted, `the honest lender was leased and paid ${paid.leasesPaid} offers`)
})
