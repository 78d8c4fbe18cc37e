import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'lmdb'
import {
  checkDataFile,
  Store,
  StoreOpenError,
  StoreVersionError,
  type StoreOptions,
  STORE_FORMAT_VERSION,
  VALUE_ENCODING,
} from '../../src/store/index.ts'
import { fileDigest, tempDir } from './fixtures/helpers.ts'

/** A valid store with a few snapshots, closed; returns its directory. */
async function populated(): Promise<string> {
  const dataDir = path.join(tempDir(), 'data')
  const store = await Store.open({ dataDir })
  for (let round = 0; round < 20; round++) {
    await store.commit({
      changes: Array.from({ length: 50 }, (_, i) => ({
        kind: 'job' as const,
        id: `job_${round}_${i}`,
        record: { text: 'x'.repeat(200), amountAtomic: BigInt(i) },
        final: false,
      })),
    })
  }
  await store.close()
  return dataDir
}

function digests(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of fs.readdirSync(dir)) if (name !== 'lock.mdb') out[name] = fileDigest(path.join(dir, name))
  return out
}

async function refused(t: Test, dataDir: string, code: string, message: RegExp, options: Partial<StoreOptions> = {}): Promise<void> {
  const before = fs.statSync(dataDir).isDirectory() ? digests(dataDir) : fileDigest(dataDir)
  const error = await Store.open({ ...options, dataDir }).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(error instanceof StoreOpenError, `refused with StoreOpenError: ${String(error)}`)
  t.equal((error as StoreOpenError).code, code)
  t.match((error as Error).message, message)
  t.match((error as Error).message, dataDir, 'the message names the directory')
  const after = fs.statSync(dataDir).isDirectory() ? digests(dataDir) : fileDigest(dataDir)
  t.same(after, before, 'files left untouched')
}

t.test('the header check reads what LMDB wrote', async (t) => {
  const dataDir = await populated()
  const check = checkDataFile(path.join(dataDir, 'data.mdb'))
  t.equal(check.ok, true)
  const root = open({ path: dataDir, overlappingSync: false })
  const stats = root.getStats() as { pageSize: number; lastPageNumber: number; lastTxnId: number }
  await root.close()
  if (check.ok) {
    t.equal(check.metas[0].pageSize, stats.pageSize)
    const newest = check.metas[0].txnId > check.metas[1].txnId ? check.metas[0] : check.metas[1]
    t.equal(newest.lastPageNumber, BigInt(stats.lastPageNumber))
    t.equal(newest.txnId, BigInt(stats.lastTxnId))
  }
})

t.test('a damaged data.mdb is refused with a clear error and left as it was', async (t) => {
  const cases: [string, (file: string) => void, RegExp][] = [
    ['garbage', (f) => fs.writeFileSync(f, Buffer.alloc(fs.statSync(f).size, 0x5a)), /damaged: .*not a meta page|magic/],
    ['truncated', (f) => fs.truncateSync(f, 3 * 4096), /truncated/],
    ['cut inside the meta page', (f) => fs.truncateSync(f, 100), /damaged/],
    ['empty', (f) => fs.truncateSync(f, 0), /empty/],
    ['garbage data pages (caught by the probe)', (f) => {
      const bytes = fs.readFileSync(f)
      bytes.fill(0x5a, 2 * 4096)
      fs.writeFileSync(f, bytes)
    }, /crashed LMDB|damaged/],
  ]
  for (const [name, damage, message] of cases) {
    await t.test(name, async (t) => {
      const dataDir = await populated()
      t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
      damage(path.join(dataDir, 'data.mdb'))
      await refused(t, dataDir, 'store_corrupt', message)
    })
  }
})

t.test('a deep check that runs out of time is reported as such, not as damage, and changes nothing', async (t) => {
  const dataDir = await populated()
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  // 1 ms: the child process cannot even start within it. The same data opens with the default limit. ('deep': the
  // store was closed cleanly, which would skip the check.)
  await refused(t, dataDir, 'store_check_timeout', /could not be checked: the check of every page did not finish within 0 s/, { verifyOnOpen: 'deep', probeTimeoutMs: 1 })
  const store = await Store.open({ dataDir })
  t.ok(store.getSnapshot('job', 'job_0_0'), 'the data is sound')
  await store.close()
})

t.test('a file where the data directory should be is refused', async (t) => {
  const dir = tempDir()
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const dataDir = path.join(dir, 'data')
  fs.writeFileSync(dataDir, 'not a directory')
  await refused(t, dataDir, 'store_not_a_directory', /not a directory/)
  t.equal(fs.readFileSync(dataDir, 'utf8'), 'not a directory')
})

t.test('a data directory without permission is refused', async (t) => {
  const dataDir = await populated()
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  // The child may run as nobody (see the fixture): it must be able to reach the directory, not to write in it.
  fs.chmodSync(path.dirname(dataDir), 0o755)
  fs.chmodSync(dataDir, 0o500)
  t.teardown(() => fs.chmodSync(dataDir, 0o755))
  const before = digests(dataDir)
  const result = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/open-unprivileged.ts', import.meta.url)), dataDir], {
    encoding: 'utf8',
  })
  const line = result.stdout.trim().split('\n').pop() ?? ''
  t.match(line, /^\{/, `the child reported (stderr: ${result.stderr.slice(0, 1000)})`)
  const outcome = JSON.parse(line || '{}') as { uid?: number; visible?: boolean; opened?: boolean; name?: string; code?: string; message?: string }
  t.not(outcome.uid, 0, 'the open was tried without root, which ignores file modes')
  t.equal(outcome.visible, true, 'the directory was reachable, so the refusal is about the directory itself')
  t.equal(outcome.opened, false)
  t.equal(outcome.name, 'StoreOpenError')
  t.equal(outcome.code, 'store_permission_denied')
  t.match(outcome.message, /permission denied/)
  t.match(outcome.message, dataDir, 'the message names the directory')
  t.same(digests(dataDir), before, 'files left untouched')
})

