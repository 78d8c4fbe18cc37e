// One operation at a time per key: a plan, the operator transaction it needs, and the record of its result must not
// interleave with another such sequence on the same job or advance. Other keys run freely.
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>()

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const tail = new Promise<void>((resolve) => (release = resolve))
    this.#tails.set(key, tail)
    await previous
    try {
      return await task()
    } finally {
      release()
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
  }

  get size(): number {
    return this.#tails.size
  }
}
