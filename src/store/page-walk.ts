// Checks of data.mdb's B-trees by plain reads, never mapping the file and never writing: damage found here is a
// refusal, where LMDB, reading the mapped file, would crash the process instead of raising an error.
//
// - checkFreePages: LMDB's free-page list (the free database, LMDB's database 0), every page. Reading entries (the
//   deep check's child, probe-child.mjs) does not touch it: LMDB reads it only when a write allocates pages, and a
//   damaged one crashes that writer. The deep check used to write once to a copy of data.mdb to make LMDB read it,
//   which cost a full copy of the file (issue 11: most of the deep check's time after a crash); this reads every
//   page of that tree instead, and more strictly than LMDB's allocation, which reads only as many records as it needs.
// - checkTreeTops: the main database (the named databases' records) and every branch page of every named database,
//   before the service maps a file whose deep check runs beside its restore (store.ts): what every read descends
//   through, a small part of the file (the leaf and overflow pages below are left to the deep check).
//
// Layout (LMDB as built into lmdb-js, 64-bit; test/store/page-walk.test.ts checks it against files LMDB writes): a
// page starts with a 24-byte header (pgno u64, txnid u64, pad u16, flags u16, then lower and upper u16, or for an
// overflow page its page count u32); a branch or leaf page's node offsets (u16, counted from the end of the header)
// follow it, lower / 2 of them. A node: data size (leaf) or child page number (branch) in lo u16, hi u16 and, for a
// branch, flags u16 as its top bits; flags u16; key size u16; the key, then a leaf's data, or for F_BIGDATA the u64
// number of the overflow page holding it. A free-list record: the key a u64 transaction id, the data a list of free
// pages (checkPageList). A main-database record of a named database: F_SUBDATA, the key its name, the data its
// 48-byte MDB_db (data-file.ts readDbRecord).

import fs from 'node:fs'
import { NO_ROOT, readDbRecord, type DataFileCheck, type DbRecord, type MetaPage } from './data-file.ts'

const PAGE_HEADER_BYTES = 24
const NODE_HEADER_BYTES = 8
const OFFSET_FLAGS = 18
const OFFSET_LOWER = 20
const OFFSET_UPPER = 22
const OFFSET_OVERFLOW_PAGES = 20
const P_BRANCH = 0x01
const P_LEAF = 0x02
const P_OVERFLOW = 0x04
/** The page kinds a stored page may be; the other flag bits are LMDB's in-memory bookkeeping. */
const P_KINDS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40
const F_BIGDATA = 0x01
const F_SUBDATA = 0x02
const DB_RECORD_BYTES = 48
/** The first page a free list may name: pages 0 and 1 are the meta pages. */
const FIRST_DATA_PAGE = 2
const TXN_ID_BYTES = 8
const PAGE_NUMBER_BYTES = 8
/** LMDB's cursor stack (CURSOR_STACK): no tree of its is deeper. */
const TREE_DEPTH_MAX = 32

export type FreePagesCheck =
  | { readonly ok: true; readonly records: number; readonly freePages: number }
  | { readonly ok: false; readonly reason: string }

export type TreeTopsCheck = { readonly ok: true; readonly databases: number; readonly pagesRead: number } | { readonly ok: false; readonly reason: string }

class Damaged extends Error {}

/** A stored page number: larger than any page of a real file is damage, not a number to round. */
function pageNumber(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new Damaged(`page number ${value} is past any file`)
  return Number(value)
}

function pageNumberAt(page: Buffer, offset: number): number {
  return pageNumber(page.readBigUInt64LE(offset))
}

/** The meta page LMDB uses: the one with the higher transaction id. */
export function newestMeta(check: Extract<DataFileCheck, { ok: true }>): MetaPage {
  const [meta0, meta1] = check.metas
  return meta0.txnId < meta1.txnId ? meta1 : meta0
}

interface Walk {
  readonly fd: number
  readonly pageSize: number
  /** Page numbers as numbers: a file's pages, each at least 512 bytes, are far fewer than 2^53. */
  readonly lastPage: number
  readonly seen: Set<number>
  pagesRead: number
  branchPages: number
  leafPages: number
  overflowPages: number
  records: number
  freePages: number
  /** checkPagesPastEnd: the free pages at or past `first` the free list names. */
  freePastEnd?: { readonly first: bigint; readonly free: Set<bigint> }
}

