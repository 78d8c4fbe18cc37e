import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { open } from 'lmdb'
import {
  checkDataFile,
  Store,
  StoreOpenError,
  StoreVersionError,
  type StoreOptions,
  STORE_FORMAT_VERSION,
  STRUCTURES_RECORD,
  LEGACY_VALUE_ENCODING,
  storedValueEncoding,
  valueEncoding,
  VALUE_STRUCTURES,
} from '../../src/store/index.ts'
import { fileDigest, tempDir } from './fixtures/helpers.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

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
  const result = spawnSync(process.execPath, [...TS_LOADER_ARGS, fileURLToPath(new URL('./fixtures/open-unprivileged.ts', import.meta.url)), dataDir], {
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

/**
 * A directory as the release of an older format left it: format 1 wrote every database with lmdb-js's default
 * encoder (msgpackr records defining their keys in each value), format 2 its values as plain maps. Snapshots past
 * one re-encoding chunk, and integers 64..127, which format 2 writes in the bytes format 3 uses to name a structure.
 */
async function olderFormat(dataDir: string, formatVersion: 1 | 2, snapshots: number): Promise<{ entries: Map<string, unknown>; record: unknown }> {
  const values = formatVersion === 1 ? { useBigIntExtension: true } : LEGACY_VALUE_ENCODING
  const kinds = Object.fromEntries(['job', 'offer', 'lease', 'advance', 'lender', 'source', 'borrower', 'reserve', 'supplier', 'meta'].map((kind) => [kind, 1]))
  const old = open({ path: dataDir, noSubdir: false, overlappingSync: false, maxDbs: 8, useBigIntExtension: true } as never)
  const oldMeta = old.openDB({ name: 'meta', useBigIntExtension: true } as never)
  oldMeta.putSync('format', { formatVersion, createdAtMs: 1_600_000_000_000 })
  oldMeta.putSync('schema', { kinds, collections: { 'used-proof': 1 } })
  oldMeta.putSync('shutdown', 'clean')
  const db = old.openDB({ name: 'snapshots', ...values } as never)
  const live = old.openDB({ name: 'live' })
  const entries = new Map<string, unknown>()
  for (let i = 0; i < snapshots; i++) {
    const id = `lse_${i}`
    const entry = { version: 1, snapshot: { value: 'active', context: { amountAtomic: 10n ** 30n + BigInt(i), askBps: 64 + (i % 64), lender: '0xab', seq: i }, history: [{ from: null, to: 'leased', event: 'created', atMs: 100 }] }, updatedAtMs: 1_700_000_000_000, final: false }
    db.putSync(['lease', id], entry)
    live.putSync(['lease', id], 1_700_000_000_000)
    entries.set(id, entry)
  }
  const record = { version: 1, value: { usedBy: 'lse_1', usedAtMs: 100 }, updatedAtMs: 1_700_000_000_000, expiresAtMs: null }
  old.openDB({ name: 'records', ...values } as never).putSync(['used-proof', 'p1'], record)
  old.openDB({ name: 'expiry' })
  await old.close()
  return { entries, record }
}

/** A value read with the wrong encoding may decode to something else or throw: either is not the value. */
function readOrError(read: () => unknown): unknown {
  try {
    return read()
  } catch (error) {
    return error
  }
}

for (const formatVersion of [1, 2] as const) {
  t.test(`a format ${formatVersion} directory opens, reads as it was, and is upgraded to format 3: every value rewritten with the structures it records`, async (t) => {
    const dataDir = path.join(tempDir(), 'data')
    t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
    const { entries, record } = await olderFormat(dataDir, formatVersion, 2500)

    const store = await Store.open({ dataDir })
    t.same(store.getSnapshot('lease', 'lse_1'), entries.get('lse_1'), `a format ${formatVersion} snapshot reads as it was written`)
    t.same(store.proofs.get('p1'), (record as { value: unknown }).value)
    t.equal(store.countLive('lease'), entries.size)
    await store.commit({ changes: [{ kind: 'lease', id: 'lse_new', record: { value: 'active', context: { amountAtomic: 7n, askBps: 100 } }, final: false }] })
    await store.close()

    const raw = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 8 } as never)
    const meta = raw.openDB({ name: 'meta', useBigIntExtension: true } as never)
    t.same(meta.get('format'), { formatVersion: STORE_FORMAT_VERSION, createdAtMs: 1_600_000_000_000 }, 'the format record says 3 (so an older release refuses it), keeping the creation time')
    t.same(meta.get(STRUCTURES_RECORD), VALUE_STRUCTURES, 'the directory records the structures its values are written with')
    const legacy = raw.openDB({ name: 'snapshots', ...LEGACY_VALUE_ENCODING } as never)
    t.notSame(readOrError(() => legacy.get(['lease', 'lse_1'])), entries.get('lse_1'), 'the stored value is no longer in the old encoding')
    const current = raw.openDB({ name: 'snapshots', ...storedValueEncoding(raw) } as never)
    const mismatched = [...entries].filter(([id, entry]) => !isDeepStrictEqual(current.get(['lease', id]), entry)).map(([id]) => id)
    t.same(mismatched, [], 'every value, past the first re-encoding chunk too, reads back in format 3 as it was written')
    t.same(raw.openDB({ name: 'records', ...storedValueEncoding(raw) } as never).get(['used-proof', 'p1']), record)
    await raw.close()
    const again = await Store.open({ dataDir })
    t.teardown(() => again.close())
    t.same(again.getSnapshot('lease', 'lse_new')?.snapshot, { value: 'active', context: { amountAtomic: 7n, askBps: 100 } })
    t.same(again.getSnapshot('lease', 'lse_2499'), entries.get('lse_2499'))
    t.same(again.verify(), { snapshots: entries.size + 1, live: entries.size + 1, records: 1 })
  })
}

