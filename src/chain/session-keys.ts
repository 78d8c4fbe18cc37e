// Lender session keys: a fresh key per registration, returned once; the service keeps the address and the policy.
import { getAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { findToken, type NetworkConfig } from './config.ts'
import { buildApproveTransaction, type UnsignedTransaction } from './transactions.ts'

export type SpendPolicy = {
  asset: string
  perPaymentCapAtomic: bigint
  totalCapAtomic: bigint
  /** The only contract the key may approve and call, per network slug: that network's credit contract. */
  allowedContracts: Record<string, Address>
  expiresAtMs: number
}

/** What the service keeps of a session key: never the private key. */
export type SessionKeyRecord = {
  address: Address
  policy: SpendPolicy
  /** One funding address per network: the session key's own address, where the lender sends asset and gas. */
  fundingAddresses: { network: string; address: Address }[]
  /** Per network, the approve(creditContract, totalCap) the session key must send once. */
  setupTransactions: UnsignedTransaction[]
}

export type SessionKeyInput = {
  asset: string
  perPaymentCapAtomic: bigint
  totalCapAtomic: bigint
  expiresAtMs: number
}

export class SpendPolicyError extends Error {
  override readonly name = 'SpendPolicyError'
}

/** Builds the record of a session key whose address is known (used by createSessionKey and by restores). */
export function describeSessionKey(address: Address, networks: readonly NetworkConfig[], input: SessionKeyInput): SessionKeyRecord {
  if (input.perPaymentCapAtomic <= 0n) throw new SpendPolicyError('perPaymentCapAtomic must be positive')
  if (input.totalCapAtomic < input.perPaymentCapAtomic) throw new SpendPolicyError('totalCapAtomic must be >= perPaymentCapAtomic')
  if (input.totalCapAtomic >= 2n ** 256n) throw new SpendPolicyError('totalCapAtomic must fit in uint256')
  if (networks.length === 0) throw new SpendPolicyError('at least one network is needed')
  for (const network of networks) findToken(network, input.asset)
  const owner = getAddress(address)
  return {
    address: owner,
    policy: {
      asset: input.asset,
      perPaymentCapAtomic: input.perPaymentCapAtomic,
      totalCapAtomic: input.totalCapAtomic,
      allowedContracts: Object.fromEntries(networks.map((n) => [n.slug, n.creditContract])),
      expiresAtMs: input.expiresAtMs,
    },
    fundingAddresses: networks.map((n) => ({ network: n.slug, address: owner })),
    setupTransactions: networks.map((n) =>
      buildApproveTransaction(n, { owner, asset: input.asset, amountAtomic: input.totalCapAtomic }),
    ),
  }
}

/** Generates a session key. The private key is in the result once; do not store it. */
export function createSessionKey(
  networks: readonly NetworkConfig[],
  input: SessionKeyInput,
): { privateKey: Hex; sessionKey: SessionKeyRecord } {
  const privateKey = generatePrivateKey()
  return { privateKey, sessionKey: describeSessionKey(privateKeyToAddress(privateKey), networks, input) }
}
