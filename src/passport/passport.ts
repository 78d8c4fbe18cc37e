// The credit passport (issue 13): every event that changes an agent's credit standing, as EIP-712 typed data signed
// by the service's key, chained per agent by sequence and the previous event's hash. Anyone holding an agent's
// events, the catalog's domain and the issuer address can check them without trusting this service: each signature
// with viem's verifyTypedData, and the chain of hashes for order and completeness (`verifyPassport`).
import { hashTypedData, verifyTypedData, zeroHash, type Address, type Hex, type PrivateKeyAccount } from 'viem'

export const passportDomain = { name: 'agent-credit passport', version: '1' } as const

export const passportTypes = {
  PassportEvent: [
    { name: 'agent', type: 'address' },
    { name: 'sequence', type: 'uint64' },
    { name: 'prevHash', type: 'bytes32' },
    { name: 'kind', type: 'string' },
    { name: 'issuedAtMs', type: 'uint64' },
    { name: 'details', type: 'string' },
  ],
} as const

export const passportKinds = ['job_failed', 'advance_repaid', 'advance_defaulted', 'liquidated_with_shortfall', 'suspension_lifted'] as const
export type PassportKind = (typeof passportKinds)[number]

/** One event as signed: `details` is canonical JSON (sorted keys) of amounts and references (job, advance, tx hashes). */
export interface PassportEventData {
  agent: Address
  /** 1, 2, ... per agent. */
  sequence: number
  /** The EIP-712 hash of the agent's previous event; zero for the first. */
  prevHash: Hex
  kind: PassportKind
  issuedAtMs: number
  details: string
}

export interface SignedPassportEvent extends PassportEventData {
  /** EIP-712 hash (hashTypedData) of this event: the next event's prevHash. */
  hash: Hex
  signature: Hex
}

const message = (e: PassportEventData) => ({
  agent: e.agent, sequence: BigInt(e.sequence), prevHash: e.prevHash, kind: e.kind, issuedAtMs: BigInt(e.issuedAtMs), details: e.details,
})

export function passportHash(event: PassportEventData): Hex {
  return hashTypedData({ domain: passportDomain, types: passportTypes, primaryType: 'PassportEvent', message: message(event) })
}

/** JSON with sorted keys and bigints as decimal strings, so the same details always give the same string. */
export function canonicalJson(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (typeof v === 'bigint') return v.toString()
    if (Array.isArray(v)) return v.map(norm)
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined).map((k) => [k, norm((v as Record<string, unknown>)[k])]))
    }
    return v
  }
  return JSON.stringify(norm(value))
}

/** Signs deterministically (RFC 6979 in viem's secp256k1): the same event always gets the same signature. */
export async function signPassportEvent(issuer: PrivateKeyAccount, event: PassportEventData): Promise<SignedPassportEvent> {
  const signature = await issuer.signTypedData({ domain: passportDomain, types: passportTypes, primaryType: 'PassportEvent', message: message(event) })
  return { ...event, hash: passportHash(event), signature }
}

export interface PassportVerification {
  ok: boolean
  problems: string[]
}

/**
 * Checks a contiguous run of one agent's events (a page or the whole passport): each is signed by `issuer` under
 * `domain` (as the catalog publishes it), its hash is its content's, sequences follow each other, and each prevHash
 * is the previous event's hash. A run that starts after sequence 1 needs the hash before it (`prevHash`, from the
 * previous page); from 1 it must be zero. A changed field breaks the signature, a dropped or reordered event breaks
 * the sequence or the chain.
 */
export async function verifyPassport(
  events: readonly SignedPassportEvent[],
  trust: { issuer: Address; domain?: { name: string; version: string }; prevHash?: Hex },
): Promise<PassportVerification> {
  const problems: string[] = []
  const domain = trust.domain ?? passportDomain
  let expectedPrev: Hex | undefined = trust.prevHash
  let agent: Address | undefined
  events.forEach((e, i) => {
    if (i > 0 && e.sequence !== (events[i - 1] as SignedPassportEvent).sequence + 1) problems.push(`event ${i}: sequence ${e.sequence} does not follow ${(events[i - 1] as SignedPassportEvent).sequence}`)
    if (i === 0 && e.sequence === 1 && e.prevHash !== zeroHash) problems.push('event 0: the first event\'s prevHash is not zero')
    if (expectedPrev !== undefined && e.prevHash !== expectedPrev) problems.push(`event ${i}: prevHash is not the previous event's hash`)
    if (agent !== undefined && e.agent.toLowerCase() !== agent.toLowerCase()) problems.push(`event ${i}: another agent`)
    agent ??= e.agent
    const hash = hashTypedData({ domain, types: passportTypes, primaryType: 'PassportEvent', message: message(e) })
    if (hash !== e.hash) problems.push(`event ${i}: hash does not match its content`)
    expectedPrev = hash
  })
  for (const [i, e] of events.entries()) {
    const valid = await verifyTypedData({ address: trust.issuer, domain, types: passportTypes, primaryType: 'PassportEvent', message: message(e), signature: e.signature }).catch(() => false)
    if (!valid) problems.push(`event ${i}: not signed by ${trust.issuer}`)
  }
  return { ok: problems.length === 0, problems }
}
