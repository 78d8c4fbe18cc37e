// Generates the README's table of issue 11's goals ("### Issue 11's goals" in "## Bench") and the line above it (date,
// commit, machine, load) from bench/results/<date>.json: the newest full run, beside the earlier run the start marker
// names (the README shows the latest run beside a quieter one, since this machine's figures move between hours). Every
// figure, ratio and gap is read or computed from those files, never copied by hand (a hand copy once gave the load
// mix's ceiling as 21,618 req/s, the ceiling section's figure, for the load mix's own 18,682). `npx tsx
// bench/readme-table.ts` rewrites the README between the markers; bench/run.ts does it at the end of a full run;
// test/bench/readme-table.test.ts fails when the README differs from what this builds from the committed files.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isMainModule } from '../src/tools/main-module.ts'

const here = dirname(fileURLToPath(import.meta.url))
export const resultsDir = join(here, 'results')
export const readmePath = join(here, '..', 'README.md')
/** The start marker names the earlier run shown beside the newest, e.g. `beside 2026-11-27.json`; it is kept as written. */
export const GOALS_START = /<!-- bench-goals:start(?: beside (\d{4}-\d{2}-\d{2}\.json))? \(generated.*?-->\n/
export const GOALS_END = '<!-- bench-goals:end -->'

interface Percentiles { p99: number }
interface LoadmixMode {
  available: boolean
  saturated?: { requestsPerSecond: number; pairsPerSecond: number; serviceThreadCpuMicrosPerPair: number; processCpuMicrosPerPair: number }
  halfRate?: { latencyMillis: Percentiles }
}
interface LoadmixRatios { requestsToCeiling: number; serviceThreadCpuMicrosPerPair: number; processCpuPerPairToCeiling: number; halfRateP99ToFdatasyncP99: number }
interface ScalePoint { matchesPerSecond: number; heapBytesPerLiveActor: number }
/** The parts of a `<date>.json` the table reads (bench/run.ts writes it; each section's script its part). */
export interface BenchRun {
  date: string
  quick: boolean
  commit: string
  machine: { cpu: string; cores: number; memoryGiB: number; node: string; loadAverage1mBefore: number; loadAverage1mAfter: number }
  seconds: Record<string, number>
  match: { engine: { matchesPerSecond: number; latencyMicros: Percentiles }; baseline: { matchesPerSecond: number } }
  matchRequest?: { cpuMicros: { pair: number } }
  matchDurable: { matchesPerSecond: number; cpuMicrosPerMatch: number; mainThreadCpuMicrosPerMatch?: number; commitsPerTransaction: number; matchCallMicros: Percentiles; commitAckMicros: Percentiles; goal: { matchesPerSecond: number; p99Micros: number } }
  scale: { byLenders: ScalePoint[]; byLiveOffers: ScalePoint[] }
  restart: { totalMillis: number; afterCrash?: { totalMillis: number }; goal: { totalMillis: number } }
  loadmix: {
    goals: { requestsToCeilingMin: number; serviceThreadCpuMicrosPerPairMax: number; processCpuPerPairToCeilingMax: number; halfRateP99ToFdatasyncP99Max: number }
    fdatasyncMillis: Percentiles
    ceiling: { saturated: { requestsPerSecond: number; processCpuMicrosPerPair: number }; halfRate: { latencyMillis: Percentiles } }
    service: Record<string, LoadmixMode>
    ratios: Record<string, LoadmixRatios | number | undefined> & { nodeToUwsFrontThroughput?: number; ceilingHalfRateP99ToFdatasyncP99?: number }
  }
}
export interface NamedRun { file: string; run: BenchRun; label: string }

const DATED = /^\d{4}-\d{2}-\d{2}\.json$/
/** A run the table can show: a full run (not --quick) with every section the table reads. */
function isFullRun(run: Partial<BenchRun>): boolean {
  return run.quick === false && [run.match, run.matchDurable, run.scale, run.restart, run.loadmix].every((part) => part !== undefined)
}

export function readRun(dir: string, file: string): BenchRun {
  return JSON.parse(readFileSync(join(dir, file), 'utf8')) as BenchRun
}

/** The newest full run in `dir` (the file names are dates, so the last by name; a --quick or --only run is passed over). */
export function newestRunFile(dir: string): string {
  const files = readdirSync(dir).filter((name) => DATED.test(name)).sort().reverse()
  const newest = files.find((file) => isFullRun(readRun(dir, file)))
  if (newest === undefined) throw new Error(`${dir} holds no full run (<date>.json without --quick, with every section)`)
  return newest
}

// ---- formatting: figures as the README writes them

const thousands = (n: number): string => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
/** Half up as written in decimal: 2.385 is 238.49999999999997 hundredths in binary, and is shown 2.39. */
const rounded = (n: number, digits: number): number => Math.round(Number((n * 10 ** digits).toPrecision(12))) / 10 ** digits
/** Rounded to `digits` decimals, trailing zeros dropped (196, 2.3). */
const upTo = (n: number, digits: number): string => String(rounded(n, digits))
/** Rounded to exactly `digits` decimals (43.0, 2.76). */
const fixed = (n: number, digits: number): string => rounded(n, digits).toFixed(digits)
const WIDTH = 118
/** A paragraph wrapped at the README's width. */
function wrap(text: string): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > WIDTH) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  return [...lines, line].join('\n')
}
const bold = (text: string, on = true): string => (on ? `**${text}**` : text)

