// Backing sources are "verified": their `evidenceId` is an EIP-712 signature by a configured attester over the
// source's fields (DESIGN section 4). The domain has no chain id: an attestation is about an off-chain asset and
// holds on every network; the fields it signs are exactly the ones the engine records. An attestation carries its
// expiry (`validUntil`, unix seconds): a valuation is only true for a while, so an expired one is refused at
// registration and an expired source gets no new credit (issue 10, hole 9). Version 2 of the domain added it.
// Version 3 signs the service it is for (`service`: the host, and port, clients reach the deployment at, its SIWE
// domain, published as the catalog's attestation.service): without it (version 2) an attestation from an attester two
// deployments both trust registered the same off-chain asset at both, one asset backing credit twice (a double
// pledge; an adversary's finding, contracts9). A version-2 attestation is refused as any wrong signature is.
import { getAddress, isHex, recoverTypedDataAddress, type Address, type Hex, type LocalAccount } from 'viem'
import type { RegisterSourceInput } from '../engine/types.ts'

/** evidenceId is not an EIP-712 BackingSource signature by a configured attester over the source's fields. */
export class AttestationInvalidError extends Error {
  override readonly name = 'AttestationInvalidError'
}

/** The attestation's validUntil has passed: a valuation is only true for a while. */
export class AttestationExpiredError extends Error {
  override readonly name = 'AttestationExpiredError'
}

export const attestationDomain = { name: 'agent-credit backing attestation', version: '3' } as const

export const attestationTypes = {
  BackingSource: [
    { name: 'service', type: 'string' },
    { name: 'sourceId', type: 'string' },
    { name: 'productType', type: 'string' },
    { name: 'agent', type: 'address' },
    { name: 'valueAtomic', type: 'uint256' },
    { name: 'liquidationValueAtomic', type: 'uint256' },
    { name: 'advanceRateBps', type: 'uint16' },
    { name: 'validUntil', type: 'uint64' },
  ],
} as const

/** Exactly the fields the engine records of a backing source, but the evidence itself. */
export type AttestedFields = Omit<RegisterSourceInput, 'evidenceId'>

function message(service: string, fields: AttestedFields) {
  const { validUntilMs, ...rest } = fields
  return { service, ...rest, agent: getAddress(fields.agent), validUntil: BigInt(Math.floor(validUntilMs / 1000)) }
}

/**
 * Signs a backing source for the deployment at `service` (the host clients reach it at, the catalog's
 * attestation.service) as an attester would (the devnet demo attester, tests, the bench).
 */
export function signBackingAttestation(account: LocalAccount, service: string, fields: AttestedFields): Promise<Hex> {
  return account.signTypedData({ domain: attestationDomain, types: attestationTypes, primaryType: 'BackingSource', message: message(service, fields) })
}

/** The attester that signed `evidenceId` over `fields` for `service`, when it is one of `attesters`; undefined otherwise. */
export async function verifyBackingAttestation(
  attesters: readonly Address[],
  service: string,
  fields: AttestedFields,
  evidenceId: string,
): Promise<Address | undefined> {
  if (!isHex(evidenceId) || evidenceId.length !== 132) return undefined
  let signer: Address
  try {
    signer = await recoverTypedDataAddress({
      domain: attestationDomain,
      types: attestationTypes,
      primaryType: 'BackingSource',
      message: message(service, fields),
      signature: evidenceId,
    })
  } catch {
    return undefined
  }
  return attesters.find((a) => a === signer)
}
