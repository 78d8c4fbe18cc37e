// A data directory whose name has a dot (mktemp -d makes /tmp/tmp.AbC123; operators write data.v2) is a directory
// like any other: lmdb-js would take such a path for a single database file unless the store says otherwise.
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { Store } from '../../src/store/index.ts'

t.test('an existing, empty data directory named with a dot opens, keeps what it commits, and reopens', async (t) => {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'dotted-'))
  t.teardown(() => rmSync(parent, { recursive: true, force: true }))
  const dataDir = mkdtempSync(path.join(parent, 'data.'))
  t.match(path.extname(dataDir), /^\.\w+/, 'the directory name has an extension')
  const first = await Store.open({ dataDir })
  const meta = first.collection<{ n: number }>('dotted-test', { version: 1 })
  await first.commit({ records: [meta.putOp('k', { n: 7 })] })
  await first.close()
  t.ok(statSync(path.join(dataDir, 'data.mdb')).isFile(), 'LMDB wrote its file inside the directory')
  const again = await Store.open({ dataDir })
  t.teardown(() => again.close())
  t.same(again.collection<{ n: number }>('dotted-test', { version: 1 }).get('k'), { n: 7 }, 'the reopened store reads the record')
})
