// Checks the LMDB data file before LMDB maps it. lmdb-js (3.5.6) does not fail cleanly on a damaged file: a
// garbage header crashes the process with SIGSEGV, a truncated file with SIGBUS, and a zero-length data.mdb is
// silently re-initialised as an empty database. So open() reads the two meta pages itself and refuses what LMDB
// would crash on or reset. Damage deeper in the tree is caught by the probe (probe.ts), in a child process.
//
// Layout read here (LMDB 1.x format as built into lmdb-js, 64-bit; test/store/data-file.test.ts checks it against
// files LMDB writes): each meta page starts with a 24-byte page header (pgno u64, txnid u64, pad u16, flags u16,
// lower/upper u16) followed by MDB_meta: magic u32, version u32, address u64, mapsize u64, two MDB_db of 48 bytes
// (the free db's md_pad holds the page size), last_pg u64, txnid u64. An MDB_db: pad u32, flags u16, depth u16, then
// u64 counts of branch, leaf and overflow pages and of entries, and the root page number (all ones: none).

import fs from 'node:fs'

export const LMDB_MAGIC = 0xbeefc0de
export const LMDB_DATA_VERSION = 2
const P_META = 0x08
const OFFSET_FLAGS = 0x12
const OFFSET_MAGIC = 0x18
const OFFSET_VERSION = 0x1c
const OFFSET_PAGE_SIZE = 0x30
const OFFSET_FREE_DB = 0x30
const OFFSET_MAIN_DB = 0x60
const OFFSET_LAST_PAGE = 0x90
const OFFSET_TXN_ID = 0x98
const META_BYTES = 0xa0
const PAGE_SIZE_MIN = 512
const PAGE_SIZE_MAX = 65536

/** A database's record in a meta page: what a walk of its tree must find. */
export interface DbRecord {
  readonly depth: number
  readonly branchPages: bigint
  readonly leafPages: bigint
  readonly overflowPages: bigint
  readonly entries: bigint
  /** NO_ROOT for an empty database. */
  readonly root: bigint
}

export const NO_ROOT = 0xffff_ffff_ffff_ffffn

export interface MetaPage {
  readonly pageSize: number
  readonly lastPageNumber: bigint
  readonly txnId: bigint
  /** LMDB's free-page list (its database 0), which only a write reads. */
  readonly freeDb: DbRecord
  /** The main database (1): the named databases' records. */
  readonly mainDb: DbRecord
}

export function readDbRecord(buf: Buffer, offset: number): DbRecord {
  return {
    depth: buf.readUInt16LE(offset + 6),
    branchPages: buf.readBigUInt64LE(offset + 8),
    leafPages: buf.readBigUInt64LE(offset + 16),
    overflowPages: buf.readBigUInt64LE(offset + 24),
    entries: buf.readBigUInt64LE(offset + 32),
    root: buf.readBigUInt64LE(offset + 40),
  }
}

export type DataFileCheck =
  | {
    readonly ok: true
    readonly fileBytes: number
    readonly metas: readonly [MetaPage, MetaPage]
    /**
     * Pages up to the last one the meta pages name that lie past the file's end (null: none). LMDB leaves them so when a
     * transaction allocated pages at the end and freed them again before its commit ("loose" pages, never written): they
     * are free, and LMDB writes them when it uses them. Any other page past the end is damage: checkPagesPastEnd
     * (page-walk.ts) tells the two apart.
     */
    readonly pagesPastEnd: { readonly first: bigint; readonly last: bigint } | null
  }
  | { readonly ok: false; readonly reason: string }

function readMeta(fd: number, offset: number): MetaPage | string {
  const buf = Buffer.alloc(META_BYTES)
  const got = fs.readSync(fd, buf, 0, META_BYTES, offset)
  if (got < META_BYTES) return `meta page at byte ${offset} is cut short`
  if ((buf.readUInt16LE(OFFSET_FLAGS) & P_META) === 0) return `page at byte ${offset} is not a meta page`
  if (buf.readUInt32LE(OFFSET_MAGIC) !== LMDB_MAGIC) return `meta page at byte ${offset} has no LMDB magic number`
  const version = buf.readUInt32LE(OFFSET_VERSION)
  if (version !== LMDB_DATA_VERSION) {
    return `meta page at byte ${offset} has LMDB data format ${version}, this build reads ${LMDB_DATA_VERSION}`
  }
  const pageSize = buf.readUInt32LE(OFFSET_PAGE_SIZE)
  if (pageSize < PAGE_SIZE_MIN || pageSize > PAGE_SIZE_MAX || (pageSize & (pageSize - 1)) !== 0) {
    return `meta page at byte ${offset} names an impossible page size ${pageSize}`
  }
  return {
    pageSize,
    lastPageNumber: buf.readBigUInt64LE(OFFSET_LAST_PAGE),
    txnId: buf.readBigUInt64LE(OFFSET_TXN_ID),
    freeDb: readDbRecord(buf, OFFSET_FREE_DB),
    mainDb: readDbRecord(buf, OFFSET_MAIN_DB),
  }
}

/** Reads only; never writes or creates anything. */
export function checkDataFile(file: string): DataFileCheck {
  const fd = fs.openSync(file, 'r')
  try {
    const fileBytes = fs.fstatSync(fd).size
    if (fileBytes === 0) return { ok: false, reason: 'data.mdb is empty (0 bytes); LMDB would silently re-create it' }
    const meta0 = readMeta(fd, 0)
    if (typeof meta0 === 'string') return { ok: false, reason: meta0 }
    const meta1 = readMeta(fd, meta0.pageSize)
    if (typeof meta1 === 'string') return { ok: false, reason: meta1 }
    if (meta1.pageSize !== meta0.pageSize) return { ok: false, reason: 'the two meta pages disagree on the page size' }
    const lastPage = meta0.lastPageNumber > meta1.lastPageNumber ? meta0.lastPageNumber : meta1.lastPageNumber
    const neededBytes = (lastPage + 1n) * BigInt(meta0.pageSize)
    const pagesPastEnd = BigInt(fileBytes) < neededBytes ? { first: BigInt(fileBytes) / BigInt(meta0.pageSize), last: lastPage } : null
    return { ok: true, fileBytes, metas: [meta0, meta1], pagesPastEnd }
  } finally {
    fs.closeSync(fd)
  }
}
