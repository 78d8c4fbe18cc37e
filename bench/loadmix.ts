// The service's request + match mix under wrk from another process, beside the ceiling of its stack, in one run
// (issue 11). The service runs as its own process (fixtures/serve.ts: durable, the default configuration but for the
// bench's short leases, see fixtures/service.ts) on one devnet, with lenders funded on chain and borrowers signed in
// with attested backing (fixtures/agents.ts, as bench/http.ts). wrk (Debian's package) runs fixtures/loadmix.lua:
// each answer with an approved offer queues that offer, and the next request wrk sends is its match (with the offer's
// borrower's bearer token), otherwise a new credit request from the next borrower in turn. In the same run, measured
// the same way (same wrk, same connections, same windows), the ceiling: bench/ceiling.ts's `uws` mode, a bare
// uWebSockets.js route that commits one durable LMDB record per request with group commit. Per mode: a warm-up, a
// saturated window (throughput; CPU of the server process and of its main thread from /proc), then a window at about
// half the saturated rate (wrk's per-connection delay; after a warm-up at that rate that outlasts the saturated
// window's leases) for the latency of a service that is not saturated, beside the disk's fdatasync p99 measured in
// this run. A pair is one request + match: the ceiling's CPU per pair is that of two
// of its requests. Modes of the service: uws-front (the default: uWS behind the node:net front), uws-direct
// (HTTP_LEGACY_CLIENTS=0) and node (HTTP_TRANSPORT=node, reported "not available" where the service ignores it).
// Fails when more than 1% of the answers are errors or fewer than 90% of the matches lease: a broken mix must not
// pass for a fast one (once every mode ran and the results are written, so that a failed mode still shows what it
// measured). Each mode also reports the dispatch ticker's backlog, sampled in the service (fixtures/service.ts
// sampleDispatchBacklog): how overdue the oldest due lease or offer is, how many are due, how far the observed chain
// time is behind the clock, and the ticker's turns. Writes bench/results/loadmix-latest.json. Options: --lenders 500 --borrowers 512
// --connections 64 --warmup 3 --seconds 10 --modes uws-front,uws-direct,node --quick (1 s windows, no warm-ups, half-second idle
// windows, a small book, the default mode only). BENCH_SERVICE_CPU_PROF=<dir> writes a CPU profile of each service process there (its CPU
// figures then include the profiler's own: V8 samples every isolate, 1,000 times a second, from a thread of its own, and
// the service has four: the service thread, the HTTP front's, and tsx's loader thread beside each; that alone is about
// 0.1 cores of an idle service, so the run says `profiled`);
// BENCH_SERVICE_LONG_TASKS_MS=<ms> makes each service process write what held its event loop in each window to stderr
// (engine commands over <ms> with their size, GC, the loop's stalls: fixtures/long-tasks.ts);
// BENCH_SERVICE_HEAP_SAMPLE=<dir> writes where each service process allocated its bytes in the saturated window there
// (fixtures/heap-sample.ts; the sampling costs CPU, so read that run's allocation sites, not its CPU figures); with
// BENCH_SERVICE_HEAP_SAMPLE_SURVIVORS=1 as well, only the bytes no scavenge collected (what V8's GC helpers copy and mark);
// BENCH_SERVICE_SLOW_REQUESTS=1 makes each service process write what the slowest 1 % of each window's requests waited
// for, by cause, to stderr (fixtures/slow-requests.ts); the half-rate window's report is the one after its warm-up.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { NetworkConfig } from '../src/chain/config.ts'
import { defaultDevnetNetworks, startDevnet, type Devnet } from '../src/chain/devnet.ts'
import { fdatasyncMillis, procCpuMicros, script as ceilingScript, startMode, stopMode, threadsCpuMicros, wrk, type WrkResult } from './ceiling.ts'
import { ASSET, fundLenders, lenderSpecs, registerBorrowers, registerLenders } from './fixtures/agents.ts'
import { BENCH_SUPPLIER, startServiceProcess } from './fixtures/service-process.ts'
import { backlogOf, windowOf } from './fixtures/service.ts'
import { checkMix, type MixCounts } from './fixtures/mix.ts'
import { isMainModule } from '../src/tools/main-module.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values: args } = parseArgs({
  options: {
    lenders: { type: 'string' },
    borrowers: { type: 'string' },
    connections: { type: 'string' },
    warmup: { type: 'string' },
    seconds: { type: 'string' },
    modes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
})
const QUICK = args.quick === true
const num = (value: string | undefined, name: string, fallback: number, least = Number.MIN_VALUE): number => {
  const n = Number(value ?? fallback)
  if (!Number.isFinite(n) || n < least) throw new Error(`--${name} must be a ${least === 0 ? 'non-negative' : 'positive'} number`)
  return n
}
const LENDERS = num(args.lenders, 'lenders', QUICK ? 128 : 500)
// A borrower holds at most liveOffersPerBorrowerMax (100) live offers and offers live LEASE_TTL_SECONDS: enough
// borrowers that none reaches the cap at the rates this machine serves, and lenders whose liquidity outlasts the
// leases held meanwhile. --quick had 20 and 32: on a quiet machine its 1 s windows reached the borrowers' cap (409
// live_offers_limit) already at 12680a0, and with 96 borrowers ran the book dry at 1,400 pairs/s. An offer stays live
// about 5.4 s at saturation (its 3 s TTL, up to a second more as its lease is over at the chain second after its
// deadline, and the observed chain time's 1.6-2 s lag behind the clock: README "Bounded work per command"), so 256
// borrowers' 25,600 live offers capped the mix at about 4,700 pairs/s (409s from about 4,300 on a quiet machine,
// 2026-11-27); 512 hold twice the rate this machine serves.
const BORROWERS = num(args.borrowers, 'borrowers', QUICK ? 128 : 512)
const CONNECTIONS = num(args.connections, 'connections', QUICK ? 16 : 64)
// --quick: no warm-up windows (its figures only show the bench works; each window holds both cores).
const WARMUP_SECONDS = num(args.warmup, 'warmup', QUICK ? 0 : 3, 0)
const SECONDS = num(args.seconds, 'seconds', QUICK ? 1 : 10)
const LEASE_TTL_SECONDS = 3
// --quick: half-second idle windows (what an idle service spends shows in one; the tests' runs only check it is there).
const IDLE_SECONDS = QUICK ? 0.5 : 2
const DISPATCH_INTERVAL_MS = 500
const HALF_RATE_SETTLE_SECONDS = QUICK ? 0 : Math.ceil(LEASE_TTL_SECONDS + (2 * DISPATCH_INTERVAL_MS) / 1000)
const SERVICE_MODES: Record<string, Record<string, string>> = {
  'uws-front': {},
  'uws-direct': { HTTP_LEGACY_CLIENTS: '0' },
  node: { HTTP_TRANSPORT: 'node' },
}
// --quick keeps the default mode only: each mode sets up its own book, and the quick run is there to keep this working.
const MODES = String(args.modes ?? (QUICK ? 'uws-front' : Object.keys(SERVICE_MODES).join(','))).split(',')
for (const mode of MODES) if (SERVICE_MODES[mode] === undefined) throw new Error(`unknown mode ${mode} (known: ${Object.keys(SERVICE_MODES).join(', ')})`)

