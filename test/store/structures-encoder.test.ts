import fs from 'node:fs'
import path from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { open, type RootDatabase } from 'lmdb'
import t from 'tap'
import { VALUE_STRUCTURES, valueEncoding, type Change } from '../../src/store/index.ts'
import { NOT_JSON_LIKE, StructuresEncoder } from '../../src/store/structures-encoder.ts'
import { jsonLikeProblem, VALUE_DEPTH_MAX } from '../../src/store/validate.ts'
import { BORROWER, T0, dispatchAt, fundAdvance, hash, lenderInput, newEngine, offerFor, registerBacking, repaidFact, unwrap } from '../engine/fixtures/world.ts'
import { tempDir } from './fixtures/helpers.ts'

/** lmdb-js's encode modes (write.js): a synchronous put's (the buffer reused and reset) and a queued put's. */
const SYNC_PUT_MODE = 512 | 1024
const QUEUED_PUT_MODE = 512

type Encoded = Uint8Array & { start?: number; end?: number }
interface Msgpackr {
  encode(value: unknown, mode?: number): Encoded
  decode(bytes: Uint8Array): unknown
}

/**
 * The msgpackr encoder lmdb-js makes from format 3's options (with `structures`, by default the store's): what the
 * store wrote before, and what reads decode with.
 */
function msgpackrOfFormat3(t: { teardown: (fn: () => unknown) => void }, structures: readonly (readonly string[])[] = VALUE_STRUCTURES): Msgpackr {
  const dir = tempDir('structures-encoder-')
  const root: RootDatabase = open({ path: dir, useBigIntExtension: true } as never)
  t.teardown(async () => {
    await root.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return (root.openDB({ name: 'snapshots', ...valueEncoding(structures) } as never) as unknown as { encoder: Msgpackr }).encoder
}

const bytesOf = (encoded: Encoded): Buffer => Buffer.from(encoded.subarray(encoded.start ?? 0, encoded.end ?? encoded.length))

/** Every snapshot and record a lifecycle writes: registrations, offers, leases (one expired), an advance repaid. */
function lifecycleChanges(): Change[] {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  unwrap(engine.registerLender(lenderInput(2), T0))
  const changes: Change[] = [...engine.snapshots()]
  unwrap(engine.matchOffer({ offerId: offerFor(engine), caller: BORROWER }, T0))
  changes.push(...engine.snapshots())
  unwrap(dispatchAt(engine, T0 + 10 * 60_000))
  changes.push(...engine.snapshots())
  const advanceId = fundAdvance(engine, {}, T0 + 11 * 60_000, 2)
  changes.push(...engine.snapshots())
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(77)), T0 + 12 * 60_000))
  changes.push(...engine.snapshots())
  return changes
}

/**
 * Whether an object in `value` starts a shared structure (its first two keys) but has keys of its own: msgpackr writes
 * it as a record defining those keys, the StructuresEncoder as a map; both read back as the same object.
 */
function extendsAStructure(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (Array.isArray(value)) return value.some(extendsAStructure)
  const keys = Object.keys(value)
  const starts = VALUE_STRUCTURES.some((s) => s[0] === keys[0] && s[1] === keys[1])
  const exact = VALUE_STRUCTURES.some((s) => s.length === keys.length && s.every((k, i) => k === keys[i]))
  return (starts && !exact) || Object.values(value).some(extendsAStructure)
}

