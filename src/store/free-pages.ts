// Checks LMDB's free-page list (the free database, LMDB's database 0) by reading data.mdb with plain reads, never
// mapping it and never writing. Reading entries (the deep check's child, probe-child.mjs) does not touch this list:
// LMDB reads it only when a write transaction allocates pages, and a damaged one crashes that writer instead of
// raising an error. The deep check used to write once to a copy of data.mdb to make LMDB read it, which cost a full
// copy of the file (issue 11: most of the deep check's time after a crash); this reads every page of that tree
// instead, and more strictly than LMDB's own allocation, which reads only as many records as it needs.
//
// Layout (LMDB as built into lmdb-js, 64-bit; test/store/free-pages.test.ts checks it against files LMDB writes): a
// page starts with a 24-byte header (pgno u64, txnid u64, pad u16, flags u16, then lower and upper u16, or for an
// overflow page its page count u32); a branch or leaf page's node offsets (u16, counted from the end of the header)
// follow it, lower / 2 of them. A node: data size (leaf) or child page number (branch) in lo u16, hi u16 and, for a
// branch, flags u16 as its top bits; flags u16; key size u16; the key, then a leaf's data, or for F_BIGDATA the u64
// number of the overflow page holding it. A free-list record: the key a u64 transaction id, the data a list of free
// pages (checkPageList).

import fs from 'node:fs'
import { NO_ROOT, type DataFileCheck, type DbRecord, type MetaPage } from './data-file.ts'

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
/** The first page a free list may name: pages 0 and 1 are the meta pages. */
const FIRST_DATA_PAGE = 2n
const TXN_ID_BYTES = 8
const PAGE_NUMBER_BYTES = 8
/** LMDB's cursor stack (CURSOR_STACK): no tree of its is deeper. */
const TREE_DEPTH_MAX = 32

export type FreePagesCheck =
  | { readonly ok: true; readonly records: number; readonly freePages: number }
  | { readonly ok: false; readonly reason: string }

class Damaged extends Error {}

/** The meta page LMDB uses: the one with the higher transaction id. */
export function newestMeta(check: Extract<DataFileCheck, { ok: true }>): MetaPage {
  const [meta0, meta1] = check.metas
  return meta0.txnId < meta1.txnId ? meta1 : meta0
}

interface Walk {
  readonly fd: number
  readonly pageSize: number
  readonly lastPage: bigint
  readonly seen: Set<bigint>
  branchPages: bigint
  leafPages: bigint
  overflowPages: bigint
  records: number
  freePages: number
}

function readPage(walk: Walk, pgno: bigint, what: string): Buffer {
  if (pgno < FIRST_DATA_PAGE || pgno > walk.lastPage) throw new Damaged(`${what} names page ${pgno}, outside pages 2..${walk.lastPage}`)
  if (walk.seen.has(pgno)) throw new Damaged(`${what} names page ${pgno} a second time`)
  walk.seen.add(pgno)
  const page = Buffer.alloc(walk.pageSize)
  const got = fs.readSync(walk.fd, page, 0, walk.pageSize, Number(pgno) * walk.pageSize)
  if (got < walk.pageSize) throw new Damaged(`page ${pgno} is cut short`)
  const stored = page.readBigUInt64LE(0)
  if (stored !== pgno) throw new Damaged(`page ${pgno} says it is page ${stored}`)
  return page
}

/** The offsets of a branch or leaf page's nodes, each checked to hold at least a node header inside the page. */
function nodeOffsets(page: Buffer, pgno: bigint): number[] {
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
    if (first < FIRST_DATA_PAGE || first + pages - 1n > walk.lastPage) {
      throw new Damaged(`${where}: free pages ${first}..${first + pages - 1n} are outside pages 2..${walk.lastPage}`)
    }
    walk.freePages += Number(pages)
  }
}

/** The data of a leaf node whose value is on overflow pages. */
function readOverflow(walk: Walk, pgno: bigint, bytes: number, where: string): Buffer {
  const first = readPage(walk, pgno, where)
  if ((first.readUInt16LE(OFFSET_FLAGS) & P_KINDS) !== P_OVERFLOW) throw new Damaged(`${where}: page ${pgno} is not an overflow page`)
  const pages = first.readUInt32LE(OFFSET_OVERFLOW_PAGES)
  if (pages < 1 || pgno + BigInt(pages) - 1n > walk.lastPage || PAGE_HEADER_BYTES + bytes > pages * walk.pageSize) {
    throw new Damaged(`${where}: overflow page ${pgno} spans ${pages} pages for ${bytes} bytes`)
  }
  for (let next = pgno + 1n; next < pgno + BigInt(pages); next++) {
    if (walk.seen.has(next)) throw new Damaged(`${where}: overflow pages of ${pgno} overlap page ${next}`)
    walk.seen.add(next)
  }
  walk.overflowPages += BigInt(pages)
  const data = Buffer.alloc(bytes)
  const got = fs.readSync(walk.fd, data, 0, bytes, Number(pgno) * walk.pageSize + PAGE_HEADER_BYTES)
  if (got < bytes) throw new Damaged(`${where}: overflow page ${pgno} is cut short`)
  return data
}

