// The README's goals table ("### Issue 11's goals" in "## Bench") is generated from bench/results/<date>.json by
// bench/readme-table.ts, never copied by hand: it must be what the script builds from the committed files (a
// staleness check, no bench run), and its verdicts must follow the figures.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { type BenchRun, GOALS_END, newestRunFile, readmePath, readmeWithGoals, readRun, renderGoals, resultsDir } from '../../bench/readme-table.ts'

const readme = readFileSync(readmePath, 'utf8')
const tableOf = (text: string): string => text.slice(text.indexOf('<!-- bench-goals:start'), text.indexOf(GOALS_END))
const verdicts = (table: string): string[] => table.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| goal')).map((line) => line.split(' | ').at(-1)?.replace(/ ?\|$/, '') ?? '')

t.test('the README\'s goals table is what bench/readme-table.ts builds from bench/results (run `npx tsx bench/readme-table.ts`)', async (t) => {
  t.equal(readmeWithGoals(readme), readme, 'the part between the bench-goals markers is current')
  const table = tableOf(readme)
  t.match(table, /^\| goal \| \d\d:\d\d \([0-9a-f]{7}\) \| \d\d:\d\d \([0-9a-f]{7}\) \| met, or the gap \|$/m, 'the newest run beside the one the marker names')
  t.match(table.replace(/\n/g, ' '), /on [0-9a-f]{7}, \d{4}-\d{2}-\d{2} \d\d:\d\d-\d\d:\d\d UTC, .+ cores, \d+ GiB, Node [\d.]+, load average [\d.]+ before and [\d.]+ after/, 'the line above says when, on what commit and machine, how loaded')
  t.equal(readme.indexOf('<!-- bench-goals:start'), readme.lastIndexOf('<!-- bench-goals:start'), 'one table')
})

t.test('a figure copied wrong by hand is caught: the load mix\'s ceiling written as the ceiling section\'s', async (t) => {
  // The ceiling section's own run (bench/ceiling.ts), which the table does not read.
  const run = readRun(resultsDir, newestRunFile(resultsDir)) as BenchRun & { ceiling: { modes: { uws: { saturated: { requestsPerSecond: number } } } } }
  const mine = run.loadmix.ceiling.saturated.requestsPerSecond.toLocaleString('en-US')
  const other = run.ceiling.modes.uws.saturated.requestsPerSecond.toLocaleString('en-US')
  t.not(mine, other, 'the two ceilings differ in the newest run')
  const wrong = readme.replace(`against ${mine}:`, `against ${other}:`)
  t.not(wrong, readme, 'the table cites the load mix\'s ceiling')
  t.not(readmeWithGoals(wrong), wrong, 'the staleness check sees the wrong figure')
  t.equal(readmeWithGoals(wrong), readme, 'and the script puts the right one back')
})

