// The bounds of the operator repairs (operator-commands.ts OperatorRepairs): how a repair that keeps failing backs
// off, and how old a pending one may get before /health says degraded. Apart so that the /health schema
// (src/api/schemas.ts) states them without importing the service.

/** The longest wait between two attempts of a repair that keeps failing (its delay doubles from the run interval). */
export const OPERATOR_REPAIR_BACKOFF_MAX_MS = 300_000

/** A repair pending longer than this makes /health degraded: recording one takes seconds (the follower's catch-up at most). */
export const OPERATOR_REPAIR_AGE_DEGRADED_MS = 600_000

/** The wait after a repair's `failures`-th failed attempt in a row: the run interval, doubled each time, bounded. */
export function repairRetryDelayMs(failures: number, intervalMs: number): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 30)
  return Math.min(intervalMs * 2 ** doublings, OPERATOR_REPAIR_BACKOFF_MAX_MS)
}
