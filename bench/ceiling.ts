// The ceiling of this stack beside the transport choices, in one run, load from another process (wrk, Debian's
// package, with a Lua script): each mode of fixtures/ceiling-serve.ts runs in its own process, gets a warm-up and a
// saturated window at `connections` keep-alive connections, then a window at about half the saturated rate (wrk's
// per-connection delay) for the latency that a not-saturated service shows. Beside them, the disk's own fdatasync
// distribution, measured in this run. CPU per request is read from /proc for the server process (whole process)
// and its main thread (what the service thread would be).
// Writes bench/results/ceiling-latest.json. Options: --seconds 10 --connections 64 --quick (1 s windows, no warm-up:
// its figures only show the bench works, and each window holds both cores).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { isMainModule } from '../src/tools/main-module.ts'
import { benchNodeFlags } from './fixtures/node-flags.ts'
import { TS_IMPORT } from './fixtures/ts-import.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string' },
    connections: { type: 'string' },
    quick: { type: 'boolean', default: false },
    modes: { type: 'string' },
    out: { type: 'string' },
  },
  strict: false,
})
const QUICK = args.quick === true
const SECONDS = Number(args.seconds ?? (QUICK ? 1 : 10))
const WARMUP_SECONDS = QUICK ? 0 : 3
const CONNECTIONS = Number(args.connections ?? 64)
const MODES = String(args.modes ?? 'uws,uws-overlapping,server-direct,server-front,node-http').split(',')
const say = (line: string) => process.stdout.write(`${line}\n`)

export interface WrkResult {
  requests: number
  requestsPerSecond: number
  latencyMillis: { p50: number; p90: number; p99: number }
  errors: number
}

