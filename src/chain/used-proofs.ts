// The registry of transaction proofs already used. The interface is what proof verification needs; the LMDB
// implementation is real and durable (the service's store may provide its own over its database instead).
import { open, type Database, type RootDatabase } from 'lmdb'

/** Keys are `${network}:${txHash}:${logIndex}` (proofKey). Both methods are synchronous on purpose: verification
 * checks and records a proof with no await in between, so two concurrent requests cannot both use one proof. */
export interface UsedProofs {
  has(key: string): boolean
  add(key: string): void
}

export function proofKey(network: string, txHash: string, logIndex: number): string {
  return `${network}:${txHash.toLowerCase()}:${logIndex}`
}

export class LmdbUsedProofs implements UsedProofs {
  readonly #root: RootDatabase
  readonly #db: Database<number, string>

  /** Opens (creating) an LMDB environment at `path`, or uses the named database `usedProofs` of an open one. */
  constructor(pathOrRoot: string | RootDatabase) {
    this.#root = typeof pathOrRoot === 'string' ? open({ path: pathOrRoot, noSubdir: false }) : pathOrRoot
    this.#db = this.#root.openDB<number, string>({ name: 'usedProofs' })
  }

  has(key: string): boolean {
    return this.#db.doesExist(key)
  }

  /** Durable when it returns (a synchronous LMDB transaction). The value is the time of first use. */
  add(key: string): void {
    this.#db.putSync(key, Date.now())
  }

  async close(): Promise<void> {
    await this.#root.close()
  }
}
