// What a lender receives for a live lease: the service's EIP-712 lease authorization (the contract checks it in
// paySupplier: payer, supplier, amount, fee, reserve share, deadline, due date) and the unsigned paySupplier carrying it.
import type { Hex } from 'viem'
import type { NetworkConfig } from '../chain/config.ts'
import { LeaseSigner, type LeaseAuthorization } from '../chain/lease-authorization.ts'
import type { UnsignedTransaction } from '../chain/transactions.ts'
import { buildPaySupplierV2Transaction } from '../chain/transactions-v2.ts'
import { insuranceAtomic } from '../engine/rules.ts'
import type { LeaseView, OfferView } from '../engine/types.ts'

export interface DeliveredLease {
  authorization: LeaseAuthorization
  signature: Hex
  transaction: UnsignedTransaction
}

export class LeaseDelivery {
  /** Per network: the key that signs lease authorizations (the credit contract's leaseSigner), when configured. */
  readonly #signers = new Map<string, LeaseSigner>()

  constructor(networks: readonly NetworkConfig[]) {
    for (const network of networks) {
      if (network.leaseSignerPrivateKey === undefined) continue
      this.#signers.set(network.slug, new LeaseSigner({ privateKey: network.leaseSignerPrivateKey, chainId: network.chainId, verifyingContract: network.creditContract }))
    }
  }

  /**
   * The authorization of a live lease of `offer` and its paySupplier transaction; undefined when the network has no
   * lease signer. `jobKey`: the key of the offer's job on chain, the one it was funded under (JobView.jobKey), or
   * zero for an offer on a backing source. Signed lazily, when the lease is delivered (design-chain.md): ~0.1 ms.
   */
  deliver(lease: LeaseView, offer: OfferView, jobKey: Hex, network: NetworkConfig, tokenAddress: Hex, insuranceShareBps: number): DeliveredLease | undefined {
    const signer = this.#signers.get(lease.network)
    if (signer === undefined) return undefined
    const authorization: LeaseAuthorization = {
      offerKey: offer.offerKey,
      jobKey,
      payer: lease.payer,
      supplier: lease.supplierAddress,
      asset: tokenAddress,
      amount: lease.amountAtomic,
      fee: lease.feeAtomic,
      // The one definition of the insurance share (the advance records the same when it is paid).
      reserveShare: insuranceAtomic(lease.feeAtomic, insuranceShareBps),
      // The lease's expiry, inclusive, in whole seconds (floor: never later than the engine's expiry).
      deadline: BigInt(Math.floor(lease.expiresAtMs / 1000)),
      dueAt: BigInt(Math.floor(offer.dueAtMs / 1000)),
    }
    const signature = signer.sign(authorization)
    const transaction = buildPaySupplierV2Transaction({ network, contract: network.creditContract }, { authorization, signature })
    return { authorization, signature, transaction }
  }
}
