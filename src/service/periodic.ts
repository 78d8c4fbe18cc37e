// A job run every intervalMs, never two at once (a slow run skips the ticks it overlaps). With `dueAgain`, a run that
// ends with work still due runs again on the next turn of the event loop instead of an interval later, one run per
// turn so that other work interleaves; `wake` asks for such a run now. A run that fails waits for the interval.

export interface Periodic {
  /** Runs the job on the next turn of the event loop if `dueAgain` says work is due and none is running or asked. */
  wake(): void
  stop(): void
}

export function periodic(intervalMs: number, run: () => Promise<unknown>, onError: (error: unknown) => void, dueAgain: () => boolean = () => false): Periodic {
  let running = false
  let stopped = false
  let immediate: ReturnType<typeof setImmediate> | undefined
  const wake = (): void => {
    if (stopped || running || immediate !== undefined || !dueAgain()) return
    immediate = setImmediate(() => {
      immediate = undefined
      start()
    })
  }
  const start = (): void => {
    if (stopped || running) return
    running = true
    run().then(
      () => {
        running = false
        wake()
      },
      (error: unknown) => {
        running = false
        onError(error)
      },
    )
  }
  const timer = setInterval(start, intervalMs)
  timer.unref()
  return {
    wake,
    stop: () => {
      stopped = true
      clearInterval(timer)
      if (immediate !== undefined) clearImmediate(immediate)
    },
  }
}