function readPage(walk: Walk, pgno: number, what: string): Buffer {
  if (pgno < FIRST_DATA_PAGE || pgno > walk.lastPage) throw new Damaged(`${what} names page ${pgno}, outside pages 2..${walk.lastPage}`)
  if (walk.seen.has(pgno)) throw new Damaged(`${what} names page ${pgno} a second time`)
  walk.seen.add(pgno)
  walk.pagesRead += 1
  const page = Buffer.alloc(walk.pageSize)
  const got = fs.readSync(walk.fd, page, 0, walk.pageSize, pgno * walk.pageSize)
  if (got < walk.pageSize) throw new Damaged(`page ${pgno} is cut short`)
  const stored = page.readBigUInt64LE(0)
  if (stored !== BigInt(pgno)) throw new Damaged(`page ${pgno} says it is page ${stored}`)
  return page
}

/** The offsets of a branch or leaf page's nodes, each checked to hold at least a node header inside the page. */
function nodeOffsets(page: Buffer, pgno: number): number[] {
  const lower = page.readUInt16LE(OFFSET_LOWER)
  const upper = page.readUInt16LE(OFFSET_UPPER)
  if (lower % 2 !== 0 || lower > upper || PAGE_HEADER_BYTES + upper > page.length) {
    throw new Damaged(`page ${pgno} has impossible bounds (lower ${lower}, upper ${upper})`)
  }
  const offsets: number[] = []
  for (let i = 0; i < lower / 2; i++) {
    const offset = PAGE_HEADER_BYTES + page.readUInt16LE(PAGE_HEADER_BYTES + 2 * i)
    if (offset < PAGE_HEADER_BYTES + upper || offset + NODE_HEADER_BYTES > page.length) {
      throw new Damaged(`page ${pgno} node ${i} lies outside the page's node area`)
    }
    offsets.push(offset)
  }
  if (offsets.length === 0) throw new Damaged(`page ${pgno} holds no nodes`)
  return offsets
}

/**
 * A free-list record's page list as lmdb-js's LMDB writes it and reads it (midl.c, mdb_midl_xmerge): a count, then
 * that many entries, each a page number, 0 (an empty slot), or minus a block's length followed by the block's first
 * page; every page named must lie in the file. Unlike plain LMDB's, the entries are in no particular order, and the
 * record may be longer than its entries (space reserved when it was written).
 */
function checkPageList(walk: Walk, list: Buffer, where: string): void {
  const pastEnd = walk.freePastEnd
  if (list.length < PAGE_NUMBER_BYTES || list.length % PAGE_NUMBER_BYTES !== 0) throw new Damaged(`${where}: a page list of ${list.length} bytes`)
  const count = list.readBigUInt64LE(0)
  if (count > BigInt(list.length / PAGE_NUMBER_BYTES - 1)) throw new Damaged(`${where}: a page list says ${count} entries in ${list.length} bytes`)
  const end = (Number(count) + 1) * PAGE_NUMBER_BYTES
  for (let offset = PAGE_NUMBER_BYTES; offset < end; offset += PAGE_NUMBER_BYTES) {
    const entry = list.readBigInt64LE(offset)
    if (entry === 0n) continue
    let pages = 1n
    if (entry < 0n) {
      pages = -entry
      offset += PAGE_NUMBER_BYTES
      if (offset >= list.length) throw new Damaged(`${where}: a block of ${pages} pages without its first page`)
    }
    const first = list.readBigInt64LE(offset)
    if (first < BigInt(FIRST_DATA_PAGE) || first + pages - 1n > BigInt(walk.lastPage)) {
      throw new Damaged(`${where}: free pages ${first}..${first + pages - 1n} are outside pages 2..${walk.lastPage}`)
    }
    walk.freePages += Number(pages)
    if (pastEnd !== undefined) {
      for (let page = first < pastEnd.first ? pastEnd.first : first; page < first + pages; page++) pastEnd.free.add(page)
    }
  }
}

/** The data of a leaf node whose value is on overflow pages. */
function readOverflow(walk: Walk, pgno: number, bytes: number, where: string): Buffer {
  const first = readPage(walk, pgno, where)
  if ((first.readUInt16LE(OFFSET_FLAGS) & P_KINDS) !== P_OVERFLOW) throw new Damaged(`${where}: page ${pgno} is not an overflow page`)
  const pages = first.readUInt32LE(OFFSET_OVERFLOW_PAGES)
  if (pages < 1 || pgno + pages - 1 > walk.lastPage || PAGE_HEADER_BYTES + bytes > pages * walk.pageSize) {
    throw new Damaged(`${where}: overflow page ${pgno} spans ${pages} pages for ${bytes} bytes`)
  }
  for (let next = pgno + 1; next < pgno + pages; next++) {
    if (walk.seen.has(next)) throw new Damaged(`${where}: overflow pages of ${pgno} overlap page ${next}`)
    walk.seen.add(next)
  }
  walk.overflowPages += pages
  const data = Buffer.alloc(bytes)
  const got = fs.readSync(walk.fd, data, 0, bytes, pgno * walk.pageSize + PAGE_HEADER_BYTES)
  if (got < bytes) throw new Damaged(`${where}: overflow page ${pgno} is cut short`)
  return data
}

