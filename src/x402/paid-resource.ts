// One paid route through the official x402 resource server (@x402/core: x402ResourceServer with the exact EVM
// server scheme, wrapped by x402HTTPResourceServer). The route asks `admit` whether the request carries a payment
// the facilitator verifies; if so it does its work and then calls `settle`, or `cancel` when the work failed, so
// money moves only for work delivered. The protocol (402 with PAYMENT-REQUIRED, PAYMENT-SIGNATURE, verify, settle,
// PAYMENT-RESPONSE) is the library's; this file adapts the route's request to it and names its outcomes.
import {
  x402HTTPResourceServer,
  x402ResourceServer,
  FacilitatorResponseError,
  type FacilitatorClient,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type PaymentCancellationDispatcher,
} from '@x402/core/server'
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import type { Address } from 'viem'
import type { NetworkConfig, TokenConfig } from '../chain/config.ts'
import { EXACT_SCHEME } from './facilitator.ts'
import { FrontRunUndecidedError, OWED_ELSEWHERE, SettlementOwedElsewhereError, type FoundSettlement, type FrontRunSettlements } from './front-run.ts'

/** The request headers the protocol reads; a route using PaidResource lists them in its `headers`. */
export const PAYMENT_HEADERS = ['payment-signature', 'user-agent'] as const

export interface PaidResourceOptions {
  method: 'POST' | 'GET'
  path: string
  /** The absolute URL of the resource, known once the server listens: named in PAYMENT-REQUIRED. */
  url: () => string
  description: string
  network: NetworkConfig
  token: TokenConfig
  amountAtomic: bigint
  payTo: Address
  maxTimeoutSeconds: number
  facilitator: FacilitatorClient
  /**
   * Finds a payment a stranger settled first, exactly as the facilitator would have (src/x402/front-run.ts): it then
   * counts as the payment instead of `payment_already_used`. Absent: the refusal stands.
   */
  frontRun?: FrontRunSettlements
  /** Wall clock (ms) the bound on a payment's validBefore is read against (VALID_BEFORE_SLACK_SECONDS). Default: Date.now. */
  clock?: () => number
}

/**
 * How far past maxTimeoutSeconds (wall clock, s) an authorization's validBefore may lie: the official client signs
 * validBefore = its now + maxTimeoutSeconds, and its clock may run ahead of this one. A payment valid longer is
 * refused (payment_validity_too_long) before any work, mark or settlement: the in-flight mark of its settlement and its
 * memory as settled live UNDELIVERED_RETRY_SECONDS and the horizon past its validBefore, which the payer chooses.
 * Before, nothing bounded it: a validBefore years ahead kept its records as long, and one past 10^20 s made the
 * store refuse the mark's write and the settle answer 500 (review29; test/x402/validbefore26-far-valid-before.test.ts).
 */
export const VALID_BEFORE_SLACK_SECONDS = 300

/** Why a request was not admitted, with the status and x402 headers to answer it with. */
export interface PaymentRefusal {
  kind: 'refused'
  status: number
  code: 'payment_required' | 'payment_invalid' | 'payment_not_accepted' | 'payment_already_used' | 'payment_in_flight' | 'payment_settlement_failed' | 'payment_validity_too_long'
  detail: string
  headers: Record<string, string>
}

export interface SettledPayment {
  kind: 'settled'
  transaction: string
  payer: string | undefined
  /** PAYMENT-RESPONSE (and the cache directive the protocol adds). */
  headers: Record<string, string>
}

export interface AdmittedPayment {
  kind: 'admitted'
  payer: string | undefined
  /**
   * Settles the verified payment: call only after the work succeeded. `caller` aborted once the settlement is sent (the
   * caller went away, its answer cannot be delivered): the settlement stays owed to this request's digest, as one
   * whose receipt was not read (front-run.ts attempt), so the same payment sent again with the same work buys it once.
   */
  settle(caller?: AbortSignal): Promise<SettledPayment | PaymentRefusal>
  /** The work failed: nothing is settled. */
  cancel(error: unknown): Promise<void>
}

