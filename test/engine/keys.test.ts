// sameAddress answers what `a.toLowerCase() === b.toLowerCase()` answers, without the two lowercased copies: ASCII
// letters folded code unit by code unit, and toLowerCase itself for a string with a code unit outside ASCII (whose
// folding can change a length or give an ASCII letter).
import t from 'tap'
import { sameAddress, seqOf } from '../../src/engine/keys.ts'

const lowered = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase()

t.test('sameAddress: checksummed, lower- and upper-case forms of one address are the same; another address is not', async (t) => {
  const checksummed = '0x52908400098527886E0F7030069857D2E4169EE7'
  t.ok(sameAddress(checksummed, checksummed.toLowerCase()))
  t.ok(sameAddress(checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`))
  t.notOk(sameAddress(checksummed, '0x52908400098527886E0F7030069857D2E4169EE8'))
  t.notOk(sameAddress(checksummed, checksummed.slice(0, -1)))
  // Neighbours of the ASCII letters differ by 0x20 too ('@' and '`', '[' and '{'): never the same.
  t.notOk(sameAddress('a@', 'a`'))
  t.notOk(sameAddress('[', '{'))
})

t.test('sameAddress: the answer of toLowerCase on both, for random strings of ASCII and non-ASCII code units', async (t) => {
  const units = ['a', 'A', 'f', 'F', 'z', 'Z', '0', '9', '@', '`', '[', '{', 'x', 'X', 'i', 'I', 'k', 'K', 's', '\u0130', '\u212A', '\u017F', '\u00C0', '\u00E0', '\u03A3', '\u03C3', '\u00DF', '\uD801\uDC00', '\uD801\uDC28']
  let seed = 1
  const random = (n: number): number => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) % n)
  const text = (length: number): string => Array.from({ length }, () => units[random(units.length)]).join('')
  const recase = (value: string): string => [...value].map((c) => (random(2) === 0 ? c.toUpperCase() : c.toLowerCase())).join('')
  let differences = 0
  for (let i = 0; i < 200_000; i++) {
    const a = text(random(5))
    const b = random(2) === 0 ? text(random(5)) : recase(a)
    if (sameAddress(a, b) !== lowered(a, b)) differences += 1
  }
  t.equal(differences, 0, 'no pair answered otherwise')
  t.ok(sameAddress('\u212A', 'k'), 'the Kelvin sign lowercases to k')
  t.notOk(sameAddress('\u0130', 'i'), 'a dotted capital I lowercases to two code units')
})

t.test('seqOf: Number of what follows the first _, for minted ids and for anything else', async (t) => {
  const byNumber = (id: string): number => Number(id.slice(id.indexOf('_') + 1))
  const ids = [
    'off_1', 'off_12', 'lease_4294967296', 'adv_999999999999999', 'off_1000000000000000', 'off_9007199254740993', 'off_007', 'off_0',
    'off_', 'off', '12', 'off_1_2', 'off_1e3', 'off_0x10', 'off_ 12', 'off_12 ', 'off_-1', 'off_+1', 'off_1.5', 'off_/', 'off_:', 'off_\u0661',
  ]
  for (const id of ids) t.same(seqOf(id), byNumber(id), id)
  let seed = 7
  const random = (n: number): number => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) % n)
  const units = '0123456789_ ex./-+'
  let differences = 0
  for (let i = 0; i < 100_000; i++) {
    const id = Array.from({ length: random(20) }, () => units[random(units.length)]).join('')
    if (!Object.is(seqOf(id), byNumber(id))) differences += 1
  }
  t.equal(differences, 0, 'no id answered otherwise')
})
