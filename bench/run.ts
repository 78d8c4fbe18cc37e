// `npm run bench`: runs the sections listed in `sections` below (bench/match.ts, match-request.ts, dispatch.ts,
// match-durable.ts, scale.ts, restart.ts, http.ts, lease-signing.ts, ceiling.ts, durable-commit.ts, loadmix.ts), each
// as its own child process (sequentially, so they do not compete for the cores), with a progress line while each
// runs; then writes
// bench/results/summary.md (each section's text and a table of the key figures against their goals), an SVG chart
// per section (bench/chart.ts) and bench/results/<date>.json with the machine (cores, memory, load before and after,
// Node, commit) and every figure. A section is one entry of the list: its script and arguments, its text in the
// summary, its rows in the table and its charts.
// `npm run bench -- --quick` runs each section small (about a minute or two in all: the tests run it so to keep it
// working, without timing assertions). `--results <dir>` writes there instead of bench/results. `--only a,b` runs
// the named sections only; `--from-latest` runs none and rewrites the summary, charts and <date>.json from the
// sections' last figures. Other arguments after `--` go to http.ts (e.g. `npm run bench -- --external`).
// A full run into bench/results (every section, not --quick; --from-latest too) then rewrites the README's goals table
// (bench/readme-table.ts), so a run leaves the README true.
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVICE_NODE_FLAGS } from '../src/app/node-flags.ts'
import { barChart, lineChart } from './chart.ts'
import { writeReadmeGoals } from './readme-table.ts'
import { TS_IMPORT } from './fixtures/ts-import.ts'

const here = dirname(fileURLToPath(import.meta.url))
const argv = process.argv.slice(2)
const quick = argv.includes('--quick')
const resultsAt = argv.indexOf('--results')
const results = resultsAt >= 0 ? (argv[resultsAt + 1] as string) : join(here, 'results')
const onlyAt = argv.indexOf('--only')
const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] as string).split(',')) : null
// --from-latest: run nothing; rewrite summary.md, the charts and <date>.json from the sections' *-latest.json.
const fromLatest = argv.includes('--from-latest')
const httpArgs = argv.filter((arg, index) => arg !== '--quick' && arg !== '--from-latest' && ![resultsAt, resultsAt + 1, onlyAt, onlyAt + 1].includes(index))
mkdirSync(results, { recursive: true })

const runStarted = performance.now()
const elapsed = (since: number) => `${Math.round((performance.now() - since) / 1000)} s`

function run(file: string, args: string[] = [], env: Record<string, string> = {}): Promise<number> {
  process.stdout.write(`\n### ${file} ${args.join(' ')}\n`)
  const started = performance.now()
  // A progress line while a quiet section runs, so a long run never looks stuck.
  const ticker = setInterval(() => process.stdout.write(`  ... ${file} running for ${elapsed(started)} (bench run ${elapsed(runStarted)})\n`), 30_000)
  return new Promise<number>((resolve, reject) => {
    // With the service's Node flags: an in-process section measures the engine as the service runs it.
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...TS_IMPORT, join(here, file), ...args], { stdio: 'inherit', cwd: join(here, '..'), env: { ...process.env, BENCH_RESULTS_DIR: results, ...env } })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (code !== 0) reject(new Error(`${file} exited with ${code ?? signal}`))
      else resolve(Math.round((performance.now() - started) / 100) / 10)
    })
  }).finally(() => clearInterval(ticker))
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'))
    if (line !== undefined) return line.slice(line.indexOf(':') + 1).trim()
  } catch {
    // not Linux: fall back to what Node reports
  }
  return cpus()[0]?.model ?? 'unknown'
}

function commitOf(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: here, encoding: 'utf8' }).trim()
  } catch {
    return 'unknown'
  }
}

const load = () => (loadavg()[0] ?? 0).toFixed(2)
const loadBefore = load()
const startedAt = new Date()
const ms = (v: number) => `${v} ms`
const us = (v: number) => `${v} us`
const latest = (name: string) => join(results, `${name}-latest.json`)

