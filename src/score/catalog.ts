// The /credit-score entry of the service catalog: whether it is on, what it costs and to whom, how the answer is
// encrypted, what computes it, and the score's range and formula.
import Type, { type Static } from 'typebox'
import { Address, Atomic, StrictObject } from '../api/common.ts'
import { AssetSymbol, NetworkSlug } from '../api/schemas.ts'
import { FORMULA_VERSION, SCORE_MAX, SCORE_MIN } from './formula.ts'
import { scoreFormulaText } from './howto.ts'
import { JWE_ALG, JWE_ENC } from './seal.ts'

export const CREDIT_SCORE_CURVES = ['P-256', 'P-384', 'P-521', 'X25519'] as const

export const CreditScoreCatalogEntry = StrictObject({
  enabled: Type.Boolean(),
  path: Type.String(),
  payment: Type.Union(
    [
      StrictObject({
        x402Version: Type.Literal(2),
        scheme: Type.Literal('exact'),
        network: NetworkSlug,
        caip2: Type.String(),
        asset: AssetSymbol,
        assetAddress: Address,
        decimals: Type.Integer({ minimum: 0 }),
        amountAtomic: Atomic,
        payTo: Address,
        maxTimeoutSeconds: Type.Integer({ minimum: 1 }),
        facilitator: Type.String({ description: 'Facilitator that verifies and settles these payments.' }),
      }),
      Type.Null(),
    ],
    { description: 'What one call costs (null while disabled).' },
  ),
  encryption: StrictObject({
    format: Type.Literal('compact-jwe'),
    alg: Type.Literal(JWE_ALG),
    enc: Type.Literal(JWE_ENC),
    curves: Type.Array(Type.String()),
  }),
  compute: Type.Union([StrictObject({ component: Type.String(), attestation: Type.String() }), Type.Null()]),
  score: StrictObject({ min: Type.Integer(), max: Type.Integer(), formulaVersion: Type.Integer(), formula: Type.String() }),
})
export type CreditScoreCatalogEntry = Static<typeof CreditScoreCatalogEntry>

export interface CreditScoreOffer {
  network: string
  caip2: string
  asset: string
  assetAddress: `0x${string}`
  decimals: number
  amountAtomic: bigint
  payTo: `0x${string}`
  maxTimeoutSeconds: number
  facilitatorUrl: string
  component: string
  /** What the component attests; `none` for the local one. */
  attestation: string
}

export function creditScoreCatalogEntry(path: string, offer: CreditScoreOffer | null): CreditScoreCatalogEntry {
  return {
    enabled: offer !== null,
    path,
    payment:
      offer === null
        ? null
        : {
            x402Version: 2,
            scheme: 'exact',
            network: offer.network,
            caip2: offer.caip2,
            asset: offer.asset,
            assetAddress: offer.assetAddress,
            decimals: offer.decimals,
            amountAtomic: offer.amountAtomic.toString(),
            payTo: offer.payTo,
            maxTimeoutSeconds: offer.maxTimeoutSeconds,
            facilitator: offer.facilitatorUrl,
          },
    encryption: { format: 'compact-jwe', alg: JWE_ALG, enc: JWE_ENC, curves: [...CREDIT_SCORE_CURVES] },
    compute: offer === null ? null : { component: offer.component, attestation: offer.attestation },
    score: { min: SCORE_MIN, max: SCORE_MAX, formulaVersion: FORMULA_VERSION, formula: scoreFormulaText() },
  }
}
