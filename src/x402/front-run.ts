// A paid resource's payment that a stranger settled first. The payer's EIP-3009 authorization pays the resource's
// payee whoever submits it: a stranger who sees it (the facilitator's settlement in a public mempool, the
// PAYMENT-SIGNATURE header on its way) can submit transferWithAuthorization first, for the gas. The money then went
// where the service asked, and the facilitator refuses the payment as spent (an outsider's finding,
// test/score/outsider12-score-frontrun.test.ts). Such a settlement counts as the payment when it is exactly the one the
// service would have sent: the payer's ECDSA signature over the authorization presented, this resource's token,
// `to` its payee, `value` its price, mined (status success) with the token's AuthorizationUsed(from, nonce) followed
// at once by Transfer(from, payee, price) in the same transaction, inside the authorization's validity window, at the
// network's `confirmations`, at most the resource's maxTimeoutSeconds plus the confirmation wait (chain time, the
// horizon) below the head, and not sent by a signer of the resource's own facilitator (the facilitator's own
// settlement was already answered, or refused, by the settle that sent it), unless the request that asked for it
// delivered nothing (attempt: its settle's answer was lost, the receipt not read after the broadcast; an outsider's
// finding, test/api/outsider19-score-settlement-pending.test.ts). A settlement honoured once is remembered
// (chain time, until it is past that horizon and could not be honoured again anyway): a second use of the same
// authorization stays `payment_already_used`. It is remembered durably: written to the store (collection
// x402-honoured-settlements, in the store's group commit) before the score is delivered, read back at start-up, and
// deleted once the chain's time is past its horizon, so a restart within the horizon does not honour it a second time
// (test/x402/settled14-honoured-restart.test.ts). So is a payment the facilitator is asked to settle, until its work is
// delivered: written (collection x402-settlements-in-flight) and acknowledged before the settle broadcasts anything,
// read back at start-up, consumed by the commit that delivers on it, so the facilitator's own settlement of it buys
// its work once across restarts (test/x402/outsider19-settlement-restart.test.ts). A transaction still pending (the
// facilitator's own send found the nonce used in the pending state) is waited for, as its confirmations are.
import type { FacilitatorClient } from '@x402/core/server'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { encodePaymentResponseHeader } from '@x402/core/http'
import { BaseError, ContractFunctionZeroDataError, isAddress as isViemAddress, isAddressEqual, isHex, parseAbi, parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem'
import type { NetworkConfig } from '../chain/config.ts'
import type { RecordCollection, RecordWrite, Store } from '../store/index.ts'
import type { ChainReadBudget } from '../service/chain-read-budget.ts'
import { ChainUnavailableError, isTransportFailure, signingPayer } from './facilitator.ts'

/**
 * How long (chain time, s) past a payment's own horizon a settlement sent for a request that delivered nothing still
 * buys that request's work: its in-flight mark lives this much longer. The payer was told (503, Retry-After) to send
 * the same payment again, and an RPC outage or a restart may last far longer than the payment's timeout; before, a
 * retry more than maxTimeoutSeconds + 60 s after the settlement's block was refused payment_already_used, the payer
 * charged and never served (an outsider's finding, test/api/outsider26-score-pending-stolen.test.ts).
 */
export const UNDELIVERED_RETRY_SECONDS = 86_400

/**
 * How many times the log window is read for a nonce the head's state says is used, and the state RECENT_STATE_BLOCKS
 * below the head could not be read, before it is taken for one used before the window (the read right after the
 * state's, then a polling interval apart).
 */
const OLD_NONCE_LOG_READS = 3

/**
 * How far below the head the token's state is read for a nonce the head's state says is used and whose log the window
 * does not show: unused there, it was used by a transaction mined in these last blocks, whose log a provider's
 * log node may not show yet (load-balanced providers' logs lag their state by a few blocks), and it is waited for as
 * a pending one is; used there too, it is old (no log node lags this much) and refused at once. Within the 128 blocks
 * of state a non-archive node keeps. Before, the log window was read three times 50 ms apart on the devnet (a polling
 * interval): a stranger's front-run settlement, mined a block or two before the payer's request, whose log the
 * provider did not show yet, was refused 402 payment_already_used, the payer charged and not served (review29,
 * test/api/review29-front-run-logs-lag.test.ts).
 */
export const RECENT_STATE_BLOCKS = 64n

/** How far below the head a front-run settlement is looked for: one eth_getLogs range most providers accept. */
export const FRONT_RUN_LOOKBACK_BLOCKS = 2_000n

const authorizationStateAbi = parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)'])

