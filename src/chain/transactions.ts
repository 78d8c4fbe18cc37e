// Unsigned transactions the service hands to lenders: the session key's setup `approve` and a lease's
// `paySupplier`. The lender signs them with the session key; the service never holds that key.
import { encodeFunctionData, erc20Abi, getAddress, type Address, type Hex } from 'viem'
import { creditFacilityAbi } from './artifacts.ts'
import { findToken, type NetworkConfig } from './config.ts'
import { idKey } from './ids.ts'

/** Gas limits to sign with. Measured on the devnet (approve ~46k, paySupplier ~60k) with headroom for cold slots. */
export const approveGasHint = 80_000n
export const paySupplierGasHint = 120_000n

export type UnsignedTransaction = {
  network: string
  chainId: number
  from: Address
  to: Address
  data: Hex
  value: bigint
  gas: bigint
}

/** The session key's `approve(creditContract, totalCap)` of the asset on one network. */
export function buildApproveTransaction(
  network: NetworkConfig,
  input: { owner: Address; asset: string; amountAtomic: bigint },
): UnsignedTransaction {
  const token = findToken(network, input.asset)
  return {
    network: network.slug,
    chainId: network.chainId,
    from: getAddress(input.owner),
    to: token.address,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [network.creditContract, input.amountAtomic] }),
    value: 0n,
    gas: approveGasHint,
  }
}

export type PaySupplierInput = {
  offerId: string
  payer: Address
  supplier: Address
  asset: string
  amountAtomic: bigint
  /** The lease's expiry; the contract refuses the payment after it (second resolution, rounded down). */
  expiresAtMs: number
}

export type PaySupplierTransaction = UnsignedTransaction & { deadlineSeconds: bigint; expiresAtMs: number }

export function deadlineSeconds(expiresAtMs: number): bigint {
  return BigInt(Math.floor(expiresAtMs / 1000))
}

/** The unsigned `paySupplier` a lender's session key sends for a live lease. */
export function buildPaySupplierTransaction(network: NetworkConfig, input: PaySupplierInput): PaySupplierTransaction {
  const token = findToken(network, input.asset)
  const deadline = deadlineSeconds(input.expiresAtMs)
  return {
    network: network.slug,
    chainId: network.chainId,
    from: getAddress(input.payer),
    to: network.creditContract,
    data: encodeFunctionData({
      abi: creditFacilityAbi,
      functionName: 'paySupplier',
      args: [idKey(input.offerId), getAddress(input.supplier), token.address, input.amountAtomic, deadline],
    }),
    value: 0n,
    gas: paySupplierGasHint,
    deadlineSeconds: deadline,
    expiresAtMs: input.expiresAtMs,
  }
}
