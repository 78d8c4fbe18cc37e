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
export const isInstantKey = (key: string): boolean =>
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
      out[key.slice(0, -2)] = field === null ? null : isoInstant(field as number)
    } else {
      out[key] = convert(field)
    }
  }
  return out
}

/** 9999-12-31T23:59:59.999Z: the last instant whose ISO form has a four-digit year and no sign. */
const FOUR_DIGIT_YEAR_MS_MAX = 253_402_300_799_999

const digits = (width: number, count: number): readonly string[] => Array.from({ length: count }, (_, n) => String(n).padStart(width, '0'))
/** '00'..'99' and '000'..'999', made once: a field's digits are looked up, not built per instant. */
const TWO_DIGITS = digits(2, 100)
const THREE_DIGITS = digits(3, 1000)

/**
 * The text up to the seconds ('2026-11-26T16:58:'), by minute, for the last minutes met: an answer's instants mostly
 * fall in a few minutes (now, an expiry, a due date), and the prefix is most of an instant's text and of what
 * building it allocates. Direct-mapped on the minute: a slot holds the last minute that fell in it.
 */
const PREFIX_SLOTS = 64
const prefixMinutes = new Float64Array(PREFIX_SLOTS).fill(-1)
const prefixTexts: string[] = new Array<string>(PREFIX_SLOTS).fill('')

/**
 * `new Date(ms).toISOString()` without the Date: the calendar date by arithmetic (days to civil date, H. Hinnant's
 * algorithm), since the Date and its formatting were half the cost of a one-pass answer (bench/HISTORY.md,
 * "Response serializers"). Anything but an integer from 1970 to the year 9999 (signed years, fractions, NaN, non-numbers)
 * goes through the Date, which also throws what toWire throws.
 */
export function isoInstant(ms: number): string {
  if (!(typeof ms === 'number' && ms >= 0 && ms <= FOUR_DIGIT_YEAR_MS_MAX && ms % 1 === 0)) return new Date(ms).toISOString()
  const minute = Math.floor(ms / 60_000)
  const rest = ms - minute * 60_000
  const seconds = Math.floor(rest / 1000)
  const slot = minute % PREFIX_SLOTS
  let prefix = prefixTexts[slot] as string
  if (prefixMinutes[slot] !== minute) {
    prefix = minutePrefix(minute)
    prefixMinutes[slot] = minute
    prefixTexts[slot] = prefix
  }
  return `${prefix}${TWO_DIGITS[seconds] as string}.${THREE_DIGITS[rest - seconds * 1000] as string}Z`
}

/** 'YYYY-MM-DDTHH:MM:' of a minute since 1970. */
function minutePrefix(minute: number): string {
  const days = Math.floor(minute / 1440)
  const minuteOfDay = minute - days * 1440
  const hours = Math.floor(minuteOfDay / 60)
  const minutes = minuteOfDay - hours * 60
  // Days since 0000-03-01 in 400-year eras, so the leap day is the last day of a year.
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365)
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  return `${year}-${TWO_DIGITS[month] as string}-${TWO_DIGITS[day] as string}T${TWO_DIGITS[hours] as string}:${TWO_DIGITS[minutes] as string}:`
}

/**
 * `JSON.stringify(toWire(value))` in one pass, without the intermediate wire object: the same bytes (key order is the
 * value's, as JSON.stringify keeps it), at about a third of the cost on engine views (bench/HISTORY.md, "Response serializers").
 * A value the one-pass writer cannot mirror exactly (a key `fooAt` beside `fooAtMs`) goes the reference way.
 */
export function wireJson(value: unknown): string {
  const text = writeWire(value, false)
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
export const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/

/** The JSON text of `value` as toWire then JSON.stringify would write it; undefined where JSON.stringify omits it. */
export function writeWire(value: unknown, inArray: boolean): string | undefined {
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
      text += writeWire(value[i], true) as string
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
      part = field === null ? 'null' : `"${isoInstant(field as number)}"`
    } else {
      // toWire assigns `__proto__` as the prototype, which JSON.stringify never writes.
      if (key === '__proto__') continue
      part = writeWire(field, false)
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