/** One row of the table at the end: a key figure, its value, and the goal it is measured against (if any). */
type Row = [figure: string, value: string, goal?: string]
interface Section {
  /** Its results are `<name>-latest.json`, its charts `<name>*.svg`; `--only` names it. */
  name: string
  /** Its key in `<date>.json`. */
  key: string
  file: string
  args: string[]
  env?: Record<string, string>
  /** Whether the script takes `--out <file>` (else it writes `<name>-latest.json` to BENCH_RESULTS_DIR itself). */
  out: boolean
  markdown: (f: any) => string
  rows: (f: any) => Row[]
  charts: (f: any) => Record<string, string>
}

const modeRow = (name: string, m: any) =>
  m === undefined
    ? `| ${name} | not run | | | | | | |`
    : `| ${name} | ${m.pairsPerSecond} | ${m.httpRequestsPerSecond} | ${ms(m.latencyMillis.pair.p50)} / ${ms(m.latencyMillis.pair.p90)} / ${ms(m.latencyMillis.pair.p99)} | ` +
      `${ms(m.latencyMillis.request.p50)} / ${ms(m.latencyMillis.request.p99)} | ${ms(m.latencyMillis.match.p50)} / ${ms(m.latencyMillis.match.p99)} | ` +
      `${m.service.storeCommits} in ${m.service.storeTransactions} (${m.service.commitsPerTransaction}) | ${m.service.serviceThreadCpuMicrosPerPair} us |`
const outcomes = (m: any) =>
  m === undefined
    ? ''
    : `leased ${m.outcomes.leased}, no eligible lender ${m.outcomes.noEligibleLender}, offer expired before match ${m.outcomes.offerExpiredBeforeMatch}, ` +
      `refused leases (insufficient balance) ${m.outcomes.refusedLeases}, ` +
      `declined ${m.outcomes.declined}, HTTP errors ${JSON.stringify(m.outcomes.httpErrors)}`

