// The one-pass wire serializer (wireJson) and the faster toWire against the reference conversion they replaced
// (issue 11): the bytes on the wire must stay exactly those of toWire + JSON.stringify, for engine-shaped values
// derived from every response schema and for values built to hit every edge (escapes, lone surrogates, bigints,
// instants, holes, undefined, functions, non-finite numbers, `__proto__`, a key beside its `...Ms` twin).
import t from 'tap'
import type { TSchema } from 'typebox'
import * as schemas from '../../src/api/schemas.ts'
import * as chainSchemas from '../../src/api/schemas-chain.ts'
import { toWire, wireJson } from '../../src/api/wire.ts'
import { checkedBody, JsonText, jsonText } from '../../src/http/request.ts'

/** The conversion as it was before issue 11 (Object.entries, endsWith): the behaviour both new paths must keep. */
function reference(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(reference)
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) continue
    if (key.endsWith('Ms')) {
      out[key.slice(0, -2)] = field === null ? null : new Date(field as number).toISOString()
    } else {
      out[key] = reference(field)
    }
  }
  return out
}

// A small deterministic generator (mulberry32): the same cases on every run, many of them.
function random(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const TRICKY = ['', '"', '\\', '\n\r\t\b\f', '\u0000\u001f\u007f', '\u2028\u2029', '\ud800', 'a\udc00b', '😀', '</script>', 'é', '0x5FbDB2315678afecb367f032d93F642f64180aa3']

function stringOf(next: () => number): string {
  if (next() < 0.4) return TRICKY[Math.floor(next() * TRICKY.length)] as string
  let text = ''
  const length = Math.floor(next() * 12)
  for (let i = 0; i < length; i++) text += String.fromCharCode(next() < 0.8 ? 32 + Math.floor(next() * 95) : Math.floor(next() * 0x10000))
  return text
}

/** An engine-shaped value for a wire schema: `fooAt` instants as `fooAtMs` numbers, `...Atomic` amounts as bigints. */
function engineValue(schema: any, next: () => number, depth = 0): unknown {
  if (schema === undefined || depth > 6) return null
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[Math.floor(next() * schema.enum.length)]
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches)) return engineValue(branches[Math.floor(next() * branches.length)], next, depth + 1)
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      const required = new Set<string>(schema.required ?? [])
      for (const [key, child] of Object.entries<any>(schema.properties ?? {})) {
        if (!required.has(key) && next() < 0.3) continue
        if (child.format === 'date-time' || (child.anyOf ?? []).some((b: any) => b.format === 'date-time')) {
          out[`${key}Ms`] = child.anyOf !== undefined && next() < 0.3 ? null : Math.floor(next() * 4e12)
        } else if (key.endsWith('Atomic')) {
          out[key] = BigInt(Math.floor(next() * 1e15)) * BigInt(Math.floor(next() * 1e6) + 1)
        } else {
          out[key] = engineValue(child, next, depth + 1)
        }
      }
      if (schema.patternProperties !== undefined || typeof schema.additionalProperties === 'object') {
        for (let i = Math.floor(next() * 3); i > 0; i--) out[stringOf(next)] = stringOf(next)
      }
      return out
    }
    case 'array': {
      const items: unknown[] = []
      for (let i = Math.floor(next() * 4); i > 0; i--) items.push(engineValue(schema.items, next, depth + 1))
      return items
    }
    case 'string':
      return stringOf(next)
    case 'integer':
      return Math.floor((next() - 0.5) * 1e9)
    case 'number':
      return (next() - 0.5) * 1e6
    case 'boolean':
      return next() < 0.5
    case 'null':
      return null
    default:
      return stringOf(next)
  }
}

const responseSchemas = Object.entries({ ...schemas, ...chainSchemas }).filter(
  ([, value]) => typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string',
) as Array<[string, TSchema]>

t.test('wireJson and toWire write what the reference conversion and JSON.stringify write, for every response schema', async (t) => {
  t.ok(responseSchemas.length > 30, `found ${responseSchemas.length} schemas`)
  const next = random(11)
  let compared = 0
  for (const [name, schema] of responseSchemas) {
    for (let i = 0; i < 60; i++) {
      const value = engineValue(schema, next)
      const expected = JSON.stringify(reference(value))
      if (wireJson(value) !== expected || JSON.stringify(toWire(value)) !== expected) {
        t.fail(`${name}: ${expected}`)
        return
      }
      compared++
    }
  }
  t.pass(`${compared} values compared`)
})

t.test('the edges: escapes, surrogates, bigints, instants, holes, undefined, functions, non-finite numbers, __proto__', async (t) => {
  const sparse: unknown[] = [1]
  sparse[3] = 2
  const cases: unknown[] = [
    { a: '"\\\n\u0000\u2028\ud800x', b: 1n, c: -12345678901234567890n, dueAtMs: 0, endedAtMs: null, Ms: 5, ok: true, no: false },
    { list: [undefined, () => 1, Symbol('s'), NaN, -0, Infinity, 1e21, 1e-7, null, 3n], sparse },
    { skipped: undefined, fn: () => 1, sym: Symbol('s'), nested: { deeper: [{ xAtMs: 1_700_000_000_123 }] } },
    JSON.parse('{"__proto__": {"polluted": 1}, "kept": 1}'),
    { __proto__Ms: null, kept: 2 },
    { fooAt: 'first', fooAtMs: 1_700_000_000_000, later: 1 },
    { fooAtMs: 1_700_000_000_000, fooAt: 'second' },
    { date: new Date(0), map: new Map([[1, 2]]), buffer: Buffer.from('ab') },
    [1n, 'x', { yMs: 86_400_000 }],
    { [Symbol('hidden')]: 1, '\u0000key"': 'v', 'é': 'é' },
    'top"level',
    7n,
    42,
    null,
  ]
  for (const value of cases) {
    const expected = JSON.stringify(reference(value))
    t.equal(wireJson(value), expected)
    t.equal(JSON.stringify(toWire(value)), expected)
  }
  t.throws(() => wireJson(undefined), TypeError, 'no JSON form: refused, never the text "undefined"')
  t.throws(() => wireJson({ badAtMs: 'not a time' }), RangeError, 'an invalid instant throws as toWire does')
})

t.test('a JsonText body is sent as it is and validated as the value its bytes denote', async (t) => {
  const body = new JsonText(wireJson({ amountAtomic: 5n, atMs: 0 }))
  t.equal(jsonText(body), '{"amountAtomic":"5","at":"1970-01-01T00:00:00.000Z"}')
  t.same(checkedBody(body), { amountAtomic: '5', at: '1970-01-01T00:00:00.000Z' })
  t.equal(jsonText({ a: 1 }), '{"a":1}')
  const plain = { a: 1 }
  t.equal(checkedBody(plain), plain)
})
