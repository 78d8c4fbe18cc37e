// `npm run bench`: runs bench/match.ts, bench/http.ts, bench/lease-signing.ts, bench/ceiling.ts, bench/durable-commit.ts
// and bench/loadmix.ts, each as its own
// child process (sequentially, so they do not compete for the cores), then writes bench/results/summary.md and
// bench/results/<date>.json with the machine (cores, memory, load before and after, Node, commit) and every figure.
// `npm run bench -- --quick` runs each section small (about a minute or two in all: the tests run it so to keep it
// working, without timing assertions). `--results <dir>` writes there instead of bench/results. Other arguments
// after `--` go to http.ts (e.g. `npm run bench -- --external`).
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const argv = process.argv.slice(2)
const quick = argv.includes('--quick')
const resultsAt = argv.indexOf('--results')
const results = resultsAt >= 0 ? (argv[resultsAt + 1] as string) : join(here, 'results')
const httpArgs = argv.filter((arg, index) => arg !== '--quick' && index !== resultsAt && index !== resultsAt + 1)
mkdirSync(results, { recursive: true })

function run(file: string, args: string[] = [], env: Record<string, string> = {}): Promise<number> {
  process.stdout.write(`\n### ${file} ${args.join(' ')}\n`)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, file), ...args], { stdio: 'inherit', cwd: join(here, '..'), env: { ...process.env, BENCH_RESULTS_DIR: results, ...env } })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (code !== 0) reject(new Error(`${file} exited with ${code ?? signal}`))
      else resolve(Math.round((performance.now() - started) / 100) / 10)
    })
  })
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
const matchSeconds = await run('match.ts', [], quick ? { BENCH_LENDERS: '2000', BENCH_MATCHES: '1000', BENCH_DISPATCH_LEASES: '1000', BENCH_DISPATCH_IDLE_CALLS: '100' } : {})
const httpSeconds = await run('http.ts', [...(quick ? ['--lenders', '20', '--borrowers', '4', '--in-flight', '4', '--warmup', '1', '--seconds', '1', '--modes', 'sync'] : []), ...httpArgs, '--out', join(results, 'http-latest.json')])
const signingSeconds = await run('lease-signing.ts', quick ? ['--iterations', '20'] : [])
const ceilingSeconds = await run('ceiling.ts', [...(quick ? ['--quick'] : []), '--out', join(results, 'ceiling-latest.json')])
const durableSeconds = await run('durable-commit.ts', [...(quick ? ['--quick'] : []), '--out', join(results, 'durable-commit-latest.json')])
const loadmixSeconds = await run('loadmix.ts', [...(quick ? ['--quick'] : []), '--out', join(results, 'loadmix-latest.json')])
const match = JSON.parse(readFileSync(join(results, 'match-latest.json'), 'utf8'))
const signing = JSON.parse(readFileSync(join(results, 'lease-signing-latest.json'), 'utf8'))
const http = JSON.parse(readFileSync(join(results, 'http-latest.json'), 'utf8'))
const ceiling = JSON.parse(readFileSync(join(results, 'ceiling-latest.json'), 'utf8'))
const durable = JSON.parse(readFileSync(join(results, 'durable-commit-latest.json'), 'utf8'))
const loadmix = JSON.parse(readFileSync(join(results, 'loadmix-latest.json'), 'utf8'))

const ms = (v: number) => `${v} ms`
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

