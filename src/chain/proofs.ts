// Transaction proofs: a tx hash on a named network proves an event of the credit contract. Verification turns it
// into a fact (the engine's input) or a typed reason; a proof (tx hash, log index) can be used once.
import {
  decodeEventLog,
  getAddress,
  isHex,
  toEventSelector,
  TransactionReceiptNotFoundError,
  type Address,
  type ContractEventArgsFromTopics,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import type { SupplierPaymentFact as EngineSupplierPaymentFact } from '../engine/ports.ts'
import { creditFacilityAbi } from './artifacts.ts'
import type { NetworkClients } from './clients.ts'
import { findToken } from './config.ts'
import { idKey } from './ids.ts'
import { proofKey, type UsedProofs } from './used-proofs.ts'

export type CreditEventName =
  | 'JobFunded'
  | 'CollateralPosted'
  | 'SupplierPaid'
  | 'Repaid'
  | 'LenderPaid'
  | 'JobSettled'
  | 'Liquidated'

export type CreditEventArgs<E extends CreditEventName> = ContractEventArgsFromTopics<typeof creditFacilityAbi, E, true>

export type ProofFailureReason =
  | 'not_found'
  | 'reverted'
  | 'wrong_contract'
  | 'wrong_arguments'
  | 'already_used'
  | 'too_few_confirmations'

export type VerifiedFact<E extends CreditEventName> = {
  network: string
  txHash: Hex
  logIndex: number
  blockNumber: bigint
  blockHash: Hex
  contract: Address
  /** The transaction's sender. */
  from: Address
  eventName: E
  args: CreditEventArgs<E>
  confirmations: bigint
  proofKey: string
}

export type ProofResult<E extends CreditEventName> =
  | { ok: true; fact: VerifiedFact<E> }
  | { ok: false; reason: ProofFailureReason; detail: string }

export type ProofRequest<E extends CreditEventName> = {
  txHash: string
  eventName: E
  /** Every argument given must equal the event's (addresses in any case). Omitted ones are not checked. */
  args: Partial<CreditEventArgs<E>>
  /** Overrides the network's configured confirmations. */
  confirmations?: number
  /** Record the proof as used when it verifies (default). With false, the caller adds fact.proofKey at commit. */
  consume?: boolean
}

/** A proof that does not prove what it must, or was already used: the verdict, raised by whoever needs the fact. */
export class ProofRefusedError extends Error {
  override readonly name = 'ProofRefusedError'
  constructor(
    readonly reason: ProofFailureReason,
    detail: string,
  ) {
    super(detail)
  }
}

/** An RPC failure while verifying: not a verdict on the proof, the caller may retry (HTTP 503). */
export class ChainRpcError extends Error {
  override readonly name = 'ChainRpcError'
  constructor(
    readonly network: string,
    override readonly cause: unknown,
  ) {
    super(`RPC of network ${network} failed: ${(cause as Error)?.message?.split('\n')[0] ?? String(cause)}`)
  }
}

function fail(reason: ProofFailureReason, detail: string): { ok: false; reason: ProofFailureReason; detail: string } {
  return { ok: false, reason, detail }
}

function sameValue(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'string' && typeof actual === 'string') return expected.toLowerCase() === actual.toLowerCase()
  return expected === actual
}

function describe(value: unknown): string {
  return typeof value === 'bigint' ? value.toString() : String(value)
}

/** The receipt of a successful transaction and the chain's head, or not_found / reverted (shared by v1 and v2 proofs). */
export async function readSuccessfulReceipt(
  clients: NetworkClients,
  txHashInput: string,
): Promise<{ ok: true; txHash: Hex; receipt: TransactionReceipt; head: bigint } | { ok: false; reason: 'not_found' | 'reverted'; detail: string }> {
  const { network, publicClient } = clients
  if (!isHex(txHashInput) || txHashInput.length !== 66) return { ok: false, reason: 'not_found', detail: 'not a 32-byte transaction hash' }
  const txHash = txHashInput.toLowerCase() as Hex
  let receipt: TransactionReceipt
  let head: bigint
  try {
    ;[receipt, head] = await Promise.all([publicClient.getTransactionReceipt({ hash: txHash }), publicClient.getBlockNumber({ cacheTime: 0 })])
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return { ok: false, reason: 'not_found', detail: `no receipt for ${txHash} on ${network.slug}` }
    throw new ChainRpcError(network.slug, error)
  }
  if (receipt.status !== 'success') return { ok: false, reason: 'reverted', detail: `transaction ${txHash} reverted` }
  return { ok: true, txHash, receipt, head }
}

