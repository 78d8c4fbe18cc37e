// An amount's bound (atomicAtMost): the pattern bounds the digits, the refinement the value. The refinement answers
// from the length when the amount has fewer digits than the bound, and compares values only at the bound's length.
import t from 'tap'
import { Compile } from 'typebox/compile'
import { Atomic, atomicAtMost } from '../../src/api/common.ts'

t.test('a bound of four digits: shorter amounts pass, four-digit ones are compared, longer ones fail the pattern', async (t) => {
  const amount = Compile(atomicAtMost(1000n, 'test amount', '1000'))
  for (const ok of ['0', '9', '99', '999', '1000']) t.ok(amount.Check(ok), ok)
  for (const over of ['1001', '9999', '10000']) t.notOk(amount.Check(over), over)
  t.notOk(amount.Check('0999'), 'a leading zero fails the pattern, whatever its value')
})

t.test('Atomic: 2^256-1 and every shorter amount pass, 2^256 and 78 nines do not', async (t) => {
  const amount = Compile(Atomic)
  const max = (2n ** 256n - 1n).toString()
  t.ok(amount.Check(max))
  t.ok(amount.Check('9'.repeat(max.length - 1)))
  t.notOk(amount.Check((2n ** 256n).toString()))
  t.notOk(amount.Check('9'.repeat(max.length)))
  t.same(amount.Errors((2n ** 256n).toString()).map((e) => e.message), ['must be at most 2^256-1'])
})
