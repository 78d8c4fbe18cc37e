// The durable change feed: listeners told of each commit's engine changes once the disk has them (src/README.md,
// "Durable change feed"). A listener that throws harms neither the commit nor the other listeners.
import type { Change } from '../engine/types.ts'

export type DurableListener = (changes: readonly Change[]) => void

export class DurableFeed {
  readonly #listeners = new Set<DurableListener>()

  /** Returns the unsubscribe. */
  subscribe(listener: DurableListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Called by the commit path after a commit with changes became durable, in commit order. */
  tell(changes: readonly Change[]): void {
    for (const listener of this.#listeners) {
      try {
        listener(changes)
      } catch (error) {
        // The commit is done and acknowledged; a listener's bug must not stop the process or the other listeners.
        const detail = error instanceof Error ? (error.stack ?? error.message) : String(error)
        process.emitWarning('a durable-change listener failed', { code: 'DURABLE_LISTENER_FAILED', detail })
      }
    }
  }
}
