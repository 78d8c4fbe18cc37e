// The engine's refusals as a typed error: the engine returns them as data (EngineResult), the layer that runs a
// command raises them, and the HTTP edge maps them to problem+json (src/api/problems.ts).
import type { EngineError } from './types.ts'

/** The engine refused a command or a query; `error` says why, with its stable code and class. */
export class EngineRefusedError extends Error {
  override readonly name = 'EngineRefusedError'
  constructor(readonly error: EngineError) {
    super(error.message)
  }
}
