import t from 'tap'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Store } from '../../src/store/index.ts'
import { tempDir } from './fixtures/helpers.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const WRITER = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url))
const ROUNDS = 5

/**
 * Runs the writer, kills it with SIGKILL `afterMs` after its first acknowledged commit (not after it is ready: a slow
 * machine may take longer than any fixed time to write its first commit), returns the keys it acknowledged.
 */
function runAndKill(dataDir: string, start: number, afterMs: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...TS_LOADER_ARGS, WRITER, dataDir, String(start), '32'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    let timer: NodeJS.Timeout | undefined
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c))
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c
      // 'ready\n' then at least one complete acknowledgement line.
      if (timer === undefined && out.startsWith('ready\n') && out.indexOf('\n', 6) !== -1) timer = setTimeout(() => child.kill('SIGKILL'), afterMs)
    })
    child.on('error', reject)
    child.on('close', (_code, signal) => {
      if (signal !== 'SIGKILL') {
        reject(new Error(`writer ended without being killed: ${err.slice(0, 2000)}`))
        return
      }
      // The last line may be cut by the kill; only complete lines count as acknowledged.
      const lines = out.split('\n')
      lines.pop()
      resolve(lines.filter((l) => l !== 'ready').map(Number))
    })
  })
}

t.test('every commit acknowledged before a SIGKILL is on disk after reopening', async (t) => {
  const dataDir = path.join(tempDir('store-crash-'), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const acknowledged = new Set<number>()
  let start = 0
  for (let round = 0; round < ROUNDS; round++) {
    const afterMs = Math.floor(Math.random() * 700)
    const keys = await runAndKill(dataDir, start, afterMs)
    t.ok(keys.length > 0, `round ${round}: killed ${afterMs} ms after its first acknowledgement with ${keys.length} acknowledged commits`)
    for (const k of keys) acknowledged.add(k)
    start = Math.max(start, ...keys) + 1000
    const store = await Store.open({ dataDir })
    try {
      // The previous round's clean close recorded a clean shutdown; the writer's open removed it before writing.
      t.equal(store.openCheck, 'deep', `round ${round}: a store left by a SIGKILL gets the deep check`)
      const missing = [...acknowledged].filter((i) => {
        const entry = store.getSnapshot('job', `job_${i}`)
        const ledger = store.getSnapshot('reserve', `l_${i}`)
        return (
          entry === undefined ||
          (entry.snapshot as { receivableAtomic: bigint }).receivableAtomic !== 2n ** 200n + BigInt(i) ||
          entry.final !== (i % 3 === 0) ||
          ledger === undefined ||
          !store.proofs.has(`p_${i}`)
        )
      })
      t.same(missing.slice(0, 10), [], `round ${round}: no acknowledged commit lost`)
      const counts = store.verify()
      t.ok(counts.snapshots >= acknowledged.size * 2, `round ${round}: every record decodes (${counts.snapshots})`)
      // Atomicity across the kill: a job without its ledger record or proof would be half a commit.
      for (const { id } of store.iterateKind('reserve')) {
        const i = Number(id.slice(2))
        if (store.getSnapshot('job', `job_${i}`) === undefined || !store.proofs.has(`p_${i}`)) {
          t.fail(`half a commit on disk for ${i}`)
        }
      }
    } finally {
      await store.close()
    }
  }
})
