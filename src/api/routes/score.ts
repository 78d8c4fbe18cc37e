// POST /credit-score: the paid, confidential credit score. In order: 503 when no compute component is configured;
// input checks (400) before any payment is asked; the x402 payment (402 until a verified one comes); the
// computation in the compute component, which returns only a JWE for the caller's key; settlement, only once that
// succeeded; 200 with the PAYMENT-RESPONSE header. A failed computation cancels the payment: nothing is charged. A
// payment someone else settled first, exactly as asked, counts as the payment once (src/x402/front-run.ts).
// Any well-formed subject is answered alike: one the service holds no borrower record of is asked the same payment and
// scored as a blank record (no history). Its 404 subject_not_found before any payment told anyone, for free, one
// request each, whether an address was a borrower (edges30).
import { createHash } from 'node:crypto'
import type { Address } from 'viem'
import { checksum } from '../common.ts'
import { HttpProblem } from '../../http/problem.ts'
import { problemOf } from '../problems.ts'
import { CHAIN_READS_EXHAUSTED } from './shared.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { ComputeFailedError, type CreditScoreCompute } from '../../score/compute.ts'
import { scoreFormulaText, scoreHowTo } from '../../score/howto.ts'
import type { RepaymentMinimum } from '../../score/formula.ts'
import { scoreInputsOf, type RepaymentHistory, type ScoreSource } from '../../score/inputs.ts'
import { recipientKeyProblem } from '../../score/recipient-key.ts'
import { CreditScoreAnswer, CreditScoreRequest } from '../../score/schemas.ts'
import { ChainReadsExhaustedError, type ChainReadBudget } from '../../service/chain-read-budget.ts'
import { ChainUnavailableError } from '../../x402/facilitator.ts'
import { SettlementUnconfirmedError } from '../../x402/front-run.ts'
import { PAYMENT_HEADERS, PaidResource, PaymentUnavailableError, type AdmittedPayment, type PaymentRefusal } from '../../x402/paid-resource.ts'

export const CREDIT_SCORE_PATH = '/credit-score'
/** How long a caller should wait before asking a disabled deployment again. */
const DISABLED_RETRY_AFTER_SECONDS = 3600

export interface CreditScoreRouteDeps {
  /** The payment and the component; null when the component is not configured (every call answers 503). */
  paid: { resource: PaidResource; compute: CreditScoreCompute; chainReadParts?: Pick<ChainReadBudget, 'takePart' | 'giveBackPart'> | undefined } | null
  engine: ScoreSource
  /** The passport: each repaid advance's principal and asset. */
  passport: RepaymentHistory
  /** The least principal per network and asset of a repaid advance the score counts (repaymentMinimumsOf). */
  repaymentMinimums: readonly RepaymentMinimum[]
  clock: () => number
  /** Throws the 503 problem of a network whose chain follower stopped for good (shared.ts stoppedNetworkRefusal). */
  refuseStoppedNetwork: (slug: string) => void
}

const refusedDescription =
  'Payment required (x402 v2): the PAYMENT-REQUIRED header (base64 JSON: x402Version, resource, accepts [{scheme exact, network, asset, amount, payTo, maxTimeoutSeconds, extra {name, version}}]) says what to pay. ' +
  'Codes: payment_required (none sent), payment_invalid (refused by the facilitator, or not an x402 payload), payment_not_accepted (another network, asset, amount or payee), ' +
  'payment_already_used (spent: also a settlement someone else sent that already bought a score, or a nonce used for another transfer, or a payment whose settlement this service sent for a call with another subject or publicKey: send it with those; a settlement of exactly this payment by someone else counts as the payment), payment_settlement_failed (the score is withheld), payment_validity_too_long (the authorization\'s validBefore lies more than maxTimeoutSeconds plus 300 s past now: sign one as the official client does, validBefore = now + maxTimeoutSeconds; nothing charged).'