const sections: Section[] = [
  {
    name: 'match', key: 'match', file: 'match.ts', args: [], out: false,
    env: quick ? { BENCH_LENDERS: '2000', BENCH_MATCHES: '1000', BENCH_DISPATCH_LEASES: '1000', BENCH_DISPATCH_IDLE_CALLS: '100' } : {},
    markdown: (match) => `## Matching in process (bench/match.ts)

${match.lenders} lenders on one book, ${match.matches} timed matches; each match is then paid and repaid (untimed).

| | matches/s | p50 | p90 | p99 | p99.9 |
|---|---|---|---|---|---|
| engine (actors, changes) | ${match.engine.matchesPerSecond} | ${match.engine.latencyMicros.p50} us | ${match.engine.latencyMicros.p90} us | ${match.engine.latencyMicros.p99} us | ${match.engine.latencyMicros.p999} us |
| bare book, same rules | ${match.baseline.matchesPerSecond} | ${match.baseline.latencyMicros.p50} us | ${match.baseline.latencyMicros.p90} us | ${match.baseline.latencyMicros.p99} us | ${match.baseline.latencyMicros.p999} us |

Engine / bare book throughput: **${match.engineToBaselineThroughputRatio}**
`,
    rows: (match) => [
      ['in-process matches/s (no store)', String(match.engine.matchesPerSecond)],
      ['engine / bare book throughput', String(match.engineToBaselineThroughputRatio)],
      [`dispatch, ${match.dispatch.onePercentDue.leasesDuePerCall} of ${match.dispatch.liveLeases} leases due`, us(match.dispatch.onePercentDue.microsPerCall)],
    ],
    charts: (match) => ({
      match: barChart({ title: `Matching in process, ${match.lenders} lenders (no store)`, yLabel: 'matches/s', bars: [{ label: 'engine', value: match.engine.matchesPerSecond }, { label: 'bare book', value: match.baseline.matchesPerSecond }] }),
    }),
  },
  {
    name: 'match-request', key: 'matchRequest', file: 'match-request.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (r) => `## The engine's request + match in process (bench/match-request.ts)

${r.lenders} lenders, ${r.rounds} timed rounds of requestCredit then matchOffer (each lease then paid and repaid, untimed); process CPU per call (load average ${r.loadAverage.before.toFixed(1)} before):

| | CPU mean | CPU p50 | wall p50 | wall p99 |
|---|---|---|---|---|
| requestCredit | ${r.cpuMicros.request} us | ${r.cpuMicrosP50.request} us | ${r.requestWallMicros.p50} us | ${r.requestWallMicros.p99} us |
| matchOffer | ${r.cpuMicros.match} us | ${r.cpuMicrosP50.match} us | ${r.matchWallMicros.p50} us | ${r.matchWallMicros.p99} us |

GC pauses from the first timed round on: ${r.gc.scavenges} scavenges (${r.gc.scavengeMicrosPerPair} us per pair), ${r.gc.others} other pauses (${r.gc.otherMicrosPerPair} us per pair), the longest ${r.gc.longestMillis} ms. Outcome digest ${r.outcomeDigest}.
`,
    rows: (r) => [['engine CPU per request + match pair (in process, mean)', us(r.cpuMicros.pair)]],
    charts: (r) => ({
      'match-request': barChart({ title: `Engine CPU per call, ${r.lenders} lenders (in process)`, yLabel: 'us of process CPU (p50)', bars: [{ label: 'requestCredit', value: r.cpuMicrosP50.request }, { label: 'matchOffer', value: r.cpuMicrosP50.match }] }),
    }),
  },
  {
    name: 'dispatch', key: 'dispatch', file: 'dispatch.ts', args: quick ? ['--quick'] : [], out: false,
    markdown: (d) => `## The ticker's time-outs and expiries in process (bench/dispatch.ts)

${d.lenders} lenders, ${d.rounds} rounds of ${d.offersPerRound} offers leased and never paid, then the chain past every deadline (lease
and offer TTL 3 s, as the load mix); process CPU (load average ${d.loadAverage.before.toFixed(1)} before):

| per lease time-out (follower batches) | per offer expiry (the ticker's dispatch) | per pair, follower batch then the ticker |
|---|---|---|
| ${us(d.cpuMicrosPerTimeOut)} | ${us(d.cpuMicrosPerExpiry)} | ${us(d.cpuMicrosPerPair)} |

Outcome digest ${d.outcomeDigest}.
`,
    rows: (d) => [['engine CPU per lease time-out + offer expiry (in process)', us(d.cpuMicrosPerPair)]],
    charts: (d) => ({
      dispatch: barChart({ title: `Engine CPU of the ticker's timers, ${d.lenders} lenders (in process)`, yLabel: 'us of process CPU', bars: [{ label: 'lease time-out', value: d.cpuMicrosPerTimeOut }, { label: 'offer expiry', value: d.cpuMicrosPerExpiry }, { label: 'pair', value: d.cpuMicrosPerPair }] }),
    }),
  },
  {
    name: 'match-durable', key: 'matchDurable', file: 'match-durable.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (d) => `## Matching in process with durable commits (bench/match-durable.ts)

${d.lenders} lenders, ${d.matches} timed matches, each match's changes (${d.changesPerCommit} per commit) committed through the Store
(durability ${d.durability}, group commit, ${d.inFlight} commits in flight; ${d.commitsPerTransaction} commits per transaction, ${d.millisPerTransaction} ms of wall time each).

| matches/s (goal ${d.goal.matchesPerSecond}) | match call p50 / p99 | commit acknowledgement p50 / p99 (goal p99 < ${d.goal.p99Micros} us) | process CPU per match | matches/s if the disk kept up (1 / CPU) |
|---|---|---|---|---|
| ${d.matchesPerSecond} | ${us(d.matchCallMicros.p50)} / ${us(d.matchCallMicros.p99)} | ${us(d.commitAckMicros.p50)} / ${us(d.commitAckMicros.p99)} | ${us(d.cpuMicrosPerMatch)} | ${d.cpuBoundMatchesPerSecond} |
`,
    rows: (d) => [
      ['durable in-process matches/s', String(d.matchesPerSecond), `>= ${d.goal.matchesPerSecond}`],
      ['durable in-process matches/s if the disk kept up (1 / CPU)', String(d.cpuBoundMatchesPerSecond), `>= ${d.goal.matchesPerSecond}`],
      ['durable match call p99', us(d.matchCallMicros.p99), `< ${d.goal.p99Micros} us`],
      ['durable commit acknowledgement p99', us(d.commitAckMicros.p99), `< ${d.goal.p99Micros} us`],
    ],
    charts: (d) => ({
      'match-durable': barChart({ title: `Durable matching in process, ${d.lenders} lenders`, yLabel: 'matches/s', bars: [{ label: 'measured', value: d.matchesPerSecond }, { label: 'if the disk kept up', value: d.cpuBoundMatchesPerSecond }], goal: { value: d.goal.matchesPerSecond, label: `goal ${d.goal.matchesPerSecond}` } }),
    }),
  },
  {
    name: 'scale', key: 'scale', file: 'scale.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (s) => `## Scale curves (bench/scale.ts)

The engine in process (no store), each point in its own process: lenders registered, live offers opened and matched
(each with its live lease), the last ${s.byLenders[0]?.timed} matches timed; heap after a full GC.

| lenders | live offers | matches/s | match p50 / p99 | heap per live actor | heap per lender |
|---|---|---|---|---|---|
${[...s.byLenders, ...s.byLiveOffers.filter((p: any) => !s.byLenders.includes(p) && !s.byLenders.some((q: any) => q.lenders === p.lenders && q.liveOffers === p.liveOffers))].map((p: any) => `| ${p.lenders} | ${p.liveOffers} | ${p.matchesPerSecond} | ${us(p.matchCallMicros.p50)} / ${us(p.matchCallMicros.p99)} | ${p.heapBytesPerLiveActor} B | ${p.heapBytesPerLender} B |`).join('\n')}
`,
    rows: (s) => [...s.byLenders.map((p: any) => [`matches/s at ${p.lenders} lenders`, String(p.matchesPerSecond)] as Row), ...s.byLiveOffers.map((p: any) => [`heap per live actor at ${p.liveOffers} live offers`, `${p.heapBytesPerLiveActor} B`] as Row)],
    charts: (s) => ({
      'scale-lenders': lineChart({ title: 'Matches/s by lenders on the book', xLabel: `lenders (${s.byLenders[0]?.liveOffers} live offers)`, yLabel: 'matches/s', series: [{ name: 'matches/s', points: s.byLenders.map((p: any) => [p.lenders, p.matchesPerSecond]) }] }),
      'scale-offers': lineChart({ title: 'Heap per live actor and matches/s by live offers', xLabel: `live offers (${s.byLiveOffers[0]?.lenders} lenders)`, yLabel: 'bytes / matches/s', series: [{ name: 'heap bytes per live actor', points: s.byLiveOffers.map((p: any) => [p.liveOffers, p.heapBytesPerLiveActor]) }, { name: 'matches/s', points: s.byLiveOffers.map((p: any) => [p.liveOffers, p.matchesPerSecond]) }] }),
    }),
  },
  {
    name: 'restart', key: 'restart', file: 'restart.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (r) => `## Restart time (bench/restart.ts)

A data directory of ${r.storedSnapshots} stored snapshots (${r.liveActors} live actors, ${r.lenders} lenders, ${r.history} final actors of history),
built through the store API in ${r.buildSeconds} s; then, in a fresh process, the service's start-up path: Store.open (after a crash
with the deep check of every entry in a child process; after a clean stop without it), the engine restored from the live
snapshots, checkInvariants. Page cache warm. Load average ${r.loadAverage.before} before, ${r.loadAverage.after} after.
${r.deepCheck.ok ? '' : `\n**The deep check failed** after ${r.deepCheck.failedAfterMillis} ms (${r.deepCheck.reason}): the service would refuse to start after a crash; the after-a-crash figures skip it.\n`}
| start | total (goal < ${r.goal.totalMillis} ms) | Store.open | engine restore | invariants | CPU: service + deep check | heap / rss after |
|---|---|---|---|---|---|---|
| after a clean stop | ${ms(r.totalMillis)} | ${ms(r.openMillis)} | ${ms(r.restoreMillis)} | ${ms(r.invariantsMillis)} | ${ms(r.cpuMillis)} + ${ms(r.checkCpuMillis)} | ${r.heapUsedMiB} / ${r.rssMiB} MiB |
| after a crash | ${ms(r.afterCrash.totalMillis)} | ${ms(r.afterCrash.openMillis)} | ${ms(r.afterCrash.restoreMillis)} | ${ms(r.afterCrash.invariantsMillis)} | ${ms(r.afterCrash.cpuMillis)} + ${ms(r.afterCrash.checkCpuMillis)} | ${r.afterCrash.heapUsedMiB} / ${r.afterCrash.rssMiB} MiB |
`,
    rows: (r) => [
      [`restart after a clean stop, ${r.storedSnapshots} snapshots, ${r.liveActors} live`, ms(r.totalMillis), `< ${r.goal.totalMillis} ms`],
      [`restart after a crash (deep check${r.deepCheck.ok ? '' : ' FAILED, skipped'})`, ms(r.afterCrash.totalMillis), `< ${r.goal.totalMillis} ms`],
    ],
    charts: (r) => ({
      restart: barChart({ title: `Restart: ${r.storedSnapshots} snapshots, ${r.liveActors} live actors`, yLabel: 'ms', bars: [{ label: 'Store.open', value: r.openMillis }, { label: 'engine restore', value: r.restoreMillis }, { label: 'invariants', value: r.invariantsMillis }, { label: 'total', value: r.totalMillis }], goal: { value: r.goal.totalMillis, label: `goal ${r.goal.totalMillis} ms` } }),
    }),
  },
  {
    name: 'http', key: 'http', file: 'http.ts', out: true,
    // Quick: 32 borrowers, so that their 3,200 live offers (100 each, held for the 3 s lease TTL) outlast a quiet
    // machine's load; with 4, a fast service leased 400 in the warm-up and every measured request was 409. A quarter
    // second of warm-up and half a second measured: its figures only show the section works.
    args: [...(quick ? ['--lenders', '20', '--borrowers', '32', '--in-flight', '4', '--warmup', '0.25', '--seconds', '0.5', '--modes', 'sync'] : []), ...httpArgs],
    markdown: (http) => {
      const w = http.workload
      return `## Request and match over HTTP (bench/http.ts)

