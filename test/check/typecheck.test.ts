// The type check of the whole project (tsconfig.json: src, machines, test, bench) as one of the suite's files, so it
// runs beside the other tests instead of before them all (`npm test` once ran `tsc --noEmit && tap`: about a minute
// of the suite's wall time with one core idle). It fails with tsc's own diagnostics.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

t.test('tsc --noEmit passes on the whole project', async (t) => {
  // tsc peaks near 1.2 GB (README "Notes on the toolchain"): its own heap limit, whatever NODE_OPTIONS the runner set.
  const run = spawnSync(process.execPath, ['--max-old-space-size=2048', tsc, '--noEmit', '-p', join(root, 'tsconfig.json')], {
    cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, env: { ...process.env, NODE_OPTIONS: '' },
  })
  t.equal(run.status, 0, `tsc --noEmit: ${(run.stdout + run.stderr).trim().split('\n').slice(0, 40).join('\n')}`)
})