/** A run's time of day, its start rounded to the minute (a full run takes about 8 minutes). */
function clock(at: Date): string {
  const rounded = new Date(Math.round(at.getTime() / 60_000) * 60_000)
  return rounded.toISOString().slice(11, 16)
}
function span(run: BenchRun): string {
  const start = new Date(run.date)
  const seconds = Object.values(run.seconds).reduce((sum, s) => sum + s, 0)
  if (seconds === 0) return `${run.date.slice(0, 10)} ${clock(start)} UTC (--from-latest: the figures are each section's last run before it)`
  return `${run.date.slice(0, 10)} ${clock(start)}-${clock(new Date(start.getTime() + seconds * 1000))} UTC`
}

export function named(dir: string, file: string): NamedRun {
  const run = readRun(dir, file)
  return { file, run, label: clock(new Date(run.date)) }
}

// ---- the load mix's modes: the default (uWS behind the front) and the others, named as the README names them

const DEFAULT_MODE = 'uws-front'
const OTHER_MODES: ReadonlyArray<[mode: string, full: string, short: string]> = [['uws-direct', 'uws direct', 'direct'], ['node', 'node', 'node']]
const ratiosOf = (run: BenchRun, mode: string): LoadmixRatios | undefined => {
  const ratios = run.loadmix.ratios[mode]
  return typeof ratios === 'object' && run.loadmix.service[mode]?.available === true ? ratios : undefined
}
/** `(uws direct 0.495, node 0.345)`: the other modes' figure, bold where it meets the goal; named in full on first use. */
function others(run: BenchRun, full: boolean, figure: (r: LoadmixRatios) => string, meets: (r: LoadmixRatios) => boolean): string {
  const parts = OTHER_MODES.flatMap(([mode, fullName, shortName]) => {
    const ratios = ratiosOf(run, mode)
    return ratios === undefined ? [] : [`${full ? fullName : shortName} ${bold(figure(ratios), meets(ratios))}`]
  })
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`
}
function defaultRatios(run: BenchRun): LoadmixRatios {
  const ratios = ratiosOf(run, DEFAULT_MODE)
  if (ratios === undefined) throw new Error(`the run of ${run.date} has no figures for the load mix's default mode (${DEFAULT_MODE})`)
  return ratios
}

// ---- the rows: a goal, its figure in each run, and whether it is met or the gap

interface Row { goal: string; figure: (run: BenchRun, column: number) => string; verdict: (runs: readonly NamedRun[]) => string }

/** Per run, `met` or what is over: "46 µs over at 01:35, 2.3 at 22:57". */
function overs(runs: readonly NamedRun[], value: (run: BenchRun) => number, max: number, unit: string): string[] {
  let first = true
  return runs.map(({ run, label }) => {
    const over = value(run) - max
    if (over <= 0) return `met at ${label}`
    const text = `${upTo(over, 2)}${first ? `${unit} over` : ''} at ${label}`
    first = false
    return text
  })
}
/** `yes`, or led by the newest run: "no: 46 µs over at 01:35, 2.3 at 22:57", "yes at 10:00; 2.3 µs over at 22:57". */
function byRun(parts: readonly string[], runs: readonly NamedRun[], yes: string, no: (detail: string) => string): string {
  if (parts.every((part) => part.startsWith('met'))) return yes
  if (parts[0]!.startsWith('met')) return `${yes} at ${runs[0]!.label} (${parts.slice(1).filter((part) => !part.startsWith('met')).join(', ')})`
  return no(parts.join(', '))
}