function checkLeaf(walk: Walk, page: Buffer, pgno: bigint): void {
  walk.leafPages += 1n
  for (const [i, offset] of nodeOffsets(page, pgno).entries()) {
    const where = `free-list page ${pgno} record ${i}`
    const bytes = page.readUInt16LE(offset) + page.readUInt16LE(offset + 2) * 0x1_0000
    const flags = page.readUInt16LE(offset + 4)
    const keyBytes = page.readUInt16LE(offset + 6)
    if (keyBytes !== TXN_ID_BYTES || (flags & ~F_BIGDATA) !== 0) throw new Damaged(`${where}: key of ${keyBytes} bytes, flags ${flags}`)
    const dataAt = offset + NODE_HEADER_BYTES + keyBytes
    if ((flags & F_BIGDATA) !== 0) {
      if (dataAt + PAGE_NUMBER_BYTES > page.length) throw new Damaged(`${where} runs past the page`)
      checkPageList(walk, readOverflow(walk, page.readBigUInt64LE(dataAt), bytes, where), where)
    } else {
      if (dataAt + bytes > page.length) throw new Damaged(`${where} runs past the page`)
      checkPageList(walk, page.subarray(dataAt, dataAt + bytes), where)
    }
    walk.records += 1
  }
}

function checkSubtree(walk: Walk, pgno: bigint, levelsBelow: number): void {
  const page = readPage(walk, pgno, 'the free list')
  const kind = page.readUInt16LE(OFFSET_FLAGS) & P_KINDS
  if (levelsBelow === 0) {
    if (kind !== P_LEAF) throw new Damaged(`free-list page ${pgno} should be a leaf page (flags ${kind})`)
    checkLeaf(walk, page, pgno)
    return
  }
  if (kind !== P_BRANCH) throw new Damaged(`free-list page ${pgno} should be a branch page (flags ${kind})`)
  walk.branchPages += 1n
  const children = nodeOffsets(page, pgno).map((offset) => {
    const keyBytes = page.readUInt16LE(offset + 6)
    if (offset + NODE_HEADER_BYTES + keyBytes > page.length) throw new Damaged(`free-list page ${pgno} has a key past the page`)
    return BigInt(page.readUInt16LE(offset)) | (BigInt(page.readUInt16LE(offset + 2)) << 16n) | (BigInt(page.readUInt16LE(offset + 4)) << 32n)
  })
  for (const child of children) checkSubtree(walk, child, levelsBelow - 1)
}

/**
 * Reads every page of the free list the newest meta page names (the one LMDB would use) and checks what LMDB relies
 * on when it allocates from it: page numbers inside the file and never twice, page kinds and bounds, nodes inside
 * their pages, records of a transaction id and a well-formed page list, and the tree's shape and counts as the meta
 * page records them. Reads only; the header check must have passed (the file holds every page up to the last).
 */
export function checkFreePages(file: string, check: Extract<DataFileCheck, { ok: true }>): FreePagesCheck {
  const meta = newestMeta(check)
  const db: DbRecord = meta.freeDb
  if (db.root === NO_ROOT) {
    const empty = db.depth === 0 && db.entries === 0n && db.branchPages === 0n && db.leafPages === 0n && db.overflowPages === 0n
    return empty ? { ok: true, records: 0, freePages: 0 } : { ok: false, reason: 'the free list has no root page but records pages' }
  }
  if (db.depth < 1 || db.depth > TREE_DEPTH_MAX) return { ok: false, reason: `the free list has a root page but depth ${db.depth}` }
  const fd = fs.openSync(file, 'r')
  try {
    const walk: Walk = { fd, pageSize: meta.pageSize, lastPage: meta.lastPageNumber, seen: new Set(), branchPages: 0n, leafPages: 0n, overflowPages: 0n, records: 0, freePages: 0 }
    checkSubtree(walk, db.root, db.depth - 1)
    const found = [walk.branchPages, walk.leafPages, walk.overflowPages, BigInt(walk.records)]
    const recorded = [db.branchPages, db.leafPages, db.overflowPages, db.entries]
    if (found.some((count, i) => count !== recorded[i])) {
      return { ok: false, reason: `the free list holds ${found.join('/')} branch/leaf/overflow pages/records, its meta page says ${recorded.join('/')}` }
    }
    return { ok: true, records: walk.records, freePages: walk.freePages }
  } catch (error) {
    if (error instanceof Damaged) return { ok: false, reason: `the free-page list is damaged: ${error.message}` }
    throw error
  } finally {
    fs.closeSync(fd)
  }
}