export async function verifyProof<E extends CreditEventName>(
  clients: NetworkClients,
  usedProofs: UsedProofs,
  request: ProofRequest<E>,
): Promise<ProofResult<E>> {
  const { network } = clients
  const read = await readSuccessfulReceipt(clients, request.txHash)
  if (!read.ok) return read
  const { txHash, receipt, head } = read

  const selector = toEventSelector(
    creditFacilityAbi.find((item) => item.type === 'event' && item.name === request.eventName) as Parameters<typeof toEventSelector>[0],
  )
  const withTopic = receipt.logs.filter((log) => log.topics[0] === selector)
  const fromContract = withTopic.filter((log) => getAddress(log.address) === network.creditContract)
  if (fromContract.length === 0) {
    const toContract = receipt.to !== null && getAddress(receipt.to) === network.creditContract
    if (withTopic.length > 0 || !toContract) {
      return fail('wrong_contract', `no ${request.eventName} from the credit contract ${network.creditContract} in ${txHash}`)
    }
    return fail('wrong_arguments', `transaction ${txHash} emitted no ${request.eventName}`)
  }

  const mismatches: string[] = []
  const matching = fromContract.flatMap((log) => {
    const decoded = decodeEventLog({ abi: creditFacilityAbi, eventName: request.eventName, topics: log.topics, data: log.data })
    const args = decoded.args as Record<string, unknown>
    const wrong = Object.entries(request.args as Record<string, unknown>)
      .filter(([name, expected]) => expected !== undefined && !sameValue(expected, args[name]))
      .map(([name, expected]) => `${name}: expected ${describe(expected)}, got ${describe(args[name])}`)
    if (wrong.length > 0) {
      mismatches.push(`log ${log.logIndex}: ${wrong.join('; ')}`)
      return []
    }
    return [{ log, args: decoded.args as CreditEventArgs<E> }]
  })
  if (matching.length === 0) return fail('wrong_arguments', mismatches.join(' | '))

  const required = BigInt(request.confirmations ?? network.confirmations)
  const confirmations = head - receipt.blockNumber + 1n
  if (confirmations < required) {
    return fail('too_few_confirmations', `${confirmations} confirmation(s), ${required} required`)
  }

  // No await from here on: checking and recording are one step for this process.
  const unused = matching.find(({ log }) => !usedProofs.has(proofKey(network.slug, txHash, log.logIndex)))
  if (unused === undefined) return fail('already_used', `the ${request.eventName} of ${txHash} was already used`)
  const key = proofKey(network.slug, txHash, unused.log.logIndex)
  if (request.consume !== false) usedProofs.add(key)
  return {
    ok: true,
    fact: {
      network: network.slug,
      txHash,
      logIndex: unused.log.logIndex,
      blockNumber: receipt.blockNumber,
      blockHash: receipt.blockHash,
      contract: network.creditContract,
      from: getAddress(receipt.from),
      eventName: request.eventName,
      args: unused.args,
      confirmations,
      proofKey: key,
    },
  }
}

/** The fact the engine records for a supplier payment (src/README.md, engine seam), and the key of its proof. */
export type SupplierPaymentFact = EngineSupplierPaymentFact & { proofKey: string }

/** Verifies that `txHash` is the paySupplier of the lease: this offer, from this payer, to this supplier, this amount. */
export async function verifySupplierPayment(
  clients: NetworkClients,
  usedProofs: UsedProofs,
  input: {
    txHash: string
    offerId: string
    payer: Address
    supplier: Address
    asset: string
    amountAtomic: bigint
    confirmations?: number
    consume?: boolean
  },
): Promise<{ ok: true; fact: SupplierPaymentFact } | { ok: false; reason: ProofFailureReason; detail: string }> {
  const token = findToken(clients.network, input.asset)
  const result = await verifyProof(clients, usedProofs, {
    txHash: input.txHash,
    eventName: 'SupplierPaid',
    args: { offerKey: idKey(input.offerId), payer: input.payer, supplier: input.supplier, asset: token.address, amount: input.amountAtomic },
    ...(input.confirmations === undefined ? {} : { confirmations: input.confirmations }),
    ...(input.consume === undefined ? {} : { consume: input.consume }),
  })
  if (!result.ok) return result
  const { fact } = result
  return {
    ok: true,
    fact: {
      network: fact.network,
      txHash: fact.txHash,
      logIndex: fact.logIndex,
      offerId: input.offerId,
      payer: getAddress(fact.args.payer),
      supplier: getAddress(fact.args.supplier),
      asset: token.symbol,
      amountAtomic: fact.args.amount,
      proofKey: fact.proofKey,
    },
  }
}
