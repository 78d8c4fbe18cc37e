// The clean-shutdown record: a file beside data.mdb that lets the next open skip the deep check (probe.ts) of a
// store this release closed cleanly, and only of that store as it was left.
//
// close() writes it after LMDB's last synced commit and after LMDB closed: both meta pages (their transaction ids,
// which every commit advances), and data.mdb's identity and timestamps (device, inode, size, mtime, ctime, which
// every write through the file system changes and a copy does not keep). open() reads data.mdb's meta pages itself
// (data-file.ts, no mapping) and skips the deep check only if all of them still match; it deletes the record (and
// syncs the directory) before its first write, so a crash afterwards leaves none. Why that is sound: README, "Restart".
// A file, not a meta record: reading a record needs LMDB to map the data, which is what the deep check guards.

import fs from 'node:fs'
import path from 'node:path'
import type { DataFileCheck } from './data-file.ts'

export const CLEAN_SHUTDOWN_FILE = 'clean-shutdown.json'

/** What the record binds: data.mdb as close() left it. Strings, so that 64-bit values survive JSON. */
function stateOf(dataDir: string, check: Extract<DataFileCheck, { ok: true }>): Record<string, string> {
  const stat = fs.statSync(path.join(dataDir, 'data.mdb'), { bigint: true })
  const [meta0, meta1] = check.metas
  return {
    dev: String(stat.dev),
    ino: String(stat.ino),
    size: String(stat.size),
    mtimeNs: String(stat.mtimeNs),
    ctimeNs: String(stat.ctimeNs),
    meta0: `${meta0.txnId}/${meta0.lastPageNumber}`,
    meta1: `${meta1.txnId}/${meta1.lastPageNumber}`,
  }
}

export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Whether the record names data.mdb exactly as it is now (the header check already passed). */
export function closedCleanly(dataDir: string, check: Extract<DataFileCheck, { ok: true }>): boolean {
  let recorded: unknown
  try {
    recorded = JSON.parse(fs.readFileSync(path.join(dataDir, CLEAN_SHUTDOWN_FILE), 'utf8'))
  } catch {
    // none, or unreadable: the deep check runs
    return false
  }
  const now = stateOf(dataDir, check)
  return typeof recorded === 'object' && recorded !== null && Object.entries(now).every(([key, value]) => (recorded as Record<string, unknown>)[key] === value)
}

/** Deletes the record durably: called before the store's first write, so a crash after it finds none. */
export function forgetCleanShutdown(dataDir: string): void {
  const file = path.join(dataDir, CLEAN_SHUTDOWN_FILE)
  if (!fs.existsSync(file)) return
  fs.rmSync(file)
  syncDirectory(dataDir)
}

/** Writes the record durably (file synced, renamed into place, directory synced); LMDB must be closed. */
export function recordCleanShutdown(dataDir: string, check: Extract<DataFileCheck, { ok: true }>): void {
  const file = path.join(dataDir, CLEAN_SHUTDOWN_FILE)
  const temporary = `${file}.tmp`
  const fd = fs.openSync(temporary, 'w')
  try {
    fs.writeSync(fd, `${JSON.stringify(stateOf(dataDir, check))}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temporary, file)
  syncDirectory(dataDir)
}