const say = (line: string) => process.stdout.write(`${line}\n`)
const load1m = () => Math.round((loadavg()[0] ?? 0) * 100) / 100
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits
const ratio = (a: number | undefined | null, b: number | undefined | null) => (a == null || b == null || b === 0 ? null : round(a / b, 3))

interface Window {
  wrk: WrkResult
  counts?: MixCounts
  cpu: { processMicros: number; mainThreadMicros: number; threads: ThreadCpu[] }
  loadAverage1mAtEnd: number
}

/**
 * A thread's CPU over a window. Node names none of its threads, so a thread is told by its rank in the order the
 * process started them (`main`, then `#k`: V8's platform workers, which run the garbage collector's helpers, come
 * first, then libuv's pool, the TypeScript loader's thread and the HTTP front's thread as they start).
 */
interface ThreadCpu { thread: string; cpuCores: number }

/** The threads that used CPU between two readings, busiest first: which thread an idle or a loaded service spends on. */
function threadsOver(pid: number, before: Map<number, number>, after: Map<number, number>, seconds: number): ThreadCpu[] {
  const threads: ThreadCpu[] = []
  const ranks = [...after.keys()].sort((a, b) => a - b)
  for (const [tid, micros] of after) {
    const cpuCores = round((micros - (before.get(tid) ?? 0)) / (seconds * 1e6), 3)
    if (cpuCores > 0) threads.push({ thread: tid === pid ? 'main' : `#${ranks.indexOf(tid)}`, cpuCores })
  }
  return threads.sort((a, b) => b.cpuCores - a.cpuCores)
}