/** Runs wrk against `url` with a Lua script; parses its --latency report. */
export function wrk(url: string, script: string, seconds: number, connections: number): WrkResult {
  const run = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url], { encoding: 'utf8', timeout: (seconds + 30) * 1000 })
  if (run.error !== undefined) throw run.error
  if (run.status !== 0) throw new Error(`wrk exited ${run.status}: ${run.stderr}`)
  const text = run.stdout
  const millis = (value: string, unit: string) => Number(value) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 1)
  const percentile = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([0-9.]+)(us|ms|s|m)\\s*$`, 'm').exec(text)
    return m === null ? Number.NaN : Math.round(millis(m[1] as string, m[2] as string) * 1000) / 1000
  }
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? Number.NaN)
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1]
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text)
  return {
    requests,
    requestsPerSecond: Math.round(Number(/Requests\/sec:\s+([0-9.]+)/.exec(text)?.[1] ?? Number.NaN)),
    latencyMillis: { p50: percentile('50'), p90: percentile('90'), p99: percentile('99') },
    errors: Number(errors ?? 0) + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0)),
  }
}

/** utime + stime of a process, or of one of its threads, in microseconds (/proc, 100 Hz ticks). */
export function procCpuMicros(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** CPU of every thread of `pid` so far (thread id -> µs), from /proc/<pid>/task; a thread that ended is left out. */
export function threadsCpuMicros(pid: number): Map<number, number> {
  const threads = new Map<number, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      threads.set(Number(tid), procCpuMicros(pid, Number(tid)))
    } catch {
      // The thread ended between the listing and its read.
    }
  }
  return threads
}

/** The disk's fdatasync after a 4 KiB write, in this run: the floor of any durable answer on this machine. */
export function fdatasyncMillis(samples: number): { p50: number; p99: number; samples: number } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-credit-fsync-'))
  const fd = openSync(join(dir, 'probe'), 'w')
  const page = Buffer.alloc(4096, 7)
  const times: number[] = []
  try {
    for (let i = 0; i < samples; i++) {
      writeSync(fd, page, 0, page.length, (i % 64) * 4096)
      const t = performance.now()
      fdatasyncSync(fd)
      times.push(performance.now() - t)
    }
  } finally {
    closeSync(fd)
    rmSync(dir, { recursive: true, force: true })
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => Math.round((times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN) * 1000) / 1000
  return { p50: at(0.5), p99: at(0.99), samples }
}

export async function startMode(mode: string): Promise<{ child: ChildProcess; port: number }> {
  // The service's Node flags (or BENCH_SERVICE_NODE_FLAGS): the ceiling is the same stack, run the same way.
  const child = spawn(process.execPath, [...benchNodeFlags(), ...TS_IMPORT, join(here, 'fixtures', 'ceiling-serve.ts')], {
    env: { ...process.env, BENCH_CEILING_MODE: mode },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: join(here, '..'),
  })
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)))
    lines.on('line', (line) => {
      try {
        const message = JSON.parse(line) as { ready?: boolean; port?: number }
        if (message.ready === true && message.port !== undefined) resolve(message.port)
      } catch {
        // not ours
      }
    })
  })
  return { child, port }
}

export async function stopMode(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

/** One body of about the size of a credit request, for every mode. */
const BODY = JSON.stringify({ borrower: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amountAtomic: '12345678', note: 'n'.repeat(180) })

/** The ceiling's wrk script: one fixed body; `delayMs` paces every connection (the half-rate window). */
export function script(dir: string, name: string, delayMs?: number): string {
  const file = join(dir, `${name}.lua`)
  writeFileSync(file, [
    'wrk.method = "POST"',
    'wrk.headers["Content-Type"] = "application/json"',
    `wrk.body = '${BODY}'`,
    ...(delayMs === undefined ? [] : [`function delay() return ${delayMs} end`]),
    '',
  ].join('\n'))
  return file
}

export interface CeilingMode {
  saturated: WrkResult & { processCpuMicrosPerRequest: number; mainThreadCpuMicrosPerRequest: number; processCpuCores: number }
  halfRate: WrkResult & { delayMillis: number }
}

export async function runCeiling(): Promise<Record<string, unknown>> {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' })
  if (probe.error !== undefined) throw new Error('wrk not found: install Debian\'s wrk package (apt-get install wrk)')
  const scratch = mkdtempSync(join(tmpdir(), 'agent-credit-ceiling-lua-'))
  const fdatasync = fdatasyncMillis(QUICK ? 50 : 500)
  say(`ceiling: ${MODES.join(', ')}; ${CONNECTIONS} connections, ${WARMUP_SECONDS}s warm-up + ${SECONDS}s per window; fdatasync p50 ${fdatasync.p50} ms, p99 ${fdatasync.p99} ms`)
  const modes: Record<string, CeilingMode> = {}
  try {
    for (const mode of MODES) {
      const { child, port } = await startMode(mode)
      try {
        const url = `http://127.0.0.1:${port}/commit`
        const saturating = script(scratch, `${mode}-saturated`)
        if (WARMUP_SECONDS > 0) wrk(url, saturating, WARMUP_SECONDS, CONNECTIONS)
        const pid = child.pid as number
        const before = { process: procCpuMicros(pid), thread: procCpuMicros(pid, pid) }
        const saturated = wrk(url, saturating, SECONDS, CONNECTIONS)
        const after = { process: procCpuMicros(pid), thread: procCpuMicros(pid, pid) }
        // Each connection waits this long between its answer and its next request: at most half the rate.
        const delayMillis = Math.max(1, Math.round((2 * CONNECTIONS * 1000) / Math.max(1, saturated.requestsPerSecond)))
        const halfRate = { ...wrk(url, script(scratch, `${mode}-half`, delayMillis), SECONDS, CONNECTIONS), delayMillis }
        const per = (micros: number) => Math.round((micros / Math.max(1, saturated.requests)) * 10) / 10
        modes[mode] = {
          saturated: {
            ...saturated,
            processCpuMicrosPerRequest: per(after.process - before.process),
            mainThreadCpuMicrosPerRequest: per(after.thread - before.thread),
            processCpuCores: Math.round(((after.process - before.process) / (SECONDS * 1e6)) * 100) / 100,
          },
          halfRate,
        }
        const m = modes[mode] as CeilingMode
        say(`  ${mode}: ${m.saturated.requestsPerSecond} req/s (p99 ${m.saturated.latencyMillis.p99} ms, errors ${m.saturated.errors}), ` +
          `CPU ${m.saturated.processCpuMicrosPerRequest} us/request process, ${m.saturated.mainThreadCpuMicrosPerRequest} us main thread; ` +
          `half rate ${m.halfRate.requestsPerSecond} req/s p99 ${m.halfRate.latencyMillis.p99} ms`)
      } finally {
        await stopMode(child)
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? null : Math.round((a / b) * 1000) / 1000)
  const rate = (mode: string) => modes[mode]?.saturated.requestsPerSecond
  const cpu = (mode: string) => modes[mode]?.saturated.processCpuMicrosPerRequest
  return {
    body: { requestBytes: BODY.length, answerBytes: 'about 940' },
    connections: CONNECTIONS,
    warmupSeconds: WARMUP_SECONDS,
    seconds: SECONDS,
    fdatasyncMillis: fdatasync,
    modes,
    ratios: {
      frontToDirectThroughput: ratio(rate('server-front'), rate('server-direct')),
      frontToDirectCpuPerRequest: ratio(cpu('server-front'), cpu('server-direct')),
      serverDirectToCeilingThroughput: ratio(rate('server-direct'), rate('uws')),
      nodeHttpToCeilingThroughput: ratio(rate('node-http'), rate('uws')),
      overlappingToSyncThroughput: ratio(rate('uws-overlapping'), rate('uws')),
      ceilingHalfRateP99ToFdatasyncP99: ratio(modes.uws?.halfRate.latencyMillis.p99, fdatasync.p99),
    },
  }
}

if (isMainModule(import.meta.url)) {
  const ceiling = await runCeiling()
  const result = { date: new Date().toISOString(), ...ceiling }
  const out = typeof args.out === 'string' ? args.out : join(here, 'results', 'ceiling-latest.json')
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
  say(`ratios: ${JSON.stringify(ceiling['ratios'])}\nwrote ${out}`)
}
