// `npm run demo` as a user runs it: src/tools/demo.ts in a child process. With nothing listening at --url it starts
// the service in-process on the embedded devnet, runs the whole typical flow and exits 0; a service answering
// something unexpected makes it exit 1 with a message naming the call and the status.
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const repo = fileURLToPath(new URL('../../', import.meta.url))

// A hang guard, not a speed expectation: under the suite's parallel load on two cores the whole demo took over 60 s.
function runDemo(args: string[], timeoutMs = 240_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/tools/demo.ts', ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

t.test('with nothing at --url the demo runs the whole flow on an in-process service and exits 0', async (t) => {
  const { code, stdout, stderr } = await runDemo(['--url', 'http://127.0.0.1:1'])
  t.equal(code, 0, `exit code (stderr: ${stderr})`)
  t.match(stdout, /nothing answers at http:\/\/127\.0\.0\.1:1: starting the service in this process/)
  for (let step = 1; step <= 7; step++) t.match(stdout, new RegExp(`^\\[${step}/7\\] `, 'm'), `step ${step} printed`)
  t.match(stdout, /POST \/lenders\/register -> 201: lender 0x[0-9a-fA-F]{40} ask 250 bps/)
  t.match(stdout, /POST \/credit\/match -> 200: selected lender 0x[0-9a-fA-F]{40} \(ask 250 bps\), fee 25 USDC, lease \S+ expires /)
  t.match(stdout, /paySupplier tx 0x[0-9a-f]{64} signed by session key/)
  t.match(stdout, /supplier 0x[0-9a-fA-F]{40} [\d.]+ USDC -> [\d.]+ USDC \(\+1000 USDC\)/)
  t.match(stdout, /job job_demo_\d+ completed, advance \S+ repaid/)
  t.match(stdout, /stopped the in-process service/)
  t.equal(stderr, '')
})

t.test('an unexpected status ends the demo with exit code 1 and a message naming the call', async (t) => {
  const server = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/problem+json' })
    res.end(JSON.stringify({ status: 404, code: 'not_found', detail: 'nothing here' }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  const { code, stdout, stderr } = await runDemo(['--url', `http://127.0.0.1:${port}`])
  t.equal(code, 1)
  t.match(stdout, `running the demo against http://127.0.0.1:${port}`)
  t.match(stderr, /^demo failed: GET \/\.well-known\/service\.json: expected 200, got 404: not_found nothing here/)
})