t.test("the engine's snapshots are written byte for byte as msgpackr writes them: format 3's records over the shared structures", (t) => {
  const msgpackr = msgpackrOfFormat3(t)
  const encoder = new StructuresEncoder(VALUE_STRUCTURES)
  const changes = lifecycleChanges()
  const kinds = new Set(changes.map((change) => change.kind))
  t.ok(['offer', 'lease', 'advance', 'lender', 'source', 'borrower', 'reserve', 'meta'].every((kind) => kinds.has(kind as Change['kind'])), `every kind met: ${[...kinds].join(', ')}`)
  const entries = changes.map((change) => ({ version: 1, snapshot: change.record, updatedAtMs: T0 + 1, final: change.final }))
  const [own, exact] = [entries.filter(extendsAStructure), entries.filter((entry) => !extendsAStructure(entry))]
  t.ok(exact.length > own.length, `${exact.length} values of the shared structures and maps only`)
  const differing = exact.flatMap((entry, i) => (bytesOf(encoder.encode(entry, SYNC_PUT_MODE) as Encoded).equals(bytesOf(msgpackr.encode(entry))) ? [] : [i]))
  t.same(differing, [], 'the same bytes')
  // the engine's meta record once the chain's time is known: its sequences and a map by network
  t.ok(own.length > 0, `${own.length} with an object that extends a structure`)
  t.same(own.filter((entry) => !isDeepStrictEqual(msgpackr.decode(bytesOf(encoder.encode(entry) as Encoded)), entry)), [], 'which read back the same')
  const record = { version: 1, value: { usedBy: 'lse_1', usedAtMs: T0 }, updatedAtMs: T0, expiresAtMs: null }
  t.ok(bytesOf(encoder.encode(record) as Encoded).equals(bytesOf(msgpackr.encode(record))), 'a record entry too')
  t.end()
})

t.test('each shared structure is chosen by all its keys in one walk: exact objects as msgpackr writes them, any other shape as a map', (t) => {
  const msgpackr = msgpackrOfFormat3(t)
  const encoder = new StructuresEncoder(VALUE_STRUCTURES)
  const objectOf = (keys: readonly string[]): Record<string, unknown> => Object.fromEntries(keys.map((k, i) => [k, i % 2 === 0 ? `v${i}` : { n: i }]))
  // structures that share their first keys (the entries, `status`, `address`, `network`, `kind`): the walk moves between them
  for (const keys of VALUE_STRUCTURES) {
    const exact = objectOf(keys)
    t.ok(bytesOf(encoder.encode(exact, SYNC_PUT_MODE) as Encoded).equals(bytesOf(msgpackr.encode(exact))), `[${keys.slice(0, 3).join(', ')}]: its record, msgpackr's bytes`)
    const others = [keys.slice(0, -1), [...keys, 'more'], [...keys.slice(0, 1), 'other', ...keys.slice(2)], [...keys.slice(0, -1), 'last']]
    for (const shape of others.filter((o) => o.length > 0 && !VALUE_STRUCTURES.some((s) => s.length === o.length && s.every((k, i) => k === o[i])))) {
      const value = { version: 1, snapshot: objectOf(shape), updatedAtMs: 7, final: false }
      const bytes = bytesOf(encoder.encode(value, SYNC_PUT_MODE) as Encoded)
      // the entry's record id, its version, then the snapshot: a map (0xde) however far its keys followed a structure
      t.equal(bytes[2], 0xde, `[${shape.slice(0, 3).join(', ')}...] (${shape.length} keys): a map`)
      t.same(msgpackr.decode(bytes), value, 'which reads back as written')
    }
  }
  t.end()
})

