// The x402 facilitators this service runs itself: one official `x402Facilitator` (@x402/core) per configured network
// that has `x402SelfFacilitate: true` and a facilitator key, with the exact EVM scheme (@x402/evm) registered for
// exactly that network, so that `/supported` lists exactly what is served. Anyone may call it, so its settlements are
// sent from their own account (facilitatorPrivateKey), never the operator's: a stranger's settlements spend only the
// facilitator's gas and never queue behind the operator's nonce (completions, failures, liquidations). viem's
// nonceManager counts its nonces, so parallel settlements never reuse one. Nor does it settle a payment that moves
// nothing (zero value, or from the payer to itself), nor one to a payee this service does not serve (its own paid
// resources' payees and the configured ones): a stranger paying itself 1 unit between its own wallets in a loop
// would otherwise spend the facilitator's gas until the service's own paid routes could no longer settle. A paid
// resource's payee is served from that resource's price up: 1-unit payments to the score's payee would drain it too.
// One payer's settlements are sent one at a time, each verified against the chain its predecessor left: distinct
// authorizations of a payer that can cover only one of them would otherwise all verify, all be sent, and all but one
// be mined reverted, on the facilitator's gas (an outsider's finding).
// Verify and settle read the chain (the payer's balance, the authorization's state, a simulation, the signer's code)
// for anyone who asks: each call is charged one read of the network's chain read budget, as the payer's when its key
// signed the payload, and from the part of the caller's client address, before any of them (src/service/chain-read-budget.ts;
// chargeRead); a refused call reads nothing
// and sends nothing. The send of a verified
// payment is the facilitator's own work and is not charged beyond its settle.
import { AsyncLocalStorage } from 'node:async_hooks'
import { x402Facilitator } from '@x402/core/facilitator'
import { PaymentPayloadV2Schema, PaymentRequirementsV2Schema } from '@x402/core/schemas'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { authorizationTypes, toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { getAddress, isAddressEqual, publicActions, recoverTypedDataAddress, type Address, type Hex } from 'viem'
import { ConfigError } from '../app/config.ts'
import { senderWallet } from '../chain/clients.ts'
import type { NetworkConfig } from '../chain/config.ts'
import type { ChainReadBudget } from '../service/chain-read-budget.ts'
import type { FacilitatorRequest, SettleResponse, SupportedResponse, VerifyResponse } from './schemas.ts'

/** The one protocol version served: v1 only knows named public networks and cannot serve a configured chain. */
export const X402_VERSION = 2
/** The one scheme served. */
export const EXACT_SCHEME = 'exact'
/** Default bound on one settlement's receipt wait, below the official HTTP client's 90 s request deadline. */
export const CONFIRMATION_TIMEOUT_MS_DEFAULT = 60_000
/** Longest human message passed on from the facilitator (invalidMessage, errorMessage). */
export const MESSAGE_CHARS_MAX = 512

/** True when this service runs the facilitator of `network` (the routes and the advertised URL agree on it). */
export function isSelfFacilitated(network: NetworkConfig): boolean {
  return network.x402SelfFacilitate && network.facilitatorPrivateKey !== undefined
}

/** The request names a version, scheme or network this facilitator does not serve. */
export class UnsupportedPaymentKindError extends Error {
  override readonly name = 'UnsupportedPaymentKindError'
  constructor(
    readonly field: 'x402Version' | 'scheme' | 'network',
    message: string,
  ) {
    super(message)
  }
}

/** The request fails the protocol's own validator (@x402/core/schemas) or is inconsistent in itself. */
export class PaymentRequestInvalidError extends Error {
  override readonly name = 'PaymentRequestInvalidError'
  constructor(
    message: string,
    readonly issues: ReadonlyArray<{ path: string; message: string }>,
  ) {
    super(message)
  }
}

/** The network's RPC endpoint failed or did not answer: nothing was decided about the payment. */
export class ChainUnavailableError extends Error {
  override readonly name = 'ChainUnavailableError'
  constructor(
    readonly network: string,
    options: { cause: unknown },
  ) {
    super(`the RPC endpoint of ${network} failed`, options)
  }
}

export type NetworkFacilitatorOptions = {
  /** Bound on a settlement's receipt wait; past it the answer is `settlement_pending` with the hash. */
  confirmationTimeoutMs?: number
  /** Network slug -> the payees whose payments are verified and settled (`servedPayees`); a network absent serves none. */
  payees?: Readonly<Record<string, readonly ServedPayee[]>>
  /** The request path's chain read budget; a verify or settle takes one read of it (throws ChainReadsExhaustedError). Default: none. */
  chainReads?: Pick<ChainReadBudget, 'take' | 'takeUnproven'>
}

/** A payee the facilitator settles for, and the least amount it settles to it. */
export type ServedPayee = { payTo: Address; minAmountAtomic: bigint }

/**
 * viem's failures of the node rather than of the call: not reached, no answer, or overloaded. Not RpcRequestError
 * in general: a revert comes back as a JSON-RPC error too, and a revert is an answer.
 */
const TRANSPORT_ERROR_NAMES = new Set([
  'HttpRequestError',
  'TimeoutError',
  'WebSocketRequestError',
  'SocketClosedError',
  'LimitExceededRpcError',
  'ResourceUnavailableRpcError',
  // The sender's earlier transactions still held by the RPC (src/chain/clients.ts inTurn): not sent, as a timeout.
  'SenderBusyError',
])

export function isTransportFailure(error: unknown): boolean {
  let current: unknown = error
  for (let depth = 0; depth < 16 && typeof current === 'object' && current !== null; depth += 1) {
    if (TRANSPORT_ERROR_NAMES.has((current as { name?: unknown }).name as string)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** What one verify or settle call saw of the chain: the first RPC transport failure, if any. */
type CallObservation = { transportFailure: unknown }

/**
 * The facilitator of one network. Commands take a request already validated against `FacilitatorRequest`, check
 * it against the protocol's validator and against what is served, and return the facilitator's answer; business
 * failures come back as `isValid: false` / `success: false`, never as errors.
 */
export class NetworkFacilitator {
  readonly network: NetworkConfig
  /** The account that sends settlements (never the operator's). */
  readonly sender: Address
  /** The payees served, checksummed, in configuration order: a payment to anyone else is refused unsent. */
  readonly payees: readonly ServedPayee[]
  /** Lower-case payee -> the least amount settled to it. */
  private readonly served: ReadonlyMap<string, bigint>
  private readonly facilitator: x402Facilitator
  private readonly observations = new AsyncLocalStorage<CallObservation>()
  /** Lower-case payer -> the end of its latest settlement: the next one of that payer starts after it. */
  private readonly settling = new Map<string, Promise<void>>()
  private readonly chainReads: Pick<ChainReadBudget, 'take' | 'takeUnproven'> | undefined

  constructor(network: NetworkConfig, options: NetworkFacilitatorOptions = {}) {
    if (!isSelfFacilitated(network)) throw new Error(`network ${network.slug}: x402SelfFacilitate and a facilitator key are both needed`)
    const wallet = senderWallet(network, network.facilitatorPrivateKey as Hex)
    const client = wallet.walletClient.extend(publicActions)
    const pollingInterval = network.pollingIntervalMs
    // The scheme swallows some RPC failures into business answers (a failed getCode reads as "invalid signature"):
    // every chain call notes a transport failure in the current call's observation, so `call` can tell.
    const observe = <T>(pending: Promise<T>): Promise<T> =>
      pending.catch((error: unknown) => {
        const observation = this.observations.getStore()
        if (observation !== undefined && observation.transportFailure === undefined && isTransportFailure(error)) observation.transportFailure = error
        throw error
      })
    // Each method is wrapped: the viem client's overloads do not match the signer's narrower signatures.
    const signer = toFacilitatorEvmSigner(
      {
        address: wallet.account.address,
        readContract: (args) => observe(client.readContract(args as never)),
        verifyTypedData: (args) => observe(client.verifyTypedData(args as never)),
        // Sent with a margin over its own estimate, as the operator's transactions (gasWithMargin): the transfer's path
        // can change between the estimate and the mining (a payee whose balance went to 0 meanwhile costs a fresh slot,
        // 17,100 gas more), and a settlement that runs out of gas spends the facilitator's gas and settles nothing.
        writeContract: (args) => observe(client.estimateContractGas(args as never).then(wallet.gasFor).then((gas) => wallet.inTurn(() => client.writeContract({ ...(args as object), gas } as never)))),
        sendTransaction: (args) => observe(wallet.inTurn(() => client.sendTransaction(args))),
        waitForTransactionReceipt: (args) => observe(client.waitForTransactionReceipt({ ...args, pollingInterval })),
        getCode: (args) => observe(client.getCode(args)),
      },
      { confirmationTimeoutMs: options.confirmationTimeoutMs ?? CONFIRMATION_TIMEOUT_MS_DEFAULT },
    )
    this.network = network
    this.sender = wallet.account.address
    this.payees = options.payees?.[network.slug] ?? []
    this.served = new Map(this.payees.map((p) => [p.payTo.toLowerCase(), p.minAmountAtomic]))
    this.chainReads = options.chainReads
    this.facilitator = new x402Facilitator().register(network.caip2, new ExactEvmScheme(signer))
  }

  supported(): SupportedResponse {
    const supported = this.facilitator.getSupported()
    return {
      // The protocol's kinds have room for scheme data (`extra`): the served payees go there, so a client can tell
      // before paying whether this facilitator settles its payment.
      kinds: supported.kinds.map((k) => ({ x402Version: k.x402Version, scheme: k.scheme, network: k.network, extra: { ...k.extra, payees: this.payees.map(wirePayee) } })),
      extensions: [...supported.extensions],
      signers: Object.fromEntries(Object.entries(supported.signers).map(([family, addresses]) => [family, [...addresses]])),
    }
  }

  /** `client`: the request's clientKeyOf, whose part of the chain read budget its read takes (ChainReadBudget.take). */
  async verify(request: FacilitatorRequest, client: string | undefined): Promise<VerifyResponse> {
    const { payload, requirements } = this.admit(request)
    const refused = refusalOf(payload, requirements, this.served)
    if (refused !== undefined) return pick({ isValid: false, invalidReason: refused.reason, invalidMessage: refused.message, payer: refused.payer })
    await this.chargeRead(payload, requirements, client)
    const result = await this.call(() => this.facilitator.verify(payload, requirements), (r) => !r.isValid)
    return pick({
      isValid: result.isValid,
      invalidReason: result.invalidReason,
      invalidMessage: this.shorten(result.invalidMessage),
      payer: result.payer,
      extensions: result.extensions,
      extensionResponses: result.extensionResponses,
      extra: result.extra,
    })
  }

  /** `client`: as verify's. */
  async settle(request: FacilitatorRequest, client: string | undefined): Promise<SettleResponse> {
    const { payload, requirements } = this.admit(request)
    const refused = refusalOf(payload, requirements, this.served)
    if (refused !== undefined) {
      return pick({ success: false, errorReason: refused.reason, errorMessage: refused.message, payer: refused.payer, transaction: '', network: requirements.network })
    }
    await this.chargeRead(payload, requirements, client)
    // A failure after broadcast keeps its transaction hash (settlement_pending): that answer stands, and a retry
    // of the same settle reconciles against the hash instead of sending again.
    const settle = () =>
      this.call(
        () => this.facilitator.settle(payload, requirements),
        (r) => !r.success && r.transaction === '',
      )
    // Only a payment that verifies now waits for its payer's turn, so a payload its payer did not sign (or already
    // spent) never holds up that payer's settlements; it goes on at once to the settle, which refuses it unsent (or
    // reconciles a pending one). In its turn the settle verifies again against the chain as the payer's previous
    // settlement left it, and sends nothing when that no longer covers it.
    const verified = await this.call(() => this.facilitator.verify(payload, requirements), (r) => !r.isValid)
    const result = verified.isValid ? await this.inPayerTurn(payerOf(payload), settle) : await settle()
    return pick({
      success: result.success,
      errorReason: result.errorReason,
      errorMessage: this.shorten(result.errorMessage),
      payer: result.payer,
      transaction: result.transaction,
      network: result.network,
      amount: result.amount,
      extensions: result.extensions,
      extensionResponses: result.extensionResponses,
      extra: result.extra,
    })
  }

  /**
   * One read of the network's budget: as the payer's when its key signed the payload's EIP-3009 authorization
   * (recovered here, no chain read), else from one share of every other payload (a contract wallet's, a Permit2 one,
   * one whose `from` did not sign it). The `from` alone proves nothing: charged to it, anyone could spend any payer's
   * share (a review's finding, test/x402/facilitator-budget.test.ts). Either way from `client`'s part first: a payer's
   * key is free, so fresh keys from one address otherwise spent the whole budget (test/x402/outsider13-free-payers-budget.test.ts).
   */
  private async chargeRead(payload: PaymentPayload, requirements: PaymentRequirements, client: string | undefined): Promise<void> {
    if (this.chainReads === undefined) return
    const payer = await signingPayer(this.network.chainId, payload, requirements)
    if (payer !== undefined) this.chainReads.take(this.network.slug, payer, client)
    else this.chainReads.takeUnproven(this.network.slug, 'payment', client)
  }

  /** Runs `settle` once every earlier settlement of `payer` has ended (whatever its outcome). */
  private async inPayerTurn<T>(payer: string | undefined, settle: () => Promise<T>): Promise<T> {
    if (payer === undefined) return settle()
    const key = payer.toLowerCase()
    const mine = (this.settling.get(key) ?? Promise.resolve()).then(settle)
    const ended = mine.then(
      () => undefined,
      () => undefined,
    )
    this.settling.set(key, ended)
    try {
      return await mine
    } finally {
      if (this.settling.get(key) === ended) this.settling.delete(key)
    }
  }

  /**
   * The protocol's validator decides what a v2 payload and requirements are (and turns its nullish fields into
   * absent ones); then the version, scheme and network must be the ones served. Checked here rather than left to
   * the facilitator's throw, so that a throw from it can only mean a fault.
   */
  private admit(request: FacilitatorRequest): { payload: PaymentPayload; requirements: PaymentRequirements } {
    if (request.x402Version !== request.paymentPayload.x402Version) {
      throw new PaymentRequestInvalidError('x402Version differs from paymentPayload.x402Version.', [
        { path: '/body/paymentPayload/x402Version', message: `must equal x402Version (${request.x402Version})` },
      ])
    }
    if (request.x402Version !== X402_VERSION) {
      throw new UnsupportedPaymentKindError('x402Version', `x402 version ${request.x402Version} is not served; this facilitator serves version ${X402_VERSION}.`)
    }
    const payload = PaymentPayloadV2Schema.safeParse(request.paymentPayload)
    const requirements = PaymentRequirementsV2Schema.safeParse(request.paymentRequirements)
    const issues = [
      ...(payload.success ? [] : payload.error.issues.map((i) => ({ path: `/body/paymentPayload/${i.path.join('/')}`, message: i.message }))),
      ...(requirements.success ? [] : requirements.error.issues.map((i) => ({ path: `/body/paymentRequirements/${i.path.join('/')}`, message: i.message }))),
    ]
    if (!payload.success || !requirements.success) throw new PaymentRequestInvalidError('The payment fails the x402 protocol validator.', issues)
    const served = this.facilitator.getSupported().kinds
    const { scheme, network } = requirements.data
    if (!served.some((k) => k.x402Version === X402_VERSION && k.scheme === scheme)) {
      throw new UnsupportedPaymentKindError('scheme', `scheme ${JSON.stringify(scheme)} is not served; this facilitator serves ${EXACT_SCHEME}.`)
    }
    if (!served.some((k) => k.x402Version === X402_VERSION && k.scheme === scheme && k.network === network)) {
      throw new UnsupportedPaymentKindError('network', `network ${network} is not served here; this facilitator serves ${this.network.caip2} (${this.network.slug}).`)
    }
    // The validator types `network` as string; the route's schema already held it to CAIP-2 form.
    const { extensions, ...rest } = payload.data
    return {
      payload: { ...rest, ...(extensions == null ? {} : { extensions }), accepted: withExtra(payload.data.accepted) } as PaymentPayload,
      requirements: withExtra(requirements.data) as PaymentRequirements,
    }
  }

  /**
   * A throw from the facilitator after `admit` is a fault: of the chain's RPC when viem says so, else ours. A
   * refusal (`refused`) reached while the RPC failed decided nothing either: it is a chain fault too.
   */
  private async call<T>(run: () => Promise<T>, refused: (result: T) => boolean): Promise<T> {
    const observation: CallObservation = { transportFailure: undefined }
    let result: T
    try {
      result = await this.observations.run(observation, run)
    } catch (error) {
      if (isTransportFailure(error)) throw new ChainUnavailableError(this.network.slug, { cause: error })
      throw error
    }
    if (observation.transportFailure !== undefined && refused(result)) {
      throw new ChainUnavailableError(this.network.slug, { cause: observation.transportFailure })
    }
    return result
  }

  /**
   * The facilitator passes on raw viem messages, whose detail lines name the RPC URL (which may carry an API key)
   * and the call's arguments: keep the summary before the first blank line, without the URL, bounded.
   */
  private shorten(message: string | undefined): string | undefined {
    if (message === undefined) return undefined
    const summary = (message.split(/\r?\n\s*\r?\n/, 1)[0] ?? '').split(this.network.rpcUrl).join('<rpc>').trim()
    return summary.length > MESSAGE_CHARS_MAX ? `${summary.slice(0, MESSAGE_CHARS_MAX - 3)}...` : summary
  }
}

/**
 * Refusal codes of a payment this facilitator does not send, before any chain call: one that would move nothing
 * (gas spent for nobody), or one to a payee this service does not serve (gas spent for strangers).
 */
export const REFUSED_PAYMENT_REASONS = {
  zeroValue: 'invalid_payment_zero_value',
  payerIsPayee: 'invalid_payment_payer_is_payee',
  payeeNotServed: 'invalid_payment_payee_not_served',
  belowPayeeMinimum: 'invalid_payment_below_payee_minimum',
  /** On the public settle route only: a payment to this service's own paid resource, which only that resource settles. */
  settledByResourceOnly: 'invalid_payment_settled_by_resource_only',
} as const

/**
 * Why a payment is refused unsent, if it is. The payee and amount checked are the requirements' `payTo` and
 * `amount`: the exact scheme then refuses a payload whose recipient (EIP-3009 `to`, Permit2 `witness.to`) or value
 * differs from them.
 */
function refusalOf(payload: PaymentPayload, requirements: PaymentRequirements, served: ReadonlyMap<string, bigint>): { reason: string; message: string; payer: string | undefined } | undefined {
  const payer = payerOf(payload)
  const amount = BigInt(requirements.amount)
  if (amount === 0n) return { reason: REFUSED_PAYMENT_REASONS.zeroValue, message: 'A payment of 0 moves nothing: not settled here.', payer }
  const payee = requirements.payTo.toLowerCase()
  if (payer !== undefined && payer.toLowerCase() === payee) {
    return { reason: REFUSED_PAYMENT_REASONS.payerIsPayee, message: 'The payer pays itself: not settled here.', payer }
  }
  const minimum = served.get(payee)
  if (minimum === undefined) {
    return { reason: REFUSED_PAYMENT_REASONS.payeeNotServed, message: `This facilitator settles only payments to the payees it serves (GET .../supported, kinds[].extra.payees); ${requirements.payTo} is not one.`, payer }
  }
  if (amount < minimum) {
    return { reason: REFUSED_PAYMENT_REASONS.belowPayeeMinimum, message: `This facilitator settles payments to ${requirements.payTo} of at least ${minimum} (atomic): not settled here.`, payer }
  }
  return undefined
}

/** The payload's EIP-3009 `from` when its ECDSA signature over the authorization recovers to it; else undefined. */
export async function signingPayer(chainId: number, payload: PaymentPayload, requirements: PaymentRequirements): Promise<Address | undefined> {
  const inner = payload.payload as { authorization?: Record<string, string>; signature?: Hex }
  const { authorization, signature } = inner
  const { name, version } = (requirements.extra ?? {}) as { name?: string; version?: string }
  if (authorization === undefined || signature === undefined || name === undefined || version === undefined) return undefined
  try {
    const from = getAddress(authorization['from'] as string)
    const signer = await recoverTypedDataAddress({
      domain: { name, version, chainId, verifyingContract: getAddress(requirements.asset) },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from, to: getAddress(authorization['to'] as string), value: BigInt(authorization['value'] as string),
        validAfter: BigInt(authorization['validAfter'] as string), validBefore: BigInt(authorization['validBefore'] as string), nonce: authorization['nonce'] as Hex,
      },
      signature,
    })
    return isAddressEqual(signer, from) ? from : undefined
  } catch {
    // Not an ECDSA signature over a well-formed authorization: nothing proves the payer.
    return undefined
  }
}

/** The payer a payload names (EIP-3009 `from`, Permit2 `from`), as signed: checked by the scheme's verification. */
export function payerOf(payload: PaymentPayload): string | undefined {
  const inner = payload.payload as { authorization?: { from?: string }; permit2Authorization?: { from?: string } }
  return inner.authorization?.from ?? inner.permit2Authorization?.from
}

/** A served payee as `supported` and the catalog show it (amounts as decimal strings). */
export function wirePayee(payee: ServedPayee): { payTo: Address; minAmountAtomic: string } {
  return { payTo: payee.payTo, minAmountAtomic: payee.minAmountAtomic.toString() }
}

/** Requirements with `extra` always an object, as the facilitator's type has it (the protocol allows it absent). */
function withExtra<T extends { extra?: Record<string, unknown> | null | undefined }>(requirements: T): T & { extra: Record<string, unknown> } {
  return { ...requirements, extra: requirements.extra ?? {} }
}

/** Drops absent fields, so the JSON answer has no `undefined` and no null. */
function pick<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T
}

/**
 * The payees each self-facilitated network serves: the payees of this service's own paid resources on it (`paid`,
 * e.g. the credit score's, from the resource's price up) and the configured ones (`configured`, network slug ->
 * addresses, any non-zero amount). A payee named twice keeps its lowest minimum. A configured slug that is not a
 * self-facilitated network among `networks` stops the start: its payees would be served nowhere.
 */
export function servedPayees(
  networks: readonly NetworkConfig[],
  configured: Readonly<Record<string, readonly Address[]>>,
  paid: ReadonlyArray<{ network: string; payTo: Address; amountAtomic: bigint }>,
): Record<string, ServedPayee[]> {
  for (const slug of Object.keys(configured)) {
    const network = networks.find((n) => n.slug === slug)
    if (network === undefined || !isSelfFacilitated(network)) {
      throw new ConfigError(`x402FacilitatorPayees.${slug}: not a network this service facilitates (${networks.filter(isSelfFacilitated).map((n) => n.slug).join(', ') || 'none'})`)
    }
  }
  const payees: Record<string, ServedPayee[]> = {}
  for (const network of networks.filter(isSelfFacilitated)) {
    const listed = [
      ...paid.filter((p) => p.network === network.slug).map((p) => ({ payTo: p.payTo, minAmountAtomic: p.amountAtomic })),
      ...(configured[network.slug] ?? []).map((payTo) => ({ payTo, minAmountAtomic: 1n })),
    ]
    const byPayee = new Map<Address, ServedPayee>()
    for (const { payTo, minAmountAtomic } of listed) {
      const address = getAddress(payTo)
      const known = byPayee.get(address)
      byPayee.set(address, { payTo: address, minAmountAtomic: known === undefined || minAmountAtomic < known.minAmountAtomic ? minAmountAtomic : known.minAmountAtomic })
    }
    payees[network.slug] = [...byPayee.values()]
  }
  return payees
}

/** The facilitators of every self-facilitated network among `networks`, in configuration order. */
export function createNetworkFacilitators(networks: readonly NetworkConfig[], options: NetworkFacilitatorOptions = {}): NetworkFacilitator[] {
  return networks.filter(isSelfFacilitated).map((network) => new NetworkFacilitator(network, options))
}
