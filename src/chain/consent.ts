// A job names a borrower only with the borrower's consent (issue 10, hole 3): either the borrower registers the job
// itself, or the client's request carries the borrower's EIP-712 signature over the job's terms. Without it a
// stranger could fund a 1-unit job naming any wallet and then fail it to suspend that wallet. The network is one of the
// signed fields. A borrower that is a contract wallet signs with ERC-1271 (or ERC-6492 before its deployment): the
// check asks the job's network, within its read deadline. The domain binds the job's
// network's chain id and credit contract (verifyingContract): without them (version 1) a consent was valid at every
// deployment of this service with a network of the same name, so a client holding one could register the same job id
// on another service's contract and fail it there, suspending the borrower (an adversary's finding, contracts9).
import { getAddress, isHex, recoverTypedDataAddress, type Address, type Chain, type Hex, type LocalAccount, type PublicClient, type Transport } from 'viem'
import { ChainRpcError } from './proofs.ts'

/** The client's request names a borrower without its consent, or with a signature that is not it. */
export class BorrowerConsentError extends Error {
  override readonly name = 'BorrowerConsentError'
  constructor(readonly code: 'borrower_consent_required' | 'borrower_consent_invalid', message: string) {
    super(message)
  }
}

/** The domain's fixed part; chainId and verifyingContract are the job's network's chain id and credit contract. */
export const consentDomain = { name: 'agent-credit borrower consent', version: '2' } as const

export type ConsentDomain = { name: string; version: string; chainId: number; verifyingContract: Address }

/** The consent domain of one network: its chain id and its credit contract. */
export function consentDomainOf(network: { chainId: number; creditContract: Address }): ConsentDomain {
  return { ...consentDomain, chainId: network.chainId, verifyingContract: getAddress(network.creditContract) }
}

export const consentTypes = {
  BorrowerConsent: [
    { name: 'jobId', type: 'string' },
    { name: 'network', type: 'string' },
    { name: 'asset', type: 'string' },
    { name: 'receivableAtomic', type: 'uint256' },
    { name: 'client', type: 'address' },
    { name: 'dueAt', type: 'uint64' },
  ],
} as const

export interface ConsentFields {
  jobId: string
  network: string
  asset: string
  receivableAtomic: bigint
  client: Address
  /** Signed as whole unix seconds. */
  dueAtMs: number
}

function message(fields: ConsentFields) {
  return {
    jobId: fields.jobId,
    network: fields.network,
    asset: fields.asset,
    receivableAtomic: fields.receivableAtomic,
    client: getAddress(fields.client),
    dueAt: BigInt(Math.floor(fields.dueAtMs / 1000)),
  }
}

/** The borrower's consent to a job with these terms (agents, tests, the demo). */
export function signBorrowerConsent(borrower: LocalAccount, fields: ConsentFields, domain: ConsentDomain): Promise<Hex> {
  return borrower.signTypedData({ domain, types: consentTypes, primaryType: 'BorrowerConsent', message: message(fields) })
}

/** The longest consent signature taken: ERC-6492 wraps a wallet's deployment, which stays well below this. */
export const consentSignatureHexCharsMax = 2 + 2 * 8192

/**
 * Whether `signature` is `borrower`'s consent to exactly these terms, on the job's network: an EOA's signature is
 * recovered locally (no chain read); otherwise the borrower is asked as a contract wallet (ERC-1271
 * isValidSignature, or ERC-6492 for a wallet not yet deployed) through viem's verifyTypedData. The client's transport
 * carries the network's read deadline: a chain that does not answer in time is ChainRpcError (503 chain_unavailable),
 * never a refusal.
 */
export async function verifyBorrowerConsent(
  client: PublicClient<Transport, Chain>,
  network: string,
  domain: ConsentDomain,
  borrower: Address,
  fields: ConsentFields,
  signature: string,
): Promise<boolean> {
  if (!isHex(signature) || signature.length < 4 || signature.length > consentSignatureHexCharsMax) return false
  const address = getAddress(borrower)
  const typed = { domain, types: consentTypes, primaryType: 'BorrowerConsent', message: message(fields), signature } as const
  if (signature.length === 132) {
    try {
      if ((await recoverTypedDataAddress(typed)) === address) return true
    } catch {
      // Not an ECDSA signature: a wallet's own format, for the chain to judge.
    }
  }
  try {
    // viem answers false for any failed call of the wallet, a timeout included: this read first tells an unreachable
    // chain (503, retry) from a refusal. A chain that stops between the two reads is a refusal that changed nothing.
    await client.getCode({ address })
  } catch (error) {
    throw new ChainRpcError(network, error)
  }
  try {
    return await client.verifyTypedData({ address, ...typed })
  } catch (error) {
    throw new ChainRpcError(network, error)
  }
}
