// A job run every intervalMs, never two at once from the interval (a slow run skips the ticks it overlaps). With
// `dueAgain`, a run that ends with work still due runs again on the next turn of the event loop instead of an interval
// later, so that other work interleaves; `wake` asks for such a run now. With `inFlightMax` above 1, while work is due
// a run starts on the next turn after the previous one STARTED, up to that many unfinished at once: for a job whose
// runs are a short synchronous command and then a long wait (a commit's group transaction), so that a backlog drains
// at the pace of the commands, not of the disk's transactions. `turnBudgetMs` lets more than one run start in a turn,
// while the runs started in it have taken less than that (their synchronous parts): one bounded command per turn
// falls behind a saturated service, whose turns carry dozens of requests each. A run that fails waits for the
// interval.

export interface Periodic {
  /** Runs the job on the next turn of the event loop if `dueAgain` says work is due and fewer than allowed are running. */
  wake(): void
  stop(): void
}

export interface PeriodicOptions {
  /** Whether work is due now: the job runs again on the next turn instead of an interval later. */
  dueAgain?: () => boolean
  /** Runs unfinished at once while work is due (default 1: one after the other). */
  inFlightMax?: number
  /** Time the runs started in one turn may take before the next waits for the next turn (default 0: one per turn). */
  turnBudgetMs?: number
}

export function periodic(intervalMs: number, run: () => Promise<unknown>, onError: (error: unknown) => void, options: PeriodicOptions = {}): Periodic {
  const dueAgain = options.dueAgain ?? (() => false)
  const inFlightMax = options.inFlightMax ?? 1
  const turnBudgetMs = options.turnBudgetMs ?? 0
  if (!Number.isInteger(inFlightMax) || inFlightMax < 1) throw new RangeError('periodic inFlightMax must be a positive integer')
  let inFlight = 0
  let stopped = false
  let immediate: ReturnType<typeof setImmediate> | undefined
  const wake = (): void => {
    if (stopped || inFlight >= inFlightMax || immediate !== undefined || !dueAgain()) return
    immediate = setImmediate(() => {
      immediate = undefined
      start()
    })
  }
  const startOne = (): void => {
    inFlight++
    run().then(
      () => {
        inFlight--
        wake()
      },
      (error: unknown) => {
        inFlight--
        onError(error)
      },
    )
  }
  const start = (): void => {
    if (stopped || inFlight >= inFlightMax) return
    const turnStartMs = performance.now()
    startOne()
    while (!stopped && inFlight < inFlightMax && performance.now() - turnStartMs < turnBudgetMs && dueAgain()) startOne()
    if (inFlightMax > 1) wake()
  }
  const timer = setInterval(() => {
    if (inFlight === 0) start()
  }, intervalMs)
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