t.test('structures that share their first keys: the first whose keys are exactly the object\'s, however far the others followed it', (t) => {
  // prefixes of one another (longer first and shorter first), a fork after two keys, and later ones that end or go on
  // as an earlier one does but differ before
  const structures = [['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'b'], ['a'], ['a', 'c'], ['a', 'c', 'e', 'f'], ['a', 'x', 'g'], ['a', 'y', 'z'], ['b']]
  const msgpackr = msgpackrOfFormat3(t, structures)
  const encoder = new StructuresEncoder(structures)
  const shapes = [
    ['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'b'], ['a'], ['a', 'c'], ['b'],
    ['a', 'c', 'e', 'f'], ['a', 'x', 'g'], ['a', 'b', 'g'], ['a', 'b', 'c', 'd'], ['a', 'b', 'e'], ['a', 'c', 'd'], ['a', 'c', 'e'], ['a', 'd'], ['b', 'a'], ['c'], [],
  ]
  for (const shape of shapes) {
    const value = { outer: Object.fromEntries(shape.map((k, i) => [k, i === 1 ? { nested: [i, `s${i}`] } : `v${i}`])) }
    const ours = bytesOf(encoder.encode(value.outer, SYNC_PUT_MODE) as Encoded)
    const exact = structures.findIndex((keys) => keys.length === shape.length && keys.every((k, i) => k === shape[i]))
    if (exact >= 0) t.ok(ours.equals(bytesOf(msgpackr.encode(value.outer))), `[${shape.join(', ')}]: structure ${exact}, msgpackr's bytes`)
    else t.equal(ours[0], 0xde, `[${shape.join(', ')}]: a map`)
    t.same(msgpackr.decode(ours), value.outer, `[${shape.join(', ')}]: reads back as written`)
    // the same object nested in another, written into a buffer that already holds values
    const nested = bytesOf(encoder.encode([value, value], SYNC_PUT_MODE) as Encoded)
    t.same(msgpackr.decode(nested), [value, value], `[${shape.join(', ')}] nested twice: reads back as written`)
  }
  t.end()
})

t.test('every JSON-like value reads back as written, whatever its shape; primitives are written as msgpackr writes them', (t) => {
  const msgpackr = msgpackrOfFormat3(t)
  const encoder = new StructuresEncoder(VALUE_STRUCTURES)
  // every integer width either side of each boundary, doubles, -0, strings of every header size and of 1 to 4 UTF-8 bytes per character
  const integer = fc.oneof(
    fc.integer({ min: -0x8000_0001, max: 0x1_0000_0001 }),
    fc.constantFrom(0x3f, 0x40, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffff_ffff, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, -0x8000_0000, -0x8000_0001, 2 ** 53 - 1, -0),
  )
  const text = fc.oneof(fc.string({ maxLength: 70, unit: 'binary' }), fc.string({ minLength: 0x1f, maxLength: 0x110, unit: 'grapheme' }), fc.constantFrom('a'.repeat(0x20), 'é'.repeat(0x10), 'é'.repeat(0x80), '€'.repeat(0x55), '€'.repeat(0x5556), '😀'.repeat(0x40), 'x'.repeat(0x10000)))
  const leaf = fc.oneof(integer, fc.double({ noNaN: true, noDefaultInfinity: true }), text, fc.constant(null), fc.boolean(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }))
  // msgpackr writes -0 as 0 (so did the store before), and a lone surrogate beyond 0x40 units as U+FFFD: not compared by value
  const sameWhenRead = leaf.filter((value) => !Object.is(value, -0) && !(typeof value === 'string' && value.length >= 0x40 && Buffer.from(value, 'utf8').toString('utf8') !== value))
  const key = fc.string({ minLength: 1, maxLength: 6 }).filter((k) => k !== '__proto__')
  const { node } = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, sameWhenRead, fc.array(tie('node'), { maxLength: 20 }), tie('shaped'), fc.dictionary(key, tie('node'), { maxKeys: 20, noNullPrototype: true })),
    // a shared structure's keys in its order (its record), reversed, cut short or with one more key (a map)
    shaped: fc
      .tuple(fc.constantFrom(...VALUE_STRUCTURES), fc.constantFrom('exact', 'reversed', 'short', 'longer'), fc.array(tie('node'), { maxLength: 30 }))
      .map(([keys, form, values]) => {
        const ordered = form === 'reversed' ? [...keys].reverse() : form === 'short' ? keys.slice(0, -1) : form === 'longer' ? [...keys, 'more'] : keys
        return Object.fromEntries(ordered.map((k, i) => [k, values[i] ?? i]))
      }),
  }))
  fc.assert(
    fc.property(node, (value) => {
      const ours = bytesOf(encoder.encode(value, SYNC_PUT_MODE) as Encoded)
      return isDeepStrictEqual(msgpackr.decode(ours), value)
    }),
    { numRuns: 1000, seed: 3 },
  )
  fc.assert(
    fc.property(leaf, (value) => bytesOf(encoder.encode(value) as Encoded).equals(bytesOf(msgpackr.encode(value)))),
    { numRuns: 2000, seed: 5 },
  )
  t.pass('1,000 values read back; 2,000 primitives written as msgpackr writes them')
  t.end()
})