function checkFreeListLeaf(walk: Walk, page: Buffer, pgno: number): void {
  for (const [i, offset] of nodeOffsets(page, pgno).entries()) {
    const where = `free-list page ${pgno} record ${i}`
    const bytes = page.readUInt16LE(offset) + page.readUInt16LE(offset + 2) * 0x1_0000
    const flags = page.readUInt16LE(offset + 4)
    const keyBytes = page.readUInt16LE(offset + 6)
    if (keyBytes !== TXN_ID_BYTES || (flags & ~F_BIGDATA) !== 0) throw new Damaged(`${where}: key of ${keyBytes} bytes, flags ${flags}`)
    const dataAt = offset + NODE_HEADER_BYTES + keyBytes
    if ((flags & F_BIGDATA) !== 0) {
      if (dataAt + PAGE_NUMBER_BYTES > page.length) throw new Damaged(`${where} runs past the page`)
      checkPageList(walk, readOverflow(walk, pageNumberAt(page, dataAt), bytes, where), where)
    } else {
      if (dataAt + bytes > page.length) throw new Damaged(`${where} runs past the page`)
      checkPageList(walk, page.subarray(dataAt, dataAt + bytes), where)
    }
  }
}

/** The named databases' records in a main-database leaf. */
function namedDbRecords(page: Buffer, pgno: number, into: Map<string, DbRecord>): void {
  for (const [i, offset] of nodeOffsets(page, pgno).entries()) {
    const bytes = page.readUInt16LE(offset) + page.readUInt16LE(offset + 2) * 0x1_0000
    const flags = page.readUInt16LE(offset + 4)
    const keyBytes = page.readUInt16LE(offset + 6)
    const dataAt = offset + NODE_HEADER_BYTES + keyBytes
    if ((flags & F_SUBDATA) === 0) continue
    if (bytes !== DB_RECORD_BYTES || (flags & F_BIGDATA) !== 0 || dataAt + bytes > page.length) {
      throw new Damaged(`main-database page ${pgno} record ${i}: a database record of ${bytes} bytes, flags ${flags}`)
    }
    into.set(page.toString('latin1', offset + NODE_HEADER_BYTES, dataAt), readDbRecord(page, dataAt))
  }
}

/**
 * Walks one tree from its root: every branch page; each leaf page read and handed to `leaf`, or, without `leaf`,
 * only counted (its number checked, the page itself not read, unless it is the root); overflow pages as the leaves
 * reach them. The tree's shape must match its record: leaves all at its depth, its page (and, with leaves read,
 * entry) counts.
 */
function walkTree(walk: Walk, name: string, db: DbRecord, leaf?: (page: Buffer, pgno: number) => void): void {
  if (db.root === NO_ROOT) {
    if (db.depth === 0 && db.entries === 0n && db.branchPages === 0n && db.leafPages === 0n && db.overflowPages === 0n) return
    throw new Damaged(`${name} has no root page but records pages`)
  }
  if (db.depth < 1 || db.depth > TREE_DEPTH_MAX) throw new Damaged(`${name} has a root page but depth ${db.depth}`)
  const before = { branchPages: walk.branchPages, leafPages: walk.leafPages, overflowPages: walk.overflowPages, records: walk.records }
  const visit = (pgno: number, levelsBelow: number): void => {
    if (levelsBelow === 0 && leaf === undefined && BigInt(pgno) !== db.root) {
      // Not read: only its number is checked (LMDB refuses a page past the last one itself; this names the damage).
      if (pgno < FIRST_DATA_PAGE || pgno > walk.lastPage) throw new Damaged(`${name} names leaf page ${pgno}, outside pages 2..${walk.lastPage}`)
      walk.leafPages += 1
      return
    }
    const page = readPage(walk, pgno, name)
    const kind = page.readUInt16LE(OFFSET_FLAGS) & P_KINDS
    if (levelsBelow === 0) {
      if (kind !== P_LEAF) throw new Damaged(`${name} page ${pgno} should be a leaf page (flags ${kind})`)
      walk.leafPages += 1
      const records = nodeOffsets(page, pgno).length
      if (leaf === undefined) return
      leaf(page, pgno)
      walk.records += records
      return
    }
    if (kind !== P_BRANCH) throw new Damaged(`${name} page ${pgno} should be a branch page (flags ${kind})`)
    walk.branchPages += 1
    const children = nodeOffsets(page, pgno).map((offset) => {
      const keyBytes = page.readUInt16LE(offset + 6)
      if (offset + NODE_HEADER_BYTES + keyBytes > page.length) throw new Damaged(`${name} page ${pgno} has a key past the page`)
      return page.readUInt16LE(offset) + page.readUInt16LE(offset + 2) * 0x1_0000 + page.readUInt16LE(offset + 4) * 0x1_0000_0000
    })
    for (const child of children) visit(child, levelsBelow - 1)
  }
  visit(pageNumber(db.root), db.depth - 1)
  const found = [walk.branchPages - before.branchPages, walk.leafPages - before.leafPages]
  const recorded = [db.branchPages, db.leafPages].map(Number)
  if (leaf !== undefined) {
    found.push(walk.overflowPages - before.overflowPages, walk.records - before.records)
    recorded.push(Number(db.overflowPages), Number(db.entries))
  }
  if (found.some((count, i) => count !== recorded[i])) {
    throw new Damaged(`${name} holds ${found.join('/')} branch/leaf${leaf ? '/overflow pages/records' : ' pages'}, its record says ${recorded.join('/')}`)
  }
}

