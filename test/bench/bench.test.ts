// `npm run bench -- --quick` stays working, in two halves run by two test files so each stays well inside tap's
// 300 s per file on a loaded machine (a test cannot extend it: the runner's timer kills the process). This half: the
// sections in process (matching, request + match, the ticker's timers, durable matching, scale curves, restart, the
// store alone, lease signing); the transports' half is bench-transports.test.ts. No timing assertion (machines are
// shared and noisy): only that each section completes and that each figure and chart is there.
import t from 'tap'
import { checkCharts, quickRun } from './fixtures/quick-run.ts'

t.test('the in-process sections of npm run bench -- --quick complete and write their figures, charts and the machine', async (t) => {
  const done = await quickRun(t, ['match', 'match-request', 'dispatch', 'match-durable', 'scale', 'restart', 'durable-commit', 'lease-signing'])
  if (done === undefined) return
  const { run, summary, results } = done
  t.ok(run.match.engine.matchesPerSecond > 0, 'in-process matching measured')
  t.ok(run.matchRequest.cpuMicros.request > 0 && run.matchRequest.cpuMicros.match > 0, 'the engine\'s CPU per requestCredit and per matchOffer measured')
  t.match(run.matchRequest.outcomeDigest, /^[0-9a-f]{16}$/, 'with the digest of their outcomes')
  const gc = run.matchRequest.gc
  t.ok([gc.scavenges, gc.scavengeMicrosPerPair, gc.others, gc.otherMicrosPerPair, gc.longestMillis].every((n) => Number.isFinite(n) && n >= 0), 'and the GC pauses of its rounds')
  t.ok(run.dispatch.cpuMicrosPerTimeOut > 0 && run.dispatch.cpuMicrosPerExpiry > 0 && run.dispatch.cpuMicrosPerPair > 0, 'the engine\'s CPU per lease time-out, per offer expiry and per pair measured')
  t.match(run.dispatch.outcomeDigest, /^[0-9a-f]{16}$/, 'with the digest of their outcomes')
  t.ok(run.matchDurable.matchesPerSecond > 0 && run.matchDurable.commitsPerTransaction >= 1, 'in-process matching with durable commits measured')
  t.ok(Number.isFinite(run.matchDurable.matchCallMicros.p99) && Number.isFinite(run.matchDurable.commitAckMicros.p99), 'p99 of the match call and of the commit acknowledgement')
  t.equal(run.scale.byLenders.length, 3, 'the lenders curve has its three points')
  t.equal(run.scale.byLiveOffers.length, 2, 'the live offers curve has its two points')
  for (const point of [...run.scale.byLenders, ...run.scale.byLiveOffers]) {
    t.ok(point.matchesPerSecond > 0 && point.heapBytesPerLiveActor > 0, `scale point ${point.lenders} lenders, ${point.liveOffers} offers: throughput and heap`)
  }
  t.equal(run.restart.restored.liveOffers + run.restart.restored.liveLeases, run.restart.liveActors, 'the restart restored every live actor the store holds')
  t.ok(run.restart.storedSnapshots >= run.restart.liveActors && run.restart.totalMillis > 0, 'restart time measured on the built data directory')
  t.same([run.restart.openCheck, run.restart.afterCrash.openCheck], ['clean-shutdown', 'deep'], 'timed after a clean stop (no deep check) and as after a crash (the deep check)')
  t.ok(run.durableCommit.commitsPerSecond > 0, 'the store alone measured')
  t.ok(run.leaseSigning.results.length > 0, 'lease signing measured')
  checkCharts(t, results, summary, ['match', 'match-request', 'dispatch', 'match-durable', 'scale-lenders', 'scale-offers', 'restart', 'durable-commit', 'lease-signing'])
})