t.test('a value it does not write is left to msgpackr whole; one that cannot be encoded at all still throws', (t) => {
  const encoder = new StructuresEncoder(VALUE_STRUCTURES)
  for (const value of [2n ** 64n, -(2n ** 63n) - 1n, new Date(0), { nested: [undefined] }, new Map(), Object.fromEntries(Array.from({ length: 0x10000 }, (_, i) => [`k${i}`, i]))]) {
    t.equal(encoder.encode({ version: 1, snapshot: value, updatedAtMs: 1, final: false }), undefined)
  }
  const after = encoder.encode('after', SYNC_PUT_MODE) as Encoded
  t.equal(after.start, 0, 'nothing of a value left to msgpackr stays in the buffer')
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  t.throws(() => encoder.encode(cyclic), RangeError)
  t.end()
})

t.test("a queued put's bytes stay as encoded while later values are encoded, past the buffer's replacement; large values grow it", (t) => {
  const msgpackr = msgpackrOfFormat3(t)
  const encoder = new StructuresEncoder(VALUE_STRUCTURES)
  const values = Array.from({ length: 400 }, (_, i) => ({ version: i, snapshot: { s: 'v'.repeat(i * 7), big: [BigInt(i) * 10n ** 15n] }, updatedAtMs: i, final: i % 2 === 0 }))
  values.push({ version: 401, snapshot: { s: 'w'.repeat(300_000), big: Array.from({ length: 70_000 }, (_, i) => BigInt(i)) }, updatedAtMs: 1, final: true })
  const queued = values.map((value) => {
    const encoded = encoder.encode(value, QUEUED_PUT_MODE) as Encoded
    return { value, buffer: encoded, start: encoded.start as number, end: encoded.end as number }
  })
  t.ok(new Set(queued.map((q) => q.buffer)).size > 1, 'the buffer was replaced')
  const changed = queued.flatMap((q, i) => (isDeepStrictEqual(msgpackr.decode(q.buffer.subarray(q.start, q.end)), q.value) ? [] : [i]))
  t.same(changed, [], 'every queued value decodes as written')
  t.ok((encoder.encode({}, SYNC_PUT_MODE) as Encoded).length <= 0x100000, 'the buffer grown for the large value is not kept')
  t.end()
})

t.test('the store writes with it: a value beyond it (a 256-bit amount) and ones of every shape read back after a reopen', async (t) => {
  const { Store } = await import('../../src/store/index.ts')
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const store = await Store.open({ dataDir })
  const changes = lifecycleChanges()
  const wide = { kind: 'reserve', id: 'wide', record: { balanceAtomic: 2n ** 256n - 1n, text: 'ü'.repeat(0x9000) }, final: false } satisfies Change
  await store.commit({ changes: [...changes, wide] })
  await store.close()
  const again = await Store.open({ dataDir })
  t.teardown(() => again.close())
  const last = new Map(changes.map((change) => [`${change.kind} ${change.id}`, change]))
  const unequal = [...last.values(), wide].flatMap((change) => (isDeepStrictEqual(again.getSnapshot(change.kind, change.id)?.snapshot, change.record) ? [] : [`${change.kind} ${change.id}`]))
  t.same(unequal, [])
})