function withWalk<T extends { ok: true }>(file: string, check: Extract<DataFileCheck, { ok: true }>, what: string, run: (walk: Walk, meta: MetaPage) => T): T | { ok: false; reason: string } {
  const meta = newestMeta(check)
  const fd = fs.openSync(file, 'r')
  try {
    const walk: Walk = { fd, pageSize: meta.pageSize, lastPage: Number(meta.lastPageNumber), seen: new Set(), pagesRead: 0, branchPages: 0, leafPages: 0, overflowPages: 0, records: 0, freePages: 0 }
    return run(walk, meta)
  } catch (error) {
    if (error instanceof Damaged) return { ok: false, reason: `${what} is damaged: ${error.message}` }
    throw error
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Reads every page of the free list the newest meta page names (the one LMDB would use) and checks what LMDB relies
 * on when it allocates from it: page numbers inside the file and never twice, page kinds and bounds, nodes inside
 * their pages, records of a transaction id and a well-formed page list, and the tree's shape and counts as the meta
 * page records them. Reads only; the header check must have passed (the file holds every page up to the last but
 * free ones: checkPagesPastEnd).
 */
export function checkFreePages(file: string, check: Extract<DataFileCheck, { ok: true }>): FreePagesCheck {
  return withWalk(file, check, 'the free-page list', (walk, meta) => {
    walkTree(walk, 'the free list', meta.freeDb, (page, pgno) => checkFreeListLeaf(walk, page, pgno))
    return { ok: true as const, records: walk.records, freePages: walk.freePages }
  })
}

/**
 * When the file ends before the last page its meta pages name (DataFileCheck.pagesPastEnd), whether every page past
 * its end is one the free list names: LMDB leaves a transaction's pages that it allocated at the end and freed again
 * before its commit unwritten, so a store that removed many records at once (the unfunded-lender sweep) ends short of
 * its last page, and a clean restart was refused as truncated. Those pages LMDB never reads; a page past the end that
 * is not free is one a tree names, and reading it would crash the process (SIGBUS): damage. Reads the free list only.
 */
export function checkPagesPastEnd(file: string, check: Extract<DataFileCheck, { ok: true }>): { ok: true } | { ok: false; reason: string } {
  const pastEnd = check.pagesPastEnd
  if (pastEnd === null) return { ok: true }
  const needed = (pastEnd.last + 1n) * BigInt(newestMeta(check).pageSize)
  const truncated = `data.mdb is truncated: ${check.fileBytes} bytes, its meta pages need ${needed}`
  const free = new Set<bigint>()
  const walked = withWalk(file, check, 'the free-page list', (walk, meta) => {
    walk.freePastEnd = { first: pastEnd.first, free }
    walkTree(walk, 'the free list', meta.freeDb, (page, pgno) => checkFreeListLeaf(walk, page, pgno))
    return { ok: true as const }
  })
  if (!walked.ok) return { ok: false, reason: `${truncated} (${walked.reason})` }
  for (let page = pastEnd.first; page <= pastEnd.last; page++) {
    if (!free.has(page)) return { ok: false, reason: `${truncated}, and page ${page} past its end is not a free page` }
  }
  return { ok: true }
}

/**
 * Reads the main database whole and every branch page (and the root page) of each named database it records, with
 * the checks of checkFreePages; their leaf pages are counted, not read. Reads only; the header check must have passed.
 */
export function checkTreeTops(file: string, check: Extract<DataFileCheck, { ok: true }>): TreeTopsCheck {
  return withWalk(file, check, 'the tree of databases', (walk, meta) => {
    const named = new Map<string, DbRecord>()
    walkTree(walk, 'the main database', meta.mainDb, (page, pgno) => namedDbRecords(page, pgno, named))
    for (const [name, db] of named) walkTree(walk, `database ${JSON.stringify(name)}`, db)
    return { ok: true as const, databases: named.size, pagesRead: walk.pagesRead }
  })
}
