// How an agent calls /credit-score and reads the answer: one text, used by the OpenAPI description of the route
// and by llms.txt, so both say exactly the same. The snippet is what the tests do with the official clients.
import { SCORE_MAX, SCORE_MIN, SCORE_TERMS } from './formula.ts'

export interface ScorePrice {
  baseUrl: string
  caip2: string
  network: string
  asset: string
  assetAddress: string
  amountAtomic: string
  payTo: string
}

export function scoreFormulaText(): string {
  const t = SCORE_TERMS
  return (
    `score = clamp(${t.base} + min(${t.repaymentCap}, ${t.repaymentPoints} x count of scoredRepayments with principalAtomic >= their network and asset's minPrincipalAtomic) + min(${t.partialRepaymentCap}, ${t.partialRepaymentPoints} x partialRepayments) ` +
    `+ max(${t.defaultCap}, ${t.defaultPoints} x defaultedAdvances) + (${t.shortfallPoints} if shortfallAtomic > 0) + (${t.suspensionPoints} if suspended) ` +
    `+ max(${t.openAdvanceCap}, ${t.openAdvancePoints} x openAdvances) + max(${t.pastDueCap}, ${t.pastDuePoints} x pastDueAdvances) ` +
    `+ min(${t.historyAgeCap}, trunc(${t.historyAgeCap} x days since historyStartedAt / ${t.historyAgeFullDays})) ` +
    `+ (ERC-8004 evidence: trunc((averageBps - 5000) x min(feedbackCount, ${t.erc8004FullCount}) / ${t.erc8004FullCount * 50}) within +-${t.erc8004Cap}), ` +
    `${SCORE_MIN}, ${SCORE_MAX}); integers, divisions toward zero; deterministic for the same inputs. ` +
    `A repaid advance counts only when its principal reached ${t.repaymentMinPrincipalUnits} whole units of its asset (repaymentMinimums), so that lending to oneself ` +
    'in tiny advances from a second wallet buys nothing. ' +
    'Inputs: the service\'s borrower record (full repayments, defaults, recovery shortfall, suspension), the passport\'s repaid advances (scoredRepayments), its open advances (count, past due or defaulted, ' +
    'principal + fee outstanding per asset) and the earliest activity it holds (live jobs, open advances, backing sources, or the passport\'s first event, whichever is earliest: historyStartedAt). Partial repayments and ' +
    'ERC-8004 evidence are part of the formula and count 0 until the service records them.'
  )
}

/** Steps and a jose + @x402/fetch snippet; `price` fills in the live values, placeholders otherwise. */
export function scoreHowTo(price: ScorePrice | undefined): string {
  const p = price ?? { baseUrl: '<base URL>', caip2: '<caip2>', network: '<network>', asset: '<asset>', assetAddress: '<asset address>', amountAtomic: '<amount>', payTo: '<payee>' }
  return `1. Make an ECDH-ES key pair (P-256, P-384, P-521 or X25519) and keep the private key.
2. POST ${p.baseUrl}/credit-score {"subject":"<agent address>","publicKey":<your PUBLIC JWK>} -> 402 with a PAYMENT-REQUIRED header (base64 JSON, x402 v2):
   scheme exact, network ${p.caip2} (${p.network}), asset ${p.asset} ${p.assetAddress}, amount ${p.amountAtomic} (atomic), payTo ${p.payTo}.
   Bad input is refused before any payment: 400 validation_failed / invalid_public_key, 503 compute_disabled. Any address is a subject: one the service
   holds no borrower record of costs the same and is scored as a record with no history (inputs all 0, historyStartedAt null: the base score).
3. Sign an EIP-3009 transferWithAuthorization for it and repeat the POST with the PAYMENT-SIGNATURE header (any x402 v2 client does steps 2-3).
   Its validBefore at most now + maxTimeoutSeconds, as the official client signs: more than 300 s beyond it is 402 payment_validity_too_long, nothing charged.
4. 200 {"subject","jwe","compute"} with the PAYMENT-RESPONSE header (the settlement transaction). The payment settles only when the score was
   computed: a failed computation is a 503 compute_failed and charges nothing. A payment is spent once (402 payment_already_used after).
   A 503 with Retry-After once you paid (chain_unavailable, facilitator_unavailable, payment_settlement_unconfirmed) delivered nothing, nor
   did a call whose connection closed before its answer (your timeout, a proxy's): send the same PAYMENT-SIGNATURE with the same
   body (subject and publicKey) again; a settlement sent meanwhile buys that call's score, once, and no other
   (the settlement is public on chain: a body with another subject or key is refused 402 payment_already_used).
   With wrapFetchWithPayment, keep the PAYMENT-SIGNATURE from the request headers the fetch you wrap receives and POST it
   yourself: calling the wrapped fetch again signs a new payment, and the first may still be settled.
5. Decrypt the compact JWE (ECDH-ES, A256GCM) with your private key; the plaintext is JSON {subject, score, scoreMin, scoreMax, formulaVersion, asOf, factors, inputs}.

   import { generateKeyPair, exportJWK, compactDecrypt } from 'jose'
   import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
   import { ExactEvmScheme } from '@x402/evm/exact/client'
   import { privateKeyToAccount } from 'viem/accounts'
   const { publicKey, privateKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
   const payer = new x402Client().register('${p.caip2}', new ExactEvmScheme(privateKeyToAccount(PAYER_KEY)))
     .setSpendControls({ allowedAssets: [{ network: '${p.caip2}', asset: '${p.assetAddress}', maxAmountPerPayment: '${p.amountAtomic}' }] })
   const res = await wrapFetchWithPayment(fetch, payer)('${p.baseUrl}/credit-score', { method: 'POST',
     headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject, publicKey: await exportJWK(publicKey) }) })
   const { jwe } = await res.json()
   const { plaintext } = await compactDecrypt(jwe, privateKey)
   const { score, factors } = JSON.parse(new TextDecoder().decode(plaintext))`
}
