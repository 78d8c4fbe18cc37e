// keccak-256 on the request + match path. Offer keys, job keys and address checksums hash in WebAssembly
// (keccak-wasm.ts, `keccak256Bytes` and `keccak256Hex` below); lease authorization digests by the `keccak` package's
// sponge state called directly (`keccakHasher`): the package's own API builds a Transform stream per hash, which cost
// more than the permutation (about 5 us of CPU a hash against 1.8 us for the same native calls without it). One state
// is re-initialized per hash: hashing is synchronous, so no two hashes share it at once. The state is libkeccak's
// native addon where it loads, else the package's JavaScript state, the fallback the package itself takes.
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type { Hex } from 'viem'
import { keccakWasmHasher, type WasmKeccak } from './keccak-wasm.ts'

/** The part of the package's state class used here, the same in its native addon and its JavaScript build. */
type KeccakState = {
  initialize(rate: number, capacity: number): void
  absorb(data: Buffer): void
  /** Pads with keccak's delimiter (0x01, not SHA-3's 0x06) before the first squeeze, as keccak256 wants. */
  squeeze(length: number): Buffer
}
type KeccakStateClass = new () => KeccakState

export type KeccakImplementation = 'native' | 'javascript'

// keccak256: a rate of 1088 bits and a capacity of 512 (the package's 'keccak256' entry), a 32-byte digest.
const rate = 1088
const capacity = 512
const digestBytes = 32

const require = createRequire(import.meta.url)
const packageDir = dirname(require.resolve('keccak/package.json'))

/** The native state class as the package's bindings.js loads it (node-gyp-build, resolved from the package), or why not. */
function loadNativeState(): { State: KeccakStateClass; error: undefined } | { State: undefined; error: string } {
  try {
    const nodeGypBuild = createRequire(`${packageDir}/package.json`)('node-gyp-build') as (dir: string) => unknown
    const addon = nodeGypBuild(packageDir)
    // bindings.js's own check: a runtime without N-API can return an object here instead of throwing.
    if (typeof addon !== 'function') return { State: undefined, error: 'keccak: the native addon is not a class' }
    return { State: addon as KeccakStateClass, error: undefined }
  } catch (error) {
    return { State: undefined, error: `keccak: ${(error as Error).message.split('\n')[0]}` }
  }
}

let native: ReturnType<typeof loadNativeState> | undefined
let javascriptState: KeccakStateClass | undefined

function stateClass(wanted: KeccakImplementation | undefined): { name: KeccakImplementation; State: KeccakStateClass } {
  native ??= loadNativeState()
  if (wanted !== 'javascript' && native.State !== undefined) return { name: 'native', State: native.State }
  javascriptState ??= require('keccak/lib/keccak.js') as KeccakStateClass
  return { name: 'javascript', State: javascriptState }
}

export type Keccak256 = (data: Uint8Array) => Buffer

/** A keccak256 on one state of its own: native where it loads unless `wanted` is 'javascript' (tests, bench). */
export function keccakHasher(wanted?: KeccakImplementation): { name: KeccakImplementation; hash: Keccak256 } {
  const { name, State } = stateClass(wanted)
  const state = new State()
  const hash = (data: Uint8Array): Buffer => {
    // Initialized first, not after: a hash that threw half way (a non-byte input) leaves nothing for the next one.
    state.initialize(rate, capacity)
    // The native absorb reads a Buffer; a view of the same memory costs no copy.
    state.absorb(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength))
    return state.squeeze(digestBytes)
  }
  return { name, hash }
}

/**
 * The default keccak256 (offer keys, job keys, address checksums: one or two per credit request): WebAssembly
 * (keccak-wasm.ts), one call out of JavaScript where the native state takes three and a new Buffer per digest (about
 * 0.5 us a hash and its hex against 1.6 us in a loop: issue 11, the `perfengine23` round); the native state where
 * WebAssembly is missing (node --jitless).
 */
let defaultHasher: WasmKeccak | undefined

function defaultKeccak(): WasmKeccak {
  if (defaultHasher !== undefined) return defaultHasher
  try {
    defaultHasher = keccakWasmHasher()
  } catch {
    const { hash } = keccakHasher()
    const hex = (data: Uint8Array): string => hash(data).toString('hex')
    const hexOfPrefixed = (prefix: Uint8Array, text: string): string =>
      hex(Buffer.concat([prefix, Buffer.from(text, 'utf8')]))
    defaultHasher = { hash, hex, hexOfPrefixed }
  }
  return defaultHasher
}

/** keccak256 of `data`, 32 bytes of a Buffer of their own. */
export function keccak256Bytes(data: Uint8Array): Buffer {
  return defaultKeccak().hash(data)
}

/** keccak256 of `data` as 0x-hex (lower case, as viem's keccak256). */
export function keccak256Hex(data: Uint8Array): Hex {
  return `0x${defaultKeccak().hex(data)}`
}

/** keccak256Hex of `prefix` then `text`'s UTF-8 bytes (abi.encodePacked of the two), without packing them first. */
export function keccak256HexOfPrefixed(prefix: Uint8Array, text: string): Hex {
  return `0x${defaultKeccak().hexOfPrefixed(prefix, text)}`
}

/** Which state class keccakHasher gives by default on this machine, and why the native one did not load if not. */
export function keccakStatus(): { implementation: KeccakImplementation; error: string | undefined } {
  const { name } = stateClass(undefined)
  return { implementation: name, error: native?.error }
}
