// Transaction proofs, the parts every proof shares: reading a successful receipt, the verdicts (ProofRefusedError)
// and RPC failures (ChainRpcError). The credit contract's events are read by src/chain/proofs-v2.ts.
import { isHex, TransactionReceiptNotFoundError, type Hex, type TransactionReceipt } from 'viem'
import type { NetworkClients } from './clients.ts'

export type ProofFailureReason =
  | 'not_found'
  | 'reverted'
  | 'wrong_contract'
  | 'wrong_arguments'
  | 'already_used'
  | 'too_few_confirmations'

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

/** The receipt of a successful transaction and the chain's head, or not_found / reverted . */
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
    if (error instanceof TransactionReceiptNotFoundError) return { ok: false, reason: 'not_found', detail: `no receipt for ${txHash} on ${network.slug}: not mined yet (wait for its receipt, then send the same request: nothing was recorded) or a transaction of another network` }
    throw new ChainRpcError(network.slug, error)
  }
  if (receipt.status !== 'success') return { ok: false, reason: 'reverted', detail: `transaction ${txHash} reverted` }
  return { ok: true, txHash, receipt, head }
}