export function creditScoreRoute(deps: CreditScoreRouteDeps): AnyRoute {
  const enabled = deps.paid !== null
  return defineRoute({
    method: 'post',
    path: CREDIT_SCORE_PATH,
    operationId: 'creditScore',
    callers: 'public, paid per call (x402)',
    summary: enabled
      ? 'Confidential credit score of an agent, paid per call with x402 and answered as a JWE for the caller\'s key'
      : 'Confidential credit score, paid through x402; 503 while the compute component is not configured',
    description:
      (enabled ? '' : 'Disabled in this deployment: the compute component is not configured, so every well-formed call answers 503 (code compute_disabled) before any payment (a body outside the schema is 400 validation_failed first, as on every route). ') +
      `How to call it:\n${scoreHowTo(undefined)}\n\nThe score: ${scoreFormulaText()}\n\n` +
      'Confidentiality: the score is computed and encrypted in a separate process that receives only this call\'s inputs and public key and returns only the JWE; ' +
      'the HTTP process never holds the plaintext. That component gives no hardware attestation (compute.attestation is null).',
    tags: ['credit'],
    auth: 'none',
    body: CreditScoreRequest,
    headers: PAYMENT_HEADERS,
    responses: {
      200: { description: 'The encrypted score; the PAYMENT-RESPONSE header (base64 JSON) carries the settlement transaction.', schema: CreditScoreAnswer },
      400: { description: 'Malformed body (validation_failed, e.g. a private "d" in publicKey), or a public key nothing can be encrypted to (invalid_public_key).' },
      402: { description: refusedDescription },
      409: { description: 'Another request is using the same payment right now (payment_in_flight).' },
      412: { description: 'x402 Permit2 payments only: the token allowance to Permit2 is missing (see PAYMENT-REQUIRED).' },
      503: {
        description:
          'compute_disabled (no compute component; before any payment), compute_failed (the computation failed: nothing was charged, the same payment may be sent again until it expires), ' +
          'chain_unavailable or facilitator_unavailable (the payment could not be verified or settled; nothing was delivered: send the same payment again, with the same subject and publicKey, and if the service\'s own settlement of it was sent meanwhile, that settlement buys the score, once, for that subject and key only), ' +
          'payment_settlement_unconfirmed (someone else settled this payment first, exactly as asked, and it counts as the payment once at the network\'s confirmations: it was not yet when the wait ended; send the same payment again), ' +
          `chain_reads_exhausted (the payment's verify or settle on a self-facilitated network takes one chain read, as the payer's when its key signed the authorization, and a call with a payment one of the caller's client address's part: ${CHAIN_READS_EXHAUSTED}), ` +
          'network_stopped (without Retry-After: the payment network\'s chain follower stopped for good, /health says why; before any payment, nothing charged).',
      },
    },
    handler: async ({ body, headers, clientKey, signal }) => {
      if (deps.paid === null) {
        throw new HttpProblem(503, 'compute_disabled', 'The confidential-compute component is not configured; /credit-score is disabled.', {
          title: 'Compute disabled',
          headers: { 'retry-after': String(DISABLED_RETRY_AFTER_SECONDS) },
        })
      }
      const { resource, compute, chainReadParts } = deps.paid
      const subject = checksum(body.subject)
      const keyProblem = await recipientKeyProblem(body.publicKey)
      if (keyProblem !== undefined) throw new HttpProblem(400, 'invalid_public_key', `publicKey: ${keyProblem}.`, { title: 'Invalid public key' })
      // No payment is asked, verified or settled on a chain the service no longer follows.
      deps.refuseStoppedNetwork(resource.options.network.slug)

      // Its verify reads the chain on the service's own facilitator: from the caller's address's part of the network's
      // budget too, as over HTTP (fresh payer keys are free; test/x402/outsider13-free-payers-budget.test.ts).
      const slug = resource.options.network.slug
      const charged = chainReadParts !== undefined && headers['payment-signature'] !== undefined
      if (charged) {
        try {
          chainReadParts.takePart(slug, clientKey)
        } catch (error) {
          throw error instanceof ChainReadsExhaustedError ? problemOf(error) : error
        }
      }
      const admission = await paying(() => resource.admit(headers, scoreRequestDigest(subject, body.publicKey))).catch((error: unknown) => {
        // Refused by the payer's share or the network's budget: nothing was read.
        if (charged && error instanceof HttpProblem && error.code === 'chain_reads_exhausted') chainReadParts.giveBackPart(slug, clientKey)
        throw error
      })
      if (admission.kind === 'refused') throw refusalProblem(admission)
      // Gone while its payment was verified: nothing is computed for nobody (below, nothing would be settled either).
      if (signal.aborted) await callerGone(admission)
      let sealed
      try {
        sealed = await compute.score({ inputs: inputsOf(deps, subject), recipient: body.publicKey })
      } catch (error) {
        await admission.cancel(error)
        if (!(error instanceof ComputeFailedError)) throw error
        throw new HttpProblem(503, 'compute_failed', `The score could not be computed (${error.message}); nothing was charged. The same payment may be sent again until it expires.`, {
          title: 'Computation failed',
          headers: { 'retry-after': '1' },
          cause: error,
        })
      }
      // The caller went away during the work (its client's or a proxy's timeout, a dropped connection): nothing is
      // settled, so nobody is charged for an answer nobody receives, and the same payment still buys the score. Before,
      // the payment was settled and the answer written to the closed connection, and the payer's retry with the same
      // payment was refused 402 payment_already_used: charged, never served (outsider30,
      // test/api/outsider30-score-caller-gone.test.ts). The answer below is never written.
      if (signal.aborted) await callerGone(admission)
      // Gone while the settlement was sent: the settlement stays owed to this call's subject and key (settle).
      const settled = await paying(() => admission.settle(signal))
      if (settled.kind === 'refused') throw refusalProblem(settled)
      return {
        status: 200,
        body: { subject, jwe: sealed.jwe, compute: { component: compute.component, attestation: sealed.attestation ?? null } },
        headers: settled.headers,
      }
    },
  })
}

