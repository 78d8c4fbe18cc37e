// The unsigned transaction as the service hands it out (the sender signs; the service never holds that key), and the
// session key's setup `approve`. The credit contract's calls are built in src/chain/transactions-v2.ts.
import { encodeFunctionData, erc20Abi, getAddress, type Address, type Hex } from 'viem'
import { findToken, type NetworkConfig } from './config.ts'

/** Gas limit to sign an approve with: measured ~46k on the devnet, with headroom for cold slots. */
export const approveGasHint = 80_000n

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
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [network.creditContract, input.amountAtomic] })
  return tokenCall(network, input.owner, input.asset, data, approveGasHint)
}

/** Gas limit to sign an ERC-20 transfer with: measured ~35k on the devnet (~52k to a fresh holder), with headroom. */
export const transferGasHint = 80_000n

/** `transfer(to, amount)` of the asset on one network, sent by `from` (the lender's main wallet or its session key). */
export function buildTransferTransaction(
  network: NetworkConfig,
  input: { from: Address; to: Address; asset: string; amountAtomic: bigint },
): UnsignedTransaction {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [getAddress(input.to), input.amountAtomic] })
  return tokenCall(network, input.from, input.asset, data, transferGasHint)
}

/** A call of the asset's token contract on one network, sent by `from`. */
function tokenCall(network: NetworkConfig, from: Address, asset: string, data: Hex, gas: bigint): UnsignedTransaction {
  return { network: network.slug, chainId: network.chainId, from: getAddress(from), to: findToken(network, asset).address, data, value: 0n, gas }
}