${w.path}: ${w.lenders} lenders (funded on chain), ${w.borrowers} borrowers, ${w.inFlight} in flight, ${w.warmupSeconds} s warm-up + ${w.measuredSeconds} s measured per mode;
leases and offers live ${w.leaseTtlSeconds} s and the dispatch ticker (${w.dispatchIntervalMs} ms) expires them, which frees the liquidity.
Load generator: ${w.loadGenerator}.

| durability | pairs/s | HTTP req/s | pair p50 / p90 / p99 | request p50 / p99 | match p50 / p99 | commits in LMDB txns (per txn) | service CPU per pair |
|---|---|---|---|---|---|---|---|
${modeRow('sync (default)', http.modes.sync)}
${modeRow('none (bench only)', http.modes.none)}

Durable / none throughput: **${http.durableToNoneThroughputRatio}**; pair p99 durable / none: **${http.durableToNonePairP99Ratio}**

Outcomes (sync): ${outcomes(http.modes.sync)}

Outcomes (none): ${outcomes(http.modes.none)}

Service thread CPU is read from /proc/thread-self/stat, so "service CPU per pair" is what the service spent on one
request + match, whatever else competed for the cores; throughput and latency depend on that competition.
`
    },
    rows: (http) => [
      ['HTTP request + match pairs/s (sync)', String(http.modes.sync?.pairsPerSecond)],
      ['service CPU per pair (sync)', us(http.modes.sync?.service.serviceThreadCpuMicrosPerPair), '<= 150 us'],
    ],
    charts: (http) => ({
      http: barChart({ title: 'Request + match over HTTP', yLabel: 'pairs/s', bars: Object.entries(http.modes).map(([mode, m]: [string, any]) => ({ label: mode, value: m.pairsPerSecond })) }),
    }),
  },
  {
    name: 'lease-signing', key: 'leaseSigning', file: 'lease-signing.ts', args: quick ? ['--iterations', '20'] : [], out: false,
    markdown: (signing) => `## Lease authorization signing (bench/lease-signing.ts)

