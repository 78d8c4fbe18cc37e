// `npm run demo` as a user runs it: src/tools/demo.ts in a child process. With nothing listening at --url it starts
// the service in-process on the embedded devnet, runs two lender agents on the SDK's lender loop, a repaid job and a failed one liquidated, prints the summary and exits 0; a service answering
// something unexpected makes it exit 1 with a message naming the call and the status.
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const repo = fileURLToPath(new URL('../../', import.meta.url))

// A hang guard, not a speed expectation: under the suite's parallel load on two cores the whole demo took over 60 s.
function runDemo(args: string[], timeoutMs = 240_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...TS_LOADER_ARGS, 'src/tools/demo.ts', ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
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

t.test('with nothing at --url the demo runs two lenders, a repaid job and a liquidated one on an in-process service and exits 0', async (t) => {
  const { code, stdout, stderr } = await runDemo(['--url', 'http://127.0.0.1:1'])
  t.equal(code, 0, `exit code (stderr: ${stderr})`)
  t.match(stdout, /nothing answers at http:\/\/127\.0\.0\.1:1: starting the service in this process/)
  for (let step = 1; step <= 8; step++) t.match(stdout, new RegExp(`^\\[${step}/8\\] `, 'm'), `step ${step} printed`)
  t.match(stdout, /lender A 0x[0-9a-fA-F]{40} ask 200 bps, .*lender B 0x[0-9a-fA-F]{40} ask 300 bps/, 'two lenders with different asks')
  t.match(stdout, /lease to lender A \(ask 200 bps, not lender B at 300\); its loop paid the supplier \(tx 0x[0-9a-f]{64}\): advance \S+ active, fee 20 USDC/, 'the cheaper ask wins and its loop pays')
  t.match(stdout, /job job_demo_\d+_repaid completed .*: 1018 USDC to lender A, 2 USDC to the reserve, 980 USDC to the borrower; advance repaid/)
  t.match(stdout, /collateral 300 USDC posted by the borrower/)
  t.match(stdout, /lender A liquidated advance \S+ .*owed 1020 USDC, source_revenue [\d.]+ USDC, collateral 300 USDC, backing_liquidation [\d.]+ USDC, insurance_reserve [\d.]+ USDC, shortfall [\d.]+ USDC/, 'the recovery steps in order, the collateral taken')
  t.match(stdout, /^\| adv_1 +\| job_demo_\d+_repaid +\| lender A \(200 bps\) \| 1000 USDC \| 20 USDC \| repaid +\| 1018 USDC/m, 'the summary table: the repaid advance')
  t.match(stdout, /^\| adv_2 +\| job_demo_\d+_failed +\| lender A \(200 bps\) \| 1000 USDC \| 20 USDC \| (liquidated|shortfall) +\| [\d.]+ USDC +\| [a-z_ +]*collateral/m, 'and the liquidated one')
  t.match(stdout, /^\| lender B \| 300 bps \| 0 +\| 0 /m, 'the dearer lender got no lease')
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
  t.match(stderr, /^demo failed: GET \/\.well-known\/service\.json: 404 not_found nothing here/)
})
