// duplicateKeyPointer answers from a count (the keys the text names against the properties JSON.parse kept) and scans
// key by key only when they differ: checked here against a reference that walks the text as a JSON parser would, over
// generated bodies (nesting, arrays, whitespace, escaped quotes and backslashes in keys and values, keys spelled with
// escapes, `__proto__`, key-like text inside values) with and without a key given twice.
import t from 'tap'
import { duplicateKeyPointer } from '../../src/http/json.ts'

/** The pointer of the first key named twice in its object, by a recursive-descent walk of the text. */
function referencePointer(text: string): string | undefined {
  let i = 0
  let found: string | undefined
  const space = () => { while (/\s/.test(text[i] ?? '')) i++ }
  const string = (): string => {
    const start = i
    i++
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  const value = (pointer: string): void => {
    space()
    if (text[i] === '{') {
      i++
      const keys = new Set<string>()
      space()
      if (text[i] === '}') { i++; return }
      for (;;) {
        space()
        const key = string()
        const escaped = key.replace(/~/g, '~0').replace(/\//g, '~1')
        if (keys.has(key) && found === undefined) found = `${pointer}/${escaped}`
        keys.add(key)
        space()
        i++ // ':'
        value(`${pointer}/${escaped}`)
        space()
        if (text[i++] === '}') return
      }
    }
    if (text[i] === '[') {
      i++
      space()
      if (text[i] === ']') { i++; return }
      for (let index = 0; ; index++) {
        value(`${pointer}/${index}`)
        space()
        if (text[i++] === ']') return
      }
    }
    if (text[i] === '"') { string(); return }
    while (i < text.length && !/[,\]}\s]/.test(text[i] as string)) i++
  }
  value('')
  return found
}

/** A deterministic generator (mulberry32), so that a failure names its seed. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let r = Math.imul(a ^ (a >>> 15), 1 | a)
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296
  }
}

const KEY_TEXTS = ['a', 'b', 'amountAtomic', '__proto__', 'x\\"y', 'back\\\\', '\\u0061', 'sl/ash', 'ti~lde', 'q\\\\\\"', '\\":', 'n\\n']
const VALUE_TEXTS = ['"plain"', '"a\\":1,\\"a\\":2"', '"\\\\"', '"\\\\\\""', '1', '-2.5e3', 'true', 'null', '"k\\": "', '""']

function generate(next: () => number, depth: number): string {
  const ws = () => [' ', '', '\n', '\t', ''][Math.floor(next() * 5)] as string
  const roll = next()
  if (depth > 3 || roll < 0.35) return VALUE_TEXTS[Math.floor(next() * VALUE_TEXTS.length)] as string
  if (roll < 0.55) {
    const items = Array.from({ length: Math.floor(next() * 4) }, () => ws() + generate(next, depth + 1) + ws())
    return `[${items.join(',')}]`
  }
  const count = Math.floor(next() * 6)
  const keys = Array.from({ length: count }, () => KEY_TEXTS[Math.floor(next() * KEY_TEXTS.length)] as string)
  return `{${keys.map((key) => `${ws()}"${key}"${ws()}:${ws()}${generate(next, depth + 1)}${ws()}`).join(',')}}`
}

t.test('the count agrees with the key-by-key walk on generated bodies, duplicates or not', async (t) => {
  let duplicates = 0
  let clean = 0
  for (let seed = 1; seed <= 4000; seed++) {
    const text = generate(random(seed), 0)
    const expected = referencePointer(text)
    const actual = duplicateKeyPointer(text, JSON.parse(text))
    if (actual !== expected) t.fail(`seed ${seed}: ${text} gave ${actual}, expected ${expected}`)
    if (expected === undefined) clean++
    else duplicates++
  }
  t.ok(duplicates > 500 && clean > 500, `both kinds generated (${duplicates} with a duplicate, ${clean} without)`)
})

t.test('a duplicate spelled apart, deep in arrays, or hidden beside key-like text in values is found', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['{"a":1,"\\u0061":2}', '/a'],
    ['[{"a":1},{"a":1,"b":{"c":[{"d":1,"d":2}]}}]', '/1/b/c/0/d'],
    ['{"v":"\\"v\\":1","w":"\\\\","v":2}', '/v'],
    ['{"__proto__":1,"__proto__":2}', '/__proto__'],
    ['{"a" : {"b":1} , "c" :[1,{"b":2}]}', undefined],
    ['{"k":"\\\\\\"k\\":","k2":1}', undefined],
    // Colons in values: more colons than properties, so the keys are counted (the count of colons settles the rest).
    ['{"a":"x:y","a":1}', '/a'],
    ['{"a":"x:y","b":{"c":":"}}', undefined],
    ['"just a string"', undefined],
    ['[]', undefined],
  ]
  for (const [text, pointer] of cases) t.equal(duplicateKeyPointer(text, JSON.parse(text)), pointer, text)
})
