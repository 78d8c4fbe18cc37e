// Structured logs: one JSON object per line on stdout. Request lines never carry bodies or headers.

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
