// What the engine reads from the outside world. Implementations live elsewhere (src/chain); the engine only calls
// them synchronously and never waits on I/O.
import type { Address } from '../../machines/types.ts'

/** Cache of lender session-key wallets, kept current by the chain watcher. */
export interface WalletView {
  /** min(balance, allowance to the credit contract) of `asset` on `network` held by `holder`; 0n when unknown. */
  spendableAtomic(network: string, asset: string, holder: Address): bigint
}

/**
 * The on-chain key of an offer (and of its advance): salted per data directory (src/chain/ids.ts offerKey), so it is
 * not guessable from the id. A pure function of the id: the engine stays deterministic on replay.
 */
export type OfferKeyOf = (offerId: string) => `0x${string}`

/** A verified `SupplierPaid` event: the lender's session key paid the offer's supplier. */
export interface SupplierPaymentFact {
  network: string
  txHash: `0x${string}`
  logIndex: number
  offerId: string
  payer: Address
  supplier: Address
  asset: string
  amountAtomic: bigint
  /**
   * The token refused the supplier: the contract took the principal from the payer and held it for the supplier
   * (PaymentHeld just before the SupplierPaid; claimHeld delivers it). The advance is born and owed all the same.
   */
  supplierPaymentHeld?: boolean
}

/**
 * A verified `Repaid` event, of any amount: someone paid an advance's lender (its session wallet on chain) and, once
 * the lender's part is paid, the reserve's share. The contract caps a payment at what is owed, so an overpayment never
 * shows here. `lenderOwedAtomic` and `reserveOwedAtomic` are what the contract says is still owed after it.
 */
export interface RepaidFact {
  network: string
  txHash: `0x${string}`
  logIndex: number
  advanceId: string
  /** The Repaid event's lender: the advance's payer (the session wallet that paid the supplier). */
  lender: Address
  payer: Address
  /** toLender */
  amountAtomic: bigint
  /** toReserve */
  reserveAmountAtomic: bigint
  lenderOwedAtomic: bigint
  reserveOwedAtomic: bigint
}

/** An operator transaction (settleJob, liquidate) that another part sent and saw succeed. */
export interface ExecutedTx {
  network: string
  txHash: `0x${string}`
}
