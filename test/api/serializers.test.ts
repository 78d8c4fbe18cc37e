// The writers compiled from the response schemas (api/serializers.ts) write exactly the bytes of wireJson and of the
// pre-issue-11 toWire + JSON.stringify: for values generated from every response schema, in the schema's key order
// and shuffled, with fields replaced by hostile values, first met (a plan is compiled) and met again (the plan is
// reused), a string field meeting its last value again or not, past the bound on plans per schema, and for the
// engine's own decision and match answers. The instant
// formatter (isoInstant) is checked against Date's toISOString over the whole range, and where it throws.
import t, { type Test } from 'tap'
import Type, { type TSchema } from 'typebox'
import { MatchOutcome, UnderwritingDecision } from '../../src/api/schemas.ts'
import { PLANS_PER_OBJECT_MAX, serializerFor } from '../../src/api/serializers.ts'
import { isoInstant, wireJson } from '../../src/api/wire.ts'
import { amountsOf, ASSET, buildBook, NET, payAndRepay, SUPPLIER, T0 } from '../../bench/fixtures/book.ts'
import { engineValue, random, reference, responseSchemas, stringOf, TRICKY } from './fixtures/wire-values.ts'

/**
 * What a call returns or throws, so a writer that throws where the reference throws compares equal. JSON.stringify
 * returns undefined for a value with no JSON form, which the writers refuse with a TypeError.
 */
function outcome(write: () => string | undefined): string {
  try {
    const text = write()
    return text === undefined ? 'threw TypeError' : `text ${text}`
  } catch (error) {
    return `threw ${(error as Error).constructor.name}`
  }
}

/** The reference bytes of `value`, checked against wireJson as well: the serializer must equal both. */
function expectSame(t: Test, schema: TSchema, value: unknown, label: string): boolean {
  const expected = outcome(() => JSON.stringify(reference(value)))
  const got = outcome(() => serializerFor(schema)(value))
  const again = outcome(() => serializerFor(schema)(value))
  const generic = outcome(() => wireJson(value))
  if (got === expected && again === expected && generic === expected) return true
  t.fail(`${label}: expected ${expected}, compiled ${got}, again ${again}, wireJson ${generic}`)
  return false
}

/** A copy of `value` with every object's keys in a shuffled order (arrays keep theirs). */
function shuffled(value: unknown, next: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffled(item, next))
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value)
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[entries[i], entries[j]] = [entries[j] as [string, unknown], entries[i] as [string, unknown]]
  }
  return Object.fromEntries(entries.map(([key, field]) => [key, shuffled(field, next)]))
}

/** Values no schema admits, each of which the generic writer handles in its own way. */
const hostile = (next: () => number): unknown[] => [
  undefined, null, () => 1, Symbol('s'), NaN, -Infinity, -0, 1e21, 12345678901234567890n, [undefined, 1n, , 'x'],
  { [stringOf(next)]: stringOf(next), nestedAtMs: 0 }, TRICKY[Math.floor(next() * TRICKY.length)], new Date(0), ['a', { b: 1 }],
  'not a time', 1.5, -1, 253_402_300_800_000,
]

/** A copy of `value` with one field somewhere inside replaced by `replacement` (an instant key keeps its name). */
function mutated(value: unknown, next: () => number, replacement: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length === 0) return value
    const at = Math.floor(next() * value.length)
    return value.map((item, i) => (i === at ? (next() < 0.5 ? replacement : mutated(item, next, replacement)) : item))
  }
  if (typeof value !== 'object' || value === null) return replacement
  const keys = Object.keys(value)
  if (keys.length === 0) return value
  const at = keys[Math.floor(next() * keys.length)] as string
  const field = (value as Record<string, unknown>)[at]
  return { ...value, [at]: next() < 0.5 || typeof field !== 'object' || field === null ? replacement : mutated(field, next, replacement) }
}

t.test('every response schema: generated values, shuffled keys and hostile fields give the bytes wireJson gives', async (t) => {
  t.ok(responseSchemas.length > 30, `found ${responseSchemas.length} schemas`)
  const next = random(29)
  let compared = 0
  for (const [name, schema] of responseSchemas) {
    for (let i = 0; i < 40; i++) {
      const value = engineValue(schema, next)
      const hostileValues = hostile(next)
      const replacement = hostileValues[Math.floor(next() * hostileValues.length)]
      for (const [variant, case_] of [['generated', value], ['shuffled', shuffled(value, next)], ['mutated', mutated(value, next, replacement)]] as const) {
        if (!expectSame(t, schema, case_, `${name} ${variant}`)) return
        compared++
      }
    }
  }
  t.pass(`${compared} values compared`)
})

