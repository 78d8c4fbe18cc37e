// The engine speaks bigint amounts and epoch-millisecond times; the wire speaks decimal strings and ISO-8601.
// One rule converts every value, so the response schemas (src/api/schemas.ts) and `Wire<T>` cannot drift apart
// without the type check noticing: an instant `fooAtMs` becomes `fooAt` (ISO string), a bigint its decimal string.

type WireKey<K> = K extends `${infer P}Ms` ? P : K

export type Wire<T> = T extends bigint
  ? string
  : T extends string | number | boolean | null | undefined
    ? T
    : T extends readonly (infer U)[]
      ? Wire<U>[]
      : T extends object
        ? { -readonly [K in keyof T as WireKey<K & string>]: K extends `${string}Ms` ? (null extends T[K] ? string | null : string) : Wire<T[K]> }
        : T

/** Keys ending in `Ms` that are durations, not instants: kept as they are. Every instant is named `...AtMs`. */
const DURATION_KEYS = new Set<string>([])

export function toWire<T>(value: T): Wire<T> {
  return convert(value) as Wire<T>
}

/** Whether `key` names an instant (`...Ms` and not a duration): its wire key drops the suffix. */
const isInstantKey = (key: string): boolean =>
  key.length >= 2 && key.charCodeAt(key.length - 1) === 0x73 /* s */ && key.charCodeAt(key.length - 2) === 0x4d /* M */ && !DURATION_KEYS.has(key)

// Object.keys and one assignment per field: Object.entries allocated an array per field, which made this the largest
// self cost of a request + match pair after GC (issue 11). Behaviour is the reference one in test/api/wire.test.ts.
function convert(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(convert)
  const source = value as Record<string, unknown>
  const out: Record<string, unknown> = {}
  const keys = Object.keys(source)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    const field = source[key]
    if (field === undefined) continue
    if (isInstantKey(key)) {
      out[key.slice(0, -2)] = field === null ? null : new Date(field as number).toISOString()
    } else {
      out[key] = convert(field)
    }
  }
  return out
}

/**
 * `JSON.stringify(toWire(value))` in one pass, without the intermediate wire object: the same bytes (key order is the
 * value's, as JSON.stringify keeps it), at about a third of the cost on engine views (README, "Response serializers").
 * A value the one-pass writer cannot mirror exactly (a key `fooAt` beside `fooAtMs`) goes the reference way.
 */
export function wireJson(value: unknown): string {
  const text = write(value, false)
  if (text === undefined) throw new TypeError('wireJson: the value has no JSON form')
  return text
}

/** `"key":` texts of the field names seen, so each is escaped once; bounded, since a record's keys are the caller's. */
const keyTexts = new Map<string, string>()
const KEY_CACHE_LIMIT = 4096

function keyText(key: string): string {
  let text = keyTexts.get(key)
  if (text === undefined) {
    text = `${JSON.stringify(key)}:`
    if (keyTexts.size < KEY_CACHE_LIMIT) keyTexts.set(key, text)
  }
  return text
}

/** Characters JSON.stringify escapes: controls, quote, backslash and (well-formed JSON.stringify) any surrogate. */
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/

/** The JSON text of `value` as toWire then JSON.stringify would write it; undefined where JSON.stringify omits it. */
function write(value: unknown, inArray: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      // Most strings (ids, addresses, decimal amounts) need no escape: one scan instead of a call into JSON.stringify.
      return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`
    case 'bigint':
      return `"${value.toString()}"`
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null'
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object':
      break
    default:
      // undefined, functions and symbols: omitted from an object, null in an array (JSON.stringify's rules).
      return inArray ? 'null' : undefined
  }
  if (value === null) return 'null'
  if (Array.isArray(value)) {
    let text = '['
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ','
      text += write(value[i], true) as string
    }
    return `${text}]`
  }
  const source = value as Record<string, unknown>
  const keys = Object.keys(source)
  let text = '{'
  let first = true
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    const field = source[key]
    if (field === undefined) continue
    let part: string | undefined
    let name = key
    if (isInstantKey(key)) {
      name = key.slice(0, -2)
      if (name === '__proto__') continue
      // toWire would write both fields under one name (the first's place, the last's value): take the reference way.
      if (Object.hasOwn(source, name)) return JSON.stringify(convert(source))
      part = field === null ? 'null' : `"${new Date(field as number).toISOString()}"`
    } else {
      // toWire assigns `__proto__` as the prototype, which JSON.stringify never writes.
      if (key === '__proto__') continue
      part = write(field, false)
      if (part === undefined) continue
    }
    text += first ? keyText(name) : `,${keyText(name)}`
    text += part
    first = false
  }
  return `${text}}`
}

/**
 * A live lease as delivered to its lender (GET /lenders/{address}/actions and the event stream alike): the lease, the
 * service's signed authorization and the unsigned paySupplier transaction that carries it.
 */
export function payAction<L, A, T>(delivered: { lease: L; authorization: A; signature: `0x${string}`; transaction: T }) {
  return {
    kind: 'pay_supplier' as const,
    lease: toWire(delivered.lease),
    authorization: toWire(delivered.authorization),
    signature: delivered.signature,
    transaction: toWire(delivered.transaction),
  }
}

/** A session-wallet action (top-up, approve, withdraw) as GET /lenders/{address}/actions lists it. */
export function walletAction<A extends { transaction: unknown }>(action: A) {
  return toWire(action)
}
