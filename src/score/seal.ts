// Sealing a score for its caller: a compact JWE (RFC 7516) made with jose, ECDH-ES with a fresh ephemeral key per
// answer and A256GCM content encryption, readable only with the private key of the JWK the caller sent. The
// plaintext is the score in the service's wire form (amounts as decimal strings, instants as ISO-8601 `...At`).
// Loaded by the score process: it imports nothing heavy (no viem, no schemas), so that process starts fast.
import { CompactEncrypt, importJWK } from 'jose'
import { toWire, type Wire } from '../api/wire.ts'
import type { CreditScore } from './formula.ts'
import type { RecipientKey } from './recipient-key.ts'

/** ECDH-ES key agreement (a fresh ephemeral key per answer, no key wrapping), A256GCM content encryption. */
export const JWE_ALG = 'ECDH-ES'
export const JWE_ENC = 'A256GCM'

export type SealedScorePlaintext = Wire<CreditScore>

const encoder = new TextEncoder()

export async function sealScore(score: CreditScore, recipient: RecipientKey): Promise<string> {
  const key = await importJWK({ ...recipient }, JWE_ALG)
  const plaintext = encoder.encode(JSON.stringify(toWire(score)))
  return new CompactEncrypt(plaintext)
    .setProtectedHeader({ alg: JWE_ALG, enc: JWE_ENC, cty: 'application/json', ...(recipient.kid === undefined ? {} : { kid: recipient.kid }) })
    .encrypt(key)
}
