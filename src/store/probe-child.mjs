// Run by probe.ts in a child process: opens the data directory read-only and reads every entry of the named
// databases, each value as its stored bytes (reading touches every leaf and overflow page, which is what a damaged
// page crashes; decoding the values would only cost time: issue 11, 1,000,000 snapshots took minutes decoded). A damaged page makes LMDB crash the process (SIGSEGV/SIGBUS) instead of throwing;
// here that crash kills only this child, and the parent reports a typed error. Plain JavaScript on purpose: it must
// start fast under plain `node`, without the TypeScript loader.
import fs from 'node:fs'
import path from 'node:path'
import { open } from 'lmdb'

const [dir, namesJson, scratch] = process.argv.slice(2)
const names = JSON.parse(namesJson)
let entries = 0
try {
  const root = open({ path: dir, noSubdir: false, readOnly: true, useBigIntExtension: true })
  for (const name of names) {
    let db
    try {
      db = root.openDB({ name, encoding: 'binary' })
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
  if (scratch) {
    // Reading does not touch the free-page list, which LMDB loads on the next write; a damaged one crashes the
    // writer. So write once, to a copy: the original stays byte-for-byte as it was.
    // A reflink where the filesystem has them (no bytes copied), a plain copy elsewhere.
    fs.copyFileSync(path.join(dir, 'data.mdb'), path.join(scratch, 'data.mdb'), fs.constants.COPYFILE_FICLONE)
    const copy = open({ path: scratch, noSubdir: false, noSync: true, useBigIntExtension: true })
    const meta = copy.openDB({ name: 'meta', useBigIntExtension: true })
    for (let i = 0; i < 64; i++) meta.putSync(`probe-${i}`, 'x'.repeat(2000))
    await copy.close()
  }
  process.stdout.write(JSON.stringify({ ok: true, entries }) + '\n')
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, reason: String(error && error.message) }) + '\n')
}
