// Run by probe.ts in a child process: opens the data directory read-only and reads every entry of the named
// databases, each value's stored bytes (reading touches every leaf and overflow page, which is what a damaged page
// crashes). Nothing is decoded or copied into a Buffer of its own: decoding cost minutes for 1,000,000 snapshots, and
// a Buffer per value two thirds of the read (issue 11). A damaged page makes LMDB crash the process (SIGSEGV/SIGBUS) instead of throwing;
// here that crash kills only this child, and the parent reports a typed error. Reading writes nothing (a read-only
// open); the free-page list, which only a write reads, the parent checks (page-walk.ts). Plain JavaScript on purpose:
// it must start fast under plain `node`, without the TypeScript loader.
import { open } from 'lmdb'

/** The smallest page size of the systems Node runs on: a read every this many bytes touches every page of a value. */
const OS_PAGE_BYTES = 4096

/**
 * lmdb-js hands a decoder the value's bytes (decoderCopies: the decoder keeps nothing): a value that fits lmdb-js's
 * shared buffer was copied into it by LMDB's read, every byte; a larger one is a view of the mapped file, read here
 * one byte per page, so that a page past the end of the file faults here as a copy would.
 */
const valueBytesRead = {
  encode() {
    throw new Error('the probe only reads')
  },
  decode(bytes, size) {
    if (bytes.isGlobal) return size
    // Summed, so the reads are used; a view shorter than its size reads undefined, which refuses the entry.
    let sum = size > 0 ? bytes[size - 1] : 0
    for (let offset = 0; offset < size; offset += OS_PAGE_BYTES) sum += bytes[offset]
    return Number.isNaN(sum) ? undefined : size
  },
}

const [dir, namesJson] = process.argv.slice(2)
const names = JSON.parse(namesJson)
let entries = 0
try {
  const root = open({ path: dir, noSubdir: false, readOnly: true, useBigIntExtension: true })
  for (const name of names) {
    let db
    try {
      db = root.openDB({ name, encoder: valueBytesRead })
    } catch (error) {
      if (String(error && error.message).includes('Database not found')) continue
      throw error
    }
    // read-only opens return nothing for a database that was never created
    if (!db) continue
    for (const entry of db.getRange()) {
      if (entry.value === undefined) throw new Error(`entry without a value in ${name}`)
      entries++
    }
  }
  await root.close()
  process.stdout.write(JSON.stringify({ ok: true, entries }) + '\n')
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, reason: String(error && error.message) }) + '\n')
}
