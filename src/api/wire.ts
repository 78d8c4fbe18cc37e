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

function convert(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(convert)
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) continue
    if (key.endsWith('Ms') && !DURATION_KEYS.has(key)) {
      out[key.slice(0, -2)] = field === null ? null : new Date(field as number).toISOString()
    } else {
      out[key] = convert(field)
    }
  }
  return out
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