const authorizationCanceledEvent = parseAbi(['event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)'])[0]

const eip3009Events = parseAbi([
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
])

/** The lookup could not decide (chain read refused or failed, confirmations not reached in time): nothing was consumed. */
export class FrontRunUndecidedError extends Error {
  override readonly name: string = 'FrontRunUndecidedError'
}

/** The found settlement was not yet at the network's confirmations when the wait ended. */
export class SettlementUnconfirmedError extends FrontRunUndecidedError {
  override readonly name = 'SettlementUnconfirmedError'
}

/**
 * The payment's settlement was already asked for by a request for other work (another digest) and not delivered on:
 * nothing may be settled for this one (attempt).
 */
export const OWED_ELSEWHERE = "this payment's settlement was already asked for by a request with another subject or publicKey"

export class SettlementOwedElsewhereError extends Error {
  override readonly name = 'SettlementOwedElsewhereError'
}

/** A settlement found for a payment: answer it with `headers`, then `commit` once delivered, or `release`. */
export interface FoundSettlement {
  transaction: Hex
  payer: Address
  /** PAYMENT-RESPONSE of the found settlement. */
  headers: Record<string, string>
  /**
   * The work is delivered on it: remember it, durably when there is a store (resolves once written), so no second use
   * is honoured, after a restart either. Rejects when it could not be written: then nothing may be delivered on it,
   * and it may be presented again.
   */
  commit(): Promise<void>
  /** The work failed: the settlement may be presented again. */
  release(): void
}

export interface FrontRunOptions {
  network: NetworkConfig
  client: PublicClient
  /** The facilitator whose signers' settlements are never honoured here (read once, from its /supported). */
  facilitator: FacilitatorClient
  /** The lookup takes one read of the network's chain read budget, as a settle does. Default: none. */
  chainReads?: Pick<ChainReadBudget, 'take' | 'takeUnproven'> | undefined
  /** Bound on the wait for the settlement's confirmations. */
  confirmationTimeoutMs: number
  /**
   * Where an honoured settlement is kept until past its horizon, written before the work is delivered on it and read
   * back at start-up. Absent: memory only (a restart forgets it).
   */
  store?: Store | undefined
}

/** The store's collection of honoured settlements, by honouredKey. */
export const HONOURED_SETTLEMENTS_COLLECTION = 'x402-honoured-settlements'

/** As stored: the chain time (s, decimal) past which it could not be honoured again, and the settlement's transaction. */
type HonouredRecord = { expires: string; transaction: Hex }

function isHonouredRecord(value: unknown): value is HonouredRecord {
  const v = value as HonouredRecord
  return isInFlightRecord(v) && isHex(v.transaction, { strict: true }) && v.transaction.length === 66
}

/**
 * The store's collection of the payments the facilitator was asked to settle whose work is not delivered yet, by
 * honouredKey (payer and nonce; the payee and price are the resource's, checked again on chain when it is presented).
 */
export const SETTLEMENTS_IN_FLIGHT_COLLECTION = 'x402-settlements-in-flight'

/**
 * As stored: the chain time (s, decimal) past which its settlement could not be honoured anyway, and the digest of the
 * request that asked for it (`request`, absent on marks written before it was kept): only a request with that digest
 * is answered from the settlement.
 */
type InFlightRecord = { expires: string; request?: string; transaction?: Hex }

