// The service (src/app/main.ts, a child process on a networks file) when the disk refuses a write: started on a data
// directory it closed cleanly, under a file-size limit of what data.mdb already holds plus a little (`ulimit -f`, no
// privileges; Node ignores SIGXFSZ), sign-ins are acknowledged until a group transaction needs the file to grow.
// Then the process exits 70 with one `commit_failed_exiting` line naming the native error, without an unhandled
// rejection first, and restarted without the limit it knows every session it acknowledged.
import { spawn } from 'node:child_process'
import { rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { CreditClient } from '../../src/client/client.ts'
import { tempDataDir } from '../fixtures/service.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'
import { killAllServices, MAIN, REPO, removeDir, startService, writeServiceFiles } from './fixtures/child-service.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
const files = writeServiceFiles(devnet.accounts, devnet.networks)
t.teardown(async () => {
  killAllServices()
  await devnet.stop()
  removeDir(files.dir)
})
/** A guard against a service that hangs (the failure this file tests for), not a speed expectation. */
const HANG_GUARD_MS = 180_000

t.test('a write the disk refuses stops the service with exit 70 and loses nothing acknowledged', async (t) => {
  const dataDir = tempDataDir()
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0', REQUEST_LOG: '0', RATE_LIMIT_PER_SECOND: '0', PORT: '0', HOST: '127.0.0.1' }
  // A first start makes the store; its clean stop leaves data.mdb at its size.
  const first = await startService(env)
  t.equal((await first.stop('SIGTERM')).code, 0, 'the first start stopped cleanly')
  const size = statSync(join(dataDir, 'data.mdb')).size
  // sh counts 512-byte blocks: 64 KiB of room, used up by the sessions' pages well before the loop's end.
  const blocks = Math.ceil(size / 512) + 128
  const node = [process.execPath, ...TS_LOADER_ARGS, MAIN].map((a) => `'${a}'`).join(' ')
  const child = spawn('sh', ['-c', `ulimit -f ${blocks}; exec ${node}`], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
  t.teardown(() => void child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
  const guard = setTimeout(() => child.kill('SIGKILL'), HANG_GUARD_MS)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
      const match = /agent-credit listening on (\S+)/.exec(stdout)
      if (match) resolve(match[1] as string)
    })
    void exited.then(({ code }) => reject(new Error(`exited before listening (${code}): ${stderr.slice(0, 2000)}`)))
  })
  // Sign-ins, four at a time, until one is not acknowledged (the service answers with an error or is gone).
  const acknowledged: string[] = []
  let refused = false
  for (let round = 0; round < 2000 && !refused; round++) {
    await Promise.all([0, 1, 2, 3].map(async () => {
      try {
        acknowledged.push(await new CreditClient(url).signIn(privateKeyToAccount(generatePrivateKey())))
      } catch {
        refused = true
      }
    }))
  }
  t.ok(refused, 'a sign-in was refused once the disk refused the write')
  const { code, signal } = await exited
  clearTimeout(guard)
  t.equal(code, 70, `exit 70 (signal ${signal}); stderr: ${stderr.slice(0, 1500)}`)
  const fatal = stdout.split('\n').filter((l) => l.includes('commit_failed_exiting'))
  t.equal(fatal.length, 1, 'one commit_failed_exiting line')
  t.match(fatal[0], /StoreWriteFailedError: the store's write transaction failed: (Input\/output error \(code 5\)|File too large.*\(code 27\))/, 'naming the native error')
  t.notMatch(stderr, /Commit failed|UnhandledPromiseRejection|triggerUncaughtException/, 'no unhandled rejection (lmdb-js prints the native error itself, never "Commit failed")')
  t.ok(acknowledged.length > 0, `sign-ins were acknowledged before (${acknowledged.length})`)

  const again = await startService(env)
  t.teardown(() => again.stop('SIGKILL'))
  const unknown: string[] = []
  for (const token of acknowledged) if ((await new CreditClient(again.url).refresh(token)) === undefined) unknown.push(token)
  t.same(unknown, [], 'every acknowledged session is known after the restart')
})