t.test('a format 2 directory holding a snapshot this release cannot read is refused before its upgrade, and left as it was', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const { entries } = await olderFormat(dataDir, 2, 10)
  // version 70: in format 2 the byte 0x46, which a format 3 decoder would take for a shared structure
  const root = open({ path: dataDir, noSubdir: false, overlappingSync: false, maxDbs: 8 } as never)
  root.openDB({ name: 'snapshots', ...LEGACY_VALUE_ENCODING } as never).putSync(['lease', 'lse_3'], { ...(entries.get('lse_3') as object), version: 70 })
  await root.close()
  const before = digests(dataDir)
  await t.rejects(Store.open({ dataDir, verifyOnOpen: 'header' }), { name: 'StoreVersionError', message: /lease lse_3: snapshot schema version 70 is newer than this release reads \(1\)/ })
  t.same(digests(dataDir), before, 'nothing was rewritten')
})

t.test('a format 3 directory is read and written with the structures it records, not the release\'s list', async (t) => {
  const dataDir = path.join(tempDir(), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const created = await Store.open({ dataDir })
  await created.close()
  // As a release with another list would have created it: the same key lists in another order.
  const reordered = [...VALUE_STRUCTURES].reverse()
  await withMeta(dataDir, STRUCTURES_RECORD, reordered)
  const entry = { value: 'active', context: { amountAtomic: 5n, askBps: 70 }, history: [{ from: null, to: 'leased', event: 'created', atMs: 100 }] }
  const first = await Store.open({ dataDir })
  await first.commit({ changes: [{ kind: 'lease', id: 'lse_1', record: entry, final: false }] })
  await first.close()
  const second = await Store.open({ dataDir })
  t.same(second.getSnapshot('lease', 'lse_1')?.snapshot, entry, 'a later open reads what an earlier one wrote')
  await second.close()
  const raw = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 8 } as never)
  t.teardown(() => raw.close())
  t.same(raw.openDB({ name: 'meta', useBigIntExtension: true } as never).get(STRUCTURES_RECORD), reordered, 'the record is kept as it was')
  const byRelease = raw.openDB({ name: 'snapshots', ...valueEncoding(VALUE_STRUCTURES) } as never)
  t.notSame(readOrError(() => (byRelease.get(['lease', 'lse_1']) as { snapshot?: unknown }).snapshot), entry, "the release's own list would not read it")
})

t.test('a format 3 directory without a readable structures record is refused, and left as it was', async (t) => {
  for (const structures of [undefined, 'not a list', [[1, 2]], Array.from({ length: 33 }, () => ['k'])]) {
    const dataDir = await populated()
    t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
    const root = open({ path: dataDir, overlappingSync: false })
    const meta = root.openDB({ name: 'meta' })
    if (structures === undefined) meta.removeSync(STRUCTURES_RECORD)
    else meta.putSync(STRUCTURES_RECORD, structures)
    await root.close()
    await refused(t, dataDir, 'store_corrupt', /unreadable value structures record/)
  }
})
