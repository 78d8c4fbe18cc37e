// The deep check reads LMDB's free-page list itself (src/store/page-walk.ts) instead of making LMDB load it by a
// write to a copy of data.mdb: it must read what LMDB writes, refuse a damaged list, and leave data.mdb as it was.
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Store, StoreOpenError } from '../../src/store/index.ts'
import { checkFreePages, checkTreeTops, newestMeta } from '../../src/store/page-walk.ts'
import { deepCheck } from '../../src/store/probe.ts'
import { DB_NAMES } from '../../src/store/open-checks.ts'
import { churned, firstPageList, freePagePastTheEnd, headerOf } from './fixtures/free-list.ts'
import { dirDigests } from './fixtures/helpers.ts'

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
  const before = { files: dirDigests(dataDir), stat: fs.statSync(file, { bigint: true }) }
  await deepCheck(dataDir, headerOf(dataDir), DB_NAMES, 60_000)
  const stat = fs.statSync(file, { bigint: true })
  t.same(dirDigests(dataDir), before.files, 'every file of the directory has the same bytes, and no file was added')
  t.same([stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs], [before.stat.ino, before.stat.size, before.stat.mtimeNs, before.stat.ctimeNs], 'data.mdb was not written to')
})

async function refusedAsDamaged(t: Test, dataDir: string, message: RegExp, besideReads = false): Promise<void> {
  const before = dirDigests(dataDir)
  const error = await Store.open({ dataDir, verifyOnOpen: 'deep', deepCheckBesideReads: besideReads }).then(
    (store) => store.close().then(() => undefined),
    (e: unknown) => e,
  )
  t.ok(error instanceof StoreOpenError, `refused: ${String(error)}`)
  t.equal((error as StoreOpenError).code, 'store_corrupt')
  t.match((error as Error).message, message)
  t.same(dirDigests(dataDir), before, 'nothing was changed')
}

t.test('a free list naming a page past the end of the file is refused as damage (LMDB would hand that page out)', async (t) => {
  const { dataDir } = await churned(t)
  freePagePastTheEnd(dataDir)
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

t.test('the walk of the databases and their branch pages reads what LMDB wrote', async (t) => {
  const { dataDir } = await churned(t)
  const result = checkTreeTops(path.join(dataDir, 'data.mdb'), headerOf(dataDir))
  t.same(result, { ok: true, databases: DB_NAMES.length, pagesRead: result.ok ? result.pagesRead : -1 })
})

t.test('beside reads, garbage past the meta pages is refused before the file is mapped, and no marker is left', async (t) => {
  const { dataDir } = await churned(t)
  const file = path.join(dataDir, 'data.mdb')
  const bytes = fs.readFileSync(file)
  bytes.fill(0x5a, 2 * newestMeta(headerOf(dataDir)).pageSize)
  fs.writeFileSync(file, bytes)
  // Mapped and read in this process, this file would crash it (test/store/open.test.ts: SIGBUS on the first read).
  await refusedAsDamaged(t, dataDir, /damaged: the tree of databases is damaged: /, true)
})
