// The Node (V8) flags the service runs with. `npm start` passes them (package.json's start script: a test keeps the two
// the same); the bench runs its service and in-process processes with them too, so its figures are the service's;
// a start without them says so.

/**
 * Semi-spaces of 64 MB instead of Node 20's 16 MB: the engine allocates many short-lived objects per command (XState's
 * transitions), and a larger young generation scavenges less often for the same survivors. Measured with
 * `bench/match-durable.ts` (issue 11, 2026-11-26, alternated runs): 110-132 µs of process CPU per durable match
 * against 139-157 µs at the default, for 50 to 100 MB more peak memory. `--single-threaded-gc` and `--v8-pool-size=1`
 * (fewer GC helper threads) were measured beside it and not kept (issue 11, 2026-11-27, four alternated load-mix pairs each):
 * the service thread's CPU per pair rose in 4 of 4, the process's fell in 1 and 2 of 4 (bench/HISTORY.md, "The
 * service's request + match mix beside the ceiling").
 */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=64'] as const

/** The flags of SERVICE_NODE_FLAGS this process was not started with. */
export function missingNodeFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return SERVICE_NODE_FLAGS.filter((flag) => !execArgv.includes(flag))
}
