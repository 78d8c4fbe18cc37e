// A lender's session key as registration creates it: a fresh key, the private half returned to the lender once, and
// the record the service keeps (address, spend policy, the approve each network needs), never the private key.
import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import type { NetworkConfig } from '../chain/config.ts'
import { buildApproveTransaction, type UnsignedTransaction } from '../chain/transactions.ts'

export interface SessionKeyRecord {
  lender: Address
  address: Address
  policy: SpendPolicy
  setupTransactions: UnsignedTransaction[]
  createdAtMs: number
}

export interface SpendPolicy {
  /** Asset symbol per network slug. */
  assets: Record<string, string>
  perPaymentCapAtomic: bigint
  totalCapAtomic: bigint
  /** The only contract the key approves and calls, per network: that network's credit contract. */
  allowedContracts: Record<string, Address>
  expiresAtMs: number
}

export const SESSION_KEY_LIFETIME_MS = 365 * 24 * 3600 * 1000

/**
 * A new session key of `lender` on `networks`, spending `assets[network.slug]` there up to `capAtomic` (per payment
 * and in total): its setup transaction per network approves that much to the network's credit contract.
 */
export function newSessionKey(
  lender: Address,
  networks: readonly NetworkConfig[],
  assets: Record<string, string>,
  capAtomic: bigint,
  nowMs: number,
): { privateKey: Hex; sessionKey: SessionKeyRecord } {
  const privateKey = generatePrivateKey()
  const address = privateKeyToAddress(privateKey)
  const sessionKey: SessionKeyRecord = {
    lender,
    address,
    policy: {
      assets,
      perPaymentCapAtomic: capAtomic,
      totalCapAtomic: capAtomic,
      allowedContracts: Object.fromEntries(networks.map((n) => [n.slug, n.creditContract])),
      expiresAtMs: nowMs + SESSION_KEY_LIFETIME_MS,
    },
    setupTransactions: networks.map((n) =>
      buildApproveTransaction(n, { owner: address, asset: assets[n.slug] as string, amountAtomic: capAtomic }),
    ),
    createdAtMs: nowMs,
  }
  return { privateKey, sessionKey }
}

export function isSessionKeyRecord(value: unknown): value is SessionKeyRecord {
  const v = value as SessionKeyRecord
  return typeof v === 'object' && v !== null && typeof v.address === 'string' && typeof v.lender === 'string' && typeof v.policy === 'object'
}
