// The snapshots' and records' encoding on the write path (issue 11): the bytes msgpackr writes for format 3's values,
// written without msgpackr's per-key walk. msgpackr finds an object's record through a tree of dictionary objects, one
// hash lookup per key, and tests each key with hasOwnProperty, in two passes; that was a third of encoding a snapshot.
// Here an object's first key selects the shared structures that start with it, and its keys are compared with a
// structure's in order (the same interned strings, so each comparison is a pointer's). An object that matches one
// exactly is written as that record; any other object is written as a map, as msgpackr writes the objects the store
// keeps out of records (value-encoding.ts); msgpackr would write one whose first two keys start a structure as a
// record defining its own keys, which decodes to the same object. Primitives are written byte for byte as msgpackr
// writes them. A value this encoder does not write (a class instance, undefined, a bigint beyond 64 bits, a map of
// more than 65,535 keys) is left to msgpackr whole: the stored format is unchanged and any format 3 reader reads both.

/** lmdb-js's encode modes (write.js): return the encoder's buffer with start and end; the bytes are copied at once. */
const REUSE_BUFFER_MODE = 512
const RESET_BUFFER_MODE = 1024
const BUFFER_BYTES_INITIAL = 0x10000
/** A buffer grown past this for one large value is not kept for the next (msgpackr keeps up to 1 GB). */
const BUFFER_BYTES_KEPT_MAX = 0x100000
/** Room kept past the write position for a value's fixed-size bytes (a header and up to 8 bytes). */
const FIXED_BYTES_MAX = 10

/** Thrown inside a walk that met a value left to msgpackr; caught by encode(). */
const LEFT_TO_MSGPACKR = new Error('left to msgpackr')
/**
 * Thrown by a checking encoder (`jsonLikeDepthMax`) at a value that is not JSON-like plus bigint (validate.ts
 * jsonLikeProblem); its caller finds where with jsonLikeProblem, on that failure only.
 */
export const NOT_JSON_LIKE = new Error('not JSON-like')

/** The buffer lmdb-js reads an encoded value from (start and end set in its reuse mode). */
type EncodedBytes = Buffer & { start?: number; end?: number }

interface SharedStructure {
  /** The byte that names the structure in a value (msgpackr: 0x40 + its index). */
  readonly id: number
  readonly keys: readonly string[]
}

export interface StructuresEncoderOptions {
  /**
   * Checks what it writes: a value that is not JSON-like plus bigint (undefined, a function or a symbol, a non-finite
   * number, an object that is not plain, a non-empty container at this depth or deeper, the encoded value itself at
   * depth 0) throws NOT_JSON_LIKE instead of going to msgpackr.
   */
  readonly jsonLikeDepthMax?: number
}

export class StructuresEncoder {
  readonly #byFirstKey = new Map<string, SharedStructure[]>()
  /** The id of the empty structure, -1 without one. */
  readonly #emptyId: number
  readonly #checking: boolean
  readonly #depthMax: number
  /** The depth of the containers being written (in the encoded value itself: 0). */
  #depth = 0
  #target: EncodedBytes = Buffer.allocUnsafeSlow(BUFFER_BYTES_INITIAL)
  #view = new DataView(this.#target.buffer, this.#target.byteOffset, this.#target.length)
  #start = 0
  #position = 0

  constructor(structures: readonly (readonly string[])[], options: StructuresEncoderOptions = {}) {
    this.#checking = options.jsonLikeDepthMax !== undefined
    this.#depthMax = options.jsonLikeDepthMax ?? Number.POSITIVE_INFINITY
    let emptyId = -1
    structures.forEach((keys, index) => {
      const id = 0x40 + index
      const first = keys[0]
      if (first === undefined) {
        emptyId = id
        return
      }
      let list = this.#byFirstKey.get(first)
      if (list === undefined) this.#byFirstKey.set(first, (list = []))
      list.push({ id, keys: [...keys] })
    })
    this.#emptyId = emptyId
  }

