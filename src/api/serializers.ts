// Response writers compiled from the response schemas (issue 11): the bytes of `wireJson` (src/api/wire.ts), which
// are those of `JSON.stringify(toWire(value))`, at about half its cost on the hot answers (bench/HISTORY.md,
// "Response serializers"). An object's JSON keeps its value's key order, and the engine's views do not build their fields in
// the schema's order, so a writer is compiled per key order met: an object schema keeps up to PLANS_PER_OBJECT_MAX
// plans, each a function generated for one sequence of keys (the "key": texts, the instant conversions and the
// nested objects' writers known in advance). A value whose keys match no plan, a key the schema does not name, an
// undefined field or an instant that is not a number: that object is written by the generic writer, byte for byte
// what it would have written anyway.
import type { TSchema } from 'typebox'
import { isInstantKey, isoInstant, NEEDS_ESCAPE, wireJson, writeWire } from './wire.ts'

/** Key orders compiled per object schema: the views of one schema come in a few orders; more go the generic way. */
export const PLANS_PER_OBJECT_MAX = 8

type Writer = (value: unknown) => string
type PlanWrite = (source: Record<string, unknown>) => string | undefined

interface Plan {
  readonly keys: readonly string[]
  /** Undefined when the keys are not all the schema's (the generic writer answers those). */
  readonly write: PlanWrite | undefined
}

