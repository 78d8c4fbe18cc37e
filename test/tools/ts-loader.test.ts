// The tests' loader (src/tools/ts-loader): our TypeScript runs; a JavaScript ES module is read by the loader itself
// and never reaches the hooks registered before it (tap's @tapjs/processinfo and @tapjs/mock, which cost a
// service-loading test process 0.6 s of CPU when they saw typebox's and viem's ~1,000 modules); CommonJS still goes
// on to them; a TypeScript file imported by a URL with a query still runs.
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('../..', import.meta.url))

t.test('ES modules are loaded by the ts loader alone; CommonJS reaches the hooks before it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ts-loader-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const record = join(dir, 'loads')
  const run = spawnSync(process.execPath, [
    '--import', fileURLToPath(new URL('./fixtures/record-loads.mjs', import.meta.url)),
    '--import', join(root, 'src', 'tools', 'ts-loader', 'register.mjs'),
    fileURLToPath(new URL('./fixtures/load-mix.ts', import.meta.url)),
  ], { cwd: root, encoding: 'utf8', env: { ...process.env, LOADS_RECORD: record } })
  t.equal(run.status, 0, run.stderr)
  t.same(JSON.parse(run.stdout || '{}'), {
    viem: '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    keccak: 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    cjsImported: 'function',
    queried: 'function',
  }, 'every kind of module loads and works')
  const seen = readFileSync(record, 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string])
  t.same(seen.filter(([format, url]) => format === 'module' && url.includes('/node_modules/')), [], 'no ES module of a package reaches the earlier hooks')
  t.ok(seen.some(([format, url]) => format === 'commonjs' && url.includes('/node_modules/keccak/')), 'a CommonJS package still does')
})

t.test('typebox, viem and ox load as one bundle each, built into the cache, their entry points sharing its modules', async (t) => {
  const run = spawnSync(process.execPath, [
    '--import', join(root, 'src', 'tools', 'ts-loader', 'register.mjs'),
    fileURLToPath(new URL('./fixtures/bundled-packages.ts', import.meta.url)),
  ], { cwd: root, encoding: 'utf8' })
  t.equal(run.status, 0, run.stderr)
  const seen = JSON.parse(run.stdout || '{}') as { resolved?: string[], siweErrorIsViemBaseError?: boolean, compiledChecks?: boolean[] }
  const bundles = realpathSync(join(root, 'node_modules', '.cache', 'ts-loader'))
  t.same(seen.resolved?.map((url) => fileURLToPath(url).replace(bundles, '<cache>').replace(/@[^/]*\//, '@<versions>/')), [
    '<cache>/bundle-viem@<versions>/index.mjs',
    '<cache>/bundle-viem@<versions>/siwe.mjs',
    '<cache>/bundle-typebox@<versions>/index.mjs',
    '<cache>/bundle-typebox@<versions>/compile.mjs',
  ], 'each entry point resolves to its file in the bundle of its package')
  t.equal(seen.siweErrorIsViemBaseError, true, 'an error viem/siwe throws is an instance of the BaseError viem exports')
  t.same(seen.compiledChecks, [true, false], 'typebox/compile checks a typebox schema')
})

// review22: where the cache cannot be written (a read-only node_modules; here `.cache` is a file), a bundle is not
// built: esbuild failed only when writing it, after the whole build, about a second in every test process. The
// loader's copy runs in a tree of its own whose `esbuild` only records that it was loaded (it stands in to be seen).
t.test('a bundle is not built where the cache cannot be written: the package loads as it is', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ts-loader-ro-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'src', 'tools', 'ts-loader'), { recursive: true })
  copyFileSync(join(root, 'src', 'tools', 'ts-loader', 'hooks.mjs'), join(dir, 'src', 'tools', 'ts-loader', 'hooks.mjs'))
  mkdirSync(join(dir, 'node_modules', 'esbuild'), { recursive: true })
  writeFileSync(join(dir, 'node_modules', '.cache'), '')
  const loaded = join(dir, 'esbuild-loaded')
  writeFileSync(join(dir, 'node_modules', 'esbuild', 'package.json'), JSON.stringify({ name: 'esbuild', version: '0.0.0', type: 'module', exports: { '.': './index.js', './package.json': './package.json' } }))
  writeFileSync(join(dir, 'node_modules', 'esbuild', 'index.js'), `import { writeFileSync } from 'node:fs'\nwriteFileSync(${JSON.stringify(loaded)}, '')\nexport async function build() { throw new Error('EROFS') }\n`)
  const hooks = (await import(pathToFileURL(join(dir, 'src', 'tools', 'ts-loader', 'hooks.mjs')).href)) as { resolve: (specifier: string, context: object, next: (specifier: string) => Promise<{ url: string }>) => Promise<{ url: string }> }
  const real = pathToFileURL(join(root, 'node_modules', 'typebox', JSON.parse(readFileSync(join(root, 'node_modules', 'typebox', 'package.json'), 'utf8')).exports['./compile'].import)).href
  const resolved = await hooks.resolve('typebox/compile', {}, async () => ({ url: real }))
  t.equal(resolved.url, real, 'the package\'s own file')
  t.notOk(existsSync(loaded), 'esbuild was never loaded: no build tried')
})