t.test("the live and expiry indexes' values (a time, `true`) are written as lmdb-js's default encoder writes them", async (t) => {
  const { Store } = await import('../../src/store/index.ts')
  const dir = tempDir('structures-encoder-')
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  // lmdb-js's default encoder, which the live and expiry indexes were written with before the store hooked them
  const plainRoot: RootDatabase = open({ path: path.join(dir, 'plain'), useBigIntExtension: true } as never)
  const plain = (plainRoot.openDB({ name: 'live' }) as unknown as { encoder: Msgpackr }).encoder
  t.teardown(() => plainRoot.close())
  const times = [0, 1, 0x3f, 0x40, 0x7f, 0x80, 0xffff, 0x10000, 0xffff_ffff, 0x1_0000_0000, 1_700_000_000_000, 8_000_000_000_000]
  const nowMs = { value: 0 }
  const dataDir = path.join(dir, 'data')
  const store = await Store.open({ dataDir, clock: () => nowMs.value })
  const collection = store.collection<{ n: number }>('expiring')
  for (const time of times) {
    nowMs.value = time
    await store.commit({
      changes: [{ kind: 'offer', id: `off_${time}`, record: { n: time }, final: false }],
      records: [collection.putOp(`k${time}`, { n: time }, { expiresAtMs: time + 1 })],
    })
  }
  await store.close()
  const root: RootDatabase = open({ path: dataDir, useBigIntExtension: true } as never)
  t.teardown(() => root.close())
  const live = root.openDB<Buffer, [string, string]>({ name: 'live', encoding: 'binary' } as never)
  const expiry = root.openDB<Buffer, [number, string, string]>({ name: 'expiry', encoding: 'binary' } as never)
  const differing = times.filter((time) => !Buffer.from(live.get(['offer', `off_${time}`]) as Buffer).equals(bytesOf(plain.encode(time))))
  t.same(differing, [], 'each live entry: its time')
  const entries = [...expiry.getRange()]
  t.equal(entries.length, times.length)
  t.same(entries.filter(({ value }) => !Buffer.from(value).equals(bytesOf(plain.encode(true)))), [], 'each expiry entry: true')
})

// Issue 11 (perfstore17): the snapshots database's encoder checks what it writes instead of a walk of its own when the
// commit is prepared. It must refuse exactly what jsonLikeProblem refuses (a snapshot entry holds the record one level
// down) and write the same bytes as the encoder that does not check.
t.test('a checking encoder refuses exactly what jsonLikeProblem refuses, and writes the same bytes otherwise', async (t) => {
  const checking = new StructuresEncoder(VALUE_STRUCTURES, { jsonLikeDepthMax: VALUE_DEPTH_MAX + 1 })
  const plain = new StructuresEncoder(VALUE_STRUCTURES)
  const nested = (levels: number, leaf: unknown, array = false): unknown => {
    let value = leaf
    for (let i = 0; i < levels; i++) value = array ? [value] : { n: value }
    return value
  }
  const records: unknown[] = [
    1, 'text', 2n ** 63n - 1n, -(2n ** 63n), true, null, 0.5, -0, [], {}, Object.create(null),
    { a: [1, { b: 'c' }], d: null }, ...lifecycleChanges().map((change) => change.record),
    Number.NaN, Number.POSITIVE_INFINITY, { a: [1, { b: Number.NEGATIVE_INFINITY }] }, { d: new Map() }, new Date(0), [[[() => 1]]],
    { s: Symbol('s') }, { u: undefined }, [1, , 3], Object.assign(Object.create(null), { fine: 1, lost: undefined }),
    // depth: a container at depth VALUE_DEPTH_MAX (the record at 0) may be empty, not hold anything
    nested(VALUE_DEPTH_MAX, {}), nested(VALUE_DEPTH_MAX, []), nested(VALUE_DEPTH_MAX, 1), nested(VALUE_DEPTH_MAX + 1, 1),
    nested(VALUE_DEPTH_MAX - 1, [1]), nested(VALUE_DEPTH_MAX, [1]), nested(VALUE_DEPTH_MAX, 1, true), nested(VALUE_DEPTH_MAX + 1, 1, true),
  ]
  let refused = 0
  for (const [i, record] of records.entries()) {
    const entry = { version: 1, snapshot: record, updatedAtMs: T0, final: false }
    const problem = jsonLikeProblem(record)
    let thrown: unknown
    let bytes: Buffer | undefined
    try {
      const encoded = checking.encode(entry, SYNC_PUT_MODE)
      bytes = encoded === undefined ? undefined : bytesOf(encoded)
    } catch (error) {
      thrown = error
    }
    if (problem !== undefined) {
      refused++
      t.equal(thrown, NOT_JSON_LIKE, `record ${i} refused (${problem.message})`)
      continue
    }
    t.equal(thrown, undefined, `record ${i} accepted`)
    const expected = plain.encode(entry, SYNC_PUT_MODE)
    t.same(bytes, expected === undefined ? undefined : bytesOf(expected), `record ${i}: the same bytes`)
  }
  t.equal(refused, 13, 'every kind of refusal met')
})
