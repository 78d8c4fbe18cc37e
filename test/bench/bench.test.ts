// `npm run bench -- --quick` stays working: every section runs once at a small size and writes its figures. No
// timing assertion (machines are shared and noisy): only that it completes and that each figure is there.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

// The quick run starts a devnet, several servers and wrk: about 1.5 min on a quiet machine, 4 under a load average
// of 25 on 2 cores, within tap's 300 s per file (a test cannot extend it: the runner's timer kills the process).
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

t.test('npm run bench -- --quick completes and writes every section\'s figures with the machine and the commit', async (t) => {
  const results = mkdtempSync(join(tmpdir(), 'agent-credit-bench-test-'))
  t.teardown(() => rmSync(results, { recursive: true, force: true }))
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', 'run.ts'), '--quick', '--results', results], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    child.on('error', reject)
    child.on('exit', (exitCode) => resolve(exitCode))
  })
  t.equal(code, 0, 'the run exits 0')
  const dated = readdirSync(results).filter((name) => /^\d{4}-\d{2}-\d{2}\.json$/.test(name))
  t.equal(dated.length, 1, 'bench/results/<date>.json is written')
  const run = JSON.parse(readFileSync(join(results, dated[0] as string), 'utf8'))
  t.equal(run.quick, true)
  t.match(run.commit, /^[0-9a-f]{40}$/)
  t.ok(run.machine.cores >= 1 && run.machine.memoryGiB >= 0 && typeof run.machine.node === 'string')
  t.ok(Number.isFinite(run.machine.loadAverage1mBefore) && Number.isFinite(run.machine.loadAverage1mAfter))
  t.ok(run.match.engine.matchesPerSecond > 0, 'in-process matching measured')
  t.ok(run.http.modes.sync.pairsPerSecond > 0, 'the service over HTTP measured')
  t.ok(run.ceiling.fdatasyncMillis.p99 > 0, 'the disk\'s fdatasync measured in the same run')
  for (const mode of ['uws', 'uws-overlapping', 'server-direct', 'server-front', 'node-http']) {
    const m = run.ceiling.modes[mode]
    t.ok(m.saturated.requestsPerSecond > 0 && m.saturated.errors === 0, `${mode}: wrk got answers, no errors`)
    t.ok(Number.isFinite(m.saturated.processCpuMicrosPerRequest) && Number.isFinite(m.saturated.latencyMillis.p99), `${mode}: CPU per request and p99`)
    t.ok(m.halfRate.requestsPerSecond > 0, `${mode}: the half-rate window ran`)
  }
  for (const ratio of ['frontToDirectThroughput', 'frontToDirectCpuPerRequest', 'serverDirectToCeilingThroughput', 'nodeHttpToCeilingThroughput']) {
    t.ok(run.ceiling.ratios[ratio] > 0, `ratio ${ratio} reported`)
  }
  const mix = run.loadmix
  t.ok(mix.ceiling.saturated.requestsPerSecond > 0 && mix.ceiling.saturated.processCpuMicrosPerPair > 0, 'loadmix: the ceiling measured in the same run')
  t.ok(mix.fdatasyncMillis.p99 > 0, 'loadmix: fdatasync measured in the same run')
  const front = mix.service['uws-front']
  t.equal(front.available, true, 'loadmix: the default transport ran')
  t.ok(front.saturated.pairsPerSecond > 0 && front.saturated.outcomes.leased > 0, 'loadmix: pairs leased under wrk')
  t.same(front.saturated.outcomes.errors, {}, 'loadmix: no error answers')
  t.ok(front.saturated.outcomes.matches <= front.saturated.outcomes.approved, 'loadmix: a match only for an approved offer')
  t.ok(Number.isFinite(front.saturated.serviceThreadCpuMicrosPerPair) && Number.isFinite(front.halfRate.latencyMillis.p99), 'loadmix: CPU per pair and half-rate p99')
  for (const ratio of ['requestsToCeiling', 'processCpuPerPairToCeiling', 'halfRateP99ToFdatasyncP99']) t.ok(mix.ratios['uws-front'][ratio] > 0, `loadmix: ratio ${ratio} reported`)
  t.ok(run.matchDurable.matchesPerSecond > 0 && run.matchDurable.commitsPerTransaction >= 1, 'in-process matching with durable commits measured')
  t.ok(Number.isFinite(run.matchDurable.matchCallMicros.p99) && Number.isFinite(run.matchDurable.commitAckMicros.p99), 'p99 of the match call and of the commit acknowledgement')
  t.equal(run.scale.byLenders.length, 3, 'the lenders curve has its three points')
  t.equal(run.scale.byLiveOffers.length, 2, 'the live offers curve has its two points')
  for (const point of [...run.scale.byLenders, ...run.scale.byLiveOffers]) {
    t.ok(point.matchesPerSecond > 0 && point.heapBytesPerLiveActor > 0, `scale point ${point.lenders} lenders, ${point.liveOffers} offers: throughput and heap`)
  }
  t.equal(run.restart.restored.liveOffers + run.restart.restored.liveLeases, run.restart.liveActors, 'the restart restored every live actor the store holds')
  t.ok(run.restart.storedSnapshots >= run.restart.liveActors && run.restart.totalMillis > 0, 'restart time measured on the built data directory')
  t.ok(run.durableCommit.commitsPerSecond > 0, 'the store alone measured')
  const summary = readFileSync(join(results, 'summary.md'), 'utf8')
  t.match(summary, /## The ceiling of this stack and the transports/)
  t.match(summary, /## Key figures/)
  t.match(summary, /## The service's request \+ match mix beside the ceiling/)
  for (const chart of ['match', 'match-durable', 'scale-lenders', 'scale-offers', 'restart', 'http', 'lease-signing', 'ceiling', 'durable-commit', 'loadmix']) {
    const file = join(results, `${chart}.svg`)
    t.ok(existsSync(file), `${chart}.svg written`)
    if (!existsSync(file)) continue
    const svg = readFileSync(file, 'utf8')
    t.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/, `${chart}.svg is one SVG document`)
    t.match(svg, /<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[1-9]|<polyline [^>]*points="[\d.]+,[\d.]+ [\d.]+,[\d.]+/, `${chart}.svg draws its bars or lines`)
    t.notMatch(svg, /NaN|undefined/, `${chart}.svg has no missing figure`)
    t.ok(summary.includes(`(${chart}.svg)`), `summary.md links ${chart}.svg`)
  }
})
