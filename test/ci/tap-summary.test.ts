// .ci/tap-summary.mjs: the counts CI's last line reports, and each failure's own lines repeated at the end of the log
// (CI shows the end of a long log: a failure that happens once in many runs must be diagnosable from there).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const script = fileURLToPath(new URL('../../.ci/tap-summary.mjs', import.meta.url))
const summarise = (tap: string): string[] => {
  const run = spawnSync(process.execPath, [script], { input: tap, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(run.stderr)
  return run.stdout.trimEnd().split('\n')
}

const tap = [
  'TAP version 14',
  '# Subtest: test/a.test.ts',
  '    # Subtest: one',
  '        ok 1 - x',
  '        1..1',
  '    ok 1 - one # time=1ms',
  '    # Subtest: two',
  '        not ok 1 - the job counts no collateral',
  '          ---',
  '          found: 40n',
  '          wanted: 0n',
  '          ...',
  '        1..1',
  '    not ok 2 - two # time=1ms',
  '    1..2',
  'not ok 1 - test/a.test.ts',
  '# Subtest: test/b.test.ts',
  '    Error: the harness did not start',
  'not ok 2 - test/b.test.ts',
  '# Subtest: test/c.test.ts',
  '    # Subtest: three',
  '        ok 1 - y',
  '        1..1',
  '    ok 1 - three',
  '    1..1',
  'ok 3 - test/c.test.ts',
]

t.test('the last line counts depth-1 tests, and a file that failed without a failing subtest as one', async (t) => {
  const out = summarise(tap.join('\n') + '\n')
  t.equal(out.at(-1), '2 2')
  t.same(out.slice(0, tap.length), tap, 'the TAP is echoed as it came')
})

t.test('each failure\'s lines, with its diagnostics, are repeated before the list of failed tests', async (t) => {
  const out = summarise(tap.join('\n') + '\n')
  const end = out.slice(tap.length).join('\n')
  t.match(end, /failure: two \(test\/a\.test\.ts\)\n {4}# Subtest: two\n[\s\S]*found: 40n\n[\s\S]*wanted: 0n[\s\S]*not ok 2 - two/, 'the failed subtest with its diagnostics')
  t.match(end, /failure: test\/b\.test\.ts\n# Subtest: test\/b\.test\.ts\n {4}Error: the harness did not start/, 'a file that failed on its own')
  t.notMatch(end, /ok 1 - one|three/, 'passing tests are not repeated')
  t.match(end, /failed:\n {2}- two\n {2}- test\/b\.test\.ts\n2 2$/, 'then the list of names, then the counts')
})

t.test('a long failure keeps its end, where the failed assertion is', async (t) => {
  const filler = Array.from({ length: 200 }, (_, i) => `        ok ${i + 1} - step ${i}`)
  const long = ['TAP version 14', '# Subtest: test/d.test.ts', '    # Subtest: long', ...filler, '        not ok 201 - the last step', '        1..201',
    '    not ok 1 - long', '    1..1', 'not ok 1 - test/d.test.ts']
  const end = summarise(long.join('\n') + '\n').slice(long.length).join('\n')
  t.match(end, /failure: long \(test\/d\.test\.ts\)\n {2}\.\.\.\n/, 'cut, and says so')
  t.match(end, /not ok 201 - the last step/)
  t.notMatch(end, /step 0\n/, 'the start of the block is left out')
})

t.test("an error thrown in a file, outside its subtests: the diagnostics after its own line, with the file's name", async (t) => {
  const thrown = ['TAP version 14', '# Subtest: test/e.test.ts', '    # Subtest: fine', '        ok 1 - z', '        1..1', '    ok 1 - fine',
    '    not ok 2 - Cannot mix BigInt and other types, use explicit conversions', '      ---', '      stack: |', '        at poll (src/chain/follower.ts:607:30)',
    '      ...', '    ', '    1..2', 'not ok 1 - test/e.test.ts']
  const end = summarise(thrown.join('\n') + '\n').slice(thrown.length).join('\n')
  t.match(end, /failure: Cannot mix BigInt and other types, use explicit conversions \(test\/e\.test\.ts\)\n/, "the file's name beside the error")
  t.match(end, /not ok 2 - Cannot mix[^\n]*\n {6}---\n {6}stack: \|\n {8}at poll \(src\/chain\/follower\.ts:607:30\)\n {6}\.\.\./, 'its stack, which follows its line')
  t.notMatch(end, /1\.\.2/, 'and not what follows the diagnostics')
})