t.test('LMDB data of another program is refused', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const root = open({ path: dataDir, overlappingSync: false })
  root.openDB({ name: 'somebody-else' }).putSync('k', 'v')
  await root.close()
  await refused(t, dataDir, 'store_not_a_store', /not an agent-credit store/)
})

async function withMeta(dataDir: string, key: string, value: unknown): Promise<void> {
  const root = open({ path: dataDir, overlappingSync: false })
  root.openDB({ name: 'meta' }).putSync(key, value)
  await root.close()
}

t.test('a store format version from the future makes open() refuse', async (t) => {
  const dataDir = await populated()
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  await withMeta(dataDir, 'format', { formatVersion: STORE_FORMAT_VERSION + 1, createdAtMs: 0 })
  await t.rejects(Store.open({ dataDir }), StoreVersionError)
  await t.rejects(Store.open({ dataDir }), { message: new RegExp(`store format version ${STORE_FORMAT_VERSION + 1}, written by a newer release; this release reads format ${STORE_FORMAT_VERSION}`) })
})

t.test('snapshot schema versions from the future are refused at open and when read', async (t) => {
  const dataDir = await populated()
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const v2 = await Store.open({ dataDir, snapshotVersions: { job: 2 } })
  await v2.commit({ changes: [{ kind: 'job', id: 'job_v2', record: { shape: 'new' }, final: false }] })
  t.equal(v2.getSnapshot('job', 'job_v2')?.version, 2)
  t.equal(v2.getSnapshot('job', 'job_0_0')?.version, 1, 'older snapshots keep their version for migration')
  await v2.close()
  await t.rejects(Store.open({ dataDir }), { name: 'StoreVersionError', message: /job snapshots of schema version 2.*reads up to version 1/ })
})

t.test('a collection version from the future is refused', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const a = await Store.open({ dataDir })
  a.collection('session', { version: 3 })
  await a.close()
  const b = await Store.open({ dataDir })
  t.throws(() => b.collection('session', { version: 2 }), StoreVersionError)
  t.ok(b.collection('session', { version: 3 }))
  await b.close()
})

t.test('a format 1 directory (values as msgpackr records) opens, reads as it was, and is upgraded to format 2', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  // Written as the release of format 1 wrote it: every database with lmdb-js's default encoder.
  const snapshot = { version: 1, snapshot: { value: 'active', context: { amountAtomic: 10n ** 30n, lender: '0xab' } }, updatedAtMs: 1_700_000_000_000, final: false }
  const record = { version: 1, value: { usedBy: 'lse_1', usedAtMs: 5 }, updatedAtMs: 1_700_000_000_000, expiresAtMs: null }
  const kinds = Object.fromEntries(['job', 'offer', 'lease', 'advance', 'lender', 'source', 'borrower', 'reserve', 'supplier', 'meta'].map((kind) => [kind, 1]))
  const old = open({ path: dataDir, noSubdir: false, overlappingSync: false, maxDbs: 8, useBigIntExtension: true } as never)
  const oldMeta = old.openDB({ name: 'meta', useBigIntExtension: true } as never)
  oldMeta.putSync('format', { formatVersion: 1, createdAtMs: 1_600_000_000_000 })
  oldMeta.putSync('schema', { kinds, collections: { 'used-proof': 1 } })
  oldMeta.putSync('shutdown', 'clean')
  old.openDB({ name: 'snapshots', useBigIntExtension: true } as never).putSync(['lease', 'lse_1'], snapshot)
  old.openDB({ name: 'live' }).putSync(['lease', 'lse_1'], 1_700_000_000_000)
  old.openDB({ name: 'records', useBigIntExtension: true } as never).putSync(['used-proof', 'p1'], record)
  await old.close()

  const store = await Store.open({ dataDir })
  t.same(store.getSnapshot('lease', 'lse_1'), snapshot, 'a format 1 snapshot reads as it was written')
  t.same(store.proofs.get('p1'), record.value)
  t.same([...store.iterateLive('lease')].map((l) => l.id), ['lse_1'])
  await store.commit({ changes: [{ kind: 'lease', id: 'lse_2', record: { value: 'active', context: { amountAtomic: 7n } }, final: false }] })
  await store.close()

  const raw = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 8 } as never)
  t.same(raw.openDB({ name: 'meta', useBigIntExtension: true } as never).get('format'), { formatVersion: STORE_FORMAT_VERSION, createdAtMs: 1_600_000_000_000 }, 'the format record says 2 (so a format 1 release refuses it), keeping the creation time')
  const viaDefaults = raw.openDB({ name: 'snapshots', useBigIntExtension: true } as never).get(['lease', 'lse_2'])
  t.ok(viaDefaults instanceof Map, "lmdb-js's default decoder reads a format 2 value as a Map: why every reader uses VALUE_ENCODING")
  const viaEncoding = raw.openDB({ name: 'snapshots', ...VALUE_ENCODING } as never).get(['lease', 'lse_1'])
  t.same(viaEncoding, snapshot, 'VALUE_ENCODING reads format 1 values too')
  await raw.close()
  const again = await Store.open({ dataDir })
  t.teardown(() => again.close())
  t.same(again.getSnapshot('lease', 'lse_2')?.snapshot, { value: 'active', context: { amountAtomic: 7n } })
  t.same(again.getSnapshot('lease', 'lse_1'), snapshot)
  t.same(again.verify(), { snapshots: 2, live: 2, records: 1 })
})