function isInFlightRecord(value: unknown): value is InFlightRecord {
  const v = value as InFlightRecord
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.expires === 'string' &&
    /^(0|[1-9][0-9]{0,19})$/.test(v.expires) &&
    (v.request === undefined || (typeof v.request === 'string' && v.request.length <= 128)) &&
    (v.transaction === undefined || (isHex(v.transaction, { strict: true }) && v.transaction.length === 66))
  )
}

/**
 * A payment asked to settle and not delivered on yet: its mark's end (chain time, s), its request's digest, and the
 * facilitator's settlement transaction once its broadcast is known (looked up by hash when it is older than the log
 * lookback).
 */
type Undelivered = { expires: bigint; request: string | undefined; transaction?: Hex | undefined }

/** An undelivered payment's mark as stored (attempt writes it, broadcast adds the transaction). */
function inFlightRecordOf(mark: Undelivered): InFlightRecord {
  return { expires: mark.expires.toString(), ...(mark.request === undefined ? {} : { request: mark.request }), ...(mark.transaction === undefined ? {} : { transaction: mark.transaction }) }
}

type Authorization = { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex }

export class FrontRunSettlements {
  private readonly options: FrontRunOptions
  /** Lower-case `from:nonce` -> chain time (s) past which it could not be honoured again; 0n while being looked up or answered. */
  private readonly honoured = new Map<string, bigint>()
  /**
   * Payments the facilitator was asked to settle for the resource and whose work was not delivered on that settle,
   * by honouredKey -> the chain time (s) past which they could not be honoured anyway. The facilitator's own
   * settlement of one counts as its payment when it is presented again (once: then it is honoured), by a request with
   * the same digest (the work it asked for): the settlement is public once broadcast, so anyone can present the
   * payment again. Durable with a store (inFlight), read back at start-up.
   */
  private readonly undelivered = new Map<string, Undelivered>()
  /** The durable copy of the honoured settlements (not of those the facilitator settled itself: remember). */
  private readonly records: RecordCollection<HonouredRecord> | undefined
  /** The durable copy of `undelivered`. */
  private readonly inFlight: RecordCollection<InFlightRecord> | undefined
  private signers: Promise<readonly string[]> | undefined

  constructor(options: FrontRunOptions) {
    this.options = options
    this.records = options.store?.collection<HonouredRecord>(HONOURED_SETTLEMENTS_COLLECTION, { version: 1, validate: isHonouredRecord })
    // Those honoured before a restart: forgotten (and deleted) at the first lookup whose head is past their horizon.
    for (const { key, value } of this.records?.iterate() ?? []) this.honoured.set(key, BigInt(value.expires))
    this.inFlight = options.store?.collection<InFlightRecord>(SETTLEMENTS_IN_FLIGHT_COLLECTION, { version: 1, validate: isInFlightRecord })
    // Those whose settle a restart interrupted before their work was delivered: the facilitator's settlement still buys it.
    for (const { key, value } of this.inFlight?.iterate() ?? []) this.undelivered.set(key, { expires: BigInt(value.expires), request: value.request, transaction: value.transaction })
  }