t.test('the newest full run is shown: --quick runs and runs without every section are passed over', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-credit-readme-table-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const newest = newestRunFile(resultsDir)
  for (const file of readdirSync(resultsDir).filter((name) => /^\d{4}-\d{2}-\d{2}\.json$/.test(name))) copyFileSync(join(resultsDir, file), join(dir, file))
  const base = readRun(resultsDir, newest)
  writeFileSync(join(dir, '2099-01-01.json'), JSON.stringify({ ...base, quick: true }))
  const { loadmix: _loadmix, ...partial } = base
  writeFileSync(join(dir, '2099-01-02.json'), JSON.stringify(partial))
  t.equal(newestRunFile(dir), newest, 'a --quick run and an --only run are no full run')
  // Beside the quiet run of 2026-11-27 (committed; it misses the service thread's and the process CPU's goals).
  const pinned = `<!-- bench-goals:start beside 2026-11-27.json (generated) -->\n${GOALS_END}\n`
  t.equal(readmeWithGoals(pinned, dir), readmeWithGoals(pinned, resultsDir), 'so the table is unchanged')
  t.match(readmeWithGoals(`<!-- bench-goals:start (generated) -->\n${GOALS_END}\n`, dir), /\| goal \| \d\d:\d\d \([0-9a-f]{7}\) \| met, or the gap \|/, 'a marker naming no run: the newest alone')

  // A later full run that meets every goal: the table shows it beside the pinned run, and says yes.
  const ratios = { requestsToCeiling: 0.7, serviceThreadCpuMicrosPerPair: 140, processCpuPerPairToCeiling: 2, halfRateP99ToFdatasyncP99: 2.5 }
  const met: BenchRun = {
    ...base,
    date: '2099-01-03T10:00:00.000Z',
    commit: 'abcdef0123456789abcdef0123456789abcdef01',
    matchDurable: { ...base.matchDurable, matchesPerSecond: 26_000, commitAckMicros: { p99: 200 } },
    loadmix: { ...base.loadmix, ratios: { ...base.loadmix.ratios, 'uws-front': ratios, 'uws-direct': ratios, ceilingHalfRateP99ToFdatasyncP99: 2 } },
  }
  writeFileSync(join(dir, '2099-01-03.json'), JSON.stringify(met))
  t.equal(newestRunFile(dir), '2099-01-03.json')
  const table = tableOf(readmeWithGoals(pinned, dir))
  t.match(table, /\| goal \| 10:00 \(abcdef0\) \| \d\d:\d\d \([0-9a-f]{7}\) \| met, or the gap \|/, 'the new run first, the pinned one beside it')
  t.match(table.replace(/\n/g, ' '), /`2099-01-03\.json`\): `npm run bench` on abcdef0, 2099-01-03 10:00-/)
  const [throughput, thread, cpu, p99, durable, call] = verdicts(table)
  t.same([throughput, p99], ['yes', 'yes'], 'the goals read on the newest run alone')
  t.match(thread ?? '', /^yes at 10:00 \([\d.]+ µs over at \d\d:\d\d\)$/, 'per run: met in the newest, the gap in the other')
  t.match(cpu ?? '', /^yes for the default at 10:00 \([\d.]+ over at \d\d:\d\d\); uws direct meets it in both$/)
  t.equal(durable, 'yes', 'met in both runs')
  t.match(call ?? '', /^the match call yes; the acknowledgement waits for its group's sync/, 'the pinned run\'s acknowledgement still waits for its group')
})

t.test('the gap is computed from the figures', async (t) => {
  const run = readRun(resultsDir, newestRunFile(resultsDir))
  const at = (ratios: Partial<Record<string, number>>): BenchRun => ({ ...run, loadmix: { ...run.loadmix, ratios: { ...run.loadmix.ratios, 'uws-front': { ...(run.loadmix.ratios['uws-front'] as object), ...ratios } as never, 'uws-direct': { ...(run.loadmix.ratios['uws-direct'] as object), requestsToCeiling: 0.5, processCpuPerPairToCeiling: 2.6 } as never } } })
  const [throughput, thread, cpu] = verdicts(renderGoals([{ file: 'x.json', run: at({ requestsToCeiling: 0.3, serviceThreadCpuMicrosPerPair: 200, processCpuPerPairToCeiling: 2.75 }), label: '12:00' }]))
  t.equal(throughput, 'no: 0.6 needs about 2.0 x the pairs/s (direct 1.2 x)')
  t.equal(thread, 'no: 50 µs over at 12:00')
  t.equal(cpu, 'no for the default (0.25 over at 12:00)', 'no mode meets it: none named')
  const [atGoal] = verdicts(renderGoals([{ file: 'x.json', run: at({ requestsToCeiling: 0.6 }), label: '12:00' }]))
  t.equal(atGoal, 'yes', 'the goal itself meets it')
})

t.test('every committed full run renders, the older ones without the figures they lack', async (t) => {
  for (const file of readdirSync(resultsDir).filter((name) => /^\d{4}-\d{2}-\d{2}\.json$/.test(name))) {
    const run = readRun(resultsDir, file)
    if (run.quick) continue
    const text = renderGoals([{ file, run, label: '00:00' }])
    t.equal(text.split('\n').filter((line) => line.startsWith('| ')).length, 12, `${file}: the header and eleven goals`)
    t.notMatch(text, /undefined|NaN/, `${file}: no missing figure printed`)
  }
})
