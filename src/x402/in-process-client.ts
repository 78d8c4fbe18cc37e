// The official FacilitatorClient interface over this service's own facilitator, called in the same process: the
// resource server of /credit-score verifies and settles on a self-facilitated network without an HTTP round trip
// to itself. It keeps the endpoints' contract: the request is held to the same wire schema first, a refused payment
// is an answer (isValid / success false) and a malformed or unserved one too, since the payer sent it; only a
// failure of the chain or of this code is thrown, as FacilitatorResponseError so that the official resource server
// surfaces it instead of answering 402 (which would tell the payer its payment was wrong).
import { FacilitatorResponseError, type FacilitatorClient } from '@x402/core/server'
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types'
import { compileSchema } from '../http/validate.ts'
import { ChainReadsExhaustedError } from '../service/chain-read-budget.ts'
import { ChainUnavailableError, NetworkFacilitator, PaymentRequestInvalidError, UnsupportedPaymentKindError } from './facilitator.ts'
import { FacilitatorRequest } from './schemas.ts'

/**
 * The facilitator could not decide: its chain's RPC failed (`cause` a ChainUnavailableError), the chain read budget
 * refused the payer's read (`cause` a ChainReadsExhaustedError), or it faulted.
 */
export class FacilitatorUnavailableError extends FacilitatorResponseError {
  constructor(message: string, options: { cause: unknown }) {
    super(message)
    this.name = 'FacilitatorUnavailableError'
    this.cause = options.cause
  }
}

const wire = compileSchema(FacilitatorRequest)

type Refusal = { reason: string; message: string }

export class InProcessFacilitatorClient implements FacilitatorClient {
  constructor(readonly facilitator: NetworkFacilitator) {}

  async getSupported(): Promise<SupportedResponse> {
    return this.facilitator.supported() as SupportedResponse
  }

  async verify(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<VerifyResponse> {
    const outcome = await this.call((request) => this.facilitator.verify(request, undefined), paymentPayload, paymentRequirements)
    if ('reason' in outcome) return { isValid: false, invalidReason: outcome.reason, invalidMessage: outcome.message }
    return outcome as VerifyResponse
  }

  async settle(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<SettleResponse> {
    const outcome = await this.call((request) => this.facilitator.settle(request, undefined), paymentPayload, paymentRequirements)
    if ('reason' in outcome) return { success: false, errorReason: outcome.reason, errorMessage: outcome.message, transaction: '', network: paymentRequirements.network }
    return outcome as SettleResponse
  }

  private async call<T>(run: (request: FacilitatorRequest) => Promise<T>, paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<T | Refusal> {
    const request = { x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements }
    if (!wire.check(request)) {
      const issues = wire.issues(request, '').map((i) => `${i.path}: ${i.message}`)
      return { reason: 'invalid_payload', message: `the payment does not match the x402 v2 exact EVM form: ${issues.join('; ')}` }
    }
    try {
      return await run(request as FacilitatorRequest)
    } catch (error) {
      if (error instanceof PaymentRequestInvalidError) return { reason: 'invalid_payload', message: error.message }
      if (error instanceof UnsupportedPaymentKindError) return { reason: error.field === 'network' ? 'invalid_network' : 'unsupported_scheme', message: error.message }
      const what = error instanceof ChainUnavailableError || error instanceof ChainReadsExhaustedError ? error.message : `the facilitator of ${this.facilitator.network.slug} failed`
      throw new FacilitatorUnavailableError(what, { cause: error })
    }
  }
}