  /**
   * The settlement on chain of `payload`, paid as `requirements` ask, when it counts as the payment; undefined when
   * it does not (not found, another transfer used the nonce, already honoured, not the payer's signature, or asked
   * to settle by a request whose digest is not `request`): the refusal stands. Throws FrontRunUndecidedError when it
   * could not decide.
   */
  async claim(payload: PaymentPayload, requirements: PaymentRequirements, maxTimeoutSeconds: number, request?: string): Promise<FoundSettlement | undefined> {
    const horizonSeconds = this.horizonSeconds(maxTimeoutSeconds)
    const authorization = authorizationOf(payload)
    if (authorization === undefined) return undefined
    if (!isAddressEqual(authorization.to, requirements.payTo as Address) || authorization.value !== BigInt(requirements.amount)) return undefined
    // Only the payer's own signature over exactly this authorization, checked before it is reserved: a payload made up
    // from a nonce seen on chain buys nothing, nor holds up the payer's own.
    const payer = await signingPayer(this.options.network.chainId, payload, requirements)
    if (payer === undefined) return undefined
    const key = honouredKey(authorization)
    // A payment the service was asked to settle is owed to the request that asked, not to whoever rebuilds it from the
    // settlement's calldata (public once broadcast) with another subject or key: an outsider's finding,
    // test/api/outsider26-score-pending-stolen.test.ts. Before any chain read.
    const asked = this.undelivered.get(key)
    if (asked?.request !== undefined && asked.request !== request) return undefined
    // Reserved before any chain read: a concurrent claim of the same authorization (another signature of it too) waits for nothing.
    if (this.honoured.has(key)) return undefined
    this.honoured.set(key, 0n)
    let found: { transaction: Hex; expires: bigint } | undefined
    try {
      found = await this.find(authorization, payer, requirements, horizonSeconds, asked)
    } finally {
      if (found === undefined) this.honoured.delete(key)
    }
    if (found === undefined) return undefined
    const { transaction, expires } = found
    return {
      transaction,
      payer: authorization.from,
      headers: { 'PAYMENT-RESPONSE': encodePaymentResponseHeader({ success: true, transaction, network: requirements.network as `${string}:${string}`, payer: authorization.from }) },
      commit: async () => {
        try {
          // Consumes its in-flight mark, if any, in the commit that records it honoured: one score across restarts.
          const records = [(this.records as RecordCollection<HonouredRecord>).putOp(key, { expires: expires.toString(), transaction }), ...this.consumeOps(key)]
          await this.options.store?.commit({ records })
        } catch (error) {
          this.honoured.delete(key)
          throw error
        }
        this.honoured.set(key, expires)
        this.undelivered.delete(key)
      },
      release: () => void this.honoured.delete(key),
    }
  }

  /**
   * A payment the facilitator settled itself: it is never honoured again as a front-run (its sender is the
   * facilitator's, and it is remembered too, in case the facilitator does not list its signers), until the chain's
   * time is past its validBefore and the horizon: its settlement was mined before validBefore. Its in-flight mark is
   * deleted (resolves once written: deliver its work only then, or a restart would let its settlement buy it again).
   */
  async remember(payload: PaymentPayload, maxTimeoutSeconds: number): Promise<void> {
    const authorization = authorizationOf(payload)
    if (authorization === undefined) return
    const key = honouredKey(authorization)
    this.honoured.set(key, this.expiresOf(authorization, maxTimeoutSeconds))
    this.undelivered.delete(key)
    const consumed = this.consumeOps(key)
    if (consumed.length > 0) await this.options.store?.commit({ records: consumed })
  }

  /** The deletion of `key`'s in-flight mark, when it is stored. */
  private consumeOps(key: string): RecordWrite[] {
    return this.inFlight?.has(key) === true ? [this.inFlight.deleteOp(key)] : []
  }

  /**
   * The facilitator is about to settle `payload` for the resource: until remember (its work delivered), the
   * facilitator's own settlement of it counts as the payment when it is presented again. Its settle may broadcast and
   * then answer no success (`settlement_pending`: the receipt not read in time, an RPC failure after the broadcast),
   * or fail; the settlement is mined all the same, and was refused as the facilitator's, so the payer was charged and
   * never served (an outsider's finding, test/api/outsider19-score-settlement-pending.test.ts). With a store the mark
   * is durable: resolves once written, and the settle may broadcast only then, so a restart between the broadcast and
   * the delivery still knows it (test/x402/outsider19-settlement-restart.test.ts). Rejects when it could not be
   * written: nothing may be settled then.
   *
   * A payment already marked for a request with another digest is refused (SettlementOwedElsewhereError), the mark
   * kept: its settlement may be in a public mempool, not mined yet, so the facilitator verifies the payment again as
   * unused; before, anyone who rebuilt the payment from that pending transaction's calldata and sent it with its own
   * subject and key overwrote the mark with its digest, and the payer's settlement bought the stranger's score, the
   * payer's retry refused payment_already_used (review29, test/x402/review29-mark-owed-elsewhere.test.ts). A mark for
   * the same digest keeps the broadcast's hash it holds. Marked in memory before the write (undone if it fails), so
   * two requests at once with the same payment in two encodings cannot both mark it. Resolves true when the mark is
   * this attempt's own (none before it): abandon may then delete it.
   */
  async attempt(payload: PaymentPayload, maxTimeoutSeconds: number, request?: string): Promise<boolean> {
    const authorization = authorizationOf(payload)
    if (authorization === undefined) return false
    const [key, expires] = [honouredKey(authorization), this.expiresOf(authorization, maxTimeoutSeconds) + BigInt(UNDELIVERED_RETRY_SECONDS)]
    const marked = this.undelivered.get(key)
    if (marked?.request !== undefined && marked.request !== request) {
      throw new SettlementOwedElsewhereError(OWED_ELSEWHERE)
    }
    const mark: Undelivered = { expires: marked !== undefined && marked.expires > expires ? marked.expires : expires, request, transaction: marked?.transaction }
    const record = inFlightRecordOf(mark)
    this.undelivered.set(key, mark)
    try {
      if (this.inFlight !== undefined) await this.options.store?.commit({ records: [this.inFlight.putOp(key, record)] })
    } catch (error) {
      if (this.undelivered.get(key) === mark) {
        if (marked === undefined) this.undelivered.delete(key)
        else this.undelivered.set(key, marked)
      }
      throw error
    }
    return marked === undefined
  }