const threadsText = (threads: ThreadCpu[]) => threads.slice(0, 5).map((t) => `${t.thread} ${t.cpuCores}`).join(', ')

/** What the server spends with no request at all (timers, the chain's pollers), per thread. */
async function idleWindow(pid: number) {
  const before = { process: procCpuMicros(pid), thread: procCpuMicros(pid, pid), threads: threadsCpuMicros(pid) }
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
  return {
    processCpuCores: round((procCpuMicros(pid) - before.process) / (IDLE_SECONDS * 1e6), 3),
    mainThreadCpuCores: round((procCpuMicros(pid, pid) - before.thread) / (IDLE_SECONDS * 1e6), 3),
    threads: threadsOver(pid, before.threads, threadsCpuMicros(pid), IDLE_SECONDS),
  }
}

/** A warm-up, the saturated window with /proc CPU around it, then the half-rate window (after its own warm-up), then idle again: the same for every mode. */
async function windows(url: string, pid: number, scriptFor: (window: string, delayMs?: number) => { file: string; counts?: () => MixCounts }, settleMs: number, around?: { before(): Promise<void>; after(): Promise<void>; mark(): Promise<void> }) {
  // wrk runs synchronously: nothing of this process runs during a window.
  const run = (window: string, seconds: number, delayMs?: number): Window => {
    const { file, counts } = scriptFor(window, delayMs)
    const before = { process: procCpuMicros(pid), thread: procCpuMicros(pid, pid), threads: threadsCpuMicros(pid) }
    const result = wrk(url, file, seconds, CONNECTIONS)
    const after = { process: procCpuMicros(pid), thread: procCpuMicros(pid, pid), threads: threadsCpuMicros(pid) }
    return {
      wrk: result,
      ...(counts === undefined ? {} : { counts: counts() }),
      cpu: { processMicros: after.process - before.process, mainThreadMicros: after.thread - before.thread, threads: threadsOver(pid, before.threads, after.threads, seconds) },
      loadAverage1mAtEnd: load1m(),
    }
  }
  const idle = await idleWindow(pid)
  // A warm-up of 0 s (--quick) is none.
  const warm = (window: string, seconds: number, delayMs?: number) => void (seconds > 0 && run(window, seconds, delayMs))
  warm('warm-up', WARMUP_SECONDS)
  await around?.before()
  const saturated = run('saturated', SECONDS)
  await around?.after()
  // Each connection waits this long between an answer and its next request: at most half the saturated rate.
  const delayMillis = Math.max(1, Math.round((2 * CONNECTIONS * 1000) / Math.max(1, saturated.wrk.requestsPerSecond)))
  // The half rate's own warm-up first, as long as the saturated window's leases and offers live and one more ticker
  // period: measured right after the saturated window, the half-rate window also carried the time-outs and expiries of
  // everything the saturated window leased (twice its own rate of them, in bursts each ticker period), which is the
  // saturated load's tail, not the latency of a service at half that rate.
  warm('half-rate-warm-up', HALF_RATE_SETTLE_SECONDS, delayMillis)
  await around?.mark()
  const halfRate = run('half-rate', SECONDS, delayMillis)
  await around?.mark()
  // After the load: its leases and offers expire in the meantime (settleMs: they live LEASE_TTL_SECONDS), so this is
  // the idle service with a book, which is what a deployment spends between bursts.
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  const idleAfter = await idleWindow(pid)
  return { idle, saturated, halfRate: { ...halfRate, delayMillis }, idleAfter }
}