Per authorization (digest + signature, distinct terms each), median of ${signing.rounds} rounds of ${signing.iterations}:

| | us |
|---|---|
${signing.results.map((r: { name: string; microsPerAuthorization: number }) => `| ${r.name} | ${r.microsPerAuthorization} |`).join('\n')}

viem signTypedData / LeaseSigner: **${signing.ratios.viemSignTypedDataToLeaseSigner}**; implementations: ${JSON.stringify(signing.native)}
`,
    rows: (signing) => [['viem signTypedData / LeaseSigner', String(signing.ratios.viemSignTypedDataToLeaseSigner)]],
    charts: (signing) => ({
      'lease-signing': barChart({ title: 'Lease authorization signing', yLabel: 'us per authorization', bars: signing.results.map((r: { name: string; microsPerAuthorization: number }) => ({ label: r.name.length > 14 ? `${r.name.slice(0, 13)}…` : r.name, value: r.microsPerAuthorization })) }),
    }),
  },
  {
    name: 'ceiling', key: 'ceiling', file: 'ceiling.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (ceiling) => `## The ceiling of this stack and the transports (bench/ceiling.ts)

One route that parses a ${ceiling.body.requestBytes}-byte JSON body, commits one durable LMDB record (group commit) and answers about
940 bytes, each mode in its own process; wrk (Debian's package) from another process, ${ceiling.connections} connections, ${ceiling.seconds} s per window.
The disk in this run: fdatasync p50 ${ceiling.fdatasyncMillis.p50} ms, p99 ${ceiling.fdatasyncMillis.p99} ms.

| mode | req/s | p50 / p99 | CPU per request (process / main thread) | at half rate: req/s, p99 |
|---|---|---|---|---|
${Object.entries(ceiling.modes).map(([name, m]: [string, any]) => `| ${name} | ${m.saturated.requestsPerSecond} | ${ms(m.saturated.latencyMillis.p50)} / ${ms(m.saturated.latencyMillis.p99)} | ${m.saturated.processCpuMicrosPerRequest} us / ${m.saturated.mainThreadCpuMicrosPerRequest} us | ${m.halfRate.requestsPerSecond}, ${ms(m.halfRate.latencyMillis.p99)} |`).join('\n')}

Ratios: ${Object.entries(ceiling.ratios).map(([k, v]) => `${k} **${v}**`).join(', ')}
`,
    rows: (ceiling) => [
      ['ceiling (bare uWS + durable LMDB) req/s', String(ceiling.modes.uws?.saturated.requestsPerSecond)],
      // The bare route behind src/http/server.ts, not the service: the service's goal is the load mix's row.
      ['bare route through server.ts (direct) / ceiling throughput', String(ceiling.ratios.serverDirectToCeilingThroughput)],
    ],
    charts: (ceiling) => ({
      ceiling: barChart({ title: 'The ceiling and the transports (saturated)', yLabel: 'requests/s', bars: Object.entries(ceiling.modes).map(([name, m]: [string, any]) => ({ label: name, value: m.saturated.requestsPerSecond })) }),
    }),
  },
  {
    name: 'durable-commit', key: 'durableCommit', file: 'durable-commit.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (durable) => `## The store's durable write path (bench/durable-commit.ts)

${durable.commits} match-shaped commits (3 snapshots, 2 records), ${durable.inFlight} in flight, LMDB synchronous commits, one group commit per transaction:
${durable.commitsPerSecond} commits/s, p50 ${durable.latencyMillis.p50} ms, p99 ${durable.latencyMillis.p99} ms, ${durable.cpuMicrosPerCommit} us process CPU per commit,
${durable.commitsPerTransaction} commits per group transaction.
`,
    rows: (durable) => [['store alone: durable commits/s', String(durable.commitsPerSecond)], ['store alone: CPU per commit', us(durable.cpuMicrosPerCommit)]],
    charts: (durable) => ({
      'durable-commit': barChart({ title: `The store alone: match-shaped durable commits, ${durable.inFlight} in flight`, yLabel: 'ms', bars: [{ label: 'p50', value: durable.latencyMillis.p50 }, { label: 'p90', value: durable.latencyMillis.p90 }, { label: 'p99', value: durable.latencyMillis.p99 }] }),
    }),
  },
  {
    name: 'loadmix', key: 'loadmix', file: 'loadmix.ts', args: quick ? ['--quick'] : [], out: true,
    markdown: (l) => {
      const c = l.ceiling.saturated
      const row = ([mode, m]: [string, any]) => {
        if (!m.available) return `| ${mode} | not available: ${m.reason} | | | | | | |`
        const r = l.ratios[mode]
        const o = m.saturated.outcomes
        return `| ${mode} | ${m.saturated.pairsPerSecond} | ${m.saturated.requestsPerSecond} (**${r.requestsToCeiling}**) | ${m.saturated.serviceThreadCpuMicrosPerPair} us | ` +
          `${m.saturated.processCpuMicrosPerPair} us (**${r.processCpuPerPairToCeiling}**) | ${m.halfRate.requestsPerSecond}, ${ms(m.halfRate.latencyMillis.p99)} (**${r.halfRateP99ToFdatasyncP99}**) | ` +
          `leased ${o.leased}, no lender ${o.noEligibleLender}, expired ${o.offerExpired}, declined ${o.declined}, errors ${JSON.stringify(o.errors)} | ${m.saturated.loadAverage1mAtEnd} |`
      }
      const g = l.goals
      return `## The service's request + match mix beside the ceiling (bench/loadmix.ts)

The service in its own process (durable, default configuration), ${l.workload.lenders} lenders funded on chain, ${l.workload.borrowers} borrowers;
wrk (fixtures/loadmix.lua) from another process sends a credit request, then the match of each approved offer. The ceiling
(ceiling.ts \`uws\`) in the same run, same wrk, ${l.workload.connections} connections, ${l.workload.warmupSeconds} s warm-up + ${l.workload.seconds} s windows:
${c.requestsPerSecond} req/s, ${c.processCpuMicrosPerPair} us process CPU per pair (two requests), half-rate p99 ${ms(l.ceiling.halfRate.latencyMillis.p99)}.
fdatasync in this run: p50 ${ms(l.fdatasyncMillis.p50)}, p99 ${ms(l.fdatasyncMillis.p99)}. Goals (ratios in bold): req/s >= ${g.requestsToCeilingMin} of the ceiling,
service thread <= ${g.serviceThreadCpuMicrosPerPairMax} us per pair, process CPU per pair <= ${g.processCpuPerPairToCeilingMax} x the ceiling's, half-rate p99 <= ${g.halfRateP99ToFdatasyncP99Max} x fdatasync p99.

| mode | pairs/s | req/s (/ ceiling) | service thread CPU per pair | process CPU per pair (/ ceiling) | half rate: req/s, p99 (/ fdatasync p99) | outcomes (saturated) | load |
|---|---|---|---|---|---|---|---|
${Object.entries(l.service).map(row).join('\n')}
`
    },
    rows: (l) => Object.entries(l.service).filter(([, m]: [string, any]) => m.available).flatMap(([mode, m]: [string, any]) => [
      [`load mix ${mode}: req/s / ceiling`, String(l.ratios[mode].requestsToCeiling), `>= ${l.goals.requestsToCeilingMin}`],
      [`load mix ${mode}: service thread CPU per pair`, us(m.saturated.serviceThreadCpuMicrosPerPair), `<= ${l.goals.serviceThreadCpuMicrosPerPairMax} us`],
      [`load mix ${mode}: process CPU per pair / ceiling`, String(l.ratios[mode].processCpuPerPairToCeiling), `<= ${l.goals.processCpuPerPairToCeilingMax}`],
      [`load mix ${mode}: half-rate p99 / fdatasync p99`, String(l.ratios[mode].halfRateP99ToFdatasyncP99), `<= ${l.goals.halfRateP99ToFdatasyncP99Max}`],
    ] as Row[]).concat([['load mix: the ceiling\'s own half-rate p99 / fdatasync p99 (no goal)', String(l.ratios.ceilingHalfRateP99ToFdatasyncP99 ?? 'not measured')]]),
    charts: (l) => ({
      loadmix: barChart({
        title: 'Request + match mix under wrk, beside the ceiling (req/s)',
        yLabel: 'requests/s',
        bars: [{ label: 'ceiling (uws)', value: l.ceiling.saturated.requestsPerSecond }, ...Object.entries(l.service).filter(([, m]: [string, any]) => m.available).map(([mode, m]: [string, any]) => ({ label: mode, value: m.saturated.requestsPerSecond }))],
        goal: { value: Math.round(l.ceiling.saturated.requestsPerSecond * l.goals.requestsToCeilingMin), label: `goal ${l.goals.requestsToCeilingMin} of the ceiling` },
      }),
    }),
  },
]

