// Who may act beyond the parties themselves: the service's operators (config.operators), and the checks that admit a
// job's client or an advance's lender alongside them.
import { sameAddress } from './keys.ts'
import type { AdvanceActor, EngineState, JobActor } from './state.ts'
import type { Address } from './types.ts'

export function isOperator(s: EngineState, caller: Address): boolean {
  return s.config.operators.some((operator) => sameAddress(operator, caller))
}

/** A job's client, or an operator of the service. */
export function isClientOrOperator(s: EngineState, job: JobActor, caller: Address): boolean {
  return sameAddress(job.getSnapshot().context.client, caller) || isOperator(s, caller)
}

/** An advance's lender, or an operator of the service. */
export function isLenderOrOperator(s: EngineState, advance: AdvanceActor, caller: Address): boolean {
  return sameAddress(advance.getSnapshot().context.lender, caller) || isOperator(s, caller)
}