const errorsOf = (w: Window) => w.wrk.errors + (w.counts === undefined ? 0 : w.counts.unrecognised)

/** Which transport answers: uWebSockets.js marks every answer with its own header, node:http does not. */
async function transportOf(url: string): Promise<'uws' | 'other'> {
  const reply = await fetch(`${url}/.well-known/service.json`)
  await reply.arrayBuffer()
  return reply.headers.has('uwebsockets') ? 'uws' : 'other'
}

async function runServiceMode(mode: string, devnet: Devnet, network: NetworkConfig, networksFile: string, scratch: string) {
  const env = SERVICE_MODES[mode] as Record<string, string>
  say(`\n== service, ${mode} ${JSON.stringify(env)} ==`)
  const dataDir = mkdtempSync(join(tmpdir(), `agent-credit-loadmix-${mode}-`))
  const service = await startServiceProcess(devnet, networksFile, { dataDir, durability: 'sync', leaseTtlSeconds: LEASE_TTL_SECONDS, dispatchIntervalMs: DISPATCH_INTERVAL_MS }, env)
  try {
    const transport = await transportOf(service.url)
    if (mode === 'node' && transport === 'uws') {
      say('  HTTP_TRANSPORT=node is not accepted by this service (uWebSockets.js still answers): not available')
      return { available: false as const, reason: 'HTTP_TRANSPORT=node: the service still answers with uWebSockets.js' }
    }
    const t = performance.now()
    const lenders = await registerLenders(service.url, network, lenderSpecs(LENDERS))
    const { transactions } = await fundLenders(service.url, network, devnet.accounts, lenders)
    const borrowers = await registerBorrowers(service.url, devnet.accounts, BORROWERS, `loadmix-${mode}`)
    const setupSeconds = round((performance.now() - t) / 1000)
    say(`  setup: ${LENDERS} lenders funded on chain (${transactions} transactions), ${BORROWERS} borrowers, in ${setupSeconds}s`)

    const mix = { borrowers, network: network.slug, asset: ASSET, supplier: BENCH_SUPPLIER.name, supplierDomain: BENCH_SUPPLIER.domain }
    const logic = readFileSync(join(here, 'fixtures', 'loadmix.lua'), 'utf8')
    const scriptFor = (window: string, delayMs?: number) => {
      const file = join(scratch, `${mode}-${window}.lua`)
      const out = join(scratch, `${mode}-${window}.json`)
      writeFileSync(file, [
        `MIX = ${luaValue(mix)}`,
        `OUT = ${JSON.stringify(out)}`,
        ...(delayMs === undefined ? [] : [`function delay() return ${delayMs} end`]),
        logic,
      ].join('\n'))
      return { file, counts: () => JSON.parse(readFileSync(out, 'utf8')) as MixCounts }
    }
    let start: Awaited<ReturnType<typeof service.read>> | undefined
    let end: typeof start
    const marks: NonNullable<typeof start>[] = []
    const measured = await windows(`${service.url}/`, service.pid as number, scriptFor, LEASE_TTL_SECONDS * 1000, {
      before: async () => { start = await service.read() },
      after: async () => { end = await service.read() },
      // A reading on its own: the service's per-window reports (long tasks, slow requests) then cover the half-rate window alone.
      mark: async () => { marks.push(await service.read()) },
    })
    const s = measured.saturated
    const c = s.counts as MixCounts
    const pairs = Math.max(1, c.matches)
    const result = {
      available: true as const,
      transport,
      env,
      setup: { lenders: LENDERS, borrowers: BORROWERS, fundTransactions: transactions, seconds: setupSeconds },
      idle: measured.idle,
      idleAfter: measured.idleAfter,
      saturated: {
        ...s.wrk,
        pairsPerSecond: Math.round(c.matches / SECONDS),
        outcomes: c,
        serviceThreadCpuMicrosPerPair: round(s.cpu.mainThreadMicros / pairs),
        processCpuMicrosPerPair: round(s.cpu.processMicros / pairs),
        processCpuCores: round(s.cpu.processMicros / (SECONDS * 1e6), 2),
        threadsCpuCores: s.cpu.threads,
        store: windowOf(start as NonNullable<typeof start>, end as NonNullable<typeof end>, pairs),
        // The dispatch ticker's backlog over the window (sampled in the service, fixtures/service.ts sampleDispatchBacklog).
        dispatchBacklog: backlogOf(start, end),
        loadAverage1mAtEnd: s.loadAverage1mAtEnd,
      },
      halfRate: {
        ...measured.halfRate.wrk, delayMillis: measured.halfRate.delayMillis, outcomes: measured.halfRate.counts as MixCounts,
        dispatchBacklog: backlogOf(marks[0], marks[1]), loadAverage1mAtEnd: measured.halfRate.loadAverage1mAtEnd,
      },
    }
    const backlogText = (b: ReturnType<typeof backlogOf>, pairsPerSecond: number) => b === null ? 'not sampled' :
      `oldest due item overdue max ${b.overdueMsMax} ms (p50 ${b.overdueMsP50}, at the end ${b.overdueMsAtEnd}), due at once max ${b.dueLeasesMax} leases / ${b.dueOffersMax} offers, ` +
      `mean ${b.dueLeasesMean} / ${b.dueOffersMean} (a lease waits about ${Math.round((b.dueLeasesMean * 1000) / Math.max(1, pairsPerSecond))} ms past its deadline); ` +
      `observed chain time behind the clock mean ${b.chainLagMsMean} ms, max ${b.chainLagMsMax}; ` +
      `ticker turns ${b.tickerTurns}, ${b.tickerGrownTurnsShare} of them behind (budget grown, max ever ${b.tickerBudgetMsMaxEver} ms), ${b.tickerFullTurnsShare} stopped at the commands in flight`
    say(`  ${mode}: ${result.saturated.pairsPerSecond} pairs/s, ${s.wrk.requestsPerSecond} req/s (p99 ${s.wrk.latencyMillis.p99} ms); ` +
      `CPU per pair ${result.saturated.serviceThreadCpuMicrosPerPair} us service thread, ${result.saturated.processCpuMicrosPerPair} us process; ` +
      `half rate ${result.halfRate.requestsPerSecond} req/s p99 ${result.halfRate.latencyMillis.p99} ms; load ${s.loadAverage1mAtEnd}`)
    const cycle = result.saturated.store.groupCycle
    if (cycle !== null) say(`  store: ${result.saturated.store.commitsPerTransaction} commits per transaction, ${result.saturated.store.storeTransactionsPerSecond}/s, loop busy ${result.saturated.store.serviceLoopUtilization}; ` +
      `group cycle ${cycle.cycleMicros} us (to callback ${cycle.toCallbackMicros}, callback ${cycle.callbackMicros}, to resolved ${cycle.toResolvedMicros}, acks ${cycle.acksMicros}), writing ${cycle.writingShare} of the window`)
    say(`  threads, saturated (cores): ${threadsText(s.cpu.threads)}`)
    say(`  idle before / after the load: ${measured.idle.processCpuCores} / ${measured.idleAfter.processCpuCores} cores process, ` +
      `${measured.idle.mainThreadCpuCores} / ${measured.idleAfter.mainThreadCpuCores} main thread; by thread, before: ${threadsText(measured.idle.threads)}; after: ${threadsText(measured.idleAfter.threads)}`)
    say(`  dispatch backlog, saturated: ${backlogText(result.saturated.dispatchBacklog, result.saturated.pairsPerSecond)}; per second ${JSON.stringify(result.saturated.dispatchBacklog?.overdueMsMaxPerSecond ?? [])}`)
    say(`  dispatch backlog, half rate: ${backlogText(result.halfRate.dispatchBacklog, Math.round(result.halfRate.outcomes.matches / SECONDS))}; errors ${JSON.stringify(result.halfRate.outcomes.errors)}`)
    say(`  outcomes: leased ${c.leased}, no eligible lender ${c.noEligibleLender}, offer expired ${c.offerExpired}, declined ${c.declined}, ` +
      `refused leases ${c.refusedLeases}, errors ${JSON.stringify(c.errors)}`)
    // After the figures are out, and the other modes run: a failed mode still says what it measured (the ticker's
    // backlog, the 409s), and the run fails once its results are written.
    let failed: string | null = null
    try {
      checkMix(`${mode} saturated`, measured.saturated.wrk, measured.saturated.counts as MixCounts)
      checkMix(`${mode} half-rate`, measured.halfRate.wrk, measured.halfRate.counts as MixCounts)
    } catch (error) {
      failed = String(error)
      say(`  FAILED: ${failed}`)
    }
    return { ...result, failed }
  } finally {
    await service.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** A Lua table constructor for plain JSON-like data (the run's borrowers and fields). */
function luaValue(value: unknown): string {
  if (Array.isArray(value)) return `{${value.map(luaValue).join(',')}}`
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `[${JSON.stringify(k)}]=${luaValue(v)}`).join(',')}}`
  return JSON.stringify(value)
}

async function runCeilingMode(scratch: string) {
  say('\n== ceiling (bench/ceiling.ts uws: bare uWebSockets.js, one durable LMDB record per request, group commit) ==')
  const { child, port } = await startMode('uws')
  try {
    // The ceiling holds no leases or offers to expire: --quick reads its idle after the load at once (the full run
    // waits the lease TTL as the service does, its figures comparable with earlier runs).
    const settleMs = QUICK ? 0 : LEASE_TTL_SECONDS * 1000
    const measured = await windows(`http://127.0.0.1:${port}/commit`, child.pid as number, (window, delayMs) => ({ file: ceilingScript(scratch, `ceiling-${window}`, delayMs) }), settleMs)
    const s = measured.saturated
    if (errorsOf(s) > 0 || errorsOf(measured.halfRate) > 0) throw new Error(`ceiling: ${errorsOf(s) + errorsOf(measured.halfRate)} error answers`)
    const requests = Math.max(1, s.wrk.requests)
    const result = {
      idle: measured.idle,
      idleAfter: measured.idleAfter,
      saturated: {
        ...s.wrk,
        processCpuMicrosPerRequest: round(s.cpu.processMicros / requests),
        mainThreadCpuMicrosPerRequest: round(s.cpu.mainThreadMicros / requests),
        // A pair is two requests (request + match), each one durable commit on the ceiling.
        processCpuMicrosPerPair: round((2 * s.cpu.processMicros) / requests),
        processCpuCores: round(s.cpu.processMicros / (SECONDS * 1e6), 2),
        loadAverage1mAtEnd: s.loadAverage1mAtEnd,
      },
      halfRate: { ...measured.halfRate.wrk, delayMillis: measured.halfRate.delayMillis, loadAverage1mAtEnd: measured.halfRate.loadAverage1mAtEnd },
    }
    say(`  ceiling: ${s.wrk.requestsPerSecond} req/s (p99 ${s.wrk.latencyMillis.p99} ms), CPU ${result.saturated.processCpuMicrosPerRequest} us/request process ` +
      `(${result.saturated.processCpuMicrosPerPair} us per pair); half rate ${result.halfRate.requestsPerSecond} req/s p99 ${result.halfRate.latencyMillis.p99} ms`)
    return result
  } finally {
    await stopMode(child)
  }
}

