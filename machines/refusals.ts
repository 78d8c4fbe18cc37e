// Refusal tables: for each event of a machine, the stable code of the conflict when the machine refuses it. A table
// is declared next to its machine and read in two places: by the engine, which turns a refused send into a typed
// conflict, and by the diagram generator, which lists when each command is refused. Pure: no xstate runtime.
import type { AnyStateMachine } from 'xstate'

export interface Refusal {
  /** The code when the current state does not take the event at all. */
  readonly code: string
  /** The code when the current state takes the event but every guard on it says no (too early, not this one, ...). */
  readonly guarded?: string
  /** Codes of states that refuse the event for a reason of their own (an expired lease is not just "not live"). */
  readonly states?: Readonly<Record<string, string>>
}

/** One rule per event type of the machine: the type checker keeps the table complete. */
export type RefusalTable<E extends { type: string }> = { readonly [T in E['type']]: Refusal }

/** The states of a flat machine whose transitions take `eventType` (under whatever guards they carry). */
export function statesTaking(machine: AnyStateMachine, eventType: string): string[] {
  return Object.entries(machine.states)
    .filter(([, node]) => node.transitions.has(eventType))
    .map(([name]) => name)
}

/**
 * The code of the refusal of `eventType` in `state`: the state's own code, else the guarded code when the state takes
 * the event (its guards said no), else the event's code.
 */
export function refusalCode(machine: AnyStateMachine, table: Readonly<Record<string, Refusal>>, state: string, eventType: string): string {
  const rule = table[eventType]
  if (rule === undefined) throw new Error(`${machine.id} machine: no refusal rule for ${eventType}`)
  const own = rule.states?.[state]
  if (own !== undefined) return own
  const taken = machine.states[state]?.transitions.has(eventType) ?? false
  return taken && rule.guarded !== undefined ? rule.guarded : rule.code
}
