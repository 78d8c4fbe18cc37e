// Structured logs: one JSON object per line on stdout. Request lines never carry bodies or headers.
import { randomBytes } from 'node:crypto'

export type LogLine = { level: 'info' | 'warn' | 'error'; msg: string } & Record<string, unknown>
export type Logger = (line: LogLine) => void

export const stdoutLogger: Logger = (line) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`)
}

export const silentLogger: Logger = () => {}

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
