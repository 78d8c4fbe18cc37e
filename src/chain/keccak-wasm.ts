// keccak-256 in WebAssembly, for the hashes of the credit request (offer keys, job keys, address checksums: issue 11,
// the `perfengine23` round). The module is written here, byte by byte, at its first use: one function, keccak-f[1600]
// on 64-bit lanes held in locals, 24 rounds in a loop (unrolled, it measured slower). A hash is one call out of
// JavaScript: the input is copied into the module's memory and padded there, the digest read back from it; the
// `keccak` package's native state takes three calls (initialize, absorb, squeeze) and returns a new Buffer.
// test/chain/keccak.test.ts compares it with viem's keccak256 for every length class around the 136-byte rate.

/** What this file uses of WebAssembly's API (Node's global; the project's TypeScript libraries do not declare it). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> }
}
interface WasmMemory {
  readonly buffer: ArrayBuffer
  grow(pages: number): number
}

const rate = 136
const digestBytes = 32
// The module's memory: the digest at 0, the 24 round constants at 64, the padded input from 256 on.
const roundConstantsAt = 64
const inputAt = 256
const pageBytes = 65_536

// Rotation offsets by lane x + 5y, and the round constants (FIPS 202, keccak-f[1600]).
const rotations = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14]
const roundConstants = [
  0x0000000000000001n, 0x0000000000008082n, 0x800000000000808an, 0x8000000080008000n,
  0x000000000000808bn, 0x0000000080000001n, 0x8000000080008081n, 0x8000000000008009n,
  0x000000000000008an, 0x0000000000000088n, 0x0000000080008009n, 0x000000008000000an,
  0x000000008000808bn, 0x800000000000008bn, 0x8000000000008089n, 0x8000000000008003n,
  0x8000000000008002n, 0x8000000000000080n, 0x000000000000800an, 0x800000008000000an,
  0x8000000080008081n, 0x8000000000008080n, 0x0000000080000001n, 0x8000000080008008n,
]

/** Unsigned LEB128 (sizes, counts, indexes, memory offsets). */
function uleb(value: number): number[] {
  const out: number[] = []
  do {
    let byte = value & 0x7f
    value >>>= 7
    if (value !== 0) byte |= 0x80
    out.push(byte)
  } while (value !== 0)
  return out
}

/**
 * Signed LEB128 of a non-negative number below 2^31 (i32.const, i64.const): the unsigned encoding, and a zero byte
 * more if its last byte's sign bit is set.
 */
function sleb(value: number): number[] {
  const out = uleb(value)
  const last = out[out.length - 1] as number
  return (last & 0x40) === 0 ? out : [...out.slice(0, -1), last | 0x80, 0]
}

const vector = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()]
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body]
const name = (text: string): number[] => [...uleb(text.length), ...Buffer.from(text, 'latin1')]

const op = {
  block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b, localGet: 0x20, localSet: 0x21, localTee: 0x22,
  i32Const: 0x41, i64Const: 0x42, i64Load: 0x29, i64Store: 0x37, i32Add: 0x6a, i32GeU: 0x4f, i32Ne: 0x47,
  i64And: 0x83, i64Xor: 0x85, i64Rotl: 0x89,
}
const i32 = 0x7f
const i64 = 0x7e
const noResult = 0x40
/** An i64.load or i64.store's alignment (2^3 bytes) and offset. */
const lane = (offset: number): number[] => [3, ...uleb(offset)]

/**
 * absorb(from, to): the state starts at zero, xors each 136-byte block of [from, to) into its first 17 lanes and
 * permutes, then stores its first four lanes (the digest, little-endian) at address 0.
 */
