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
}

/** A verified `Repaid` event: someone paid an advance's lender (and the insurance share to the reserve). */
export interface RepaidFact {
  network: string
  txHash: `0x${string}`
  logIndex: number
  advanceId: string
  lender: Address
  payer: Address
  amountAtomic: bigint
  reserveAmountAtomic: bigint
}

/** An operator transaction (settleJob, liquidate) that another part sent and saw succeed. */
export interface ExecutedTx {
  network: string
  txHash: `0x${string}`
}