export async function runLoadMix() {
  const loadAtStart = load1m()
  const scratch = mkdtempSync(join(tmpdir(), 'agent-credit-loadmix-'))
  const networksFile = join(scratch, 'networks.json')
  const fdatasync = fdatasyncMillis(QUICK ? 50 : 500)
  say(`loadmix: modes ${MODES.join(', ')} + ceiling; wrk ${CONNECTIONS} connections, ${WARMUP_SECONDS}s warm-up + ${SECONDS}s per window; ` +
    `${LENDERS} lenders, ${BORROWERS} borrowers; fdatasync p50 ${fdatasync.p50} ms, p99 ${fdatasync.p99} ms; load ${loadAtStart}`)
  const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]], configPath: networksFile })
  const network = devnet.networks[0] as NetworkConfig
  const service: Record<string, Awaited<ReturnType<typeof runServiceMode>>> = {}
  let ceiling: Awaited<ReturnType<typeof runCeilingMode>>
  try {
    ceiling = await runCeilingMode(scratch)
    for (const mode of MODES) service[mode] = await runServiceMode(mode, devnet, network, networksFile, scratch)
  } finally {
    await devnet.stop()
    rmSync(scratch, { recursive: true, force: true })
  }
  const ratios = Object.fromEntries(Object.entries(service).map(([mode, m]) => [mode, m.available ? {
    requestsToCeiling: ratio(m.saturated.requestsPerSecond, ceiling.saturated.requestsPerSecond),
    serviceThreadCpuMicrosPerPair: m.saturated.serviceThreadCpuMicrosPerPair,
    processCpuPerPairToCeiling: ratio(m.saturated.processCpuMicrosPerPair, ceiling.saturated.processCpuMicrosPerPair),
    halfRateP99ToFdatasyncP99: ratio(m.halfRate.latencyMillis.p99, fdatasync.p99),
  } : null]))
  const front = service['uws-front']
  const node = service.node
  return {
    date: new Date().toISOString(),
    quick: QUICK,
    profiled: process.env.BENCH_SERVICE_CPU_PROF !== undefined,
    loadAverage1m: { atStart: loadAtStart, atEnd: load1m() },
    workload: {
      mix: 'wrk (fixtures/loadmix.lua): POST /credit/request, then POST /credit/match for each approved offer, borrowers\' tokens in turn',
      lenders: LENDERS, borrowers: BORROWERS, connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS, seconds: SECONDS,
      leaseTtlSeconds: LEASE_TTL_SECONDS, offerTtlSeconds: LEASE_TTL_SECONDS, dispatchIntervalMs: DISPATCH_INTERVAL_MS, amountsUsdc: '1..100, maximum fee 5%',
    },
    goals: { requestsToCeilingMin: 0.6, serviceThreadCpuMicrosPerPairMax: 150, processCpuPerPairToCeilingMax: 2.5, halfRateP99ToFdatasyncP99Max: 3 },
    fdatasyncMillis: fdatasync,
    ceiling,
    service,
    ratios: {
      ...ratios,
      nodeToUwsFrontThroughput: front?.available === true && node?.available === true ? ratio(node.saturated.requestsPerSecond, front.saturated.requestsPerSecond) : null,
      // The same ratio for the bare ceiling, which has no goal: how far LMDB's synchronous group commit alone is from it.
      ceilingHalfRateP99ToFdatasyncP99: ratio(ceiling.halfRate.latencyMillis.p99, fdatasync.p99),
    },
  }
}

if (isMainModule(import.meta.url)) {
  const result = await runLoadMix()
  const out = args.out ?? join(here, 'results', 'loadmix-latest.json')
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
  say(`\nratios: ${JSON.stringify(result.ratios)}\nwrote ${out}`)
  const failed = Object.values(result.service).flatMap((m) => (m.available && m.failed !== null ? [m.failed] : []))
  if (failed.length > 0) throw new Error(`loadmix failed: ${failed.join('; ')}`)
}