  /**
   * `payload` is marked in flight for a request whose digest is not `request` (attempt would refuse it): checked at
   * admission too, so that such a request is refused before its work is done.
   */
  markedForOther(payload: PaymentPayload, request: string | undefined): boolean {
    const authorization = authorizationOf(payload)
    const marked = authorization === undefined ? undefined : this.undelivered.get(honouredKey(authorization))
    return marked?.request !== undefined && marked.request !== request
  }

  /**
   * The facilitator refused to settle `payload` and sent nothing (no transaction, not settlement_pending): the mark its
   * attempt wrote is deleted, since no settlement of it by the service exists to buy anything. Before, each payment a
   * payer holding one price sent at once beside another kept its mark (the overdrafts the facilitator refuses unsent)
   * for UNDELIVERED_RETRY_SECONDS past a validBefore the payer chooses, read back at every start and walked at every
   * lookup (review29, test/x402/review29-overdraft-marks.test.ts). A failed delete leaves it to expire.
   */
  async abandon(payload: PaymentPayload): Promise<void> {
    const authorization = authorizationOf(payload)
    if (authorization === undefined) return
    const key = honouredKey(authorization)
    this.undelivered.delete(key)
    const consumed = this.consumeOps(key)
    if (consumed.length > 0) await this.options.store?.commit({ records: consumed }).catch(() => {})
  }

  /**
   * The facilitator broadcast `transaction` for `payload` and its settle delivered nothing (settlement_pending): kept in
   * the payment's mark, so that a retry later than the log lookback (FRONT_RUN_LOOKBACK_BLOCKS) still finds it. A
   * failed write keeps it in memory only (the lookback then bounds a retry after a restart).
   */
  async broadcast(payload: PaymentPayload, transaction: string): Promise<void> {
    const authorization = authorizationOf(payload)
    if (authorization === undefined || !isHex(transaction, { strict: true }) || transaction.length !== 66) return
    const key = honouredKey(authorization)
    const asked = this.undelivered.get(key)
    if (asked === undefined) return
    asked.transaction = transaction
    const record = inFlightRecordOf(asked)
    if (this.inFlight?.has(key) === true) await this.options.store?.commit({ records: [this.inFlight.putOp(key, record)] }).catch(() => {})
  }