t.test('an object met in more key orders than a schema keeps plans for is still written byte for byte', async (t) => {
  const next = random(5)
  const schema = Type.Object({ a: Type.String(), b: Type.Integer(), c: Type.Boolean(), d: Type.Null(), eAt: Type.String({ format: 'date-time' }) })
  const orders = new Set<string>()
  for (let i = 0; i < 200; i++) {
    const value = shuffled({ a: stringOf(next), b: i, c: next() < 0.5, d: null, eAtMs: Math.floor(next() * 4e12) }, next) as Record<string, unknown>
    orders.add(Object.keys(value).join())
    if (!expectSame(t, schema, value, `order ${Object.keys(value).join()}`)) return
  }
  t.ok(orders.size > PLANS_PER_OBJECT_MAX, `${orders.size} key orders met, more than the ${PLANS_PER_OBJECT_MAX} compiled`)
})

t.test('a string field repeating its last value, or not, in equal and distinct strings, is written as wireJson writes it', async (t) => {
  // A plan remembers each string field's last value and its text: here the fields take values from a small pool
  // (hostile ones included), in strings made anew each time, so a value often equals the last one without being it.
  const next = random(7)
  const schema = Type.Object({ a: Type.String(), b: Type.String(), n: Type.Object({ c: Type.String() }) })
  const pool = [...TRICKY, 'base-sepolia', 'USDC', 'x']
  const fresh = (text: string): string => [...text].join('')
  let repeats = 0
  let last: string | undefined
  for (let i = 0; i < 2000; i++) {
    const a = fresh(pool[Math.floor(next() * pool.length)] as string)
    if (a === last) repeats++
    last = a
    const value = { a, b: fresh(pool[Math.floor(next() * 3)] as string), n: { c: next() < 0.5 ? a : stringOf(next) } }
    if (!expectSame(t, schema, value, `value ${i}`)) return
  }
  t.ok(repeats > 50, `a field met its last value again ${repeats} times`)
})

t.test('the edges: keys the schema lacks, __proto__, a key beside its ...Ms twin, wrong kinds, bad instants', async (t) => {
  const Item = Type.Object({ name: Type.String(), atomicAtomic: Type.String() })
  const schema = Type.Object({
    name: Type.String(),
    dueAt: Type.String({ format: 'date-time' }),
    endedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    item: Type.Union([Item, Type.Null()]),
    items: Type.Array(Item),
  })
  const sparse: unknown[] = [{ name: 'x', atomicAtomic: 1n }]
  sparse[2] = { name: 'y', atomicAtomic: 2n }
  const base = { name: 'n', dueAtMs: 1_700_000_000_123, endedAtMs: null, item: { name: '"\\\u0000\u2028\ud800', atomicAtomic: 5n }, items: [] as unknown[] }
  const cases: Array<[string, unknown]> = [
    ['as the schema', base],
    ['an extra key', { ...base, extra: 'kept' }],
    ['__proto__', JSON.parse('{"__proto__": {"polluted": 1}, "name": "n", "dueAtMs": 0}')],
    ['fooAt then fooAtMs', { dueAt: 'first', dueAtMs: 1_700_000_000_000, name: 'n' }],
    ['fooAtMs then fooAt', { dueAtMs: 1_700_000_000_000, dueAt: 'second' }],
    ['an undefined field', { ...base, name: undefined }],
    ['a function field', { ...base, name: () => 1 }],
    ['an instant as a string', { ...base, dueAtMs: 'not a time' }],
    ['an instant as a bigint', { ...base, dueAtMs: 5n }],
    ['an instant out of range', { ...base, dueAtMs: 8.64e15 + 1 }],
    ['an instant with a fraction', { ...base, dueAtMs: 1.9 }],
    ['a signed-year instant', { ...base, dueAtMs: -62_198_755_200_001 }],
    ['an array for an object', { ...base, item: [1, 2] }],
    ['a string for an object', { ...base, item: 'x' }],
    ['an object for an array', { ...base, items: { 0: 'a' } }],
    ['holes, undefined and functions in an array', { ...base, items: [...sparse, undefined, () => 1, Symbol('s'), null, 'text'] }],
    ['an array of items with extra keys', { ...base, items: [{ name: 'a', atomicAtomic: 1n, more: [1n] }, { atomicAtomic: 2n, name: 'b' }] }],
    ['a Date, a Map and a Buffer', { ...base, item: new Date(0), items: [new Map([[1, 2]]), Buffer.from('ab')] }],
    ['an array at the top', [base]],
    ['a string at the top', 'top"level'],
    ['null at the top', null],
  ]
  for (const [label, value] of cases) t.ok(expectSame(t, schema, value, label), label)
  t.throws(() => serializerFor(schema)(undefined), TypeError, 'no JSON form: refused, never the text "undefined"')
  t.throws(() => serializerFor(schema)(() => 1), TypeError, 'a function at the top is refused as wireJson refuses it')
})

