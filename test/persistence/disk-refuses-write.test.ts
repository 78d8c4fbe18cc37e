// What the store does when the disk refuses a write (README Persistence, "When the disk refuses a write"), with real
// LMDB in a child process. A file-size limit (`ulimit -f`, no privileges needed; Node ignores SIGXFSZ, so the write
// returns EFBIG or comes back short, EIO) makes a group transaction fail: every commit of the group is rejected, the
// process exits 70 with one line naming the native error (no unhandled rejection first: lmdb-js's commitError is
// handled), and the store reopened without the limit holds every acknowledged commit and nothing else. A second
// process holding LMDB's write lock makes a group transaction never settle: the watchdog (Store.watchStalls, the
// service's storeCommitStallMs) fails the store the same way (the process is killed: process.exit would join the
// stuck thread for ever), and again nothing acknowledged is lost.
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Store } from '../../src/store/index.ts'
import { tempDir } from '../store/fixtures/helpers.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const WRITER = fileURLToPath(new URL('./fixtures/disk-refuses-writer.ts', import.meta.url))
const HOLDER = fileURLToPath(new URL('./fixtures/hold-write-lock.ts', import.meta.url))
/** A guard against a child that hangs (the failure this file tests for), not a speed expectation. */
const HANG_GUARD_MS = 120_000

interface Run {
  readonly child: ChildProcess
  readonly ended: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
  /** Resolves once the child printed `line`. */
  printed(line: string): Promise<void>
}

const children = new Set<ChildProcess>()
t.teardown(() => {
  for (const child of children) child.kill('SIGKILL')
})

/** Runs `script` under `sh -c 'ulimit -f <blocks>; exec node ...'` (no limit when blocks is null). */
function run(script: string, args: string[], blocks: number | null): Run {
  const node = [process.execPath, ...TS_LOADER_ARGS, script, ...args].map((a) => `'${a}'`).join(' ')
  const child = spawn('sh', ['-c', `${blocks === null ? '' : `ulimit -f ${blocks}; `}exec ${node}`], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let stdout = ''
  let stderr = ''
  const waiting: { line: string; resolve: () => void }[] = []
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    for (const w of waiting.splice(0)) if (stdout.split('\n').includes(w.line)) w.resolve(); else waiting.push(w)
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const guard = setTimeout(() => child.kill('SIGKILL'), HANG_GUARD_MS)
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(guard)
      children.delete(child)
      resolve({ code, signal, stdout, stderr })
    })
  })
  const printed = (line: string) => new Promise<void>((resolve, reject) => {
    if (stdout.split('\n').includes(line)) return resolve()
    waiting.push({ line, resolve })
    void ended.then(() => reject(new Error(`ended before printing ${line}: ${stdout.slice(-500)} ${stderr.slice(0, 2000)}`)))
  })
  return { child, ended, printed }
}

const linesStarting = (stdout: string, prefix: string) => stdout.split('\n').filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length))

/** Reopens the store without a limit: every acknowledged job is there, and no other. */
async function checkStored(t: Test, dataDir: string, acked: readonly string[]): Promise<void> {
  const store = await Store.open({ dataDir })
  try {
    const stored = [...store.iterateKind('job')].map((j) => j.id).sort()
    t.ok(acked.length > 0, 'some commits were acknowledged before the failure')
    t.same(stored, [...acked].sort(), 'the store holds every acknowledged commit and nothing else')
  } finally {
    await store.close()
  }
}

t.test('a group transaction the disk refuses: every commit rejected, exit 70 with the native error, nothing acknowledged lost', async (t) => {
  const dataDir = path.join(tempDir('disk-refuses-'), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  // 1 MiB (sh counts 512-byte blocks): a few rounds of 8 commits of ~60 KB fit, then a write past it fails.
  const { code, signal, stdout, stderr } = await run(WRITER, [dataDir, '0', '0'], 2048).ended
  t.equal(code, 70, `exit 70 (signal ${signal}); stderr: ${stderr.slice(0, 1500)}`)
  const failures = linesStarting(stdout, 'failure ')
  t.equal(failures.length, 1, 'one failure line')
  t.match(failures[0], /^StoreWriteFailedError: the store's write transaction failed: (Input\/output error \(code 5\)|File too large.*\(code 27\))/, 'it names the native error')
  t.notMatch(stderr, /Commit failed|UnhandledPromiseRejection|triggerUncaughtException/, 'no unhandled rejection (lmdb-js prints the native error itself, never "Commit failed")')
  const acked = linesStarting(stdout, 'ack ')
  const rejected = linesStarting(stdout, 'rejected ')
  t.ok(rejected.length >= 8, `the failed group's commits (8 a round) are rejected: ${rejected.length}`)
  t.same(new Set(rejected.map((l) => l.split(' ')[1])), new Set(['store_write_failed']), 'with store_write_failed')
  await checkStored(t, dataDir, acked)
})

t.test('a group transaction that never settles: the stall watchdog fails the store, nothing acknowledged lost', async (t) => {
  const dataDir = path.join(tempDir('disk-stalls-'), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const writer = run(WRITER, [dataDir, '500', '2'], null)
  await writer.printed('paused')
  // Another process begins a write transaction on the same directory and never ends it: the writer's next group
  // transaction waits for LMDB's write lock for ever.
  const holder = run(HOLDER, [dataDir], null)
  await holder.printed('holding')
  writer.child.kill('SIGUSR2')
  const { code, signal, stdout, stderr } = await writer.ended
  holder.child.kill('SIGKILL')
  await holder.ended
  t.equal(signal, 'SIGKILL', `the writer killed itself after the stall (code ${code}); ${stdout.slice(-300)} stderr: ${stderr.slice(0, 1500)}`)
  const failures = linesStarting(stdout, 'failure ')
  t.equal(failures.length, 1, 'one failure line')
  t.match(failures[0], /^StoreStalledError: a write transaction of the store in .* has not settled in 500 ms/, 'it says the write stalled')
  await checkStored(t, dataDir, linesStarting(stdout, 'ack '))
})
