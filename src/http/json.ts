// Duplicate keys in a JSON text. JSON.parse keeps the last of two equal keys silently, so `{"amountAtomic":"1",
// "amountAtomic":"1000000"}` would mean one thing to a proxy or a log reader that keeps the first and another to
// the service: such bodies are refused. Run on text JSON.parse already accepted, so the scan only tracks strings
// and nesting; one pass, no allocation except the key sets of the objects on the current path.

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

/** The JSON pointer (relative, `/a/0/b`) of the first duplicated key, or undefined when there is none. */
export function duplicateKeyPointer(text: string): string | undefined {
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
