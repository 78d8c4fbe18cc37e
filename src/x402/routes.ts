// The x402 facilitator endpoints, per self-facilitated network with slug S (interface spec section 4, where the
// second test network's facilitator is /x402/network-b-facilitator/...):
//   GET  /x402/S-facilitator/supported   POST /x402/S-facilitator/verify   POST /x402/S-facilitator/settle
// The layout is the one the official HTTPFacilitatorClient expects under its `url`. Business failures are 200 with
// `isValid: false` / `success: false` (the client throws on any non-2xx); malformed or unserved requests are 400.
import { problemOf } from '../api/problems.ts'
import { CHAIN_READS_EXHAUSTED } from '../api/routes/shared.ts'
import type { NetworkConfig } from '../chain/config.ts'
import { HttpProblem } from '../http/problem.ts'
import { defineRoute, type AnyRoute } from '../http/route.ts'
import {
  ChainUnavailableError,
  createNetworkFacilitators,
  NetworkFacilitator,
  payerOf,
  PaymentRequestInvalidError,
  REFUSED_PAYMENT_REASONS,
  UnsupportedPaymentKindError,
  type NetworkFacilitatorOptions,
} from './facilitator.ts'
import type { PaymentPayload } from '@x402/core/types'
import { facilitatorPath } from './facilitator-url.ts'
import { FacilitatorRequest, SettleResponse, SupportedResponse, VerifyResponse } from './schemas.ts'

const TAGS = ['x402'] as const

const badRequestDescription =
  'Malformed body (validation_failed, malformed_json), x402Version and paymentPayload.x402Version differ (validation_failed), ' +
  'or a version, scheme or network not served (x402_version_unsupported, x402_scheme_unsupported, x402_network_unsupported).'
const chainDescription =
  'The network\'s RPC endpoint failed; nothing was decided (chain_unavailable, with Retry-After). ' +
  'Or the network\'s chain follower stopped for good (network_stopped, without Retry-After: /health says why): nothing is verified or settled until an operator acts. ' +
  `Or, each verify and settle taking one chain read, as the payer's when its key signed the authorization, else from one share of all other payloads, and from the caller's client address's part: ${CHAIN_READS_EXHAUSTED}`

const UNSUPPORTED_CODES = {
  x402Version: 'x402_version_unsupported',
  scheme: 'x402_scheme_unsupported',
  network: 'x402_network_unsupported',
} as const

/**
 * Maps the facilitator's typed errors to problems, and the service's (a refused chain read: 503
 * chain_reads_exhausted) as everywhere; anything else stays a fault (500, logged by the server).
 */
function toProblem(error: unknown): unknown {
  if (error instanceof UnsupportedPaymentKindError) return new HttpProblem(400, UNSUPPORTED_CODES[error.field], error.message, { title: 'Payment kind not served' })
  if (error instanceof PaymentRequestInvalidError) return new HttpProblem(400, 'validation_failed', error.message, { errors: [...error.issues] })
  if (error instanceof ChainUnavailableError) {
    return new HttpProblem(503, 'chain_unavailable', `${error.message}; nothing was decided, retry later.`, { title: 'Chain unavailable', headers: { 'retry-after': '1' }, cause: error })
  }
  return problemOf(error)
}

async function answer<T>(run: () => Promise<T>): Promise<{ status: 200; body: T }> {
  try {
    return { status: 200, body: await run() }
  } catch (error) {
    throw toProblem(error)
  }
}

/** `devnet-b` -> `devnet_b`: slugs have no underscore, so distinct slugs give distinct operation ids. */
function operationSuffix(slug: string): string {
  return slug.replace(/-/g, '_')
}

/**
 * The three routes of one network's facilitator. `refuseStoppedNetwork` throws the 503 problem of a network whose chain
 * follower stopped for good (src/api/routes/shared.ts stoppedNetworkRefusal): its payments are then neither verified
 * nor settled, as nothing of that chain is followed any more.
 */