const ROWS: readonly Row[] = [
  {
    goal: 'load mix >= 0.6 of the ceiling\'s req/s',
    figure: (run, column) => {
      const front = run.loadmix.service[DEFAULT_MODE]?.saturated
      const goal = run.loadmix.goals.requestsToCeilingMin
      return `${thousands(front?.requestsPerSecond ?? 0)}${column === 0 ? ' req/s' : ''} (${thousands(front?.pairsPerSecond ?? 0)} pairs/s) against ${thousands(run.loadmix.ceiling.saturated.requestsPerSecond)}: ${bold(String(defaultRatios(run).requestsToCeiling))}${others(run, column === 0, (r) => String(r.requestsToCeiling), (r) => r.requestsToCeiling >= goal)}`
    },
    verdict: (runs) => {
      const [{ run }] = runs as [NamedRun]
      const goal = run.loadmix.goals.requestsToCeilingMin
      const ratio = defaultRatios(run).requestsToCeiling
      if (ratio >= goal) return 'yes'
      const direct = ratiosOf(run, 'uws-direct')?.requestsToCeiling
      const directGap = direct === undefined ? '' : direct >= goal ? '; uws direct meets it' : ` (direct ${fixed(goal / direct, 1)} x)`
      return `no: ${goal} needs about ${fixed(goal / ratio, 1)} x the pairs/s${directGap}`
    },
  },
  {
    goal: 'service thread <= 150 µs per pair',
    figure: (run, column) => `${bold(`${defaultRatios(run).serviceThreadCpuMicrosPerPair} µs`)}${others(run, false, (r) => String(r.serviceThreadCpuMicrosPerPair), (r) => r.serviceThreadCpuMicrosPerPair <= run.loadmix.goals.serviceThreadCpuMicrosPerPairMax)}`,
    verdict: (runs) => {
      const parts = overs(runs, (run) => defaultRatios(run).serviceThreadCpuMicrosPerPair, runs[0]!.run.loadmix.goals.serviceThreadCpuMicrosPerPairMax, ' µs')
      return byRun(parts, runs, 'yes', (detail) => `no: ${detail}`)
    },
  },
  {
    goal: 'process CPU per pair <= 2.5 x the ceiling\'s',
    figure: (run, column) => {
      const front = run.loadmix.service[DEFAULT_MODE]?.saturated
      const max = run.loadmix.goals.processCpuPerPairToCeilingMax
      return `${front?.processCpuMicrosPerPair} against ${run.loadmix.ceiling.saturated.processCpuMicrosPerPair} µs: ${bold(fixed(defaultRatios(run).processCpuPerPairToCeiling, 2))}${others(run, false, (r) => fixed(r.processCpuPerPairToCeiling, 2), (r) => r.processCpuPerPairToCeiling <= max)}`
    },
    verdict: (runs) => {
      const max = runs[0]!.run.loadmix.goals.processCpuPerPairToCeilingMax
      // The gap of the ratio as shown (two decimals), so the row's figures add up.
      const parts = overs(runs, (run) => Number(fixed(defaultRatios(run).processCpuPerPairToCeiling, 2)), max, '')
      const head = byRun(parts, runs, 'yes for the default', (detail) => `no for the default (${detail})`)
      const directMeets = runs.filter(({ run }) => { const direct = ratiosOf(run, 'uws-direct'); return direct !== undefined && direct.processCpuPerPairToCeiling <= max })
      if (directMeets.length === 0) return head
      const where = directMeets.length === runs.length ? (runs.length === 1 ? '' : runs.length === 2 ? ' in both' : ' in each') : ` at ${directMeets.map(({ label }) => label).join(', ')}`
      return `${head}; uws direct meets it${where}`
    },
  },
  {
    goal: 'p99 at half the saturated rate <= 3 x fdatasync p99',
    figure: (run, column) => {
      const fdatasync = run.loadmix.fdatasyncMillis.p99
      const p99 = run.loadmix.service[DEFAULT_MODE]?.halfRate?.latencyMillis.p99 ?? 0
      const max = run.loadmix.goals.halfRateP99ToFdatasyncP99Max
      const ceilingRatio = run.loadmix.ratios.ceilingHalfRateP99ToFdatasyncP99
      const ceiling = ceilingRatio === undefined ? '' : column === 0
        ? `; the bare ceiling's own ${run.loadmix.ceiling.halfRate.latencyMillis.p99} ms: ${bold(`${upTo(ceilingRatio, 0)} x`)}`
        : `; the ceiling's own ${bold(`${upTo(ceilingRatio, 0)} x`)}`
      return `${fixed(p99, 1)}${column === 0 ? ' ms' : ''} against ${fdatasync} ms: ${bold(`${upTo(defaultRatios(run).halfRateP99ToFdatasyncP99, 0)} x`)}${others(run, false, (r) => `${upTo(r.halfRateP99ToFdatasyncP99, 0)} x`, (r) => r.halfRateP99ToFdatasyncP99 <= max)}${ceiling}`
    },
    verdict: (runs) => {
      const [{ run }] = runs as [NamedRun]
      const max = run.loadmix.goals.halfRateP99ToFdatasyncP99Max
      if (defaultRatios(run).halfRateP99ToFdatasyncP99 <= max) return 'yes'
      const ceiling = run.loadmix.ratios.ceilingHalfRateP99ToFdatasyncP99
      return ceiling !== undefined && ceiling > max ? 'no, and the ceiling itself misses it (below)' : 'no'
    },
  },
  {
    goal: 'in process, durable: >= 25,000 matches/s on 10,000 lenders',
    figure: (run, column) => {
      const durable = run.matchDurable
      const mainThread = durable.mainThreadCpuMicrosPerMatch === undefined ? '' : `, ${durable.mainThreadCpuMicrosPerMatch} on the main thread`
      const cpu = column === 0 ? `${durable.cpuMicrosPerMatch} µs of process CPU per match${mainThread}; ${upTo(durable.commitsPerTransaction, 0)} commits per group transaction` : `${durable.cpuMicrosPerMatch} µs${mainThread}`
      return `${bold(thousands(durable.matchesPerSecond))} (${cpu})`
    },
    verdict: (runs) => {
      const goal = runs[0]!.run.matchDurable.goal.matchesPerSecond
      if (runs.every(({ run }) => run.matchDurable.matchesPerSecond >= goal)) return 'yes'
      return runs.map(({ run, label }) => (run.matchDurable.matchesPerSecond >= goal ? `met at ${label}` : `no at ${label} (needs about ${fixed(goal / run.matchDurable.matchesPerSecond, 1)} x)`)).join('; ')
    },
  },
  {
    goal: '... p99 of the match call < 250 µs',
    figure: (run, column) => `${upTo(run.matchDurable.matchCallMicros.p99, 0)} µs (${column === 0 ? 'the commit acknowledgement\'s p99:' : 'acknowledgement'} ${upTo(run.matchDurable.commitAckMicros.p99 / 1000, 0)} ms)`,
    verdict: (runs) => {
      const max = runs[0]!.run.matchDurable.goal.p99Micros
      const slowCalls = runs.filter(({ run }) => run.matchDurable.matchCallMicros.p99 >= max)
      const call = slowCalls.length === 0 ? 'the match call yes' : `the match call no at ${slowCalls.map(({ label }) => label).join(', ')}`
      const acks = runs.every(({ run }) => run.matchDurable.commitAckMicros.p99 < max) ? 'the acknowledgement too' : 'the acknowledgement waits for its group\'s sync (below)'
      return `${call}; ${acks}`
    },
  },
  {
    goal: 'the same engine behind node:http, ratio reported',
    figure: (run, column) => `${column === 0 ? 'node / uWS + front throughput ' : ''}${fixed(run.loadmix.ratios.nodeToUwsFrontThroughput ?? Number.NaN, 2)}`,
    verdict: () => 'reported',
  },
  {
    goal: 'scale: matches/s at 1,000 / 10,000 / 100,000 lenders',
    figure: (run) => run.scale.byLenders.map((point) => thousands(point.matchesPerSecond)).join(' / '),
    verdict: () => 'reported',
  },
  {
    goal: 'scale: heap per live actor at 10,000 / 100,000 live offers',
    figure: (run) => `${run.scale.byLiveOffers.map((point) => fixed(point.heapBytesPerLiveActor / 1000, 2)).join(' / ')} KB`,
    verdict: () => 'reported',
  },
  {
    goal: 'restart, 1,000,000 records of which 100,000 live, < 5 s',
    figure: (run, column) => {
      const crash = run.restart.afterCrash
      const clean = `${fixed(run.restart.totalMillis / 1000, 2)} s`
      if (crash === undefined) return clean
      return column === 0 ? `${clean} after a clean stop, ${fixed(crash.totalMillis / 1000, 2)} s after a crash` : `${clean} / ${fixed(crash.totalMillis / 1000, 2)} s`
    },
    verdict: (runs) => {
      const slow = runs.filter(({ run }) => Math.max(run.restart.totalMillis, run.restart.afterCrash?.totalMillis ?? 0) >= run.restart.goal.totalMillis)
      return slow.length === 0 ? 'yes' : `no at ${slow.map(({ label }) => label).join(', ')}`
    },
  },
  {
    goal: 'in process without a store (no goal)',
    figure: (run, column) => {
      const pair = run.matchRequest?.cpuMicros.pair
      const requestAndMatch = pair === undefined ? '' : column === 0 ? `; request + match ${pair} µs of CPU` : `; ${pair} µs`
      return `${thousands(run.match.engine.matchesPerSecond)} matches/s, p99 ${fixed(run.match.engine.latencyMicros.p99, 1)} µs${requestAndMatch}`
    },
    verdict: () => '',
  },
]

