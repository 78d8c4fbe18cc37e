// The engine's refusals: returned as data (EngineResult, made by `fail` and `forbidden`), raised as a typed error by
// the layer that runs a command, and mapped to problem+json at the HTTP edge (src/api/problems.ts).
import type { EngineError, ErrorClass } from './types.ts'

/** The engine refused a command or a query; `error` says why, with its stable code and class. */
export class EngineRefusedError extends Error {
  override readonly name = 'EngineRefusedError'
  constructor(readonly error: EngineError) {
    super(error.message)
  }
}

export function fail(errorClass: ErrorClass, code: string, message: string): { ok: false; error: EngineError } {
  return { ok: false, error: { code, class: errorClass, message } }
}

/** Who may act is the engine's rule: the caller is not the actor the command needs. */
export function forbidden(message: string): { ok: false; error: EngineError } {
  return fail('forbidden', 'forbidden', message)
}