function loadmixSection(l: any): string {
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
${Object.entries(l.service).map(row).join('\n')}`
}

const w = http.workload
const summary = `# Bench summary

- Date: ${new Date().toISOString()}
- Machine: ${cpuModel()}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB memory, Node ${process.version}
- 1-minute load average: ${loadBefore} before the benches, ${load()} after (other processes on the machine skew every figure)
- Run time: match ${matchSeconds} s, http ${httpSeconds} s, lease signing ${signingSeconds} s, ceiling ${ceilingSeconds} s, durable commit ${durableSeconds} s, load mix ${loadmixSeconds} s${quick ? ' (--quick: small sizes, figures only show the bench works)' : ''}

## Matching in process (bench/match.ts)

${match.lenders} lenders on one book, ${match.matches} timed matches; each match is then paid and repaid (untimed).

| | matches/s | p50 | p90 | p99 | p99.9 |
|---|---|---|---|---|---|
| engine (actors, changes) | ${match.engine.matchesPerSecond} | ${match.engine.latencyMicros.p50} us | ${match.engine.latencyMicros.p90} us | ${match.engine.latencyMicros.p99} us | ${match.engine.latencyMicros.p999} us |
| bare book, same rules | ${match.baseline.matchesPerSecond} | ${match.baseline.latencyMicros.p50} us | ${match.baseline.latencyMicros.p90} us | ${match.baseline.latencyMicros.p99} us | ${match.baseline.latencyMicros.p999} us |

Engine / bare book throughput: **${match.engineToBaselineThroughputRatio}**

## The store's durable write path (bench/durable-commit.ts)

${durable.commits} match-shaped commits (3 snapshots, 2 records), ${durable.inFlight} in flight, LMDB synchronous commits, one group commit per transaction:
${durable.commitsPerSecond} commits/s, p50 ${durable.latencyMillis.p50} ms, p99 ${durable.latencyMillis.p99} ms, ${durable.cpuMicrosPerCommit} us process CPU per commit,
${durable.commitsPerTransaction} commits per group transaction.

## Request and match over HTTP (bench/http.ts)

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

## Lease authorization signing (bench/lease-signing.ts)

Per authorization (digest + signature, distinct terms each), median of ${signing.rounds} rounds of ${signing.iterations}:

| | us |
|---|---|
${signing.results.map((r: { name: string; microsPerAuthorization: number }) => `| ${r.name} | ${r.microsPerAuthorization} |`).join('\n')}

viem signTypedData / LeaseSigner: **${signing.ratios.viemSignTypedDataToLeaseSigner}**; implementations: ${JSON.stringify(signing.native)}

## The ceiling of this stack and the transports (bench/ceiling.ts)

One route that parses a ${ceiling.body.requestBytes}-byte JSON body, commits one durable LMDB record (group commit) and answers about
940 bytes, each mode in its own process; wrk (Debian's package) from another process, ${ceiling.connections} connections, ${ceiling.seconds} s per window.
The disk in this run: fdatasync p50 ${ceiling.fdatasyncMillis.p50} ms, p99 ${ceiling.fdatasyncMillis.p99} ms.

| mode | req/s | p50 / p99 | CPU per request (process / main thread) | at half rate: req/s, p99 |
|---|---|---|---|---|
${Object.entries(ceiling.modes).map(([name, m]: [string, any]) => `| ${name} | ${m.saturated.requestsPerSecond} | ${ms(m.saturated.latencyMillis.p50)} / ${ms(m.saturated.latencyMillis.p99)} | ${m.saturated.processCpuMicrosPerRequest} us / ${m.saturated.mainThreadCpuMicrosPerRequest} us | ${m.halfRate.requestsPerSecond}, ${ms(m.halfRate.latencyMillis.p99)} |`).join('\n')}

Ratios: ${Object.entries(ceiling.ratios).map(([k, v]) => `${k} **${v}**`).join(', ')}

${loadmixSection(loadmix)}

Full figures: match-latest.json, http-latest.json, lease-signing-latest.json, ceiling-latest.json, loadmix-latest.json, ${startedAt.toISOString().slice(0, 10)}.json.
`
writeFileSync(join(results, 'summary.md'), summary)
const dated = join(results, `${startedAt.toISOString().slice(0, 10)}.json`)
writeFileSync(dated, `${JSON.stringify({
  date: startedAt.toISOString(),
  quick,
  commit: commitOf(),
  machine: { cpu: cpuModel(), cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, loadAverage1mBefore: Number(loadBefore), loadAverage1mAfter: Number(load()) },
  seconds: { match: matchSeconds, http: httpSeconds, leaseSigning: signingSeconds, ceiling: ceilingSeconds, loadmix: loadmixSeconds },
  match,
  http,
  leaseSigning: signing,
  ceiling,
  loadmix,
}, null, 2)}\n`)
process.stdout.write(`\n${summary}\nwrote ${join(results, 'summary.md')} and ${dated}\n`)
