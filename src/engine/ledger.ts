// Lender liquidity and the insurance reserves: every movement of money on a lender's or a reserve's record.
// A lender's liquidity always adds up: available + reserved + deployed = registered + fees earned - losses.
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
  const placed = s.bookEntries.get(lender.address)
  if (placed) reposition(placed.entry, placed.books)
  touch(s, 'lender', lender.address)
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
  lender.availableAtomic += amountAtomic
}

/** A paid lease: its principal is deployed in the advance. */
export function deployForAdvance(lender: LenderRecord, amountAtomic: bigint): void {
  lender.reservedAtomic -= amountAtomic
  lender.deployedAtomic += amountAtomic
}

/**
 * A repayment of any amount: what the lender received is available again; the part of it that returns principal
 * (`principalReturnedAtomic`, the principal first) leaves deployed, the rest is its fee.
 */
export function returnRepayment(lender: LenderRecord, principalReturnedAtomic: bigint, lenderAmountAtomic: bigint): void {
  lender.deployedAtomic -= principalReturnedAtomic
  lender.availableAtomic += lenderAmountAtomic
  lender.feesEarnedAtomic += lenderAmountAtomic - principalReturnedAtomic
}

/**
 * A liquidated advance: `principalAtomic` is the principal still deployed in it, `recoveredAtomic` what the lender got
 * back; above the principal it is fee, below it a loss.
 */
export function returnRecovery(lender: LenderRecord, principalAtomic: bigint, recoveredAtomic: bigint): void {
  lender.deployedAtomic -= principalAtomic
  lender.availableAtomic += recoveredAtomic
  if (recoveredAtomic >= principalAtomic) lender.feesEarnedAtomic += recoveredAtomic - principalAtomic
  else lender.lossesAtomic += principalAtomic - recoveredAtomic
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
