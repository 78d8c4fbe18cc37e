// checksum (src/api/common.ts): the EIP-55 form of an address in any letter case, the same string as viem's
// getAddress, from its cache of recent addresses as well as computed, and a refusal of anything not an address.
import t from 'tap'
import fc from 'fast-check'
import { bytesToHex, getAddress, InvalidAddressError } from 'viem'
import { checksum } from '../../src/api/common.ts'

const lowerAddress = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => bytesToHex(b))
// The same address with each hex letter in a case of its own.
const anyCase = fc.tuple(lowerAddress, fc.array(fc.boolean(), { minLength: 40, maxLength: 40 })).map(
  ([lower, upper]) => `0x${[...lower.slice(2)].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('')}`,
)

t.test("EIP-55's own examples", async (t) => {
  for (const address of [
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ]) {
    t.equal(checksum(address.toLowerCase()), address)
    t.equal(checksum(address.toUpperCase().replace('0X', '0x')), address)
  }
})

t.test("equal to viem's getAddress in any letter case, computed and again from the cache", async (t) => {
  fc.assert(
    fc.property(anyCase, (address) => {
      const expected = getAddress(address.toLowerCase())
      return checksum(address) === expected && checksum(address.toLowerCase()) === expected && checksum(expected) === expected
    }),
    { numRuns: 2000 },
  )
})

t.test('right after its cache has turned over several times', async (t) => {
  const first = fc.sample(lowerAddress, { numRuns: 50, seed: 1 })
  const expected = first.map((a) => getAddress(a))
  t.same(first.map(checksum), expected)
  // More distinct addresses than the cache holds: the first ones are dropped and computed again.
  for (const address of fc.sample(lowerAddress, { numRuns: 20_000, seed: 2 })) checksum(address)
  t.same(first.map(checksum), expected)
})

t.test('anything not an address is refused, every time', async (t) => {
  const [valid] = fc.sample(lowerAddress, { numRuns: 1, seed: 3 }) as [string]
  for (const bad of ['', '0x', valid.slice(0, 41), `${valid}0`, `0x${'g'.repeat(40)}`, valid.slice(2), ` ${valid}`, `0x${'\u212a'.repeat(40)}`]) {
    t.throws(() => checksum(bad), InvalidAddressError, JSON.stringify(bad))
    t.throws(() => checksum(bad), InvalidAddressError, `${JSON.stringify(bad)} again`)
  }
})
