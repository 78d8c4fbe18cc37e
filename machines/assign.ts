// XState's `assign` for these machines' function assignments, with a cheaper way to the same next snapshot. XState's
// own (xstate/dist assign: resolveAssign) builds the new context with Object.assign({}, context, update), which adds
// the context's keys one at a time to an empty object: past 16 keys V8 turns it into a dictionary (the offer's has
// 24, the advance's 20), and every later read, copy and encoding of it is slower. It then clones the snapshot with
// cloneMachineSnapshot, which computes the state value and the tags again from the same state nodes. Here the new
// context is a spread of the old one (V8 copies its shape whole, so it stays in fast mode, in the same key order)
// with the update written over it, and the snapshot is the old one with that context: the same keys and values as
// XState's, for machines that spawn nothing in an assign (none of these does; `spawn` throws). The action stays
// XState's own object (type 'xstate.assign', its `assignment`), only its `resolve` is this one: XState calls the
// `resolve` of a built-in action with (actorScope, snapshot, actionArgs, actionParams, action) and takes back
// [snapshot, params, actions]. test/machines/assign.test.ts checks it gives XState's snapshots for every event of
// the four machines.
import { assign as xstateAssign } from 'xstate'

type ResolveArgs = [
  actorScope: { self: unknown; system: unknown },
  snapshot: { context: object },
  actionArgs: { event: unknown },
  actionParams: unknown,
  action: { assignment: (args: object, params: unknown) => object },
]

function noSpawn(): never {
  throw new Error('machines/assign.ts: an assign of these machines spawns no actor')
}

function resolveAssign(...[actorScope, snapshot, actionArgs, actionParams, action]: ResolveArgs): [object, undefined, undefined] {
  return [{ ...snapshot, context: assignedContext(action, snapshot.context, actionArgs.event, actorScope, actionParams) }, undefined, undefined]
}

/**
 * The context an assign of this module makes of `context`: the assignment's update written over a spread of it.
 * resolveAssign's, and src/engine/actors.ts's flat step's, which takes the context alone (no snapshot per assign).
 */
export function assignedContext(
  action: { assignment: (args: object, params: unknown) => object }, context: object, event: unknown,
  actorScope: { self: unknown; system: unknown }, actionParams: unknown,
): object {
  const update = action.assignment({ context, event, spawn: noSpawn, self: actorScope.self, system: actorScope.system }, actionParams)
  return Object.assign({ ...context }, update)
}

/** XState's assign of an assignment function, resolved as this module's first lines say. */
export const assign = ((assignment: Parameters<typeof xstateAssign>[0]) => {
  if (typeof assignment !== 'function') throw new Error('machines/assign.ts: an assignment function, not an object')
  const action = xstateAssign(assignment)
  ;(action as unknown as { resolve: unknown }).resolve = resolveAssign
  return action
}) as typeof xstateAssign
