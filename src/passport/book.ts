// The service's record of passport events (issue 13): each event is numbered, chained and signed in the synchronous
// section of the command that changed the agent's standing, and written as records in that command's commit, so an
// event is never shown before the change it reports is durable, and a crash loses both or neither. The heads (last
// sequence and hash per agent) live in memory and in the store, restored at start: sequences continue, never reused.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { getAddress, isHex, zeroHash, type Address, type Hex } from 'viem'
import { signDigest } from '../chain/lease-authorization.ts'
import { StoreConflictError, type RecordCollection, type RecordWrite, type Store } from '../store/index.ts'
import { canonicalJson, passportHash, type PassportEventData, type PassportKind, type SignedPassportEvent } from './passport.ts'

/** What happened to whom; the book adds the sequence, the previous hash, the time and the signature. */
export interface PassportFact {
  agent: Address
  kind: PassportKind
  /** Amounts (bigints become decimal strings) and references: job, advance, transaction hashes. */
  details: Record<string, unknown>
}

interface PassportHead {
  sequence: number
  hash: Hex
}

const keyCollection = 'passport-key'
const keyRecordKey = 'issuer'

/**
 * The data directory's passport key: made and committed durably, create-only, on the first start (as the key salt,
 * src/chain/key-salt.ts). Its address is the issuer published in the catalog; a new data directory is a new issuer.
 */
export async function ensurePassportKey(store: Store): Promise<Hex> {
  const keys = store.collection<Hex>(keyCollection, { version: 1, validate: (v): v is Hex => isHex(v) && v.length === 66 })
  const existing = keys.get(keyRecordKey)
  if (existing !== undefined) return existing
  try {
    await store.commit({ records: [keys.putOp(keyRecordKey, generatePrivateKey(), { onlyIfAbsent: true })] })
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error
  }
  return keys.get(keyRecordKey) as Hex
}

const isHead = (v: unknown): v is PassportHead =>
  typeof v === 'object' && v !== null && Number.isSafeInteger((v as PassportHead).sequence) && isHex((v as PassportHead).hash)

const isEvent = (v: unknown): v is SignedPassportEvent =>
  typeof v === 'object' && v !== null && Number.isSafeInteger((v as SignedPassportEvent).sequence) && isHex((v as SignedPassportEvent).signature)

/** Sequence numbers padded so that key order is sequence order. */
const eventKey = (agent: Address, sequence: number) => `${agent}:${String(sequence).padStart(16, '0')}`

export class PassportBook {
  readonly issuer: Address
  readonly #privateKey: Hex
  readonly #events: RecordCollection<SignedPassportEvent>
  readonly #headsStore: RecordCollection<PassportHead>
  readonly #heads = new Map<Address, PassportHead>()

  constructor(store: Store, privateKey: Hex) {
    this.#privateKey = privateKey
    this.issuer = privateKeyToAccount(privateKey).address
    this.#events = store.collection<SignedPassportEvent>('passport-events', { version: 1, validate: isEvent })
    this.#headsStore = store.collection<PassportHead>('passport-heads', { version: 1, validate: isHead })
    for (const { key, value } of this.#headsStore.iterate('')) this.#heads.set(key as Address, value)
  }

  /**
   * Numbers, chains and signs `facts` (in order) and returns their writes for the caller's commit. Synchronous: call
   * it in the command's synchronous section, so that two commands never take the same sequence. The heads move now;
   * a commit that then fails is fatal (the process restarts from the store, heads included).
   */
  record(facts: readonly PassportFact[], nowMs: number): { writes: RecordWrite[]; events: SignedPassportEvent[] } {
    const writes: RecordWrite[] = []
    const events: SignedPassportEvent[] = []
    for (const fact of facts) {
      const agent = getAddress(fact.agent)
      const head = this.#heads.get(agent)
      const data: PassportEventData = {
        agent, sequence: (head?.sequence ?? 0) + 1, prevHash: head?.hash ?? zeroHash, kind: fact.kind, issuedAtMs: nowMs, details: canonicalJson(fact.details),
      }
      const hash = passportHash(data)
      const event: SignedPassportEvent = { ...data, hash, signature: signDigest(hash, this.#privateKey) }
      const next = { sequence: event.sequence, hash }
      this.#heads.set(agent, next)
      writes.push(this.#events.putOp(eventKey(agent, event.sequence), event), this.#headsStore.putOp(agent, next))
      events.push(event)
    }
    return { writes, events }
  }

  /** The agent's last sequence (0: none). */
  head(agent: Address): number {
    return this.#heads.get(getAddress(agent))?.sequence ?? 0
  }

  /** Up to `limit` events of `agent` after sequence `after`, in order. */
  page(agent: Address, after: number, limit: number): SignedPassportEvent[] {
    const out: SignedPassportEvent[] = []
    const checksum = getAddress(agent)
    for (let sequence = after + 1; out.length < limit; sequence++) {
      const event = this.#events.get(eventKey(checksum, sequence))
      if (event === undefined) break
      out.push(event)
    }
    return out
  }
}
