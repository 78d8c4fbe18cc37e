// A script run from a checkout whose path has a space and a non-ASCII character, reached through a symlink, still
// knows it is the main module: the bench's sections compared `file://${argv[1]}` and silently did nothing there (the
// harsh run's test/bench/bench-transports.test.ts: "ENOENT ceiling-latest.json").
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('../..', import.meta.url))

t.test('isMainModule holds for the started script however its path is spelled, and only for it', async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'main-module-'))
  t.teardown(() => rmSync(parent, { recursive: true, force: true }))
  const linked = join(parent, 'check out ü $x (1)')
  symlinkSync(root, linked)
  for (const base of [root, linked]) {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(base, 'test', 'tools', 'fixtures', 'print-main.ts')], { cwd: root, encoding: 'utf8' })
    t.equal(run.stdout, 'true', `started as ${base}: ${run.stderr}`)
  }
  const imported = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `await import(${JSON.stringify(join(linked, 'test', 'tools', 'fixtures', 'print-main.ts'))})`], { cwd: root, encoding: 'utf8' })
  t.equal(imported.stdout, 'false', `imported by another script: ${imported.stderr}`)
})
