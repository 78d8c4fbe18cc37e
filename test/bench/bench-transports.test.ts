// `npm run bench -- --quick`, the transports' half (see bench.test.ts): the service over HTTP, the ceiling of the stack
// beside the transports, and the service's request + match mix under wrk beside the ceiling. No timing assertion.
import t from 'tap'
import { checkCharts, quickRun } from './fixtures/quick-run.ts'

t.test('the HTTP sections of npm run bench -- --quick complete and write their figures and charts', async (t) => {
  const done = await quickRun(t, ['http', 'ceiling', 'loadmix'])
  if (done === undefined) return
  const { run, summary, results } = done
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
  t.match(summary, /## The ceiling of this stack and the transports/)
  t.match(summary, /## The service's request \+ match mix beside the ceiling/)
  checkCharts(t, results, summary, ['http', 'ceiling', 'loadmix'])
})
