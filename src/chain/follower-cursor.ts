// The follower's cursor kept in the store, per network and contract: the consumer writes it in the same commit as
// the batch's effects (putOp), and a restarted follower resumes after it (get).
import { isHex, type Address, type Hex } from 'viem'
import type { RecordCollection, RecordWrite, Store } from '../store/index.ts'
import type { ChainBatch, FollowerCursor } from './follower.ts'

export const followerCursorCollection = 'chain-follower-cursor'

/** As stored: the block number as a decimal string, so the record is plain JSON. */
type StoredCursor = { blockNumber: string; blockHash: Hex; blockTimeMs: number }

function isStoredCursor(value: unknown): value is StoredCursor {
  const v = value as StoredCursor
  return (
    typeof v === 'object' && v !== null && typeof v.blockNumber === 'string' && /^(0|[1-9][0-9]*)$/.test(v.blockNumber) &&
    isHex(v.blockHash, { strict: true }) && v.blockHash.length === 66 && Number.isSafeInteger(v.blockTimeMs)
  )
}

export class FollowerCursors {
  readonly #collection: RecordCollection<StoredCursor>

  constructor(store: Store) {
    this.#collection = store.collection<StoredCursor>(followerCursorCollection, { version: 1, validate: isStoredCursor })
  }

  /** A cursor is only meaningful for the contract whose events it counted. */
  static key(network: string, contract: Address): string {
    return `${network}:${contract.toLowerCase()}`
  }

  get(network: string, contract: Address): FollowerCursor | undefined {
    const stored = this.#collection.get(FollowerCursors.key(network, contract))
    if (stored === undefined) return undefined
    return { blockNumber: BigInt(stored.blockNumber), blockHash: stored.blockHash, blockTimeMs: stored.blockTimeMs }
  }

  /** The write that moves the cursor to the end of `batch`: commit it with the batch's effects. */
  putOp(contract: Address, batch: ChainBatch): RecordWrite {
    return this.#collection.putOp(FollowerCursors.key(batch.network, contract), {
      blockNumber: batch.toBlock.toString(),
      blockHash: batch.toBlockHash,
      blockTimeMs: batch.toBlockTimeMs,
    })
  }
}