  /**
   * `payload`'s settlement `transaction` was delivered on (remember, or a found settlement's commit) and its caller went
   * away before the answer was written: the delivery's store commit is the one wait between them. Owed again to
   * `request`, as a settlement whose request delivered nothing (attempt, broadcast): no longer remembered as delivered,
   * marked in flight with the transaction, so the same payment with the same work buys it once. Before, the payer was
   * charged and never served, its retry refused payment_already_used (review35,
   * test/x402/review35-caller-gone-at-delivery.test.ts). A failed write keeps it in memory only.
   */
  async undeliver(payload: PaymentPayload, maxTimeoutSeconds: number, request: string | undefined, transaction: string): Promise<void> {
    const authorization = authorizationOf(payload)
    if (authorization === undefined || !isHex(transaction, { strict: true }) || transaction.length !== 66) return
    const key = honouredKey(authorization)
    const mark: Undelivered = { expires: this.expiresOf(authorization, maxTimeoutSeconds) + BigInt(UNDELIVERED_RETRY_SECONDS), request, transaction }
    this.honoured.delete(key)
    this.undelivered.set(key, mark)
    const records = [...(this.records?.has(key) === true ? [this.records.deleteOp(key)] : []), ...(this.inFlight === undefined ? [] : [this.inFlight.putOp(key, inFlightRecordOf(mark))])]
    if (records.length > 0) await this.options.store?.commit({ records }).catch(() => {})
  }

  private expiresOf(authorization: Authorization, maxTimeoutSeconds: number): bigint {
    return authorization.validBefore + BigInt(this.horizonSeconds(maxTimeoutSeconds))
  }

  /** How far below the head a settlement is honoured: the payment's timeout, and the wait for its confirmations (which a retry after it may need). */
  private horizonSeconds(maxTimeoutSeconds: number): number {
    return maxTimeoutSeconds + Math.ceil(this.options.confirmationTimeoutMs / 1000)
  }

  private async find(authorization: Authorization, payer: Address, requirements: PaymentRequirements, horizonSeconds: number, asked: Undelivered | undefined): Promise<{ transaction: Hex; expires: bigint } | undefined> {
    const ownUndelivered = asked !== undefined
    const { network, client, chainReads } = this.options
    await this.read(async () => chainReads?.take(network.slug, payer, undefined))
    const token = requirements.asset as Address
    const head = await this.read(() => client.getBlock({ blockTag: 'latest' }))
    this.forget(head.timestamp)
    const fromBlock = head.number > FRONT_RUN_LOOKBACK_BLOCKS ? head.number - FRONT_RUN_LOOKBACK_BLOCKS : 0n
    const usedLog = async () => {
      const logs = await this.read(() => client.getLogs({ address: token, event: eip3009Events[0], args: { authorizer: authorization.from, nonce: authorization.nonce }, fromBlock }))
      return logs[0]
    }
    let log = await usedLog()
    // The service's own broadcast, older than the lookback: read by its hash (its receipt is checked as any other).
    let hash: Hex | undefined = log?.transactionHash ?? asked?.transaction
    if (hash === undefined) {
      // Not mined: a transaction using the nonce may wait in the pool (the facilitator's own send then found it used).
      // The pending state says so where the node keeps one; then its mining is waited for, as confirmations are. A
      // nonce already used at the head was mined before the lookback, far past any horizon: refused at once. Before,
      // the pending state (used, long ago) sent every old spent payment presented again (anyone rebuilds one from
      // its settlement's calldata) into the wait: its request held confirmationTimeoutMs and eth_getLogs sent every
      // pollingIntervalMs, then 503 "send it again" (an outsider's finding, test/api/outsider26-old-payment.test.ts).
      const state = { address: token, abi: authorizationStateAbi, functionName: 'authorizationState', args: [authorization.from, authorization.nonce] } as const
      const used = (blockTag: 'latest' | 'pending') => this.read(() => client.readContract({ ...state, blockTag }))
      if (await used('latest')) {
        // Or mined between the log read and this one, or a provider's logs lag its state: the state RECENT_STATE_BLOCKS
        // below the head says which. Unused there: mined since, waited for below as a pending one is. Used there:
        // refused at once (no token there yet: unused). Not readable there: the window is read again a few times, a polling interval apart
        // (OLD_NONCE_LOG_READS), and no more.
        const recent = head.number > RECENT_STATE_BLOCKS ? head.number - RECENT_STATE_BLOCKS : 0n
        const usedBefore = await client.readContract({ ...state, blockNumber: recent }).catch((error: unknown) => (notDeployed(error) ? false : undefined))
        if (usedBefore === true) return undefined
        for (let i = 0; usedBefore === undefined && i < OLD_NONCE_LOG_READS && log === undefined; i++) {
          if (i > 0) await new Promise((resolve) => setTimeout(resolve, network.pollingIntervalMs))
          log = await usedLog()
        }
        if (usedBefore === undefined && log === undefined) return undefined
        // Unused there and cancelled since (cancelAuthorization: a used nonce with no AuthorizationUsed, ever): refused at
        // once, not waited for (review29: its payer, for the gas of one cancel, held every request that presented it
        // confirmationTimeoutMs, eth_getLogs sent each polling interval, for the 64 blocks after it;
        // test/api/review29-front-run-logs-lag.test.ts).
        if (usedBefore === false && log === undefined) {
          const args = { authorizer: authorization.from, nonce: authorization.nonce }
          const canceled = await this.read(() => client.getLogs({ address: token, event: authorizationCanceledEvent, args, fromBlock: recent }))
          if (canceled.length > 0) return undefined
        }
      } else if (!(await used('pending'))) return undefined
      const deadline = Date.now() + this.options.confirmationTimeoutMs
      while (log === undefined) {
        if (Date.now() > deadline) throw new SettlementUnconfirmedError(`a transaction using the payment's authorization was still pending after ${this.options.confirmationTimeoutMs} ms`)
        await new Promise((resolve) => setTimeout(resolve, network.pollingIntervalMs))
        log = await usedLog()
      }
      hash = log.transactionHash
    }
    const receipt = await this.confirmed(hash)
    if (receipt === undefined || receipt.status !== 'success' || !paysAsAsked(receipt, token, authorization)) return undefined
    if (!ownUndelivered && (await this.facilitatorSigners()).some((signer) => isAddressEqual(signer as Address, receipt.from))) return undefined
    const block = await this.read(() => client.getBlock({ blockHash: receipt.blockHash }))
    if (block.timestamp <= authorization.validAfter || block.timestamp >= authorization.validBefore) return undefined
    // A settlement of a payment the service was asked to settle and did not deliver on counts as long as its mark
    // lives (UNDELIVERED_RETRY_SECONDS past the payment's horizon), and is remembered as long once honoured.
    const horizon = block.timestamp + BigInt(horizonSeconds)
    const expires = asked !== undefined && asked.expires > horizon ? asked.expires : horizon
    if (head.timestamp > expires) return undefined
    return { transaction: receipt.transactionHash, expires }
  }

