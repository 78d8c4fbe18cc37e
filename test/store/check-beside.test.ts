// The deep check beside the service's reads (Store.open deepCheckBesideReads, issue 11): the store opens before the
// verdict; a failed check refuses through checked() and leaves the directory as it found it; a start that died before
// its verdict makes the next one check alone first, before mapping the file.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Store, StoreOpenError } from '../../src/store/index.ts'
import { CLEAN_SHUTDOWN_FILE } from '../../src/store/clean-shutdown.ts'
import { DEEP_CHECK_RUNNING_FILE } from '../../src/store/probe.ts'
import { churned, freePagePastTheEnd } from './fixtures/free-list.ts'
import { dirDigests } from './fixtures/helpers.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const DIE_BEFORE_VERDICT = fileURLToPath(new URL('./fixtures/die-before-verdict.ts', import.meta.url))

async function refusal(t: Test, promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(() => undefined, (e: unknown) => e)
  t.ok(error instanceof StoreOpenError, `refused: ${String(error)}`)
  t.equal((error as StoreOpenError).code, 'store_corrupt')
  t.match((error as Error).message, /is damaged: the free-page list is damaged: .*Nothing was changed/)
}

/** A start as the service makes it after a crash, killed before the deep check's verdict; returns its openCheck. */
function dieBeforeVerdict(dataDir: string): string {
  const run = spawnSync(process.execPath, [...TS_LOADER_ARGS, DIE_BEFORE_VERDICT, dataDir], { encoding: 'utf8' })
  if (run.signal !== 'SIGKILL') throw new Error(`the start was not killed: ${run.status} ${run.stderr.slice(0, 2000)}`)
  return run.stdout.trim()
}

t.test('damage found beside the reads is refused by checked(): nothing written, no marker, the clean-shutdown record untouched', async (t) => {
  const { dataDir } = await churned(t)
  freePagePastTheEnd(dataDir)
  const before = dirDigests(dataDir)
  t.ok(before[CLEAN_SHUTDOWN_FILE], 'the stale clean-shutdown record is there (data.mdb changed after it)')
  const store = await Store.open({ dataDir, deepCheckBesideReads: true })
  t.equal(store.openCheck, 'deep')
  t.ok(store.getSnapshot('job', 'job_0_1'), 'reads work before the verdict (the damage is in the free list, which reads never touch)')
  await refusal(t, store.checked())
  await store.close()
  t.same(dirDigests(dataDir), before, 'every file as it was: no marker, no new clean-shutdown record, data.mdb unchanged')
})

t.test('a sound store after a crash opens beside its check, and is written once the check passed', async (t) => {
  const { dataDir } = await churned(t)
  fs.rmSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE))
  const store = await Store.open({ dataDir, deepCheckBesideReads: true })
  t.equal(store.openCheck, 'deep')
  await store.checked()
  t.notOk(fs.existsSync(path.join(dataDir, DEEP_CHECK_RUNNING_FILE)), 'the marker is gone with the verdict')
  await store.commit({ changes: [{ kind: 'job', id: 'job_after', record: { n: 1 }, final: false }] })
  await store.close()
  const again = await Store.open({ dataDir, deepCheckBesideReads: true })
  t.equal(again.openCheck, 'clean-shutdown', 'closed cleanly after the check passed')
  t.same(again.getSnapshot('job', 'job_after')?.snapshot, { n: 1 })
  await again.close()
})

t.test('a start that died before its verdict leaves the marker; the next checks alone first and refuses damage clearly', async (t) => {
  const { dataDir } = await churned(t)
  freePagePastTheEnd(dataDir)
  t.equal(dieBeforeVerdict(dataDir), 'deep', 'the killed start had opened the store beside its check')
  t.ok(fs.existsSync(path.join(dataDir, DEEP_CHECK_RUNNING_FILE)), 'its marker stayed')
  const before = dirDigests(dataDir)
  // Refused by open() itself: the check ran before the file was mapped.
  await refusal(t, Store.open({ dataDir, deepCheckBesideReads: true }))
  t.same(dirDigests(dataDir), before, 'nothing changed, the marker included: the next start checks alone again')
})

t.test('a sound store whose last start died before its verdict is checked alone first, even with a clean-shutdown record', async (t) => {
  const { dataDir } = await churned(t)
  t.equal(dieBeforeVerdict(dataDir), 'deep')
  t.ok(fs.existsSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE)), 'the record of the clean close before it is still there')
  const store = await Store.open({ dataDir, deepCheckBesideReads: true })
  t.equal(store.openCheck, 'deep', 'the marker brings the deep check back')
  t.notOk(fs.existsSync(path.join(dataDir, DEEP_CHECK_RUNNING_FILE)), 'the check passed before open() returned, and the marker is gone')
  await store.checked()
  await store.close()
})

t.test('a schema record due at open (a write) waits for the verdict: damage refuses open() with nothing written', async (t) => {
  const { dataDir } = await churned(t)
  freePagePastTheEnd(dataDir)
  const before = dirDigests(dataDir)
  // A newer job version: open() rewrites the schema record.
  await refusal(t, Store.open({ dataDir, deepCheckBesideReads: true, snapshotVersions: { job: 2 } }))
  t.same(dirDigests(dataDir), before, 'the schema record was not rewritten, no marker left')
})