  /**
   * The value's bytes, as lmdb-js's msgpackr encoder returns them for `mode`; undefined for a value left to msgpackr.
   * Without RESET_BUFFER_MODE (a write queued for lmdb-js's writer thread) the bytes stay untouched until the buffer
   * is replaced, as msgpackr's do.
   */
  encode(value: unknown, mode = 0): EncodedBytes | undefined {
    this.#start = this.#position
    this.#depth = 0
    if (this.#target.length > BUFFER_BYTES_KEPT_MAX) this.#replaceBuffer(BUFFER_BYTES_INITIAL)
    else if (this.#target.length - this.#position < 0x800) this.#replaceBuffer(this.#target.length)
    try {
      this.#pack(value)
    } catch (error) {
      this.#position = this.#start
      if (error === LEFT_TO_MSGPACKR) return undefined
      throw error
    }
    const target = this.#target
    const end = this.#position
    if ((mode & RESET_BUFFER_MODE) !== 0) this.#position = this.#start
    if ((mode & REUSE_BUFFER_MODE) === 0) return target.subarray(this.#start, end)
    target.start = this.#start
    target.end = end
    return target
  }

  #replaceBuffer(bytes: number): void {
    const next = Buffer.allocUnsafeSlow(bytes) as EncodedBytes
    this.#target.copy(next, 0, this.#start, this.#position)
    this.#position -= this.#start
    this.#start = 0
    this.#target = next
    this.#view = new DataView(next.buffer, next.byteOffset, next.length)
  }

  #ensure(bytes: number): void {
    const needed = this.#position + bytes + FIXED_BYTES_MAX
    if (needed > this.#target.length) this.#replaceBuffer(Math.max(this.#target.length * 2, (needed - this.#start) * 2))
  }

  /**
   * One `typeof value === ...` test per kind, not a `switch (typeof value)`: V8's optimizing compiler turns each such
   * test into a check of the value's type, where the switch called its typeof builtin and compared the strings it
   * returned (issue 11: about a quarter of the encoder's time in a perf profile of the load mix's pairs).
   */
  #pack(value: unknown): void {
    this.#ensure(0)
    if (typeof value === 'string') return this.#string(value)
    if (typeof value === 'number') return this.#number(value)
    if (typeof value === 'object') {
      if (value === null) {
        this.#target[this.#position++] = 0xc0
        return
      }
      if (Array.isArray(value)) return this.#array(value)
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) throw this.#checking ? NOT_JSON_LIKE : LEFT_TO_MSGPACKR
      return this.#object(value as Record<string, unknown>)
    }
    if (typeof value === 'boolean') {
      this.#target[this.#position++] = value ? 0xc3 : 0xc2
      return
    }
    if (typeof value === 'bigint') return this.#bigint(value)
    throw this.#checking ? NOT_JSON_LIKE : LEFT_TO_MSGPACKR
  }

