// The seam between the paid route and whatever computes the score. The route hands a component the inputs of one
// call and the caller's public key, and gets back only a sealed answer: a JWE for that key, plus the component's
// attestation when it has one. The route never sees the plaintext score, so a component may run anywhere the
// inputs can be sent: a child process (LocalScoreCompute), or a TEE whose attestation the caller can verify.
import type { CreditScoreInputs } from './formula.ts'
import type { RecipientKey } from './recipient-key.ts'

export interface ScoreCall {
  inputs: CreditScoreInputs
  recipient: RecipientKey
}

/**
 * Evidence of what computed the answer, for components that can prove it: e.g. a TEE quote (SEV-SNP, TDX, Nitro)
 * whose report data binds the enclave's measurement to the SHA-256 of the JWE. The route passes it on as it is.
 */
export interface ComputeAttestation {
  /** Attestation format, e.g. `aws-nitro-enclave`, `intel-tdx`, `amd-sev-snp`. */
  format: string
  /** The attestation document, base64. */
  document: string
}

export interface SealedScore {
  /** Compact JWE: ECDH-ES + A256GCM to the caller's key. */
  jwe: string
  /** Absent for components that cannot prove where they ran (the local one). */
  attestation?: ComputeAttestation
}

export interface CreditScoreCompute {
  /** Names the component in answers and the catalog, e.g. `local-process`. */
  readonly component: string
  /** Computes and seals one score; rejects (ComputeFailedError) when no answer was produced. */
  score(call: ScoreCall): Promise<SealedScore>
  /** Releases what the component holds (its child process); later calls start it again. */
  close(): Promise<void>
}

/** No answer was produced: the caller is charged nothing. */
export class ComputeFailedError extends Error {
  override readonly name = 'ComputeFailedError'
}