/** The facilitator could not be reached or could not decide (chain outage, fault, timeout): nothing was decided. */
export class PaymentUnavailableError extends Error {
  override readonly name = 'PaymentUnavailableError'
}

const INITIALIZE_ATTEMPT_MS_MIN = 1000

export class PaidResource {
  readonly options: PaidResourceOptions
  private server: Promise<x402HTTPResourceServer> | undefined
  private lastFailedInitMs = 0
  /** Signatures of payments being processed: a second request with the same payment waits for nothing. */
  private readonly inFlight = new Set<string>()

  constructor(options: PaidResourceOptions) {
    this.options = options
  }

  /** What a client must pay, in the form of the protocol's requirements (for the catalog and documents). */
  requirements(): PaymentRequirements {
    const { network, token, amountAtomic, payTo, maxTimeoutSeconds } = this.options
    return {
      scheme: EXACT_SCHEME,
      network: network.caip2,
      asset: token.address,
      amount: amountAtomic.toString(),
      payTo,
      maxTimeoutSeconds,
      extra: { name: token.eip712Name, version: token.eip712Version },
    }
  }

  /**
   * Verifies the request's payment through the facilitator. Headers are the request's, copied before any await
   * (uWebSockets.js frees the request when its handler returns). `request` is a digest of the work the request asks
   * for (the route's inputs): a payment whose settlement was sent for a request and not delivered on is answered only
   * to a request with the same digest (src/x402/front-run.ts).
   */
  async admit(headers: Readonly<Record<string, string>>, request?: string): Promise<PaymentRefusal | AdmittedPayment> {
    const server = await this.ready()
    const header = headers['payment-signature']
    if (header !== undefined && !decodes(header)) {
      const unpaid = await this.process(server, { ...headers, 'payment-signature': '' })
      const refused = unpaid.type === 'payment-error' ? this.refusal(unpaid.response, true) : undefined
      if (refused === undefined) throw new Error('a route without payment was not refused')
      return { ...refused, code: 'payment_invalid', detail: 'The PAYMENT-SIGNATURE header is not base64 of an x402 payment payload (JSON).' }
    }
    const key = header === undefined ? undefined : paymentKey(header)
    if (key !== undefined && this.inFlight.has(key)) {
      return { kind: 'refused', status: 409, code: 'payment_in_flight', detail: 'Another request is using this payment now; it is spent by at most one of them.', headers: {} }
    }
    if (key !== undefined) this.inFlight.add(key)
    let admitted = false
    try {
      const result = await this.process(server, headers)
      if (result.type === 'no-payment-required') throw new Error(`${this.options.method} ${this.options.path} is not a paid route of its resource server`)
      if (result.type === 'payment-error') {
        const refusal = this.refusal(result.response, header === undefined)
        if (refusal.code !== 'payment_already_used' || header === undefined) return refusal
        const found = await this.settledFirst(decodePaymentSignatureHeader(header), this.requirements(), request)
        if (found === undefined) return refusal
        admitted = true
        return this.honouring(found, key, decodePaymentSignatureHeader(header), request)
      }
      const tooLong = this.validityTooLong(result.paymentPayload)
      if (tooLong !== undefined) return await this.refusedWithRequirements(server, 'payment_validity_too_long', tooLong)
      // Its settlement already asked for by another request's work (src/x402/front-run.ts attempt): refused before this one's.
      if (this.options.frontRun?.markedForOther(result.paymentPayload, request) === true) return await this.owedElsewhere(server)
      admitted = true
      return this.admitted(server, result.paymentPayload, result.paymentRequirements, result.declaredExtensions, result.cancellationDispatcher, key, request)
    } finally {
      if (!admitted && key !== undefined) this.inFlight.delete(key)
    }
  }

