// The deep check reads LMDB's free-page list itself (src/store/page-walk.ts) instead of making LMDB load it by a
// write to a copy of data.mdb: it must read what LMDB writes, refuse a damaged list, and leave data.mdb as it was.
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { open } from 'lmdb'
import { checkDataFile, Store, StoreOpenError } from '../../src/store/index.ts'
import { NO_ROOT } from '../../src/store/data-file.ts'
import { checkFreePages, newestMeta } from '../../src/store/page-walk.ts'
import { deepCheck } from '../../src/store/probe.ts'
import { DB_NAMES } from '../../src/store/open-checks.ts'
import { fileDigest, tempDir } from './fixtures/helpers.ts'

const job = (id: string, bytes: number) => ({ kind: 'job' as const, id, record: { text: 'x'.repeat(bytes) }, final: false })

/**
 * A store whose free list holds records of both kinds: page lists inline in a leaf and, after large deletions, on
 * overflow pages. Returns its directory and LMDB's own counts of the free list.
 */
async function churned(t: Test): Promise<{ dataDir: string; free: { entryCount: number; treeLeafPageCount: number; overflowPages: number } }> {
  const dataDir = path.join(tempDir('store-free-'), 'data')
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }))
  const store = await Store.open({ dataDir })
  for (let round = 0; round < 12; round++) {
    await store.commit({ changes: Array.from({ length: 3000 }, (_, i) => job(`job_${round}_${i}`, round % 3 === 0 ? 5000 : 300)) })
    // Rewriting every other snapshot smaller frees pages scattered through the file: long page lists.
    await store.commit({ changes: Array.from({ length: 1500 }, (_, i) => ({ ...job(`job_${round}_${2 * i}`, 100), final: true })) })
  }
  await store.close()
  const root = open({ path: dataDir, readOnly: true } as never)
  const free = (root.getStats() as { free: { entryCount: number; treeLeafPageCount: number; overflowPages: number } }).free
  await root.close()
  return { dataDir, free }
}

function headerOf(dataDir: string) {
  const check = checkDataFile(path.join(dataDir, 'data.mdb'))
  if (!check.ok) throw new Error(check.reason)
  return check
}

/** Byte offset in data.mdb of the first free-list record's page list (the free list must be one leaf page). */
function firstPageList(dataDir: string): { offset: number; entries: number; lastPage: bigint } {
  const meta = newestMeta(headerOf(dataDir))
  if (meta.freeDb.depth !== 1 || meta.freeDb.root === NO_ROOT) throw new Error(`the fixture's free list has depth ${meta.freeDb.depth}`)
  const page = Buffer.alloc(meta.pageSize)
  const pageAt = Number(meta.freeDb.root) * meta.pageSize
  const fd = fs.openSync(path.join(dataDir, 'data.mdb'), 'r')
  fs.readSync(fd, page, 0, meta.pageSize, pageAt)
  fs.closeSync(fd)
  // Node offsets follow the 24-byte header and count from its end; a node's header is 8 bytes, its key 8.
  for (let i = 0; i < page.readUInt16LE(20) / 2; i++) {
    const node = 24 + page.readUInt16LE(24 + 2 * i)
    if ((page.readUInt16LE(node + 4) & 1) !== 0) continue
    const list = node + 16
    return { offset: pageAt + list, entries: Number(page.readBigUInt64LE(list)), lastPage: meta.lastPageNumber }
  }
  throw new Error('no free-list record in its leaf')
}

function digests(dataDir: string): Record<string, string> {
  return Object.fromEntries(fs.readdirSync(dataDir).filter((name) => name !== 'lock.mdb').map((name) => [name, fileDigest(path.join(dataDir, name))]))
}

t.test('the walk of the free list reads what LMDB wrote: inline and overflow records, counts as LMDB reports them', async (t) => {
  const { dataDir, free } = await churned(t)
  t.ok(free.entryCount > 0 && free.overflowPages > 0, `the fixture's free list has records on overflow pages (${JSON.stringify(free)})`)
  const result = checkFreePages(path.join(dataDir, 'data.mdb'), headerOf(dataDir))
  t.same(result, { ok: true, records: free.entryCount, freePages: result.ok ? result.freePages : -1 })
  t.ok(result.ok && result.freePages > 0, 'it names free pages')
})

t.test('the deep check leaves data.mdb byte for byte as it was, and writes nothing beside it', async (t) => {
  const { dataDir } = await churned(t)
  const file = path.join(dataDir, 'data.mdb')
  const before = { files: digests(dataDir), stat: fs.statSync(file, { bigint: true }) }
  await deepCheck(dataDir, headerOf(dataDir), DB_NAMES, 60_000)
  const stat = fs.statSync(file, { bigint: true })
  t.same(digests(dataDir), before.files, 'every file of the directory has the same bytes, and no file was added')
  t.same([stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs], [before.stat.ino, before.stat.size, before.stat.mtimeNs, before.stat.ctimeNs], 'data.mdb was not written to')
})

async function refusedAsDamaged(t: Test, dataDir: string, message: RegExp): Promise<void> {
  const before = digests(dataDir)
  const error = await Store.open({ dataDir, verifyOnOpen: 'deep' }).then(
    (store) => store.close().then(() => undefined),
    (e: unknown) => e,
  )
  t.ok(error instanceof StoreOpenError, `refused: ${String(error)}`)
  t.equal((error as StoreOpenError).code, 'store_corrupt')
  t.match((error as Error).message, message)
  t.same(digests(dataDir), before, 'nothing was changed')
}

t.test('a free list naming a page past the end of the file is refused as damage (LMDB would hand that page out)', async (t) => {
  const { dataDir } = await churned(t)
  const list = firstPageList(dataDir)
  t.ok(list.entries > 0, 'the record lists pages')
  const fd = fs.openSync(path.join(dataDir, 'data.mdb'), 'r+')
  const entry = Buffer.alloc(8)
  entry.writeBigUInt64LE(list.lastPage + 1000n)
  fs.writeSync(fd, entry, 0, 8, list.offset + 8)
  fs.closeSync(fd)
  await refusedAsDamaged(t, dataDir, /damaged: the free-page list is damaged: .*outside pages 2\.\./)
})

t.test('a free-list record whose count runs past its data is refused as damage', async (t) => {
  const { dataDir } = await churned(t)
  const list = firstPageList(dataDir)
  const fd = fs.openSync(path.join(dataDir, 'data.mdb'), 'r+')
  const count = Buffer.alloc(8)
  count.writeBigUInt64LE(1n << 40n)
  fs.writeSync(fd, count, 0, 8, list.offset)
  fs.closeSync(fd)
  await refusedAsDamaged(t, dataDir, /the free-page list is damaged: .*says \d+ entries in \d+ bytes/)
})

t.test('a garbage free-list page is refused as damage', async (t) => {
  const { dataDir } = await churned(t)
  const meta = newestMeta(headerOf(dataDir))
  const fd = fs.openSync(path.join(dataDir, 'data.mdb'), 'r+')
  fs.writeSync(fd, Buffer.alloc(meta.pageSize, 0x5a), 0, meta.pageSize, Number(meta.freeDb.root) * meta.pageSize)
  fs.closeSync(fd)
  await refusedAsDamaged(t, dataDir, /the free-page list is damaged: page \d+ says it is page/)
})
