// HTTP bench: the request-and-match path over real HTTP against the whole service (uWebSockets.js, SIWE bearer
// auth, TypeBox validation, idempotency wrapper, engine, LMDB group commit, chain watcher on a devnet).
//
// One devnet (one anvil chain) for the run. The same workload runs twice, each on a fresh data directory and a fresh
// service: durability 'sync' (a response leaves only after its commit is fsynced: the default) and 'none' (LMDB
// noSync: the documented benchmark-only mode). Per mode: N lenders register over HTTP and their session keys are
// funded on chain (see fixtures/agents.ts), B borrowers sign in and register an attested backing source; then a
// worker thread keeps `inFlight` closed loops of POST /credit/request + POST /credit/match going for a warm-up
// and a measured window. Leases are never paid: the service's dispatch ticker expires them after the lease TTL,
// which frees the lenders' reserved liquidity (miss penalties are set to 0 for the bench), so the book stays full.
//
// The load generator is a worker thread of this process by default: its own event loop, but the same 2 cores as
// the service. `--external` runs the service in a separate process instead (fixtures/serve.ts).
// Writes bench/results/http-latest.json. Options: --lenders 500 --borrowers 256 --in-flight 64 --warmup 4
// --seconds 20 --modes sync,none --lease-ttl 3 --external (or BENCH_HTTP_LENDERS, ... in the environment).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, platform, tmpdir, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Worker } from 'node:worker_threads'
import type { NetworkConfig } from '../src/chain/config.ts'
import { defaultDevnetNetworks, startDevnet, type Devnet } from '../src/chain/devnet.ts'
import { startApp } from '../src/app/app.ts'
import { ASSET, fundLenders, lenderSpecs, registerBorrowers, registerLenders } from './fixtures/agents.ts'
import type { LoadInput, LoadMessage, LoadSummary } from './fixtures/load.ts'
import { benchServiceConfig, readService, windowOf, type BenchServiceOptions, type ServiceReading } from './fixtures/service.ts'
import { BENCH_SUPPLIER, startServiceProcess, type ServiceHandle } from './fixtures/service-process.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values: args } = parseArgs({
  options: {
    lenders: { type: 'string' },
    borrowers: { type: 'string' },
    'in-flight': { type: 'string' },
    warmup: { type: 'string' },
    seconds: { type: 'string' },
    modes: { type: 'string' },
    'lease-ttl': { type: 'string' },
    external: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
})
const num = (arg: string | undefined, env: string, fallback: number): number => {
  const value = Number(arg ?? process.env[env] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${env} must be a positive number`)
  return value
}
const LENDERS = num(args.lenders, 'BENCH_HTTP_LENDERS', 500)
const IN_FLIGHT = num(args['in-flight'], 'BENCH_HTTP_IN_FLIGHT', 64)
// A borrower holds at most liveOffersPerBorrowerMax (100) live offers, and offers live LEASE_TTL_SECONDS plus up to a
// dispatch interval: enough borrowers that none reaches the cap at the rates this machine serves (as bench/loadmix.ts).
const BORROWERS = num(args.borrowers, 'BENCH_HTTP_BORROWERS', 4 * IN_FLIGHT)
const WARMUP_SECONDS = num(args.warmup, 'BENCH_HTTP_WARMUP', 4)
const MEASURE_SECONDS = num(args.seconds, 'BENCH_HTTP_SECONDS', 20)
const LEASE_TTL_SECONDS = num(args['lease-ttl'], 'BENCH_HTTP_LEASE_TTL', 3)
const DISPATCH_INTERVAL_MS = 500
const MODES = (args.modes ?? process.env.BENCH_HTTP_MODES ?? 'sync,none').split(',') as ('sync' | 'none')[]
const EXTERNAL = args.external === true || process.env.BENCH_HTTP_EXTERNAL === '1'
const SUPPLIER = BENCH_SUPPLIER
for (const mode of MODES) if (mode !== 'sync' && mode !== 'none') throw new Error(`unknown durability mode ${mode}`)

const say = (line: string) => process.stdout.write(`${line}\n`)
const seconds = (fromMs: number) => Math.round((performance.now() - fromMs) / 100) / 10

async function inProcessService(devnet: Devnet, options: BenchServiceOptions): Promise<ServiceHandle> {
  const app = await startApp(benchServiceConfig(options), { devnet })
  return { url: app.url, read: async () => readService(app), stop: () => app.stop() }
}

/** Runs the load worker; takes service readings when the measured window opens and closes. */
function runLoad(service: ServiceHandle, input: LoadInput): Promise<{ summary: LoadSummary; start: ServiceReading; end: ServiceReading }> {
  const loader = import.meta.resolve('tsx/esm/api')
  const file = new URL('./fixtures/load.ts', import.meta.url).href
  const worker = new Worker(`import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(file)}) })`, {
    eval: true,
    workerData: input,
  })
  return new Promise((resolve, reject) => {
    let start: Promise<ServiceReading> | undefined
    let end: Promise<ServiceReading> | undefined
    worker.on('message', (message: LoadMessage) => {
      if (message.type === 'phase') {
        if (message.phase === 'measure') start = service.read()
        else end = service.read()
      } else if (message.type === 'progress') {
        const p99 = message.phase === 'measure' ? `, pair p99 so far ${message.pairP99Millis} ms` : ''
        say(`  ${message.phase} ${message.elapsedSeconds}s: ${message.pairsPerSecond} pairs/s${p99}`)
      } else if (message.type === 'done') {
        if (start === undefined || end === undefined) return reject(new Error('the load worker ended without a measured window'))
        Promise.all([start, end]).then(([s, e]) => resolve({ summary: message.summary, start: s, end: e }), reject)
        void worker.terminate()
      } else {
        reject(new Error(`load worker: ${message.message}`))
        void worker.terminate()
      }
    })
    worker.on('error', reject)
  })
}

async function runMode(durability: 'sync' | 'none', devnet: Devnet, network: NetworkConfig, networksFile: string) {
  say(`\n== durability '${durability}' ==`)
  const dataDir = mkdtempSync(join(tmpdir(), `agent-credit-bench-${durability}-`))
  const options: BenchServiceOptions = { dataDir, durability, leaseTtlSeconds: LEASE_TTL_SECONDS, dispatchIntervalMs: DISPATCH_INTERVAL_MS }
  const service = EXTERNAL ? await startServiceProcess(devnet, networksFile, options) : await inProcessService(devnet, options)
  try {
    say(`service at ${service.url} (data ${dataDir}${EXTERNAL ? ', separate process' : ', in this process'})`)
    let t = performance.now()
    const lenders = await registerLenders(service.url, network, lenderSpecs(LENDERS))
    const registerSeconds = seconds(t)
    t = performance.now()
    const { transactions } = await fundLenders(service.url, network, devnet.accounts, lenders)
    const fundSeconds = seconds(t)
    t = performance.now()
    const borrowers = await registerBorrowers(service.url, devnet.accounts, BORROWERS, durability)
    const borrowerSeconds = seconds(t)
    say(`setup: ${LENDERS} lenders registered in ${registerSeconds}s, funded on chain (${transactions} transactions) in ${fundSeconds}s; ${BORROWERS} borrowers in ${borrowerSeconds}s`)
    say(`load: ${IN_FLIGHT} in flight, ${WARMUP_SECONDS}s warm-up + ${MEASURE_SECONDS}s measured`)
    const { summary, start, end } = await runLoad(service, {
      url: service.url,
      borrowers,
      network: network.slug,
      asset: ASSET,
      supplier: SUPPLIER.name,
      supplierDomain: SUPPLIER.domain,
      inFlight: IN_FLIGHT,
      warmupMs: WARMUP_SECONDS * 1000,
      measureMs: MEASURE_SECONDS * 1000,
      seed: 11,
    })
    const serviceWindow = windowOf(start, end, summary.pairs)
    const l = summary.latencyMillis
    say(`'${durability}': ${summary.pairsPerSecond} pairs/s (${summary.httpRequestsPerSecond} HTTP requests/s); pair p50 ${l.pair.p50} p90 ${l.pair.p90} p99 ${l.pair.p99} ms; request p99 ${l.request.p99} ms, match p99 ${l.match.p99} ms`)
    say(`  outcomes: ${JSON.stringify(summary.outcomes)}; load average ${Math.round((loadavg()[0] ?? 0) * 100) / 100}`)
    say(`  store: ${serviceWindow.storeCommits} commits in ${serviceWindow.storeTransactions} LMDB transactions (${serviceWindow.commitsPerTransaction} commits per transaction)`)
    say(`  CPU: service thread ${serviceWindow.serviceThreadCpuCores} cores (${serviceWindow.serviceThreadCpuMicrosPerPair} us per pair, loop busy ${serviceWindow.serviceLoopUtilization}), load generator ${summary.loadGeneratorCpuCores} cores${EXTERNAL ? '' : `, whole process ${serviceWindow.processCpuCores} cores`}`)
    return {
      durability,
      /** 1-minute load average when the measured window closed: other work on the machine skews every figure. */
      loadAverage1mAtEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100,
      setup: { lenders: LENDERS, borrowers: BORROWERS, registerSeconds, fundSeconds, fundTransactions: transactions, borrowerSeconds },
      ...summary,
      service: serviceWindow,
    }
  } finally {
    await service.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const runStart = performance.now()
const loadAtStart = Math.round((loadavg()[0] ?? 0) * 100) / 100
const loadGenerator = EXTERNAL
  ? 'worker thread of the bench process; the service runs in a separate process (--external); both share the machine\'s cores'
  : 'worker thread of the same process as the service: its own event loop, but it competes with the service for the cores'
say(`http bench: ${LENDERS} lenders, ${BORROWERS} borrowers, ${IN_FLIGHT} in flight, modes ${MODES.join(', ')}, node ${process.version}, ${cpus().length} cores, load average ${loadAtStart}`)
say(`load generator: ${loadGenerator}`)
const scratch = mkdtempSync(join(tmpdir(), 'agent-credit-bench-devnet-'))
const networksFile = join(scratch, 'networks.json')
const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]], configPath: networksFile })
const network = devnet.networks[0] as NetworkConfig
say(`devnet ${network.slug} (chain ${network.chainId}) at ${network.rpcUrl} in ${seconds(runStart)}s`)
const modes: Record<string, Awaited<ReturnType<typeof runMode>>> = {}
try {
  for (const mode of MODES) modes[mode] = await runMode(mode, devnet, network, networksFile)
} finally {
  await devnet.stop()
  rmSync(scratch, { recursive: true, force: true })
}

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? null : Math.round((a / b) * 1000) / 1000)
const cpu = cpus()[0]
const result = {
  date: new Date().toISOString(),
  machine: {
    cpu: cpu?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), platform: platform(), node: process.version,
    loadAverage1mAtStart: loadAtStart,
  },
  workload: {
    path: 'POST /credit/request then POST /credit/match for its offer, per closed loop',
    lenders: LENDERS,
    borrowers: BORROWERS,
    inFlight: IN_FLIGHT,
    warmupSeconds: WARMUP_SECONDS,
    measuredSeconds: MEASURE_SECONDS,
    leaseTtlSeconds: LEASE_TTL_SECONDS,
    offerTtlSeconds: LEASE_TTL_SECONDS,
    dispatchIntervalMs: DISPATCH_INTERVAL_MS,
    amountsUsdc: '1..100, maximum fee 5%',
    loadGenerator,
  },
  modes,
  durableToNoneThroughputRatio: ratio(modes.sync?.pairsPerSecond, modes.none?.pairsPerSecond),
  durableToNonePairP99Ratio: ratio(modes.sync?.latencyMillis.pair.p99, modes.none?.latencyMillis.pair.p99),
  totalSeconds: seconds(runStart),
}
const out = args.out ?? join(here, 'results', 'http-latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
say(`\nratio durable/none throughput: ${result.durableToNoneThroughputRatio}; pair p99 durable/none: ${result.durableToNonePairP99Ratio}`)
say(`total ${result.totalSeconds}s; wrote ${out}`)