  private admitted(
    server: x402HTTPResourceServer,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    extensions: Record<string, unknown> | undefined,
    dispatcher: PaymentCancellationDispatcher,
    key: string | undefined,
    request: string | undefined,
  ): AdmittedPayment {
    const release = () => {
      if (key !== undefined) this.inFlight.delete(key)
    }
    return {
      kind: 'admitted',
      payer: payerOf(payload),
      settle: async (caller) => {
        try {
          // Until its work is delivered, the facilitator's own settlement of it may buy it when presented again: durably
          // marked so before anything is broadcast. Already marked for other work: nothing is settled.
          let ownMark = false
          try {
            ownMark = (await this.options.frontRun?.attempt(payload, this.options.maxTimeoutSeconds, request)) === true
          } catch (error) {
            if (!(error instanceof SettlementOwedElsewhereError)) throw error
            return await this.owedElsewhere(server)
          }
          const settled = await unavailableOnFacilitatorFailure(() => server.processSettlement(payload, requirements, extensions))
          let kept = false
          if (settled.success) {
            // Its caller went away meanwhile: the answer reaches nobody, so the work is not delivered, and the mark stays
            // (with the settlement's hash) for the same request sent again. Before, it was consumed here and the payer's
            // retry refused payment_already_used, charged and never served (outsider30).
            if (caller?.aborted === true && this.options.frontRun !== undefined) await this.options.frontRun.broadcast(payload, settled.transaction)
            else {
              await this.options.frontRun?.remember(payload, this.options.maxTimeoutSeconds)
              // Gone while the delivery was written to the store: owed again (review35).
              if (caller?.aborted === true) await this.options.frontRun?.undeliver(payload, this.options.maxTimeoutSeconds, request, settled.transaction)
            }
            return { kind: 'settled', transaction: settled.transaction, payer: settled.payer, headers: { ...settled.headers } }
          }
          // A stranger's settlement of the same authorization mined first (the facilitator's own then reverted, or
          // found the nonce used): it paid as asked, so it is the payment. So is the facilitator's own, broadcast and
          // its receipt not read (settlement_pending): looked up, and waited for, as a stranger's is.
          if (alreadyUsed(settled.errorReason) || /transaction_failed/.test(settled.errorReason ?? '') || settled.errorReason === SETTLEMENT_PENDING) {
            if (settled.errorReason === SETTLEMENT_PENDING && settled.transaction) await this.options.frontRun?.broadcast(payload, settled.transaction)
            const found = await this.settledFirst(payload, requirements, request)
            // Its caller went away during the lookup: not honoured now, so it may be presented again, and its mark stays,
            // with the found transaction, owed to this call's subject and key (not abandoned below: before review35 a
            // stranger's settlement found so lost its mark, and bought whoever presented it next any score; the payer's
            // retry was refused payment_already_used).
            if (found !== undefined && caller?.aborted === true) {
              found.release()
              await this.options.frontRun?.broadcast(payload, found.transaction)
              kept = true
            } else if (found !== undefined) {
              await found.commit()
              if (caller?.aborted === true) await this.options.frontRun?.undeliver(payload, this.options.maxTimeoutSeconds, request, found.transaction)
              return { kind: 'settled', transaction: found.transaction, payer: found.payer, headers: found.headers }
            }
          }
          // Refused with nothing sent in this settle nor before it (the mark is this attempt's own, and one is written
          // before every broadcast): an overdraft, a payment no longer valid, or one a stranger's transaction spent
          // (honoured, when it pays as asked, without any mark). The mark buys nothing: deleted.
          if (ownMark && !kept && !settled.transaction && settled.errorReason !== SETTLEMENT_PENDING) await this.options.frontRun?.abandon(payload)
          const refusal = this.refusal(settled.response, false)
          return { ...refusal, code: alreadyUsed(settled.errorReason) ? 'payment_already_used' : 'payment_settlement_failed', detail: `The payment did not settle (${settled.errorReason}); nothing was delivered.` }
        } finally {
          release()
        }
      },
      cancel: async (error) => {
        try {
          await dispatcher.cancel({ reason: 'handler_threw', error })
        } finally {
          release()
        }
      },
    }
  }

  /** The refusal of a payment whose settlement was asked for by a request for other work (402, with PAYMENT-REQUIRED). */
  private owedElsewhere(server: x402HTTPResourceServer): Promise<PaymentRefusal> {
    return this.refusedWithRequirements(server, 'payment_already_used', `This payment was already used: ${OWED_ELSEWHERE}; send it again with those, or sign a new one.`)
  }

