// The dispatch ticker's pace for lease time-outs (issue 11's half-rate tail). A network's observed chain time moves a
// block at a time and a lease is over at the first whole chain second after its deadline, so every lease whose
// deadline fell within the second a block moved the chain time by becomes due at the same instant: under the load
// mix about a second's worth of granted leases (their TTL runs out unpaid), timed out as a burst of ticker commands
// whose records then fill the next group transactions, which the requests that came meanwhile wait for. Paced, the
// leases one step of the chain time made due are taken across the wall-clock time after the step was first seen, as
// their deadlines lay across the step: of a step from F to C, a lease with deadline D (F <= D < C) is taken once
// (D - F) ms have passed since the step was seen. A lease still ends only once the observed chain time is past its
// deadline (the engine's rule); the pace holds it at most one spread longer (LEASE_PACE_SPREAD_MAX_MS, the devnet's
// and Base's block time), which delays its offer's rematch as much. Of a step longer than the spread (a follower
// catching up, an outage) all but the leases of its last spread are due at once.
import type { LeasePace } from '../engine/index.ts'

/** The longest a step of a network's chain time is spread over (ms): at most this long a due lease waits for the pace. */
export const LEASE_PACE_SPREAD_MAX_MS = 1000
/** While leases are due on chain but not yet reached by the pace, the ticker looks again this often (ms). */
export const LEASE_PACE_RECHECK_MS = 4

interface Step {
  /** The chain time observed last. */
  chainTimeMs: number
  /** Where the pace started on this step: the leases with deadlines before it were due when the step was seen. */
  fromMs: number
  /** When (the pacer's clock) the step was first seen. */
  seenAtMs: number
}

export class LeasePacer {
  readonly #steps = new Map<string, Step>()
  readonly #clock: () => number
  readonly #spreadMaxMs: number

  /** `clock`: elapsed time in ms, not the service's clock (which a test may hold still): the pace is wall-clock time. */
  constructor(clock: () => number = () => performance.now(), spreadMaxMs = LEASE_PACE_SPREAD_MAX_MS) {
    this.#clock = clock
    this.#spreadMaxMs = spreadMaxMs
  }

  /**
   * The latest deadline the network's due leases are taken up to now (dispatch.ts LeasePace): the step's start plus
   * the time since it was seen. The network's first observation is not paced (a start's backlog is due at once); a
   * new step starts where the pace had reached on the step before, or one spread behind the new chain time when that
   * is later.
   */
  readonly pace: LeasePace = (network, chainTimeMs) => {
    const nowMs = this.#clock()
    const step = this.#steps.get(network)
    if (step === undefined) {
      this.#steps.set(network, { chainTimeMs, fromMs: chainTimeMs, seenAtMs: nowMs })
      return chainTimeMs
    }
    if (chainTimeMs !== step.chainTimeMs) {
      const reachedMs = Math.min(step.chainTimeMs, step.fromMs + (nowMs - step.seenAtMs))
      step.fromMs = Math.min(chainTimeMs, Math.max(reachedMs, chainTimeMs - this.#spreadMaxMs))
      step.chainTimeMs = chainTimeMs
      step.seenAtMs = nowMs
    }
    return step.fromMs + Math.max(0, nowMs - step.seenAtMs)
  }
}
