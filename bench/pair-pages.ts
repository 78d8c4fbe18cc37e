// Which LMDB pages a group transaction of the load mix's pairs writes (issue 11, perf28), counted rather than timed.
// A store of the load mix's size is built through the store's own prepareCommit and applyGroup (the book's setup,
// `--history` pairs requested, matched and timed out, then `--live` pairs requested and matched, their offers and
// leases live), then `--rounds` rounds of the load mix's schedule, each group a synchronous commit as the service's:
// `--groups` groups of `--per-group` pairs' requests and the previous group's matches (two commits per pair, as the
// load mix's groups of about 36 commits), then one group with the follower's batch that times out the oldest live
// pairs (as many as the round requested: one chain block a second). After each group the file is read with plain
// reads (every page of every tree: the free list, the main database, each named one) and every page stamped with the
// transaction's id (LMDB sets a page's txnid when it writes it, mdb_page_flush) is counted by tree and kind: the
// deterministic figure. Beside it, `write_bytes` of /proc/self/io around the commit: NOT bytes to disk, but the
// page-cache folios the commit dirtied, whole (a 4 KB page in a large folio counts the folio; on this machine's
// kernel a 4 KB pwrite into a file written by one long write counts 24.9 KB while the disk receives 4.1 KB), so it
// depends on how the file's pages came into the cache (`--drop-cache`: dropped after the build, `--no-read-ahead`:
// lmdb-js's MDB_NORDAHEAD); and the disk device's written sectors, every process's (rough on a shared machine).
// Options: --history 20000 --live 12500 --per-group 18 --groups 106 --rounds 2 --lenders 500 --drop-cache --no-read-ahead
import fs, { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import { execFileSync } from 'node:child_process'
import type { Change } from '../src/store/index.ts'
import { checkDataFile, readDbRecord, type DbRecord } from '../src/store/data-file.ts'
import { newestMeta } from '../src/store/page-walk.ts'
import { applyGroup, prepareCommit, type StoreDatabases } from '../src/store/writes.ts'
import { storeDatabases } from './fixtures/store-databases.ts'
import { SNAPSHOT_VERSIONS } from '../src/engine/migrations.ts'
import * as book from './fixtures/book.ts'
import { loadMixPairs } from './fixtures/pairs.ts'

const { values: args } = parseArgs({
  options: { history: { type: 'string' }, live: { type: 'string' }, 'per-group': { type: 'string' }, groups: { type: 'string' }, rounds: { type: 'string' }, lenders: { type: 'string' }, 'no-read-ahead': { type: 'boolean' }, 'drop-cache': { type: 'boolean' } },
  strict: true,
})
const HISTORY = Number(args.history ?? 20_000)
const LIVE = Number(args.live ?? 12_500)
const PER_GROUP = Number(args['per-group'] ?? 18)
const GROUPS = Number(args.groups ?? 106)
const ROUNDS = Number(args.rounds ?? 2)
const LENDERS = Number(args.lenders ?? 500)

const P_BRANCH = 0x01
const P_LEAF = 0x02
const P_OVERFLOW = 0x04
const F_BIGDATA = 0x01
const F_SUBDATA = 0x02

/** tree:kind -> pages stamped with the newest transaction id; also every page of each tree. */
function pagesOfLastTxn(file: string): { written: Map<string, number>; total: Map<string, number>; txnId: bigint; lastPage: bigint; depth: Map<string, number> } {
  const check = checkDataFile(file)
  if (!check.ok) throw new Error(check.reason)
  const meta = newestMeta(check)
  const fd = fs.openSync(file, 'r')
  const written = new Map<string, number>()
  const total = new Map<string, number>()
  const depth = new Map<string, number>()
  const add = (map: Map<string, number>, key: string, n: number): void => void map.set(key, (map.get(key) ?? 0) + n)
  const page = (pgno: bigint): Buffer => {
    const buf = Buffer.alloc(meta.pageSize)
    fs.readSync(fd, buf, 0, meta.pageSize, Number(pgno) * meta.pageSize)
    return buf
  }
  const walk = (tree: string, db: DbRecord, onLeafNode?: (buf: Buffer, offset: number) => void): void => {
    depth.set(tree, db.depth)
    if (db.root === 0xffff_ffff_ffff_ffffn) return
    const visit = (pgno: bigint): void => {
      const buf = page(pgno)
      const flags = buf.readUInt16LE(18)
      const fresh = buf.readBigUInt64LE(8) === meta.txnId
      const kind = (flags & P_BRANCH) !== 0 ? 'branch' : 'leaf'
      add(total, `${tree} ${kind}`, 1)
      if (fresh) add(written, `${tree} ${kind}`, 1)
      const lower = buf.readUInt16LE(20)
      for (let i = 0; i < lower / 2; i++) {
        const offset = 24 + buf.readUInt16LE(24 + 2 * i)
        if (kind === 'branch') {
          visit(BigInt(buf.readUInt16LE(offset) + buf.readUInt16LE(offset + 2) * 0x1_0000 + buf.readUInt16LE(offset + 4) * 0x1_0000_0000))
          continue
        }
        const nodeFlags = buf.readUInt16LE(offset + 4)
        const keyBytes = buf.readUInt16LE(offset + 6)
        if ((nodeFlags & F_BIGDATA) !== 0) {
          const first = page(buf.readBigUInt64LE(offset + 8 + keyBytes))
          if ((first.readUInt16LE(18) & P_OVERFLOW) === 0) throw new Error('not an overflow page')
          const pages = first.readUInt32LE(20)
          add(total, `${tree} overflow`, pages)
          if (first.readBigUInt64LE(8) === meta.txnId) add(written, `${tree} overflow`, pages)
        } else if (onLeafNode !== undefined && (nodeFlags & F_SUBDATA) !== 0) onLeafNode(buf, offset)
      }
      if (kind === 'leaf' && (flags & P_LEAF) === 0) throw new Error(`page ${pgno} is neither branch nor leaf`)
    }
    visit(db.root)
  }
  try {
    walk('free', meta.freeDb)
    const named = new Map<string, DbRecord>()
    walk('main', meta.mainDb, (buf, offset) => {
      const keyBytes = buf.readUInt16LE(offset + 6)
      named.set(buf.toString('latin1', offset + 8, offset + 8 + keyBytes), readDbRecord(buf, offset + 8 + keyBytes))
    })
    for (const [name, db] of named) walk(name, db)
  } finally {
    fs.closeSync(fd)
  }
  return { written, total, txnId: meta.txnId, lastPage: meta.lastPageNumber, depth }
}

/** Bytes written to the machine's disk (sectors of /sys/block/<device>/stat), every process's: a rough figure on a shared machine. */
function deviceBytes(): number {
  try {
    const device = fs.readdirSync('/sys/block').find((d) => !d.startsWith('loop') && !d.startsWith('ram'))
    return Number(readFileSync(`/sys/block/${device}/stat`, 'utf8').trim().split(/\s+/)[6]) * 512
  } catch {
    return Number.NaN
  }
}

function writeBytes(): number {
  const line = readFileSync('/proc/self/io', 'utf8').split('\n').find((l) => l.startsWith('write_bytes:'))
  return Number(line?.split(':')[1] ?? Number.NaN)
}

/** db -> puts/removes this group */
const ops = new Map<string, number>()
function counted<K extends Key, V>(name: string, db: Database<V, K>): Database<V, K> {
  return new Proxy(db, {
    get(target, property) {
      if (property === 'putSync' || property === 'removeSync') {
        const op = property === 'putSync' ? 'puts' : 'removes'
        return (...a: unknown[]) => {
          ops.set(`${name} ${op}`, (ops.get(`${name} ${op}`) ?? 0) + 1)
          return (target[property] as (...b: unknown[]) => unknown)(...a)
        }
      }
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

const dir = mkdtempSync(join(tmpdir(), 'agent-credit-pair-pages-'))
try {
  const started = Date.now()
  const measuredPairs = ROUNDS * GROUPS * PER_GROUP
  const { setup, pairs } = loadMixPairs(book, HISTORY + LIVE + measuredPairs + PER_GROUP, LENDERS)
  process.stderr.write(`${pairs.length} pairs built in ${Date.now() - started} ms\n`)
  const path = join(dir, 'data')
  const file = join(path, 'data.mdb')
  const openStore = (): { root: RootDatabase; dbs: StoreDatabases } => {
    const root = open({ path, overlappingSync: false, maxDbs: 8, noReadAhead: args['no-read-ahead'] === true } as never) as RootDatabase
    const dbs = storeDatabases(root, counted)
    return { root, dbs }
  }
  let { root, dbs } = openStore()
  const limits = { changesPerCommitMax: 1_000_000, versions: new Map(Object.entries(SNAPSHOT_VERSIONS)), collectionVersions: new Map<string, number>() }
  const commit = (group: ReadonlyArray<readonly Change[]>): void => {
    const prepared = group.filter((c) => c.length > 0).map((changes) => prepareCommit({ changes }, () => book.T0, 0, limits))
    root.transactionSync(() => {
      const outcome = applyGroup(dbs, prepared, 0, (step) => void root.childTransaction(step))
      const failure = outcome.failures.find((f) => f !== undefined)
      if (failure !== undefined) throw failure as Error
    })
  }
  for (let i = 0; i < setup.length; i += 5000) commit([setup.slice(i, i + 5000)])
  for (let i = 0; i < HISTORY; i += 500) {
    const chunk = pairs.slice(i, Math.min(HISTORY, i + 500))
    commit(chunk.map((p) => p[0] as Change[]))
    commit(chunk.map((p) => p[1] as Change[]))
    commit(chunk.map((p) => p[2] as Change[]))
  }
  for (let i = HISTORY; i < HISTORY + LIVE; i += 500) {
    const chunk = pairs.slice(i, Math.min(HISTORY + LIVE, i + 500))
    commit(chunk.map((p) => p[0] as Change[]))
    commit(chunk.map((p) => p[1] as Change[]))
  }
  // One pair's request ahead, whose match opens the first group.
  let next = HISTORY + LIVE
  commit(pairs.slice(next, next + PER_GROUP).map((p) => p[0] as Change[]))
  next += PER_GROUP
  let oldestLive = HISTORY
  if (args['drop-cache'] === true) {
    // The file's page cache dropped (dd's fadvise DONTNEED), then mapped again: pages come back as LMDB's reads and
    // writes bring them, in folios of their size, instead of the large folios the building's long writes left.
    await root.close()
    execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0'], { stdio: 'ignore' })
    ;({ root, dbs } = openStore())
  }
  const base = pagesOfLastTxn(file)
  process.stderr.write(`store built in ${Date.now() - started} ms: ${(fs.statSync(file).size / 1e6).toFixed(1)} MB, pages ${[...base.total].map(([k, v]) => `${k} ${v}`).join(', ')}; depth ${[...base.depth].map(([k, v]) => `${k} ${v}`).join(', ')}\n`)

  interface Sum { groups: number; pairs: number; pages: Map<string, number>; ops: Map<string, number>; writeBytes: number; grown: bigint; sysUs: number; wallMs: number }
  const sums = new Map<string, Sum>()
  const measure = (name: string, pairsIn: number, group: ReadonlyArray<readonly Change[]>): void => {
    ops.clear()
    const before = writeBytes()
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    const lastBefore = pagesOfLastTxn(file).lastPage
    commit(group)
    const wallMs = performance.now() - t0
    const sysUs = process.cpuUsage(cpu).system
    const after = writeBytes()
    const walked = pagesOfLastTxn(file)
    let sum = sums.get(name)
    if (sum === undefined) sums.set(name, (sum = { groups: 0, pairs: 0, pages: new Map(), ops: new Map(), writeBytes: 0, grown: 0n, sysUs: 0, wallMs: 0 }))
    sum.groups += 1
    sum.pairs += pairsIn
    sum.writeBytes += after - before
    sum.sysUs += sysUs
    sum.wallMs += wallMs
    sum.grown += walked.lastPage - lastBefore
    for (const [k, v] of walked.written) sum.pages.set(k, (sum.pages.get(k) ?? 0) + v)
    for (const [k, v] of ops) sum.ops.set(k, (sum.ops.get(k) ?? 0) + v)
  }
  const deviceBefore = deviceBytes()
  for (let round = 0; round < ROUNDS; round++) {
    for (let g = 0; g < GROUPS; g++) {
      const matches = pairs.slice(next - PER_GROUP, next).map((p) => p[1] as Change[])
      const requests = pairs.slice(next, next + PER_GROUP).map((p) => p[0] as Change[])
      next += PER_GROUP
      measure('requests + matches', PER_GROUP, [...requests, ...matches])
    }
    const timedOut = pairs.slice(oldestLive, oldestLive + GROUPS * PER_GROUP)
    oldestLive += GROUPS * PER_GROUP
    measure('follower batch (time-outs)', timedOut.length, [timedOut.flatMap((p) => p[2] as Change[])])
  }

  const deviceWritten = deviceBytes() - deviceBefore
  const rows: string[] = []
  let allPages = 0
  let allPairs = 0
  let allBytes = 0
  for (const [name, sum] of sums) {
    let pages = 0
    for (const v of sum.pages.values()) pages += v
    allPages += pages + sum.groups // + the meta page each commit writes
    allBytes += sum.writeBytes
    if (name === 'requests + matches') allPairs += sum.pairs
    rows.push(`${name}: ${sum.groups} groups, ${(sum.pairs / sum.groups).toFixed(0)} pairs each; per group ${(pages / sum.groups).toFixed(1)} pages + 1 meta page, write_bytes ${(sum.writeBytes / sum.groups / 1024).toFixed(1)} KB (${(sum.writeBytes / sum.groups / 4096).toFixed(1)} pages), file grown ${(Number(sum.grown) / sum.groups).toFixed(2)} pages; times (load-dependent): commit ${(sum.wallMs / sum.groups).toFixed(2)} ms, system CPU ${(sum.sysUs / sum.groups).toFixed(0)} us`)
    for (const [k, v] of [...sum.pages].sort()) rows.push(`  ${k.padEnd(20)} ${(v / sum.groups).toFixed(2).padStart(8)} pages per group ${(v / sum.pairs).toFixed(3).padStart(7)} per pair`)
    rows.push(`  ops per group: ${[...sum.ops].sort().map(([k, v]) => `${k} ${(v / sum.groups).toFixed(1)}`).join(', ')}`)
  }
  rows.push(`per pair over the rounds: ${(allPages / allPairs).toFixed(2)} pages written (${(allPages * 4096 / allPairs / 1024).toFixed(1)} KB), write_bytes ${(allBytes / allPairs / 1024).toFixed(1)} KB (${HISTORY} history, ${LIVE} live pairs, ${PER_GROUP} pairs per group, ${GROUPS} groups a round, ${ROUNDS} rounds); the disk device, every process's writes in the measured phase: ${(deviceWritten / allPairs / 1024).toFixed(1)} KB per pair`)
  process.stdout.write(`${rows.join('\n')}\n`)
  await root.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