  /** A 402 refusal with `code` and `detail`, and the PAYMENT-REQUIRED header of an unpaid request. */
  private async refusedWithRequirements(server: x402HTTPResourceServer, code: PaymentRefusal['code'], detail: string): Promise<PaymentRefusal> {
    const unpaid = await this.process(server, { 'payment-signature': '' })
    const headers = unpaid.type === 'payment-error' ? this.refusal(unpaid.response, true).headers : {}
    return { kind: 'refused', status: 402, code, detail, headers }
  }

  /** Why `payload`'s EIP-3009 authorization stays valid too long (VALID_BEFORE_SLACK_SECONDS), or undefined. */
  private validityTooLong(payload: PaymentPayload): string | undefined {
    const validBefore = (payload.payload as { authorization?: { validBefore?: unknown } } | undefined)?.authorization?.validBefore
    if (typeof validBefore !== 'string' || !/^\d{1,78}$/.test(validBefore)) return undefined
    const { maxTimeoutSeconds } = this.options
    const nowSeconds = Math.floor((this.options.clock ?? Date.now)() / 1000)
    const latest = BigInt(nowSeconds + maxTimeoutSeconds + VALID_BEFORE_SLACK_SECONDS)
    if (BigInt(validBefore) <= latest) return undefined
    return (
      `The payment's authorization is valid until ${validBefore} (validBefore, unix s), more than maxTimeoutSeconds (${maxTimeoutSeconds} s) ` +
      `plus ${VALID_BEFORE_SLACK_SECONDS} s of clock slack past now (${nowSeconds}): sign one with validBefore at most ${latest}, as the official x402 client does (its now + maxTimeoutSeconds). Nothing was charged.`
    )
  }

  /**
   * The honoured settlement of a payment a stranger settled first: the work is delivered on it, nothing is sent. Its
   * caller gone while the delivery was written to the store: owed again to `request` (undeliver, review35).
   */
  private honouring(found: FoundSettlement, key: string | undefined, payload: PaymentPayload, request: string | undefined): AdmittedPayment {
    const release = () => {
      if (key !== undefined) this.inFlight.delete(key)
    }
    return {
      kind: 'admitted',
      payer: found.payer,
      settle: async (caller) => {
        try {
          await found.commit()
          if (caller?.aborted === true) await this.options.frontRun?.undeliver(payload, this.options.maxTimeoutSeconds, request, found.transaction)
        } finally {
          release()
        }
        return { kind: 'settled', transaction: found.transaction, payer: found.payer, headers: found.headers }
      },
      cancel: async () => {
        found.release()
        release()
      },
    }
  }

  /** The front-run settlement that counts as this payment, if any; a lookup that could not decide is unavailable. */
  private async settledFirst(payload: PaymentPayload, requirements: PaymentRequirements, request: string | undefined): Promise<FoundSettlement | undefined> {
    const { frontRun, maxTimeoutSeconds } = this.options
    if (frontRun === undefined) return undefined
    try {
      return await frontRun.claim(payload, requirements, maxTimeoutSeconds, request)
    } catch (error) {
      if (error instanceof FrontRunUndecidedError) throw new PaymentUnavailableError(`${error.message}; the payment's settlement could not be looked up`, { cause: error })
      throw error
    }
  }

  private async process(server: x402HTTPResourceServer, headers: Readonly<Record<string, string>>) {
    const { method, path } = this.options
    const url = this.options.url()
    const adapter: HTTPAdapter = {
      getHeader: (name) => {
        const value = headers[name.toLowerCase()]
        return value === '' ? undefined : value
      },
      getMethod: () => method,
      getPath: () => path,
      getUrl: () => url,
      // A JSON API: never the HTML paywall the library serves to browsers.
      getAcceptHeader: () => 'application/json',
      getUserAgent: () => headers['user-agent'] ?? '',
    }
    const context: HTTPRequestContext = { adapter, path, method }
    return unavailableOnFacilitatorFailure(() => server.processHTTPRequest(context))
  }

