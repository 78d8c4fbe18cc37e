// The HTTP pipeline's own cost per request (issue 11): bench/fixtures/pipeline-serve.ts (the credit request's and the
// match's routes through src/http with a stub handler, behind the node:net front) in its own process under wrk from
// another (one thread, 64 connections), alternating a credit request and a match, each with a borrower's bearer
// token, as bench/loadmix.ts sends them. Reports CPU per request of the server's main thread (the service thread)
// and of its process, from /proc around the window, and the load average. Not a section of `npm run bench`: a tool to
// compare two checkouts (run it in each, alternately). Options: --seconds 8 --warmup 2 --connections 64. Also reports
// the busiest other thread's CPU per request (the node:net front's thread, which copies every byte both ways).
// BENCH_PIPELINE_CPU_PROF=<dir> runs the server under `node --cpu-prof` (a profile per thread, the front's included).
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { SERVICE_NODE_FLAGS } from '../src/app/node-flags.ts'
import { procCpuMicros, stopMode, threadsCpuMicros, wrk } from './ceiling.ts'
import { PIPELINE_BORROWERS, pipelineToken } from './fixtures/pipeline-serve.ts'
import { TS_IMPORT } from './fixtures/ts-import.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values: args } = parseArgs({ options: { seconds: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' } } })
const SECONDS = Number(args.seconds ?? 8)
const WARMUP_SECONDS = Number(args.warmup ?? 2)
const CONNECTIONS = Number(args.connections ?? 64)

const scratch = mkdtempSync(join(tmpdir(), 'agent-credit-pipeline-'))
const script = join(scratch, 'pipeline.lua')
// The request's fields as bench/fixtures/loadmix.lua writes them; the match names an offer id of the right shape.
writeFileSync(script, `
local n = 0
function request()
  n = n + 1
  local b = n % ${PIPELINE_BORROWERS}
  local token = string.format("bench%03d", b) .. string.rep("x", 35)
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }
  if n % 2 == 0 then
    return wrk.format("POST", "/credit/match", headers, '{"offerId":"off_' .. n .. '"}')
  end
  local units = math.random(1, 100)
  local body = string.format('{"agent":"0x%040x","network":"base-sepolia","asset":"USDC","productType":"asset-backed","amountAtomic":"%d000000","purpose":"bench inference compute","supplier":"Bench Supplier","supplierDomain":"bench.example","repaymentSource":"bench-%d","maximumFeeAtomic":"%d"}', b, units, b, units * 50000)
  return wrk.format("POST", "/credit/request", headers, body)
end
`)
if (pipelineToken(7) !== `bench007${'x'.repeat(35)}`) throw new Error('the Lua script and pipeline-serve.ts disagree on the tokens')

const profileDir = process.env.BENCH_PIPELINE_CPU_PROF
const profileFlags = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...profileFlags, ...TS_IMPORT, join(here, 'fixtures', 'pipeline-serve.ts')], { stdio: ['ignore', 'pipe', 'inherit'], cwd: join(here, '..') })
const port = await new Promise<number>((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`pipeline-serve exited with ${code}`)))
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const port = (JSON.parse(line) as { port?: number }).port
    if (port !== undefined) resolve(port)
  })
})
try {
  const url = `http://127.0.0.1:${port}`
  wrk(url, script, WARMUP_SECONDS, CONNECTIONS)
  const pid = child.pid as number
  const load = loadavg()[0] as number
  const main0 = procCpuMicros(pid, pid)
  const process0 = procCpuMicros(pid)
  const threads0 = threadsCpuMicros(pid)
  const run = wrk(url, script, SECONDS, CONNECTIONS)
  const mainMicros = procCpuMicros(pid, pid) - main0
  const processMicros = procCpuMicros(pid) - process0
  let frontMicros = 0
  for (const [tid, micros] of threadsCpuMicros(pid)) if (tid !== pid) frontMicros = Math.max(frontMicros, micros - (threads0.get(tid) ?? 0))
  if (run.errors > 0) throw new Error(`${run.errors} of ${run.requests} answers were errors`)
  const result = {
    requestsPerSecond: run.requestsPerSecond,
    mainThreadCpuMicrosPerRequest: Math.round((mainMicros / run.requests) * 100) / 100,
    processCpuMicrosPerRequest: Math.round((processMicros / run.requests) * 100) / 100,
    frontThreadCpuMicrosPerRequest: Math.round((frontMicros / run.requests) * 100) / 100,
    load: Math.round(load * 100) / 100,
  }
  process.stdout.write(`pipeline: ${result.requestsPerSecond} req/s; CPU per request ${result.mainThreadCpuMicrosPerRequest} us service thread, ${result.frontThreadCpuMicrosPerRequest} us front thread, ${result.processCpuMicrosPerRequest} us process; load ${result.load}\n${JSON.stringify(result)}\n`)
} finally {
  await stopMode(child)
  rmSync(scratch, { recursive: true, force: true })
}
