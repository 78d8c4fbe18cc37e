// The credit contract's events the chain follower read, by transaction, for each network's latest transactions: a
// report naming one of them is proved from here, with no chain read of its own, so it draws nothing from the chain
// read budget (chain-read-budget.ts). Free wallets reporting random hashes can spend that whole budget (four wallets'
// shares make it), and a job's registration has no other way in (the follower does not apply JobFunded): an
// adversary's finding, test/api/adversary7-read-starvation.test.ts. The follower reads at the network's
// confirmations, from successful transactions of the contract only, so a fact here is what a receipt read would prove.
import type { FacilityFact } from '../chain/events-v2.ts'

/**
 * Transactions kept, all networks together; the oldest goes first. Each of them cost its sender gas, so pushing an
 * honest funding out before its registration costs an adversary this many contract transactions; then the
 * registration reads the chain on the budget, as before.
 */
export const OBSERVED_TRANSACTIONS_MAX = 4096
/**
 * Facts kept, all transactions together: one transaction may hold thousands of the contract's events (a contract that
 * posts collateral in a loop, a settlement of many advances), so the transactions' count alone does not bound the
 * memory (a reviewer's finding). The oldest transactions go first; one larger than this is not kept (its proof reads
 * its receipt, on the budget).
 */
export const OBSERVED_FACTS_MAX = 16_384

export class ObservedFacts {
  readonly #byTransaction = new Map<string, FacilityFact[]>()
  #facts = 0

  /** Keeps the facts of a follower's batch (a range read again after a failed commit adds nothing twice). */
  record(facts: readonly FacilityFact[]): void {
    for (const fact of facts) {
      const key = transactionKey(fact.network, fact.txHash)
      const known = this.#byTransaction.get(key)
      if (known === undefined) {
        this.#byTransaction.set(key, [fact])
      } else if (!known.some((f) => f.logIndex === fact.logIndex)) {
        known.push(fact)
      } else {
        continue
      }
      this.#facts += 1
    }
    while (this.#byTransaction.size > OBSERVED_TRANSACTIONS_MAX || this.#facts > OBSERVED_FACTS_MAX) {
      const [oldest, facts] = this.#byTransaction.entries().next().value as [string, FacilityFact[]]
      this.#byTransaction.delete(oldest)
      this.#facts -= facts.length
    }
  }

  /** How many transactions and facts are kept. */
  get size(): { transactions: number; facts: number } {
    return { transactions: this.#byTransaction.size, facts: this.#facts }
  }

  /** The contract's events in `txHash` on `network`, when the follower read that transaction and it is still kept. */
  of(network: string, txHash: string): readonly FacilityFact[] | undefined {
    return this.#byTransaction.get(transactionKey(network, txHash))
  }
}

function transactionKey(network: string, txHash: string): string {
  return `${network}:${txHash.toLowerCase()}`
}
