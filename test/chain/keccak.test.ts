// keccak-256 by the `keccak` package's state called directly (src/chain/keccak.ts) and in WebAssembly
// (src/chain/keccak-wasm.ts, the default): the same bytes as viem's keccak256 for inputs of every length class around
// the 136-byte rate, in the native addon, the JavaScript fallback and the module, with one state reused across hashes.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import fc from 'fast-check'
import { concat, keccak256, stringToBytes } from 'viem'
import { keccak256Bytes, keccak256Hex, keccak256HexOfPrefixed, keccakHasher, keccakStatus } from '../../src/chain/keccak.ts'
import { keccakWasmHasher } from '../../src/chain/keccak-wasm.ts'

// Empty, one byte, one short of the rate, the rate, one past it, several blocks; and any length up to 1000.
const lengthClasses = [0, 1, 135, 136, 137, 1000]
const bytesOfLength = (length: number) => fc.uint8Array({ minLength: length, maxLength: length })
const anyBytes = fc.oneof(fc.constantFrom(...lengthClasses).chain(bytesOfLength), fc.uint8Array({ maxLength: 1000 }))

t.test('the native addon loads here', async (t) => {
  // The prebuilt linux-x64 binary ships inside the package; on this project's machines it must load.
  t.same(keccakStatus(), { implementation: 'native', error: undefined })
  t.equal(keccakHasher().name, 'native')
  t.equal(keccakHasher('javascript').name, 'javascript')
})

for (const implementation of ['native', 'javascript'] as const) {
  t.test(`${implementation}: equal to viem's keccak256 for every length class, one state reused`, async (t) => {
    // One hasher for all runs: a state not re-initialized between hashes would carry the previous input over.
    const { hash } = keccakHasher(implementation)
    for (const length of lengthClasses) {
      for (const data of fc.sample(bytesOfLength(length), { numRuns: 50, seed: length })) {
        t.equal(`0x${hash(Buffer.from(data)).toString('hex')}`, keccak256(data), `${length} bytes`)
      }
    }
    fc.assert(fc.property(anyBytes, (data) => `0x${hash(Buffer.from(data)).toString('hex')}` === keccak256(data)), { numRuns: 500 })
  })

  t.test(`${implementation}: a Uint8Array that is not a Buffer, and a view into a larger one, hash their own bytes`, async (t) => {
    const { hash } = keccakHasher(implementation)
    fc.assert(
      fc.property(anyBytes, fc.nat({ max: 40 }), fc.nat({ max: 40 }), (data, before, after) => {
        const backing = new Uint8Array(before + data.length + after).fill(0xa5)
        backing.set(data, before)
        const view = backing.subarray(before, before + data.length)
        return `0x${hash(view).toString('hex')}` === keccak256(data) && `0x${hash(new Uint8Array(data)).toString('hex')}` === keccak256(data)
      }),
      { numRuns: 300 },
    )
  })
}

t.test('wasm: equal to viem\'s keccak256 for every length class, one instance reused, as bytes and as hex', async (t) => {
  const { hash, hex } = keccakWasmHasher()
  for (const length of lengthClasses) {
    for (const data of fc.sample(bytesOfLength(length), { numRuns: 50, seed: length })) {
      t.equal(`0x${hash(data).toString('hex')}`, keccak256(data), `${length} bytes`)
      t.equal(`0x${hex(data)}`, keccak256(data), `${length} bytes, hex`)
    }
  }
  fc.assert(fc.property(anyBytes, (data) => `0x${hex(data)}` === keccak256(data) && `0x${hash(data).toString('hex')}` === keccak256(data)), { numRuns: 500 })
})

t.test('wasm: a digest is a Buffer of its own, a view hashes its own bytes, an input past the memory grows it', async (t) => {
  const { hash, hex } = keccakWasmHasher()
  const first = hash(Buffer.from('first'))
  const copy = Buffer.from(first)
  hash(Buffer.from('second'))
  t.ok(first.equals(copy), 'the next hash does not change an earlier digest')
  fc.assert(
    fc.property(anyBytes, fc.nat({ max: 40 }), fc.nat({ max: 40 }), (data, before, after) => {
      const backing = new Uint8Array(before + data.length + after).fill(0xa5)
      backing.set(data, before)
      return `0x${hex(backing.subarray(before, before + data.length))}` === keccak256(data)
    }),
    { numRuns: 300 },
  )
  // One page is 65,536 bytes: 200,000 grow the memory; the hashes after use the grown one.
  for (const length of [200_000, 70_000, 3]) {
    const data = new Uint8Array(length).map((_, i) => (i * 7 + length) & 0xff)
    t.equal(`0x${hex(data)}`, keccak256(data), `${length} bytes`)
  }
})

t.test('wasm: a prefix and a text hash as their packed bytes, any code unit, past the memory too', async (t) => {
  const { hexOfPrefixed } = keccakWasmHasher()
  // fullUnicode: surrogate pairs (four bytes for two code units); a lone surrogate is written as U+FFFD, as Buffer.from does.
  const anyText = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 50 }))
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), anyText, (prefix, text) => {
      const packed = concat([prefix, new Uint8Array(Buffer.from(text, 'utf8'))])
      return `0x${hexOfPrefixed(prefix, text)}` === keccak256(packed) && keccak256HexOfPrefixed(prefix, text) === keccak256(packed)
    }),
    { numRuns: 500 },
  )
  const long = 'é'.repeat(40_000)
  t.equal(`0x${hexOfPrefixed(new Uint8Array(32), long)}`, keccak256(concat([new Uint8Array(32), stringToBytes(long)])), '80,032 bytes')
})

t.test('without WebAssembly (node --jitless) the default hashes by the native state, the same keys', async (t) => {
  const keccakModule = fileURLToPath(new URL('../../src/chain/keccak.ts', import.meta.url))
  const script = `import { keccak256Bytes, keccak256Hex, keccak256HexOfPrefixed } from ${JSON.stringify(keccakModule)}
    const data = Buffer.from('ab\u00fcc'.repeat(50))
    console.log(JSON.stringify([typeof WebAssembly, keccak256Hex(data), keccak256Bytes(data).toString('hex'), keccak256HexOfPrefixed(data.subarray(0, 33), 'off_\u00fc1')]))`
  const output = execFileSync(process.execPath, ['--jitless', '--no-warnings', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8' })
  const data = Buffer.from('abüc'.repeat(50))
  const packed = concat([new Uint8Array(data.subarray(0, 33)), stringToBytes('off_ü1')])
  t.same(JSON.parse(output), ['undefined', keccak256(data), keccak256(data).slice(2), keccak256(packed)])
})

t.test('keccak256Bytes and keccak256Hex, the default implementation, agree with viem', async (t) => {
  fc.assert(
    fc.property(anyBytes, (data) => keccak256Hex(data) === keccak256(data) && Buffer.from(keccak256(data, 'bytes')).equals(keccak256Bytes(data))),
    { numRuns: 300 },
  )
})