  /** The refusal the library's instructions describe, with the x402 headers only (the body is a problem). */
  private refusal(response: HTTPResponseInstructions, unpaid: boolean): PaymentRefusal {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(response.headers)) {
      if (name.toLowerCase() !== 'content-type') headers[name.toLowerCase()] = value
    }
    const required = headers['payment-required']
    const error = required === undefined ? undefined : decodePaymentRequiredHeader(required).error
    const { amountAtomic, token, network, payTo } = this.options
    const price = `${amountAtomic} (atomic) ${token.symbol} on ${network.slug} (${network.caip2}) to ${payTo}`
    if (unpaid) return { kind: 'refused', status: response.status, code: 'payment_required', detail: `Pay ${price} with x402 v2 (scheme exact): see the PAYMENT-REQUIRED header.`, headers }
    if (error === 'No matching payment requirements') {
      return { kind: 'refused', status: response.status, code: 'payment_not_accepted', detail: `The payment is not for what is asked (network, asset, amount or payee): pay ${price}.`, headers }
    }
    if (alreadyUsed(error)) return { kind: 'refused', status: response.status, code: 'payment_already_used', detail: `This payment was already used (${error}); sign a new one.`, headers }
    return { kind: 'refused', status: response.status, code: 'payment_invalid', detail: `The facilitator refused the payment (${error ?? 'no reason given'}).`, headers }
  }

  /** The resource server, initialized once it succeeds (it fetches the facilitator's /supported). */
  private ready(): Promise<x402HTTPResourceServer> {
    if (this.server !== undefined) return this.server
    // A remote facilitator that is down is asked again, but not more than once a second.
    if (Date.now() - this.lastFailedInitMs < INITIALIZE_ATTEMPT_MS_MIN) return Promise.reject(new PaymentUnavailableError('the payment facilitator is unavailable; retry shortly'))
    const { method, path, network, token, amountAtomic, payTo, maxTimeoutSeconds, description } = this.options
    const resourceServer = new x402ResourceServer(this.options.facilitator).register(network.caip2, new ExactEvmScheme())
    const server = new x402HTTPResourceServer(resourceServer, {
      [`${method} ${path}`]: {
        accepts: {
          scheme: EXACT_SCHEME,
          network: network.caip2,
          payTo,
          price: { amount: amountAtomic.toString(), asset: token.address, extra: { name: token.eip712Name, version: token.eip712Version } },
          maxTimeoutSeconds,
        },
        resource: this.options.url(),
        description,
        mimeType: 'application/json',
      },
    })
    const pending = server.initialize().then(
      () => server,
      (error: unknown) => {
        this.server = undefined
        this.lastFailedInitMs = Date.now()
        throw new PaymentUnavailableError(`the payment facilitator could not be initialized: ${(error as Error).message}`, { cause: error })
      },
    )
    this.server = pending
    return pending
  }
}

function decodes(header: string): boolean {
  try {
    const payload = decodePaymentSignatureHeader(header) as unknown
    return typeof payload === 'object' && payload !== null && !Array.isArray(payload)
  } catch {
    return false
  }
}

/** The signature identifies a payment: the same authorization signed once, whatever else the header carries. */
function paymentKey(header: string): string {
  const payload = decodePaymentSignatureHeader(header) as { payload?: { signature?: unknown } }
  const signature = payload.payload?.signature
  return typeof signature === 'string' ? signature.toLowerCase() : header
}

function payerOf(payload: PaymentPayload): string | undefined {
  const inner = payload.payload as { authorization?: { from?: unknown }; permit2Authorization?: { from?: unknown } }
  const from = inner.authorization?.from ?? inner.permit2Authorization?.from
  return typeof from === 'string' ? from : undefined
}

/** The official EVM facilitator's answer for a settlement broadcast whose receipt it could not read (ErrSettlementPending). */
const SETTLEMENT_PENDING = 'settlement_pending'

function alreadyUsed(reason: string | undefined): boolean {
  return reason !== undefined && /nonce_already_used|authorization_already_used/.test(reason)
}

/** A facilitator failure (FacilitatorResponseError from the official client or ours) decided nothing. */
async function unavailableOnFacilitatorFailure<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof FacilitatorResponseError) throw new PaymentUnavailableError(error.message, { cause: error })
    throw error
  }
}
