// GET /health while the store's writes stall (README Persistence, "When the disk refuses a write"): another process
// holds LMDB's real write lock of the service's data directory, so the service's next group transaction never
// settles until it lets go. Every GET waits for the commits queued before it (the read barrier), and /health did too:
// an operator's probe got no answer at all until the watchdog (storeCommitStallMs, 30 s) ended the process. Now
// /health answers 503 store_stalled, showing nothing of memory, and 200 again once the write settles.
import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'
import { signedIn, startHarness, type Harness } from '../fixtures/service.ts'

const HOLDER = fileURLToPath(new URL('./fixtures/hold-write-lock.ts', import.meta.url))
/** A guard against a request that never answers (the failure this file tests for), not a speed expectation. */
const HANG_GUARD_MS = 60_000

let h: Harness
t.before(async () => {
  // The watchdog must not end this (the test's) process meanwhile.
  h = await startHarness({ config: { storeCommitStallMs: 3_600_000 } })
})
t.teardown(() => h?.stop())

async function health(): Promise<{ status: number; contentType: string | null; body: any }> {
  const response = await fetch(`${h.url}/health`, { signal: AbortSignal.timeout(HANG_GUARD_MS) })
  return { status: response.status, contentType: response.headers.get('content-type'), body: await response.json() }
}

t.test('while another process holds the write lock, /health answers 503 store_stalled; 200 once the write settles', async (t) => {
  t.equal((await health()).status, 200, 'healthy before')
  const holder = spawn(process.execPath, [...TS_LOADER_ARGS, HOLDER, h.dataDir], { stdio: ['ignore', 'pipe', 'inherit'] })
  const holderEnded = new Promise((resolve) => holder.on('close', resolve))
  t.teardown(() => holder.kill('SIGKILL'))
  await new Promise<void>((resolve, reject) => {
    let out = ''
    holder.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      if (out.includes('holding\n')) resolve()
    })
    void holderEnded.then(() => reject(new Error(`the lock holder ended: ${out}`)))
  })

  // A commit the stall holds up (a sign-in stores its session; the chain follower commits its chain time too).
  const signIn = signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  let answer = await health()
  // 200 until a commit is in flight behind the lock; before the fix the first /health after that never answered.
  for (let asked = 1; answer.status === 200 && asked < 10_000; asked++) answer = await health()
  t.equal(answer.status, 503, '/health answers during the stall')
  t.match(answer.contentType, /^application\/problem\+json/)
  t.equal(answer.body.code, 'store_stalled', 'with the store\'s stall code')
  t.notOk('networks' in answer.body || 'live' in answer.body, 'and nothing of memory (not durable)')
  const again = await health()
  t.same([again.status, again.body.code], [503, 'store_stalled'], 'a later probe too')

  holder.kill('SIGKILL')
  await holderEnded
  const client = await signIn
  t.ok(client.token, 'the held-up sign-in completes once the lock is free')
  let after = await health()
  for (let asked = 1; after.status !== 200 && asked < 10_000; asked++) after = await health()
  t.equal(after.status, 200, '/health is 200 again')
  t.ok(after.body.networks.length > 0, 'with its whole answer')
})