/** The line above the table: which runs, when, on what, how loaded; then the table. */
export function renderGoals(runs: readonly NamedRun[]): string {
  const [newest, ...beside] = runs as [NamedRun, ...NamedRun[]]
  const { run } = newest
  const machine = (m: BenchRun['machine']) => `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node.replace(/^v/, '')}`
  const load = (m: BenchRun['machine']) => `load average ${m.loadAverage1mBefore} before and ${m.loadAverage1mAfter} after`
  const bareBook = (r: BenchRun) => `${thousands(r.match.baseline.matchesPerSecond)} matches/s`
  const lines = [
    wrap(`The latest full run kept in \`bench/results\` (\`summary.md\`, \`${newest.file}\`): \`npm run bench\` on ${run.commit.slice(0, 7)}, ${span(run)}, ${machine(run.machine)}, ${load(run.machine)}; the bare book, which runs none of the service's code, did ${bareBook(run)}.`
    + beside.map((other) => ` Beside it, \`${other.file}\`: \`npm run bench\` on ${other.run.commit.slice(0, 7)}, ${span(other.run)}${machine(other.run.machine) === machine(run.machine) ? '' : `, ${machine(other.run.machine)}`}, ${load(other.run.machine)}; its bare book ${bareBook(other.run)}.`).join('')
    + ' Ratios are against the ceiling and the fdatasync measured in the same run; the load mix\'s figures are its default mode (uWS behind the front) unless named.'),
    '',
    `| goal | ${runs.map(({ run: r, label }) => `${label} (${r.commit.slice(0, 7)})`).join(' | ')} | met, or the gap |`,
    `|---|${runs.map(() => '---|').join('')}---|`,
    ...ROWS.map((row) => `| ${[row.goal, ...runs.map((named, column) => row.figure(named.run, column)), row.verdict(runs)].join(' | ')} |`.replace(/ {2}\|$/, ' |')),
  ]
  // A blank line before the end marker ends the table (an HTML line right after a row may be read as part of it).
  return `${lines.join('\n')}\n\n`
}

/** The README with the generated part between the markers rebuilt from `dir`'s newest full run and the run the marker names. */
export function readmeWithGoals(readme: string, dir: string = resultsDir): string {
  const start = GOALS_START.exec(readme)
  const end = readme.indexOf(GOALS_END)
  if (start === null || end < start.index) throw new Error(`README.md lacks the markers <!-- bench-goals:start beside <date>.json (generated ...) --> ... ${GOALS_END}`)
  const newest = newestRunFile(dir)
  const pinned = start[1]
  const files = pinned === undefined || pinned === newest ? [newest] : [newest, pinned]
  const head = start.index + start[0].length
  return readme.slice(0, head) + renderGoals(files.map((file) => named(dir, file))) + readme.slice(end)
}

/** Rewrites README.md's goals table; bench/run.ts calls it after a full run into bench/results. */
export function writeReadmeGoals(): void {
  writeFileSync(readmePath, readmeWithGoals(readFileSync(readmePath, 'utf8')))
}

if (isMainModule(import.meta.url)) {
  writeReadmeGoals()
  process.stdout.write(`wrote the goals table of README.md from ${newestRunFile(resultsDir)}\n`)
}
