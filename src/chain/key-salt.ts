// The data directory's key salt (src/chain/ids.ts offerKey), kept in the store beside the records it keys. It is
// written once, create-only and durably, before any offer key is derived from it: a salt that changed under existing
// offers would give them new keys, and a payment made to the old key would no longer match its offer.
import type { Hex } from 'viem'
import { StoreConflictError, type Store } from '../store/index.ts'
import { isKeySalt, newKeySalt } from './ids.ts'

export const keySaltCollection = 'chain-key-salt'
const keySaltRecordKey = 'salt'

/** The store's key salt; made and committed durably on the first call for a data directory. Call it at start-up,
 * before serving: a salt is never shown before it is on disk. */
export async function ensureKeySalt(store: Store): Promise<Hex> {
  const salts = store.collection<Hex>(keySaltCollection, { version: 1, validate: isKeySalt })
  const existing = salts.get(keySaltRecordKey)
  if (existing !== undefined) return existing
  const salt = newKeySalt()
  // onlyIfAbsent: two concurrent first calls cannot both write; the loser reads the winner's salt.
  try {
    await store.commit({ records: [salts.putOp(keySaltRecordKey, salt, { onlyIfAbsent: true })] })
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error
  }
  return salts.get(keySaltRecordKey) as Hex
}