  /** msgpackr's: the shortest header for the UTF-8 length. */
  #string(value: string): void {
    const length = value.length
    this.#ensure(length * 3 + 5)
    const target = this.#target
    const headerSize = length < 0x20 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 5
    const at = this.#position + headerSize
    // msgpackr's own loop for short strings (a lone surrogate written as its three bytes), Buffer's UTF-8 for longer
    const bytes = length < 0x40 ? writeShortUtf8(target, value, at) : target.write(value, at, 'utf8')
    let position = this.#position
    if (bytes < 0x20) {
      target[position++] = 0xa0 | bytes
    } else if (bytes < 0x100) {
      if (headerSize < 2) target.copyWithin(position + 2, position + 1, position + 1 + bytes)
      target[position++] = 0xd9
      target[position++] = bytes
    } else if (bytes < 0x10000) {
      if (headerSize < 3) target.copyWithin(position + 3, position + headerSize, position + headerSize + bytes)
      target[position++] = 0xda
      target[position++] = bytes >> 8
      target[position++] = bytes & 0xff
    } else {
      if (headerSize < 5) target.copyWithin(position + 5, position + headerSize, position + headerSize + bytes)
      target[position++] = 0xdb
      this.#view.setUint32(position, bytes)
      position += 4
    }
    this.#position = position + bytes
  }

  /** msgpackr's with records: positive integers below 0x40 in one byte (0x40..0x7f name records), doubles as float 64. */
  #number(value: number): void {
    const target = this.#target
    if (value >>> 0 === value) {
      if (value < 0x40) {
        target[this.#position++] = value
      } else if (value < 0x100) {
        target[this.#position++] = 0xcc
        target[this.#position++] = value
      } else {
        this.#uint16or32(value, 0xcd, 0xce)
      }
    } else if (value >> 0 === value) {
      if (value >= -0x20) {
        target[this.#position++] = 0x100 + value
      } else if (value >= -0x80) {
        target[this.#position++] = 0xd0
        target[this.#position++] = value + 0x100
      } else if (value >= -0x8000) {
        target[this.#position++] = 0xd1
        this.#view.setInt16(this.#position, value)
        this.#position += 2
      } else {
        target[this.#position++] = 0xd2
        this.#view.setInt32(this.#position, value)
        this.#position += 4
      }
    } else {
      if (this.#checking && value - value !== 0) throw NOT_JSON_LIKE
      target[this.#position++] = 0xcb
      this.#view.setFloat64(this.#position, value)
      this.#position += 8
    }
  }

  /** `tag16` and `n` in 16 bits when it fits, else `tag32` and `n` in 32: msgpack's unsigned integers and lengths. */
  #uint16or32(n: number, tag16: number, tag32: number): void {
    const target = this.#target
    if (n < 0x10000) {
      target[this.#position++] = tag16
      target[this.#position++] = n >> 8
      target[this.#position++] = n & 0xff
    } else {
      target[this.#position++] = tag32
      this.#view.setUint32(this.#position, n)
      this.#position += 4
    }
  }

  /** msgpackr's: int 64 when it fits, else uint 64; larger ones (its bigint extension) are left to it. */
  #bigint(value: bigint): void {
    if (BigInt.asIntN(64, value) === value) {
      this.#target[this.#position++] = 0xd3
      this.#view.setBigInt64(this.#position, value)
    } else if (BigInt.asUintN(64, value) === value) {
      this.#target[this.#position++] = 0xcf
      this.#view.setBigUint64(this.#position, value)
    } else {
      throw LEFT_TO_MSGPACKR
    }
    this.#position += 8
  }

  #array(value: readonly unknown[]): void {
    const length = value.length
    if (length < 0x10) this.#target[this.#position++] = 0x90 | length
    else this.#uint16or32(length, 0xdc, 0xdd)
    if (length === 0) return
    if (this.#depth >= this.#depthMax) throw NOT_JSON_LIKE
    this.#depth++
    for (let i = 0; i < length; i++) this.#pack(value[i])
    this.#depth--
  }

  /**
   * An object as the first structure (in the order given) whose keys are exactly its keys in order, else as a map. A
   * structure's object is walked once (issue 11: there were three walks, for its first key, the comparison and the
   * values): each value is written as its key matches the structure's; at a key that does not, the next structure
   * with the same keys so far and this one takes over (the values written stay: the same keys, the same bytes, only
   * the structure's byte differs), and if none has them the object is written again, as a map.
   */
  #object(object: Record<string, unknown>): void {
    let candidates: readonly SharedStructure[] | undefined
    let index = -1
    let keys: readonly string[] = NO_KEYS
    let idAt = 0
    let count = 0
    let keyed = false
    for (const key in object) {
      if (count === 0) {
        if (this.#depth >= this.#depthMax) throw NOT_JSON_LIKE
        this.#depth++
        keyed = true
        candidates = this.#byFirstKey.get(key)
        if (candidates === undefined) break
        index = 0
        keys = (candidates[0] as SharedStructure).keys
        // The structure's byte is written once known, at its place relative to the value's start (the buffer may be
        // replaced while the values are written).
        idAt = this.#position - this.#start
        this.#position++
      } else if (keys[count] !== key) {
        index = nextStructure(candidates as readonly SharedStructure[], index, count, key)
        if (index < 0) break
        keys = ((candidates as readonly SharedStructure[])[index] as SharedStructure).keys
      }
      count++
      this.#pack(object[key])
    }
    if (index >= 0 && count !== keys.length) index = nextStructure(candidates as readonly SharedStructure[], index, count, undefined)
    if (index >= 0) {
      this.#target[this.#start + idAt] = ((candidates as readonly SharedStructure[])[index] as SharedStructure).id
      this.#depth--
      return
    }
    if (candidates !== undefined) {
      this.#position = this.#start + idAt
    } else if (!keyed) {
      if (this.#emptyId >= 0) {
        this.#target[this.#position++] = this.#emptyId
        return
      }
      this.#depth++
    }
    // msgpackr's map: a 16-bit size, filled in after the entries (relative to the value's start: the buffer may be
    // replaced meanwhile).
    this.#target[this.#position++] = 0xde
    const sizeAt = this.#position - this.#start
    this.#position += 2
    let size = 0
    for (const key in object) {
      this.#string(key)
      this.#pack(object[key])
      size++
    }
    if (size > 0xffff) throw LEFT_TO_MSGPACKR
    this.#target[this.#start + sizeAt] = size >> 8
    this.#target[this.#start + sizeAt + 1] = size & 0xff
    this.#depth--
  }
}

const NO_KEYS: readonly string[] = []

/**
 * The index of the first structure after `from` whose keys begin as the `count` keys of structure `from` and then
 * have `key` (undefined: end there); -1 if none does.
 */
function nextStructure(candidates: readonly SharedStructure[], from: number, count: number, key: string | undefined): number {
  const matched = (candidates[from] as SharedStructure).keys
  next: for (let j = from + 1; j < candidates.length; j++) {
    const keys = (candidates[j] as SharedStructure).keys
    if (key === undefined ? keys.length !== count : keys[count] !== key) continue
    for (let k = 1; k < count; k++) if (keys[k] !== matched[k]) continue next
    return j
  }
  return -1
}

/** msgpackr's encoding of a string of fewer than 0x40 UTF-16 units at `at`; returns the bytes written. */
function writeShortUtf8(target: Buffer, value: string, at: number): number {
  let position = at
  for (let i = 0; i < value.length; i++) {
    let c1 = value.charCodeAt(i)
    let c2: number
    if (c1 < 0x80) {
      target[position++] = c1
    } else if (c1 < 0x800) {
      target[position++] = (c1 >> 6) | 0xc0
      target[position++] = (c1 & 0x3f) | 0x80
    } else if ((c1 & 0xfc00) === 0xd800 && ((c2 = value.charCodeAt(i + 1)) & 0xfc00) === 0xdc00) {
      c1 = 0x10000 + ((c1 & 0x03ff) << 10) + (c2 & 0x03ff)
      i++
      target[position++] = (c1 >> 18) | 0xf0
      target[position++] = ((c1 >> 12) & 0x3f) | 0x80
      target[position++] = ((c1 >> 6) & 0x3f) | 0x80
      target[position++] = (c1 & 0x3f) | 0x80
    } else {
      target[position++] = (c1 >> 12) | 0xe0
      target[position++] = ((c1 >> 6) & 0x3f) | 0x80
      target[position++] = (c1 & 0x3f) | 0x80
    }
  }
  return position - at
}

/**
 * Makes a snapshots or records database (opened with valueEncoding(structures)) encode what it writes with a
 * StructuresEncoder, and the rest with its msgpackr encoder; reads are unchanged. With no structures, for the live and
 * expiry indexes (lmdb-js's default msgpackr, which writes their numbers and `true` with the same bytes): msgpackr's
 * encode call costs more than a whole snapshot's walk here.
 */
export function encodeWithStructures(db: object, structures: readonly (readonly string[])[], checked?: CheckedValues): void {
  const encoder = (db as unknown as { encoder: { encode: (value: unknown, mode?: number) => Uint8Array } }).encoder
  const msgpackr = encoder.encode
  const fast = new StructuresEncoder(structures, { jsonLikeDepthMax: checked?.depthMax })
  encoder.encode = checked === undefined
    ? (value, mode) => fast.encode(value, mode) ?? msgpackr.call(encoder, value, mode)
    : (value, mode) => fast.encode(value, mode) ?? (checked.assertJsonLike(value), msgpackr.call(encoder, value, mode))
}

/**
 * How a database's encoder checks what it writes (encodeWithStructures): the depth of StructuresEncoderOptions, and
 * the check of a value it leaves to msgpackr (which would write anything), throwing NOT_JSON_LIKE.
 */
export interface CheckedValues {
  readonly depthMax: number
  readonly assertJsonLike: (value: unknown) => void
}
