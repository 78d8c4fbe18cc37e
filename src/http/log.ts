// Structured logs: one JSON object per line on stdout. Request lines never carry bodies or headers.
import { randomBytes } from 'node:crypto'

export type LogLine = { level: 'info' | 'warn' | 'error'; msg: string } & Record<string, unknown>
export type Logger = (line: LogLine) => void

export const stdoutLogger: Logger = (line) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`)
}

export const silentLogger: Logger = () => {}

/** Loggers that drop the per-request lines: the pipeline builds none for them (no clock reading either). */
const requestLinesDropped = new WeakSet<Logger>()

/**
 * `log` without the per-request `request` lines (REQUEST_LOG=0): every other line, warnings and errors included, still
 * goes out. Before, REQUEST_LOG=0 silenced the whole log, `listening`, `chain_follower_stopped` and every alert with it
 * (operator26's finding).
 */
export function withoutRequestLines(log: Logger): Logger {
  const filtered: Logger = (line) => {
    if (line.msg !== 'request') log(line)
  }
  requestLinesDropped.add(filtered)
  return filtered
}

/** Whether the pipeline should build request lines for this logger. */
export function logsRequests(log: Logger): boolean {
  return log !== silentLogger && !requestLinesDropped.has(log)
}

/** The error fields worth logging: name, message and stack, never arbitrary properties that may hold secrets. */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { errorName: error.name, errorMessage: error.message, stack: error.stack }
  return { errorMessage: String(error) }
}

/**
 * A source of request ids (x-request-id): unique within the source by its counter, across sources (the pipeline, the
 * front's thread, other processes) by its random prefix.
 */
export function requestIdMinter(): () => string {
  const prefix = `${randomBytes(6).toString('hex')}-`
  let count = 0
  return () => prefix + (++count).toString(36)
}
