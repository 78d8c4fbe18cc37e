// Proofs against CreditFacilityV2: a transaction hash a client reports is read back from the chain and turned into the
// same facts the chain follower delivers (src/chain/events-v2.ts, one decoding for both), keyed network:txHash:logIndex.
// No "already used" verdict here: the engine applies a fact idempotently by its proof key, so a report after the
// follower (or the follower after a report) answers the same result instead of an error (design-engine-9-10.md).
// No amount is checked against an expectation either: the contract already enforced its terms, and a Repaid of any
// amount is a real repayment that must be counted (issue 9, case 4).
import { getAddress, type Address, type Hex } from 'viem'
import type { NetworkClients } from './clients.ts'
import { decodeFacilityLog, facilityFact, type FacilityEventName, type FacilityFact } from './events-v2.ts'
import { ChainRpcError, readSuccessfulReceipt } from './proofs.ts'

export { ChainRpcError }

export type FacilityProofFailure = 'not_found' | 'reverted' | 'wrong_contract' | 'wrong_arguments' | 'too_few_confirmations'

export type FacilityReceipt = {
  network: string
  txHash: Hex
  /** The transaction's sender. */
  from: Address
  blockNumber: bigint
  confirmations: bigint
  /** Every event of the contract in the transaction, in log order. */
  facts: FacilityFact[]
}

export type FacilityProofResult<T> = { ok: true; value: T } | { ok: false; reason: FacilityProofFailure; detail: string }

function fail(reason: FacilityProofFailure, detail: string): { ok: false; reason: FacilityProofFailure; detail: string } {
  return { ok: false, reason, detail }
}

/**
 * Reads `txHash` on the network and returns every event `contract` emitted in it, once the transaction has the
 * network's confirmations (or `confirmations`). RPC failures throw ChainRpcError (retry later, HTTP 503); anything
 * else is a verdict on the proof.
 */
export async function readFacilityReceipt(
  clients: NetworkClients,
  contract: Address,
  input: { txHash: string; confirmations?: number },
): Promise<FacilityProofResult<FacilityReceipt>> {
  const { network, publicClient } = clients
  const read = await readSuccessfulReceipt(clients, input.txHash)
  if (!read.ok) return read
  const { txHash, receipt, head } = read
  const required = BigInt(input.confirmations ?? network.confirmations)
  const confirmations = head - receipt.blockNumber + 1n
  if (confirmations < required) return fail('too_few_confirmations', `${confirmations} confirmation(s), ${required} required`)
  // The canonical block at the receipt's height, read after the head: the receipt and the head may come from two nodes
  // of a load-balanced RPC, the receipt from a side branch the head's node never had (reorg39). A block of another
  // hash there: the receipt's block is not (yet) on the chain the confirmations were counted on.
  let block: { hash: Hex | null; timestamp: bigint }
  try {
    block = await publicClient.getBlock({ blockNumber: receipt.blockNumber })
  } catch (error) {
    throw new ChainRpcError(network.slug, error)
  }
  if (block.hash?.toLowerCase() !== receipt.blockHash.toLowerCase()) {
    return fail('too_few_confirmations', `the receipt of ${txHash} is of block ${receipt.blockHash}, not the chain's block ${receipt.blockNumber} (a side branch or a node behind): not yet confirmed, send the same request again later`)
  }
  const own = receipt.logs.filter((log) => getAddress(log.address) === getAddress(contract))
  if (own.length === 0) return fail('wrong_contract', `no event of the credit contract ${getAddress(contract)} in ${txHash}: name the transaction that called it (the last of the served unsigned transactions: fundJob, postCollateral, repay or paySupplier), not its approve`)
  const blockTimeMs = Number(block.timestamp) * 1000
  const facts = own.flatMap((log) => {
    const event = decodeFacilityLog(contract, log, blockTimeMs)
    return event === undefined ? [] : [facilityFact(network.slug, event)]
  })
  return {
    ok: true,
    value: { network: network.slug, txHash, from: getAddress(receipt.from), blockNumber: receipt.blockNumber, confirmations, facts },
  }
}

export type FacilityFactOf<E extends FacilityEventName> = Extract<FacilityFact, { name: E }>

function sameValue(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'string' && typeof actual === 'string') return expected.toLowerCase() === actual.toLowerCase()
  return expected === actual
}

/**
 * The facts of event `eventName` in `txHash` whose arguments equal every one given in `args` (keys, parties; addresses
 * in any case). A report names what it is about (e.g. { offerKey } of a Repaid); amounts are read, not asserted.
 */
export async function verifyFacilityEvent<E extends FacilityEventName>(
  clients: NetworkClients,
  contract: Address,
  input: { txHash: string; eventName: E; args?: Partial<FacilityFactOf<E>['args']>; confirmations?: number },
): Promise<FacilityProofResult<FacilityFactOf<E>[]>> {
  const read = await readFacilityReceipt(clients, contract, input)
  if (!read.ok) return read
  return matchFacilityFacts(read.value.facts, read.value.txHash, input.eventName, input.args)
}

/**
 * Whether the SupplierPaid at `facts[index]` paid its supplier into the contract: the token refused the supplier, so
 * paySupplier held the principal for it (claimHeld delivers it) and emitted PaymentHeld(asset, supplier, amount) right
 * before the SupplierPaid, the log right before it (logIndex one less: a PaymentHeld of an earlier call of the same
 * transaction, a repay closing a failed job that holds its collateral for that address, has the token's Transfer of
 * this payment between: review25). `facts`: the contract's events of that transaction (its receipt) or of the
 * follower's batch (whole blocks), in log order.
 */
export function supplierPaymentHeldAt(facts: readonly FacilityFact[], index: number): boolean {
  const paid = facts[index]
  const before = facts[index - 1]
  if (paid?.name !== 'SupplierPaid' || before?.name !== 'PaymentHeld' || before.txHash !== paid.txHash) return false
  if (before.logIndex !== paid.logIndex - 1) return false
  const { to, asset, amount } = before.args
  return sameValue(to, paid.args.supplier) && sameValue(asset, paid.args.asset) && amount === paid.args.amount
}

/**
 * Of `facts`, the contract's events in transaction `txHash` (read from its receipt, or by the chain follower), those
 * of event `eventName` whose arguments equal every one given in `args`; none is a wrong_arguments verdict.
 */
export function matchFacilityFacts<E extends FacilityEventName>(
  facts: readonly FacilityFact[],
  txHash: string,
  eventName: E,
  args: Partial<FacilityFactOf<E>['args']> | undefined,
): FacilityProofResult<FacilityFactOf<E>[]> {
  const named = facts.filter((fact): fact is FacilityFactOf<E> => fact.name === eventName)
  if (named.length === 0) return fail('wrong_arguments', `transaction ${txHash} emitted no ${eventName}`)
  const wanted = Object.entries((args ?? {}) as Record<string, unknown>).filter(([, value]) => value !== undefined)
  const matching = named.filter((fact) => wanted.every(([name, value]) => sameValue(value, (fact.args as Record<string, unknown>)[name])))
  if (matching.length === 0) {
    const detail = wanted.map(([name, value]) => `${name} ${String(value)}`).join(', ')
    return fail('wrong_arguments', `no ${eventName} of ${txHash} has ${detail}`)
  }
  return { ok: true, value: matching }
}
