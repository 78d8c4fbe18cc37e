// Duplicate keys in a JSON text. JSON.parse keeps the last of two equal keys silently, so `{"amountAtomic":"1",
// "amountAtomic":"1000000"}` would mean one thing to a proxy or a log reader that keeps the first and another to
// the service: such bodies are refused. Run on text JSON.parse already accepted: the text's colons, then (when a value
// holds one) the keys it names, are counted against the properties the parsed value holds, and only when they differ
// is the text scanned key by key for the pointer (tracking only strings and nesting; no allocation except the key sets
// of the objects on the current path).

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const COMMA = 0x2c

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1')
}

interface Frame {
  /** Keys seen so far; undefined for an array. */
  keys: Set<string> | undefined
  /** The key or index of this container in its parent, for the pointer of a duplicate. */
  name: string
  index: number
  /** Whether the next string in this object is a key. */
  expectKey: boolean
  lastKey: string
}

/**
 * The JSON pointer (relative, `/a/0/b`) of the first duplicated key, or undefined when there is none. `parsed` is
 * JSON.parse(text): JSON.parse keeps one property per distinct key, so when it holds as many as the text names keys no
 * key was named twice, and the text is not scanned key by key (the key-by-key scan, with a slice and a set entry per
 * key, cost more than JSON.parse itself on a credit request: 1.25 against 0.76 µs, issue 11).
 */
export function duplicateKeyPointer(text: string, parsed: unknown): string | undefined {
  const held = propertiesHeld(parsed)
  // Every key named is followed by a colon, and JSON has colons outside strings nowhere else: the text's colons are at
  // least the keys it names, which are at least the properties held. As many colons as properties (a body without a
  // colon in a string value: all of the hot ones) settles it with a few native searches, a quarter of the cost of
  // counting the keys (issue 11).
  if (colonsIn(text) === held) return undefined
  return keysNamed(text) === held ? undefined : firstDuplicate(text)
}

const COLON = 0x3a

function colonsIn(text: string): number {
  let colons = 0
  for (let at = text.indexOf(':'); at !== -1; at = text.indexOf(':', at + 1)) colons++
  return colons
}

/** Keys the text names: its strings followed by a colon (the text is JSON that JSON.parse accepted). */
function keysNamed(text: string): number {
  let keys = 0
  let open = text.indexOf('"')
  while (open !== -1) {
    let close = text.indexOf('"', open + 1)
    // A quote preceded by an odd run of backslashes is escaped, inside the string.
    while (close !== -1 && escapedAt(text, close)) close = text.indexOf('"', close + 1)
    if (close === -1) break
    let next = close + 1
    while (isJsonSpace(text.charCodeAt(next))) next++
    if (text.charCodeAt(next) === COLON) keys++
    open = text.indexOf('"', next)
  }
  return keys
}

function escapedAt(text: string, quote: number): boolean {
  let backslashes = 0
  for (let i = quote - 1; text.charCodeAt(i) === BACKSLASH; i--) backslashes++
  return backslashes % 2 === 1
}

const isJsonSpace = (code: number): boolean => code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09

/** Own properties of every object in a parsed JSON value. */
function propertiesHeld(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let count = 0
  if (Array.isArray(value)) {
    for (const item of value) count += propertiesHeld(item)
    return count
  }
  const keys = Object.keys(value)
  count = keys.length
  for (const key of keys) count += propertiesHeld((value as Record<string, unknown>)[key])
  return count
}

/** The key-by-key scan: the pointer of the first key named twice in its object. */
function firstDuplicate(text: string): string | undefined {
  const stack: Frame[] = []
  const length = text.length
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code === QUOTE) {
      const start = i + 1
      let escaped = false
      i++
      while (i < length) {
        const c = text.charCodeAt(i)
        if (c === BACKSLASH) {
          escaped = true
          i += 2
          continue
        }
        if (c === QUOTE) break
        i++
      }
      const top = stack[stack.length - 1]
      if (top !== undefined && top.keys !== undefined && top.expectKey) {
        const raw = text.slice(start, i)
        // Escapes make "a" and "\u0061" the same key: decode only when there is one.
        const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw
        if (top.keys.has(key)) return `${pointerOf(stack)}/${escapePointer(key)}`
        top.keys.add(key)
        top.lastKey = key
        top.expectKey = false
      }
      continue
    }
    if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      const parent = stack[stack.length - 1]
      const name = parent === undefined ? '' : parent.keys !== undefined ? parent.lastKey : String(parent.index)
      stack.push({ keys: code === OPEN_OBJECT ? new Set() : undefined, name, index: 0, expectKey: true, lastKey: '' })
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      stack.pop()
    } else if (code === COMMA) {
      const top = stack[stack.length - 1]
      if (top === undefined) continue
      if (top.keys !== undefined) top.expectKey = true
      else top.index++
    }
  }
  return undefined
}

function pointerOf(stack: readonly Frame[]): string {
  let pointer = ''
  for (let i = 1; i < stack.length; i++) pointer += `/${escapePointer((stack[i] as Frame).name)}`
  return pointer
}
