// The deep check at open is skipped only for a store this release closed cleanly and that nothing changed since:
// a write after the record, a crash, a copy, a file rewritten (even with its mtime put back), durability 'none' and
// a damaged record all bring the deep check back. (The SIGKILL case: crash.test.ts.)
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Store, StoreOpenError } from '../../src/store/index.ts'
import { CLEAN_SHUTDOWN_FILE } from '../../src/store/clean-shutdown.ts'
import { tempDir } from './fixtures/helpers.ts'

const job = (id: string) => ({ kind: 'job' as const, id, record: { text: 'x'.repeat(300) }, final: false })

/** A store holding a few snapshots, closed cleanly. */
async function closedStore(t: Test): Promise<string> {
  const dataDir = path.join(tempDir('store-clean-'), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const store = await Store.open({ dataDir })
  t.equal(store.openCheck, 'new')
  for (let i = 0; i < 20; i++) await store.commit({ changes: [job(`job_${i}`)] })
  await store.close()
  return dataDir
}

async function openCheckOf(dataDir: string, durability: 'sync' | 'none' = 'sync'): Promise<Store['openCheck']> {
  const store = await Store.open({ dataDir, durability })
  await store.close()
  return store.openCheck
}

t.test('a clean close skips the next deep check; open removes the record before anything can be written', async (t) => {
  const dataDir = await closedStore(t)
  t.ok(fs.existsSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE)), 'close() recorded the clean shutdown')
  const store = await Store.open({ dataDir })
  t.equal(store.openCheck, 'clean-shutdown', 'the deep check was skipped')
  t.notOk(fs.existsSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE)), 'the record is gone while the store is open')
  t.same(store.getSnapshot('job', 'job_19')?.snapshot, job('job_19').record, 'the data reads as it was')
  await store.close()
  t.equal(await openCheckOf(dataDir), 'clean-shutdown', 'and again after the next clean close')
  const forced = await Store.open({ dataDir, verifyOnOpen: 'deep' })
  t.equal(forced.openCheck, 'deep', "verifyOnOpen 'deep' always checks")
  await forced.close()
})

t.test('a record older than the last write (a process that died after writing) brings the deep check back', async (t) => {
  const dataDir = await closedStore(t)
  const record = path.join(dataDir, CLEAN_SHUTDOWN_FILE)
  const old = fs.readFileSync(record)
  const store = await Store.open({ dataDir })
  await store.commit({ changes: [job('job_after')] })
  await store.close()
  // As if that process had died after its commit and the older record had survived it.
  fs.writeFileSync(record, old)
  t.equal(await openCheckOf(dataDir), 'deep')
})

t.test('durability none records no clean shutdown', async (t) => {
  const dataDir = await closedStore(t)
  t.equal(await openCheckOf(dataDir, 'none'), 'clean-shutdown')
  t.notOk(fs.existsSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE)), 'an unsynced close leaves no record')
  t.equal(await openCheckOf(dataDir), 'deep')
})

t.test('a copied data directory gets the deep check', async (t) => {
  const dataDir = await closedStore(t)
  const copy = path.join(path.dirname(dataDir), 'copy')
  fs.cpSync(dataDir, copy, { recursive: true, preserveTimestamps: true })
  t.equal(await openCheckOf(copy), 'deep')
  t.equal(await openCheckOf(dataDir), 'clean-shutdown', 'the original still skips it')
})

t.test('an unreadable record counts as none', async (t) => {
  const dataDir = await closedStore(t)
  fs.writeFileSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE), '{"ino":')
  t.equal(await openCheckOf(dataDir), 'deep')
})

t.test('a data.mdb damaged after a clean close is refused by the deep check, even with its mtime put back', async (t) => {
  const dataDir = await closedStore(t)
  const file = path.join(dataDir, 'data.mdb')
  const { atime, mtime } = fs.statSync(file)
  const bytes = fs.readFileSync(file)
  bytes.fill(0x5a, 2 * 4096)
  fs.writeFileSync(file, bytes)
  fs.utimesSync(file, atime, mtime)
  const error = await Store.open({ dataDir }).then(() => undefined, (e: unknown) => e)
  t.ok(error instanceof StoreOpenError, `refused: ${String(error)}`)
  t.equal((error as StoreOpenError).code, 'store_corrupt')
  t.ok(fs.existsSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE)), 'a refused open changes nothing, the record included')
})