const chosen = sections.filter((s) => only === null || only.has(s.name))
const seconds: Record<string, number> = {}
const figures: Record<string, any> = {}
for (const [i, section] of chosen.entries()) {
  process.stdout.write(`\n[${i + 1}/${chosen.length}] ${section.name} (bench run ${elapsed(runStarted)} so far)`)
  if (!fromLatest) seconds[section.key] = await run(section.file, [...section.args, ...(section.out ? ['--out', latest(section.name)] : [])], section.env)
  figures[section.key] = JSON.parse(readFileSync(latest(section.name), 'utf8'))
  process.stdout.write(fromLatest ? ` read from ${section.name}-latest.json\n` : `[${i + 1}/${chosen.length}] ${section.name} done in ${seconds[section.key]} s\n`)
}

const charts = chosen.flatMap((s) => Object.entries(s.charts(figures[s.key])))
for (const [name, svg] of charts) writeFileSync(join(results, `${name}.svg`), svg)
const rows = chosen.flatMap((s) => s.rows(figures[s.key]))
const summary = `# Bench summary

- Date: ${new Date().toISOString()}
- Machine: ${cpuModel()}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB memory, Node ${process.version}
- 1-minute load average: ${loadBefore} before the benches, ${load()} after (other processes on the machine skew every figure)
- Run time: ${fromLatest ? 'figures read from each section\'s last run (--from-latest)' : chosen.map((s) => `${s.name} ${seconds[s.key]} s`).join(', ')}${quick ? ' (--quick: small sizes, figures only show the bench works)' : ''}

${chosen.map((s) => `${s.markdown(figures[s.key])}\n${Object.keys(s.charts(figures[s.key])).map((name) => `![${name}](${name}.svg)`).join(' ')}\n`).join('\n')}
## Key figures

| figure | value | goal |
|---|---|---|
${rows.map(([figure, value, goal]) => `| ${figure} | ${value} | ${goal ?? ''} |`).join('\n')}

Full figures: ${chosen.map((s) => `${s.name}-latest.json`).join(', ')}, ${startedAt.toISOString().slice(0, 10)}.json.
`
writeFileSync(join(results, 'summary.md'), summary)
const dated = join(results, `${startedAt.toISOString().slice(0, 10)}.json`)
writeFileSync(dated, `${JSON.stringify({
  date: startedAt.toISOString(),
  quick,
  commit: commitOf(),
  machine: { cpu: cpuModel(), cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, loadAverage1mBefore: Number(loadBefore), loadAverage1mAfter: Number(load()) },
  seconds,
  ...figures,
}, null, 2)}\n`)
const width = Math.max(...rows.map(([figure]) => figure.length))
process.stdout.write(`\n${summary}\n${rows.map(([figure, value, goal]) => `  ${figure.padEnd(width)}  ${value.padStart(12)}  ${goal ?? ''}`).join('\n')}\n\nwrote ${join(results, 'summary.md')}, ${charts.map(([name]) => `${name}.svg`).join(', ')} and ${dated}\n`)
// Only a full run into bench/results: a --quick or --only run is no run the table shows, and another --results
// directory is not what the README cites.
if (!quick && only === null && resultsAt < 0) {
  try {
    writeReadmeGoals()
    process.stdout.write('rewrote the goals table of README.md (bench/readme-table.ts)\n')
  } catch (error) {
    // The figures are written; a README without the markers should not lose them, but the run says so and fails.
    process.stderr.write(`the README's goals table was not rewritten: ${(error as Error).message}\n`)
    process.exitCode = 1
  }
}