export function facilitatorRoutes(
  facilitator: NetworkFacilitator,
  refuseStoppedNetwork: (slug: string) => void,
  /**
   * The payees (lower case) of this service's own paid resources on this network that no configured payee shares: a
   * payment to one is settled only by the resource selling it, in process, never through the public settle route. A
   * payer's authorization for the credit score pays its payee whoever submits it, and the public route submits for
   * anyone, at the facilitator's gas: a stranger who saw a payer's PAYMENT-SIGNATURE had it settled there first, and
   * the payer was charged without a score (an outsider's finding,
   * test/score/outsider13-score-settled-by-own-facilitator.test.ts).
   */
  resourceOnlyPayees: ReadonlySet<string> = new Set(),
): AnyRoute[] {
  const { slug, caip2 } = facilitator.network
  const base = facilitatorPath(facilitator.network)
  const suffix = operationSuffix(slug)
  return [
    defineRoute({
      method: 'get',
      path: `${base}/supported`,
      operationId: `x402Supported_${suffix}`,
      callers: 'public',
      summary: `x402 facilitator for ${slug}: payment kinds served`,
      description: `Lists exactly what this facilitator verifies and settles: x402 version 2, scheme exact, network ${caip2}, the payees served (kinds[].extra.payees: the payees of this service's paid resources and the configured ones; a payment to anyone else is refused), and the address that submits settlements (the facilitator key, never the service's operator).`,
      tags: TAGS,
      auth: 'none',
      responses: { 200: { description: 'The payment kinds served', schema: SupportedResponse } },
      handler: () => ({ status: 200, body: facilitator.supported() }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/verify`,
      operationId: `x402Verify_${suffix}`,
      callers: 'public',
      summary: `x402 facilitator for ${slug}: verify a payment`,
      description:
        'Checks the signed payment against the requirements (signature, recipient, amount, validity window, balance, simulation) without moving money. ' +
        'An invalid payment is a 200 with isValid false and an x402 invalidReason; so is one this facilitator would not settle (invalid_payment_zero_value, invalid_payment_payer_is_payee, invalid_payment_payee_not_served).',
      tags: TAGS,
      auth: 'none',
      body: FacilitatorRequest,
      responses: {
        200: { description: 'Verification result (isValid true or false)', schema: VerifyResponse },
        400: { description: badRequestDescription },
        503: { description: chainDescription },
      },
      handler: ({ body, clientKey }) => {
        refuseStoppedNetwork(slug)
        return answer(() => facilitator.verify(body, clientKey))
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/settle`,
      operationId: `x402Settle_${suffix}`,
      callers: 'public',
      summary: `x402 facilitator for ${slug}: settle a payment`,
      description:
        'Verifies the payment again, then submits transferWithAuthorization (or the Permit2 transfer) from the facilitator account (never the service\'s operator) and waits for the receipt. ' +
        'A refused or failed settlement (e.g. an authorization already used; a payment of 0, invalid_payment_zero_value, from the payer to itself, invalid_payment_payer_is_payee, or to a payee not served, invalid_payment_payee_not_served, sends nothing) is a 200 with success false and an x402 errorReason. ' +
        'A payment to the payee of this service\'s own paid resource (the credit score\'s, unless configured as a facilitator payee too) is settled only by that resource, which delivers what it buys: refused here, invalid_payment_settled_by_resource_only, nothing sent.',
      tags: TAGS,
      auth: 'none',
      body: FacilitatorRequest,
      responses: {
        200: { description: 'Settlement result (success true with the transaction hash, or false)', schema: SettleResponse },
        400: { description: badRequestDescription },
        503: { description: chainDescription },
      },
      handler: ({ body, clientKey }) => {
        refuseStoppedNetwork(slug)
        const requirements = body.paymentRequirements as { payTo?: unknown; network?: unknown }
        if (typeof requirements.payTo === 'string' && resourceOnlyPayees.has(requirements.payTo.toLowerCase())) {
          return {
            status: 200 as const,
            body: {
              success: false, errorReason: REFUSED_PAYMENT_REASONS.settledByResourceOnly,
              errorMessage: `${requirements.payTo} is the payee of this service's own paid resource (POST /credit-score): its payments are settled only by that resource, which delivers what they buy; nothing was sent.`,
              ...payerField(body.paymentPayload as PaymentPayload),
              transaction: '', network: String(requirements.network ?? caip2),
            },
          }
        }
        return answer(() => facilitator.settle(body, clientKey))
      },
    }),
  ]
}

/**
 * The facilitator routes of every network in `networks` with `x402SelfFacilitate: true` and a facilitator key, without
 * a service whose chain followers could stop (its networks are all served).
 */
export function x402Routes(networks: NetworkConfig[], options: NetworkFacilitatorOptions = {}): AnyRoute[] {
  return createNetworkFacilitators(networks, options).flatMap((facilitator) => facilitatorRoutes(facilitator, () => {}))
}

/** The payload's payer as a settle answer names it, when the payload names one. */
function payerField(payload: PaymentPayload): { payer?: string } {
  const payer = payerOf(payload)
  return payer === undefined ? {} : { payer }
}