/**
 * What a paid call asks for: the subject and the key its answer is sealed to (the members that name the key, as a JWK
 * thumbprint's: a `kid` changes only the header). A payment whose settlement was sent for one call and not delivered
 * on buys only that call's answer when sent again: the settlement's calldata is public once broadcast, and before,
 * anyone who rebuilt the payment from it during the payer's Retry-After got the score, for another subject and its own
 * key, and the payer's retry was refused payment_already_used (an outsider's finding,
 * test/api/outsider26-score-pending-stolen.test.ts).
 */
function scoreRequestDigest(subject: Address, key: { kty: string; crv: string; x: string; y?: string | undefined }): string {
  return createHash('sha256').update(JSON.stringify([subject.toLowerCase(), key.kty, key.crv, key.x, key.y ?? null])).digest('hex')
}

/** Any subject's: one the service holds no borrower record of is scored as a blank record (no history). */
function inputsOf(deps: CreditScoreRouteDeps, subject: Address) {
  return scoreInputsOf(deps.engine, deps.passport, deps.repaymentMinimums, subject, deps.clock())
}

/** The caller went away before its payment was settled: nothing is settled, and the answer (never written) says so. */
async function callerGone(admission: AdmittedPayment): Promise<never> {
  await admission.cancel(new Error('the caller went away before the payment was settled'))
  throw new HttpProblem(503, 'facilitator_unavailable', 'The caller went away before the payment was settled; nothing was charged.', {
    title: 'Facilitator unavailable',
    headers: { 'retry-after': '1' },
  })
}

function refusalProblem(refusal: PaymentRefusal): HttpProblem {
  return new HttpProblem(refusal.status, refusal.code, refusal.detail, { title: refusal.status === 409 ? 'Payment in use' : 'Payment required', headers: refusal.headers })
}

/**
 * The facilitator could not decide: a 503 naming whether the chain or the facilitator failed, or chain_reads_exhausted
 * when the payment's chain read was refused by the budget (a self-facilitated network's verify and settle take one).
 */
async function paying<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (!(error instanceof PaymentUnavailableError)) throw error
    const exhausted = causes(error).find((cause) => cause instanceof ChainReadsExhaustedError)
    if (exhausted !== undefined) throw problemOf(exhausted)
    if (causes(error).some((cause) => cause instanceof SettlementUnconfirmedError)) {
      throw new HttpProblem(503, 'payment_settlement_unconfirmed', `${error.message}; nothing was delivered: send the same payment with the same subject and publicKey again shortly.`, {
        title: 'Settlement unconfirmed',
        headers: { 'retry-after': '1' },
        cause: error,
      })
    }
    const chain = causes(error).some((cause) => cause instanceof ChainUnavailableError)
    throw new HttpProblem(503, chain ? 'chain_unavailable' : 'facilitator_unavailable', `${error.message}; nothing was decided about the payment, retry later (with the same subject and publicKey: a settlement of it sent meanwhile buys that call's score only).`, {
      title: chain ? 'Chain unavailable' : 'Facilitator unavailable',
      headers: { 'retry-after': '1' },
      cause: error,
    })
  }
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth += 1) chain.push(current)
  return chain
}