  /** The receipt at the network's confirmations (read again after the wait: a reorganisation may have dropped it). */
  private async confirmed(hash: Hex): Promise<TransactionReceipt | undefined> {
    const { network, client, confirmationTimeoutMs } = this.options
    try {
      const receipt = await client.waitForTransactionReceipt({ hash, confirmations: network.confirmations, timeout: confirmationTimeoutMs, pollingInterval: network.pollingIntervalMs })
      return network.confirmations === 1 ? receipt : await client.getTransactionReceipt({ hash })
    } catch (error) {
      if (isTransportFailure(error)) throw rpcFailed(network.slug, error)
      const name = (error as { name?: unknown }).name
      if (name === 'WaitForTransactionReceiptTimeoutError') {
        throw new SettlementUnconfirmedError(`the payment's settlement ${hash} did not reach ${network.confirmations} confirmations in time`, { cause: error })
      }
      if (name === 'TransactionReceiptNotFoundError') return undefined
      throw new FrontRunUndecidedError(`the receipt of ${hash} could not be read`, { cause: error })
    }
  }

  private facilitatorSigners(): Promise<readonly string[]> {
    this.signers ??= this.options.facilitator.getSupported().then(
      (supported) => Object.values(supported.signers).flat(),
      (error: unknown) => {
        this.signers = undefined
        throw new FrontRunUndecidedError('the payment facilitator could not be asked for its signers', { cause: error })
      },
    )
    return this.signers
  }

