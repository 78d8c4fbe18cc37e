// Lender liquidity and the insurance reserves: every movement of money on a lender's or a reserve's record.
// A lender's liquidity always adds up: available + reserved + deployed = registered + fees earned - losses - withdrawn.
import { reposition } from './book.ts'
import { touch } from './changes.ts'
import { reserveId } from './keys.ts'
import type { EngineState } from './state.ts'
import type { Address, LenderRecord, ReserveRecord } from './types.ts'

export function lenderOf(s: EngineState, address: Address): LenderRecord {
  const lender = s.lenders.get(address)
  if (!lender) throw new Error(`engine: lender ${address} vanished`)
  return lender
}

/** After a change to the lender's record: its book position follows, and the change is recorded. */
export function lenderChanged(s: EngineState, lender: LenderRecord): void {
  repositionLender(s, lender)
  touch(s, 'lender', lender.address)
}

/**
 * The lender's book entry moves to where its record now sorts it. A pass that changes many lenders' records and reads
 * no book on the way (dispatch's lease time-outs) records each change at once (touch) and moves each lender once at
 * its end: the book stays sorted by the keys its entries carry, so a deferred move finds its entry where it was.
 */
export function repositionLender(s: EngineState, lender: LenderRecord): void {
  const placed = s.bookEntries.get(lender.address)
  if (placed) reposition(placed.entry, placed.books)
}

/** The reserve of one asset on one network, created empty at its first use; recorded as changed. */
export function reserveOf(s: EngineState, network: string, asset: string): ReserveRecord {
  const id = reserveId(network, asset)
  let reserve = s.reserves.get(id)
  if (!reserve) s.reserves.set(id, (reserve = { network, asset, balanceAtomic: 0n, fundedAtomic: 0n, paidOutAtomic: 0n }))
  touch(s, 'reserve', id)
  return reserve
}

/** A granted lease reserves its principal out of the lender's available liquidity. */
export function reserveForLease(lender: LenderRecord, amountAtomic: bigint): void {
  lender.availableAtomic -= amountAtomic
  lender.reservedAtomic += amountAtomic
}

/** A lease that ended unpaid gives its reserved principal back. */
export function releaseFromLease(lender: LenderRecord, amountAtomic: bigint): void {
  lender.reservedAtomic -= amountAtomic
  comeBack(lender, amountAtomic)
}

/**
 * Capital coming back to the lender (a lease ended unpaid, a repayment, a recovery, a loss repaid after all) settles
 * its pending withdrawal first: a lender that withdrew more than it had available gets the rest as it returns, and it
 * is never lent again. What is pending waits for what can still come back: live leases, open advances and losses (a
 * shortfall advance's borrower may repay it after its liquidation, `returnAfterLoss`).
 */
function comeBack(lender: LenderRecord, amountAtomic: bigint): void {
  const withdrawn = lender.withdrawalPendingAtomic < amountAtomic ? lender.withdrawalPendingAtomic : amountAtomic
  lender.withdrawalPendingAtomic -= withdrawn
  lender.withdrawnAtomic += withdrawn
  lender.availableAtomic += amountAtomic - withdrawn
  const outstanding = outstandingAtomic(lender)
  if (lender.withdrawalPendingAtomic > outstanding) lender.withdrawalPendingAtomic = outstanding
}

/** What may still come back to the lender: its live leases' reservations, its open advances, its losses. */
export function outstandingAtomic(lender: LenderRecord): bigint {
  return lender.reservedAtomic + lender.deployedAtomic + lender.lossesAtomic
}

/**
 * The lender lowers what the service may lend by `amountAtomic` (at most available + reserved + deployed + losses -
 * what is already pending): the available part leaves at once; the rest is pending and leaves as live leases, open
 * advances and repaid losses come back (their reservations stay: a lease in flight can still be paid).
 */
export function withdrawLiquidity(lender: LenderRecord, amountAtomic: bigint): void {
  const now = lender.availableAtomic < amountAtomic ? lender.availableAtomic : amountAtomic
  lender.availableAtomic -= now
  lender.withdrawnAtomic += now
  lender.withdrawalPendingAtomic += amountAtomic - now
}

/** What a lender may still withdraw: all its capital, and its losses, not already withdrawn or pending. */
export function withdrawableAtomic(lender: LenderRecord): bigint {
  return lender.availableAtomic + outstandingAtomic(lender) - lender.withdrawalPendingAtomic
}

/** A paid lease: its principal is deployed in the advance. */
export function deployForAdvance(lender: LenderRecord, amountAtomic: bigint): void {
  lender.reservedAtomic -= amountAtomic
  lender.deployedAtomic += amountAtomic
}

/**
 * A repayment of any amount: what the lender received comes back (to a pending withdrawal first); the part of it that
 * returns principal (`principalReturnedAtomic`, the principal first) leaves deployed, the rest is its fee.
 */
export function returnRepayment(lender: LenderRecord, principalReturnedAtomic: bigint, lenderAmountAtomic: bigint): void {
  lender.deployedAtomic -= principalReturnedAtomic
  comeBack(lender, lenderAmountAtomic)
  lender.feesEarnedAtomic += lenderAmountAtomic - principalReturnedAtomic
}

/**
 * A liquidated advance: `principalAtomic` is the principal still deployed in it, `recoveredAtomic` what the lender got
 * back; above the principal it is fee, below it a loss.
 */
export function returnRecovery(lender: LenderRecord, principalAtomic: bigint, recoveredAtomic: bigint): void {
  lender.deployedAtomic -= principalAtomic
  // The loss first: what it leaves pending waits for the loss's later repayment.
  if (recoveredAtomic >= principalAtomic) lender.feesEarnedAtomic += recoveredAtomic - principalAtomic
  else lender.lossesAtomic += principalAtomic - recoveredAtomic
  comeBack(lender, recoveredAtomic)
}

/**
 * A repayment after a liquidation with a shortfall: the principal it returns (`principalReturnedAtomic`) was counted a
 * loss at the liquidation (it left deployed then) and is a loss no more; the rest of what the lender received is fee.
 */
export function returnAfterLoss(lender: LenderRecord, principalReturnedAtomic: bigint, lenderAmountAtomic: bigint): void {
  lender.lossesAtomic -= principalReturnedAtomic
  comeBack(lender, lenderAmountAtomic)
  lender.feesEarnedAtomic += lenderAmountAtomic - principalReturnedAtomic
}

/** The insurance share of a repaid fee goes into the reserve of its asset. */
export function fundReserve(s: EngineState, network: string, asset: string, amountAtomic: bigint): void {
  const reserve = reserveOf(s, network, asset)
  reserve.balanceAtomic += amountAtomic
  reserve.fundedAtomic += amountAtomic
}

/** The reserve step of a recovery pays out of the reserve of the advance's asset. */
export function payFromReserve(s: EngineState, network: string, asset: string, amountAtomic: bigint): void {
  const reserve = reserveOf(s, network, asset)
  reserve.balanceAtomic -= amountAtomic
  reserve.paidOutAtomic += amountAtomic
}
