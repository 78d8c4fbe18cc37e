// A job names a borrower only with the borrower's consent (issue 10, hole 3): either the borrower registers the job
// itself, or the client's request carries the borrower's EIP-712 signature over the job's terms. Without it a
// stranger could fund a 1-unit job naming any wallet and then fail it to suspend that wallet. The domain has no chain
// id: the network is one of the signed fields.
import { getAddress, isHex, recoverTypedDataAddress, type Address, type Hex, type LocalAccount } from 'viem'

/** The client's request names a borrower without its consent, or with a signature that is not it. */
export class BorrowerConsentError extends Error {
  override readonly name = 'BorrowerConsentError'
  constructor(readonly code: 'borrower_consent_required' | 'borrower_consent_invalid', message: string) {
    super(message)
  }
}

export const consentDomain = { name: 'agent-credit borrower consent', version: '1' } as const

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
export function signBorrowerConsent(borrower: LocalAccount, fields: ConsentFields): Promise<Hex> {
  return borrower.signTypedData({ domain: consentDomain, types: consentTypes, primaryType: 'BorrowerConsent', message: message(fields) })
}

/** Whether `signature` is `borrower`'s consent to exactly these terms. */
export async function verifyBorrowerConsent(borrower: Address, fields: ConsentFields, signature: string): Promise<boolean> {
  if (!isHex(signature) || signature.length !== 132) return false
  try {
    const signer = await recoverTypedDataAddress({ domain: consentDomain, types: consentTypes, primaryType: 'BorrowerConsent', message: message(fields), signature })
    return signer === getAddress(borrower)
  } catch {
    return false
  }
}
