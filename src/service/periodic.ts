// A job run every intervalMs, never two at once from the interval (a slow run skips the ticks it overlaps). With
// `dueAgain`, a run that ends with work still due runs again on the next turn of the event loop instead of an interval
// later, so that other work interleaves; `wake` asks for such a run now. With `inFlightMax` above 1, while work is due
// a run starts on the next turn after the previous one STARTED, up to that many unfinished at once: for a job whose
// runs are a short synchronous command and then a long wait (a commit's group transaction), so that a backlog drains
// at the pace of the commands, not of the disk's transactions. `turnBudgetMs` lets more than one run start in a turn,
// while the runs started in it have taken less than that (their synchronous parts): one bounded command per turn
// falls behind a saturated service, whose turns carry dozens of requests each. With `behind` (asked once per turn:
// the job's own measure of a backlog it is not catching up with), each turn while it says so has twice the last turn's
// budget, up to `turnBudgetMaxMs`, and twice its runs unfinished at once, up to `inFlightBehindMax`; the first turn it
// does not, both are back at `turnBudgetMs` and `inFlightMax`. A run that fails waits for the interval.

export interface Periodic {
  /** Runs the job on the next turn of the event loop if `dueAgain` says work is due and fewer than allowed are running. */
  wake(): void
  stop(): void
  /**
   * Turns that started runs so far, those of them whose budget was grown (behind), those that stopped at inFlightMax
   * rather than at their budget or with nothing due, and the largest budget one had.
   */
  turns(): PeriodicTurns
}

export interface PeriodicTurns {
  turns: number
  grownTurns: number
  fullTurns: number
  budgetMsMax: number
}

export interface PeriodicOptions {
  /** Whether work is due now: the job runs again on the next turn instead of an interval later. */
  dueAgain?: () => boolean
  /** Runs unfinished at once while work is due (default 1: one after the other). */
  inFlightMax?: number
  /** Time the runs started in one turn may take before the next waits for the next turn (default 0: one per turn). */
  turnBudgetMs?: number
  /** The most a turn's budget grows to while the runs are behind (default turnBudgetMs: it never grows). */
  turnBudgetMaxMs?: number
  /** The most runs unfinished at once while the runs are behind: it doubles from inFlightMax up to this (default inFlightMax). */
  inFlightBehindMax?: number
  /** Whether the runs are behind what falls due, asked at the start of each turn (default: never). */
  behind?: () => boolean
  /** The clock the turn budget is measured on (default performance.now). */
  clock?: () => number
}

export function periodic(intervalMs: number, run: () => Promise<unknown>, onError: (error: unknown) => void, options: PeriodicOptions = {}): Periodic {
  const dueAgain = options.dueAgain ?? (() => false)
  const inFlightMax = options.inFlightMax ?? 1
  const turnBudgetMs = options.turnBudgetMs ?? 0
  const turnBudgetMaxMs = options.turnBudgetMaxMs ?? turnBudgetMs
  const behind = options.behind ?? (() => false)
  const clock = options.clock ?? (() => performance.now())
  if (!Number.isInteger(inFlightMax) || inFlightMax < 1) throw new RangeError('periodic inFlightMax must be a positive integer')
  const inFlightBehindMax = options.inFlightBehindMax ?? inFlightMax
  if (turnBudgetMaxMs < turnBudgetMs) throw new RangeError('periodic turnBudgetMaxMs must be at least turnBudgetMs')
  if (!Number.isInteger(inFlightBehindMax) || inFlightBehindMax < inFlightMax) throw new RangeError('periodic inFlightBehindMax must be an integer, at least inFlightMax')
  let inFlight = 0
  let stopped = false
  let immediate: ReturnType<typeof setImmediate> | undefined
  // This turn's budget and runs unfinished at once: the base ones, or grown while behind.
  let budgetMs = turnBudgetMs
  let inFlightCap = inFlightMax
  const counts: PeriodicTurns = { turns: 0, grownTurns: 0, fullTurns: 0, budgetMsMax: turnBudgetMs }
  const wake = (): void => {
    if (stopped || inFlight >= inFlightCap || immediate !== undefined || !dueAgain()) return
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
    if (stopped) return
    const grow = (turnBudgetMaxMs > turnBudgetMs || inFlightBehindMax > inFlightMax) && behind()
    budgetMs = grow ? Math.min(Math.max(2 * budgetMs, turnBudgetMs), turnBudgetMaxMs) : turnBudgetMs
    inFlightCap = grow ? Math.min(2 * inFlightCap, inFlightBehindMax) : inFlightMax
    if (inFlight >= inFlightCap) return
    counts.turns += 1
    if (budgetMs > turnBudgetMs || inFlightCap > inFlightMax) counts.grownTurns += 1
    counts.budgetMsMax = Math.max(counts.budgetMsMax, budgetMs)
    const turnStartMs = clock()
    startOne()
    while (!stopped && inFlight < inFlightCap && clock() - turnStartMs < budgetMs && dueAgain()) startOne()
    if (inFlight >= inFlightCap) counts.fullTurns += 1
    if (inFlightCap > 1) wake()
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
    turns: () => ({ ...counts }),
  }
}