function absorbBody(): number[] {
  // Locals: 0 from and 1 to (the parameters), 2 the round constant's address, 3-27 the state a[x + 5y], 28-32
  // theta's column parities c[x], 33 theta's d, 34-58 rho and pi's b[x + 5y].
  const round = 2
  const a = (i: number): number => 3 + i
  const c = (x: number): number => 28 + x
  const d = 33
  const b = (i: number): number => 34 + i
  const code: number[] = []
  const get = (local: number): void => void code.push(op.localGet, local)
  const set = (local: number): void => void code.push(op.localSet, local)

  code.push(op.block, noResult, op.loop, noResult)
  get(0), get(1), code.push(op.i32GeU, op.brIf, 1)
  for (let i = 0; i < rate / 8; i++) get(a(i)), get(0), code.push(op.i64Load, ...lane(8 * i), op.i64Xor), set(a(i))
  code.push(op.i32Const, ...sleb(roundConstantsAt)), set(round)
  code.push(op.loop, noResult)
  // theta
  for (let x = 0; x < 5; x++) {
    get(a(x))
    for (let y = 1; y < 5; y++) get(a(x + 5 * y)), code.push(op.i64Xor)
    set(c(x))
  }
  for (let x = 0; x < 5; x++) {
    get(c((x + 4) % 5)), get(c((x + 1) % 5)), code.push(op.i64Const, 1, op.i64Rotl, op.i64Xor), set(d)
    for (let y = 0; y < 5; y++) get(a(x + 5 * y)), get(d), code.push(op.i64Xor), set(a(x + 5 * y))
  }
  // rho and pi: b[y + 5((2x + 3y) mod 5)] = a[x + 5y] rotated left by its offset
  for (let x = 0; x < 5; x++) {
    for (let y = 0; y < 5; y++) {
      const i = x + 5 * y
      get(a(i))
      if (rotations[i] !== 0) code.push(op.i64Const, ...sleb(rotations[i] as number), op.i64Rotl)
      set(b(y + 5 * ((2 * x + 3 * y) % 5)))
    }
  }
  // chi: a[x + 5y] = b[x + 5y] ^ (~b[x + 1 + 5y] & b[x + 2 + 5y]), ~ as a xor with -1 (0x7f)
  for (let y = 0; y < 5; y++) {
    for (let x = 0; x < 5; x++) {
      get(b(x + 5 * y)), get(b(((x + 1) % 5) + 5 * y)), code.push(op.i64Const, 0x7f, op.i64Xor)
      get(b(((x + 2) % 5) + 5 * y)), code.push(op.i64And, op.i64Xor), set(a(x + 5 * y))
    }
  }
  // iota, then the next round until the 24th
  get(a(0)), get(round), code.push(op.i64Load, ...lane(0), op.i64Xor), set(a(0))
  get(round), code.push(op.i32Const, 8, op.i32Add, op.localTee, round, op.i32Const, ...sleb(roundConstantsAt + 8 * 24))
  code.push(op.i32Ne, op.brIf, 0, op.end)
  // the next block
  get(0), code.push(op.i32Const, ...sleb(rate), op.i32Add), set(0)
  code.push(op.br, 0, op.end, op.end)
  for (let i = 0; i < digestBytes / 8; i++) code.push(op.i32Const, 0), get(a(i)), code.push(op.i64Store, ...lane(8 * i))
  code.push(op.end)
  return [...vector([[1, i32], [56, i64]]), ...code]
}

/** The module: the function and one memory of one page (grown by the hasher for a longer input), both exported. */
export function keccakWasmModule(): Uint8Array {
  const body = absorbBody()
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vector([[0x60, ...vector([[i32], [i32]]), ...vector([])]])), // type 0: (i32, i32) -> ()
    ...section(3, vector([[0]])), // function 0 of type 0
    ...section(5, vector([[0x00, 1]])), // memory 0: at least one page
    ...section(7, vector([[...name('memory'), 0x02, 0], [...name('absorb'), 0x00, 0]])),
    ...section(10, vector([[...uleb(body.length), ...body]])),
  ])
}

export interface WasmKeccak {
  /** keccak256 of `data`: 32 bytes of a Buffer of their own. */
  hash(data: Uint8Array): Buffer
  /** keccak256 of `data` as 64 lower-case hex digits, without 0x. */
  hex(data: Uint8Array): string
  /** hex() of `prefix` then `text`'s UTF-8 bytes, written into the module's memory as they are (no packed copy). */
  hexOfPrefixed(prefix: Uint8Array, text: string): string
}

/**
 * A keccak256 on one instance of the module (throws where WebAssembly is missing: node --jitless). Hashing is
 * synchronous, so no two hashes share its memory at once.
 */
export function keccakWasmHasher(): WasmKeccak {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(keccakWasmModule()), {})
  const memory = instance.exports.memory as WasmMemory
  const absorb = instance.exports.absorb as (from: number, to: number) => void
  let bytes = Buffer.from(memory.buffer)
  roundConstants.forEach((constant, i) => bytes.writeBigUInt64LE(constant, roundConstantsAt + 8 * i))
  /** Room for `length` bytes of input and their padding. */
  const reserve = (length: number): void => {
    const end = inputAt + (Math.floor(length / rate) + 1) * rate
    if (end <= bytes.length) return
    memory.grow(Math.ceil((end - bytes.length) / pageBytes))
    bytes = Buffer.from(memory.buffer)
  }
  /** Pads the `length` bytes of input in place and hashes them. */
  const digest = (length: number): void => {
    // keccak's padding (pad10*1 with the 0x01 delimiter, not SHA-3's 0x06): at least one byte, up to the rate.
    const end = inputAt + (Math.floor(length / rate) + 1) * rate
    bytes.fill(0, inputAt + length, end)
    bytes[inputAt + length] = 0x01
    bytes[end - 1] = (bytes[end - 1] as number) | 0x80
    absorb(inputAt, end)
  }
  const input = (data: Uint8Array): number => {
    reserve(data.length)
    bytes.set(data, inputAt)
    return data.length
  }
  return {
    hash: (data) => {
      digest(input(data))
      return Buffer.from(bytes.subarray(0, digestBytes))
    },
    hex: (data) => {
      digest(input(data))
      return bytes.toString('hex', 0, digestBytes)
    },
    hexOfPrefixed: (prefix, text) => {
      // At most three UTF-8 bytes per UTF-16 code unit (a surrogate pair is four for two).
      reserve(prefix.length + 3 * text.length)
      bytes.set(prefix, inputAt)
      digest(prefix.length + bytes.write(text, inputAt + prefix.length, 'utf8'))
      return bytes.toString('hex', 0, digestBytes)
    },
  }
}
