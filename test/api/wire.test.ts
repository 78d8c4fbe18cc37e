// The one-pass wire serializer (wireJson) and the faster toWire against the reference conversion they replaced
// (issue 11): the bytes on the wire must stay exactly those of toWire + JSON.stringify, for engine-shaped values
// derived from every response schema and for values built to hit every edge (escapes, lone surrogates, bigints,
// instants, holes, undefined, functions, non-finite numbers, `__proto__`, a key beside its `...Ms` twin).
import t from 'tap'
import { toWire, wireJson } from '../../src/api/wire.ts'
import { checkedBody, JsonText, jsonText } from '../../src/http/request.ts'
import { engineValue, random, reference, responseSchemas } from './fixtures/wire-values.ts'

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

t.test('instants whose minutes share a cache set (30 and 60 days apart, as a credit answer\'s due date) keep their own text', async (t) => {
  const now = Date.UTC(2026, 10, 28, 8, 0, 7, 123)
  const day = 86_400_000
  let compared = 0
  for (let i = 0; i < 200; i++) {
    for (const ms of [now + i * 997, now + 30 * day + i * 991, now + i * 997 + 3000, now + 60 * day + i * 983, now + 30 * day + i * 991]) {
      const expected = JSON.stringify({ at: new Date(ms).toISOString() })
      if (wireJson({ atMs: ms }) !== expected) {
        t.fail(`${ms}: ${wireJson({ atMs: ms })} against ${expected}`)
        return
      }
      compared++
    }
  }
  t.pass(`${compared} instants compared`)
})

t.test('a JsonText body is sent as it is and validated as the value its bytes denote', async (t) => {
  const body = new JsonText(wireJson({ amountAtomic: 5n, atMs: 0 }))
  t.equal(jsonText(body), '{"amountAtomic":"5","at":"1970-01-01T00:00:00.000Z"}')
  t.same(checkedBody(body), { amountAtomic: '5', at: '1970-01-01T00:00:00.000Z' })
  t.equal(jsonText({ a: 1 }), '{"a":1}')
  const plain = { a: 1 }
  t.equal(checkedBody(plain), plain)
})
