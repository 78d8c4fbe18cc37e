// Wire schemas of POST /credit-score: the request (subject and the caller's public key), the answer (the JWE and
// what computed it) and the plaintext inside the JWE, the score in wire form. The plaintext schema is held to
// `Wire<CreditScore>` by the type check below, so the document cannot drift from what the component seals.
import Type, { type Static } from 'typebox'
import { Address, Atomic, Bps, IsoTime, StrictObject } from '../api/common.ts'
import { SCORE_MAX, SCORE_MIN, SCORE_TERMS, SCORED_REPAYMENTS_MAX } from './formula.ts'
import { RecipientKey } from './recipient-key.ts'
import type { SealedScorePlaintext } from './seal.ts'

export const CreditScoreRequest = StrictObject(
  {
    subject: { ...Address, description: 'The agent to score: any address; one the service holds no borrower record of is scored as a record with no history (the base score), at the same price.' },
    publicKey: RecipientKey,
  },
  { description: 'Whom to score, and the public key the answer is encrypted to.' },
)
export type CreditScoreRequest = Static<typeof CreditScoreRequest>

const Count = Type.Integer({ minimum: 0 })
const Points = Type.Integer()

const ScoreFactors = StrictObject(
  {
    base: Points,
    repayments: Points,
    partialRepayments: Points,
    defaults: Points,
    shortfall: Points,
    suspension: Points,
    exposure: Points,
    historyAge: Points,
    erc8004: Points,
  },
  { description: 'Each term\'s contribution in points; the score is their sum clamped to scoreMin..scoreMax.' },
)

const ScoreInputs = StrictObject(
  {
    subject: Address,
    asOf: { ...IsoTime, description: 'When the record was read.' },
    repaidAdvances: { ...Count, description: 'Every advance repaid in full (reported; the repayment term reads scoredRepayments).' },
    scoredRepayments: Type.Array(StrictObject({ advanceId: Type.String(), network: Type.String(), asset: Type.String(), principalAtomic: Atomic }), {
      maxItems: SCORED_REPAYMENTS_MAX,
      description: `Repaid advances whose principal reached their asset's minimum (repaymentMinimums), oldest first, at most ${SCORED_REPAYMENTS_MAX}: each is an advance_repaid event of the subject's signed passport (GET /passport/{address}).`,
    }),
    repaymentMinimums: Type.Array(StrictObject({ network: Type.String(), asset: Type.String(), minPrincipalAtomic: Atomic }), {
      description: 'The least principal of a repaid advance the repayment term counts, per network and asset: repaymentMinPrincipalUnits whole units of the token.',
    }),
    partialRepayments: { ...Count, description: 'Partial repayments; 0 until the service records them.' },
    defaultedAdvances: Count,
    shortfallAtomic: { ...Atomic, description: 'What recoveries could not cover and the borrower has not repaid since, summed over assets (a repayment after a liquidation lowers it; only its being above 0 is scored).' },
    suspended: Type.Boolean(),
    openAdvances: Count,
    pastDueAdvances: Count,
    outstanding: Type.Array(StrictObject({ network: Type.String(), asset: Type.String(), outstandingAtomic: Atomic }), {
      description: 'Principal + fee of the open advances per network and asset (reported, not scored: assets do not add up).',
    }),
    historyStartedAt: Type.Union([IsoTime, Type.Null()], { description: 'Earliest activity of the subject the service holds; null when none.' }),
    erc8004: Type.Union(
      [StrictObject({ agentId: Type.String(), feedbackCount: Count, averageBps: Bps }), Type.Null()],
      { description: 'ERC-8004 reputation evidence; null until the service reads it.' },
    ),
  },
  { description: 'The inputs the score was computed from.' },
)

export const CreditScorePlaintext = StrictObject(
  {
    subject: Address,
    score: Type.Integer({ minimum: SCORE_MIN, maximum: SCORE_MAX }),
    scoreMin: Type.Integer(),
    scoreMax: Type.Integer(),
    formulaVersion: Type.Integer({ minimum: 1 }),
    asOf: IsoTime,
    factors: ScoreFactors,
    inputs: ScoreInputs,
  },
  { description: `The decrypted JWE payload (JSON). Terms and caps: ${JSON.stringify(SCORE_TERMS)}.` },
)

// What the component seals fits the document (compile time); the tests check decrypted answers against it (run time).
const sealedFitsSchema: SealedScorePlaintext extends Static<typeof CreditScorePlaintext> ? true : never = true
void sealedFitsSchema

const CompactJwe = Type.String({
  pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
  contentMediaType: 'application/jose',
  contentSchema: CreditScorePlaintext,
  description:
    'Compact JWE (RFC 7516): protected header {"alg":"ECDH-ES","enc":"A256GCM","cty":"application/json","epk":{...},"kid"?}, empty encrypted key ' +
    '(direct key agreement), IV, ciphertext, tag. Decrypt with the private key of publicKey; the plaintext is described by contentSchema.',
})

export const ComputeAttestationWire = StrictObject(
  { format: Type.String({ description: 'e.g. aws-nitro-enclave, intel-tdx, amd-sev-snp' }), document: Type.String({ description: 'Base64 attestation document.' }) },
  { description: 'Hardware attestation of the component that computed the score.' },
)

export const CreditScoreAnswer = StrictObject(
  {
    subject: Address,
    jwe: CompactJwe,
    compute: StrictObject({
      component: Type.String({ description: 'What computed the score: local-process (a child process of the service, no attestation).' }),
      attestation: Type.Union([ComputeAttestationWire, Type.Null()], { description: 'null: the component proves nothing about where it ran.' }),
    }),
  },
  { description: 'The encrypted score. The payment receipt is in the PAYMENT-RESPONSE header.' },
)
export type CreditScoreAnswer = Static<typeof CreditScoreAnswer>