t.test("the engine's own decision and match answers: the bytes wireJson writes", async (t) => {
  const book = buildBook(20, 2)
  const amounts = amountsOf(20)
  for (let i = 0; i < amounts.length; i++) {
    const amountAtomic = amounts[i] as bigint
    const b = i % book.borrowers.length
    const agent = book.borrowers[b] as (typeof book.borrowers)[number]
    const requested = book.engine.requestCredit({
      agent, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic, purpose: `round "${i}"\n`, supplier: 'bench',
      supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: `bench-src-${b}`, maximumFeeAtomic: amountAtomic / 20n, caller: agent,
    }, T0 + i)
    if (!requested.ok || requested.value.offer === null) throw new Error('the request was declined')
    t.equal(serializerFor(UnderwritingDecision)(requested.value), wireJson(requested.value), `decision ${i}`)
    const matched = book.engine.matchOffer({ offerId: requested.value.offer.offerId, caller: agent }, T0 + i)
    if (!matched.ok || matched.value.lease === null) throw new Error('the offer was not matched')
    t.equal(serializerFor(MatchOutcome)(matched.value), wireJson(matched.value), `match ${i}`)
    payAndRepay(book.engine, { offerId: requested.value.offer.offerId, lease: matched.value.lease, borrower: agent, amountAtomic, round: i }, T0 + i)
  }
})

t.test("isoInstant writes Date's toISOString, and throws where it throws", async (t) => {
  const next = random(3)
  const edges = [
    0, -0, 1, -1, 999, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 951_868_800_000, 4_107_542_400_000 /* 2100-03-01 */,
    253_402_300_799_999, 253_402_300_800_000, -62_198_755_200_000, 8.64e15, -8.64e15, 8.64e15 + 1, 1.5, -1.5, NaN, Infinity,
  ]
  const samples = [...edges, ...Array.from({ length: 20_000 }, () => Math.floor((next() - 0.1) * 3e14))]
  for (const ms of samples) {
    const expected = outcome(() => new Date(ms).toISOString())
    const got = outcome(() => isoInstant(ms))
    if (got !== expected) {
      t.fail(`${ms}: expected ${expected}, got ${got}`)
      return
    }
  }
  t.pass(`${samples.length} instants compared`)
})

t.test("isoInstant's minute prefixes, kept per slot: a minute met again, and minutes that take each other's slot, each get their own text", async (t) => {
  const next = random(5)
  const base = 1_764_176_280_000 // 2025-11-26T17:18:00.000Z
  // Minutes 64 apart share a slot; within a few minutes, each has its own. Met in turns, in random order.
  const minutes = [0, 1, 2, 64, 128, 65, -64, 60 * 24 * 64, 60 * 24 * 365]
  let compared = 0
  for (let i = 0; i < 5_000; i++) {
    const ms = base + (minutes[Math.floor(next() * minutes.length)] as number) * 60_000 + Math.floor(next() * 60_000)
    if (isoInstant(ms) !== new Date(ms).toISOString()) {
      t.fail(`${ms}: expected ${new Date(ms).toISOString()}, got ${isoInstant(ms)}`)
      return
    }
    compared += 1
  }
  t.equal(compared, 5_000, 'every instant as Date writes it')
})