  /**
   * Forgets the settlements the chain's time has carried past their horizon: none of them could be honoured again.
   * Their stored records go in one commit, not waited for: one left by a failed commit is read back at the next
   * start and forgotten again.
   */
  private forget(headTimestamp: bigint): void {
    const stored = []
    for (const [key, expires] of this.honoured) {
      if (expires === 0n || expires >= headTimestamp) continue
      this.honoured.delete(key)
      if (this.records?.has(key) === true) stored.push(this.records.deleteOp(key))
    }
    for (const [key, { expires }] of this.undelivered) {
      if (expires >= headTimestamp) continue
      this.undelivered.delete(key)
      stored.push(...this.consumeOps(key))
    }
    if (stored.length > 0) this.options.store?.commit({ records: stored }).catch(() => {})
  }

  /** A chain read (or the budget's charge for one): a failure of the RPC or a refused read decided nothing. */
  private async read<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (error) {
      if (isTransportFailure(error)) throw rpcFailed(this.options.network.slug, error)
      throw new FrontRunUndecidedError((error as Error).message, { cause: error })
    }
  }
}

/** The call found no contract at its block (the token deployed later: none of its nonces was used there). */
function notDeployed(error: unknown): boolean {
  return error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionZeroDataError) !== null
}

/** The key of an authorization among the honoured settlements: its payer and nonce, lower case. */
function honouredKey(authorization: Authorization): string {
  return `${authorization.from}:${authorization.nonce}`.toLowerCase()
}

/** The RPC endpoint of `slug` failed: nothing was decided (answered as the chain being unavailable). */
function rpcFailed(slug: string, error: unknown): FrontRunUndecidedError {
  return new FrontRunUndecidedError(`the RPC endpoint of ${slug} failed`, { cause: new ChainUnavailableError(slug, { cause: error }) })
}

/** The payload's EIP-3009 authorization, well formed; undefined for any other payload (Permit2, malformed). */
function authorizationOf(payload: PaymentPayload): Authorization | undefined {
  const a = (payload.payload as { authorization?: unknown } | undefined)?.authorization
  if (typeof a !== 'object' || a === null) return undefined
  const { from, to, value, validAfter, validBefore, nonce } = a as Record<string, unknown>
  const integer = (v: unknown) => (typeof v === 'string' && /^\d{1,78}$/.test(v) ? BigInt(v) : undefined)
  const [amount, after, before] = [integer(value), integer(validAfter), integer(validBefore)]
  if (!isAddress(from) || !isAddress(to) || typeof nonce !== 'string' || !isHex(nonce, { strict: true }) || nonce.length !== 66) return undefined
  if (amount === undefined || after === undefined || before === undefined) return undefined
  return { from, to, value: amount, validAfter: after, validBefore: before, nonce }
}

function isAddress(value: unknown): value is Address {
  return typeof value === 'string' && isViemAddress(value, { strict: false })
}

/**
 * The receipt's token logs hold AuthorizationUsed(from, nonce) and, right after it, Transfer(from, payee, price): the
 * order the EIP-3009 tokens emit them in (OpenZeppelin's ERC3009, Circle's FiatToken). A nonce used by another
 * transfer (another payee or amount) or cancelled has no such pair.
 */
function paysAsAsked(receipt: TransactionReceipt, token: Address, authorization: Authorization): boolean {
  const logs = parseEventLogs({ abi: eip3009Events, logs: receipt.logs.filter((l) => isAddressEqual(l.address, token)), strict: true })
  return logs.some((used, i) => {
    const next = logs[i + 1]
    return (
      used.eventName === 'AuthorizationUsed' &&
      isAddressEqual(used.args.authorizer, authorization.from) &&
      used.args.nonce.toLowerCase() === authorization.nonce.toLowerCase() &&
      next !== undefined &&
      next.eventName === 'Transfer' &&
      next.logIndex === used.logIndex + 1 &&
      isAddressEqual(next.args.from, authorization.from) &&
      isAddressEqual(next.args.to, authorization.to) &&
      next.args.value === authorization.value
    )
  })
}