interface ObjectNode {
  readonly properties: Readonly<Record<string, unknown>>
  readonly plans: Plan[]
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The single object (or array) schema of `schema` or of its `anyOf`/`oneOf` beside null; undefined for anything else. */
function branchOfType(schema: unknown, type: 'object' | 'array'): Record<string, unknown> | undefined {
  if (!isRecord(schema)) return undefined
  if (schema['type'] === type) return schema
  const branches = schema['anyOf'] ?? schema['oneOf']
  if (!Array.isArray(branches)) return undefined
  const typed = branches.filter((branch) => isRecord(branch) && branch['type'] === type)
  const others = branches.filter((branch) => !(isRecord(branch) && (branch['type'] === type || branch['type'] === 'null')))
  return typed.length === 1 && others.length === 0 ? (typed[0] as Record<string, unknown>) : undefined
}

const objectNodes = new WeakMap<object, ObjectNode>()

function objectNodeOf(schema: Record<string, unknown>): ObjectNode | undefined {
  if (!isRecord(schema['properties'])) return undefined
  let node = objectNodes.get(schema)
  if (node === undefined) {
    node = { properties: schema['properties'], plans: [] }
    objectNodes.set(schema, node)
  }
  return node
}

/** The writer of a value at a place the schema describes: compiled objects and arrays, generic for the rest. */
function writerOf(schema: unknown): ((value: unknown) => string | undefined) | undefined {
  const object = branchOfType(schema, 'object')
  const node = object === undefined ? undefined : objectNodeOf(object)
  if (node !== undefined) return (value) => (isRecord(value) ? writeObject(node, value) : writeWire(value, false))
  const array = branchOfType(schema, 'array')
  const items = array === undefined ? undefined : writerOf(array['items'])
  if (items !== undefined) return (value) => (Array.isArray(value) ? writeArray(items, value) : writeWire(value, false))
  return undefined
}

function writeArray(items: (value: unknown) => string | undefined, values: readonly unknown[]): string {
  let text = '['
  for (let i = 0; i < values.length; i++) {
    if (i > 0) text += ','
    // An item with no JSON form (undefined, a hole, a function) is null in an array, as JSON.stringify writes it.
    text += items(values[i]) ?? 'null'
  }
  return `${text}]`
}

function writeObject(node: ObjectNode, source: Record<string, unknown>): string {
  const keys = Object.keys(source)
  let plan: Plan | undefined
  for (let p = 0; p < node.plans.length; p++) {
    const candidate = node.plans[p] as Plan
    if (sameKeys(candidate.keys, keys)) {
      plan = candidate
      break
    }
  }
  if (plan === undefined) {
    if (node.plans.length >= PLANS_PER_OBJECT_MAX) return writeWire(source, false) as string
    plan = { keys, write: compilePlan(node, keys) }
    node.plans.push(plan)
  }
  return (plan.write === undefined ? undefined : plan.write(source)) ?? (writeWire(source, false) as string)
}

function sameKeys(expected: readonly string[], keys: readonly string[]): boolean {
  if (expected.length !== keys.length) return false
  for (let i = 0; i < keys.length; i++) if (expected[i] !== keys[i]) return false
  return true
}

/**
 * The function that writes an object with exactly `keys`, in that order, each named by the schema (an instant key
 * `fooAtMs` by its wire name `fooAt`); undefined if some key is not the schema's or two keys share a wire name. The
 * generated code returns undefined for a field it does not write as the generic writer would (undefined, an instant
 * that is not a number, a value with no JSON form): its caller then writes the object the generic way.
 */
function compilePlan(node: ObjectNode, keys: readonly string[]): PlanWrite | undefined {
  const names = new Set<string>()
  const nested: Array<(value: unknown) => string | undefined> = []
  const fields: string[] = []
  /** Per string field, the last string written and its JSON text (`s<i>`, `q<i>`), kept between calls. */
  let remembered = ''
  let body = ''
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    const instant = isInstantKey(key)
    const name = instant ? key.slice(0, -2) : key
    if (name === '__proto__' || !Object.hasOwn(node.properties, name) || names.has(name)) return undefined
    names.add(name)
    const v = `v${i}`
    body += `const ${v} = source[${JSON.stringify(key)}];\n`
    if (instant) {
      body += `let t${i};\nif (typeof ${v} === 'number') t${i} = '"' + isoInstant(${v}) + '"';\nelse if (${v} === null) t${i} = 'null';\nelse return undefined;\n`
    } else {
      const writer = writerOf(node.properties[name])
      let general = `writeWire(${v}, false)`
      if (writer !== undefined) {
        general = `nested[${nested.length}](${v})`
        nested.push(writer)
      }
      // A string equal to the field's last one (a network, an asset, a state, a product type: most answers repeat
      // them) is written as it was then, without the escape test and the quoting (issue 11).
      remembered += `let s${i}, q${i};\n`
      body += `let t${i};\nif (typeof ${v} === 'string') {\n  if (${v} === s${i}) t${i} = q${i};\n  else { t${i} = NEEDS_ESCAPE.test(${v}) ? JSON.stringify(${v}) : '"' + ${v} + '"'; s${i} = ${v}; q${i} = t${i}; }\n} else {\n  t${i} = ${general};\n  if (t${i} === undefined) return undefined;\n}\n`
    }
    // A JS string literal of the `"name":` text; JSON.stringify of a string is one.
    fields.push(`${JSON.stringify(`${i === 0 ? '' : ','}${JSON.stringify(name)}:`)} + t${i}`)
  }
  body += `return ${JSON.stringify('{')} + ${[...fields, JSON.stringify('}')].join(' + ')};`
  const build = new Function('isoInstant', 'writeWire', 'NEEDS_ESCAPE', 'nested', `${remembered}return function writePlan(source) {\n${body}\n}`)
  return build(isoInstant, writeWire, NEEDS_ESCAPE, nested) as PlanWrite
}

const writers = new WeakMap<TSchema, Writer>()

/**
 * The writer for answers of `schema`: `wireJson(value)`'s text, compiled from the schema once. A value that is no
 * object or array where the schema has one is written by wireJson (which refuses a value with no JSON form).
 */
export function serializerFor(schema: TSchema): Writer {
  let writer = writers.get(schema)
  if (writer === undefined) {
    const compiled = writerOf(schema)
    writer = compiled === undefined ? wireJson : (value) => compiled(value) ?? wireJson(value)
    writers.set(schema, writer)
  }
  return writer
}
