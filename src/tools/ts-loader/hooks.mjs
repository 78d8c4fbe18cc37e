// The load hook register.mjs installs: a `.ts` file of ours becomes JavaScript by esbuild's transform (types
// stripped, nothing else: the imports already name their `.ts` files, tsconfig.json's verbatimModuleSyntax keeps
// every import that is not `import type`, ES2022 keeps class fields as they are), with an inline source map so that
// stacks name the TypeScript lines. Each transform is kept in node_modules/.cache/ts-loader under the hash of its
// source, so the next process reads it instead of starting esbuild; where that directory cannot be written, nothing
// is kept. A JavaScript ES module (what Node's resolver says is one, from a plain file: URL, no import attributes)
// is read here and handed to Node as it is, which is all Node's own loader does with it; passing it on would send
// each of the ~1,450 modules a service-loading process imports (typebox, viem) through the hooks registered before
// this one: in a tap test process, @tapjs/processinfo's (it re-reads every file, splits it into line lengths and
// posts it to the main thread for coverage, which this project's tap config disables) and @tapjs/mock's. Measured
// 2026-11-27 (importing src/app/app.ts beside tap's hooks): 2.4 CPU s passed on, 1.8 read here. Every other module
// (CommonJS, JSON, a URL with a query or hash, as @tapjs/mock's resolver makes them) goes on untouched.
//
// typebox, viem and ox are each loaded as one esbuild bundle of their entry points (code two entry points share is
// in a chunk they both import, so `viem` and `viem/siwe` still share one copy of each module), built once into the
// cache directory (a few seconds, the first process after an install). Once any hooks are registered (and tap's
// @tapjs/processinfo registers its own in every test process), Node 20 asks the hooks' thread to resolve and to load
// each module, two round trips: typebox's ~680 modules cost a process that imports them 0.7 CPU s under tap's hooks,
// the bundle 0.06; a test process importing src/app/app.ts took 2.6 CPU s before, 1.7 with the three bundled
// (2026-11-28). Stacks inside them name the bundle's lines; viem and ox declare themselves free of side effects, so
// esbuild drops a module of theirs that nothing uses, as any bundler of theirs does. Where a bundle cannot be built or
// kept, its package loads as it is.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** What a cached transform depends on besides its file: this hook's options and esbuild's version. */
const VERSION = `1 esbuild ${createRequire(import.meta.url)('esbuild/package.json').version}`
const cacheDir = fileURLToPath(new URL('../../../node_modules/.cache/ts-loader/', import.meta.url))
let cacheWritable = true
let esbuild

/**
 * The packages loaded as one bundle each: ES modules reached only through their `exports` (so every import of one
 * comes here and gets the bundle, never the package's own files); the packages they import stay packages of their
 * own (ox is viem's and bundled too), each one copy.
 */
const BUNDLED = ['typebox', 'viem', 'ox']
/** Per package root: its entry points' URLs to their bundled files' (undefined: not bundled). */
const bundles = new Map()

export async function resolve(specifier, context, nextResolve) {
  const name = BUNDLED.find((name) => specifier === name || specifier.startsWith(`${name}/`))
  if (name === undefined) return nextResolve(specifier, context)
  const resolved = await nextResolve(specifier, context)
  const marker = `/node_modules/${name}/`
  const at = resolved.url.lastIndexOf(marker)
  if (at === -1 || !resolved.url.startsWith('file:')) return resolved
  const root = resolved.url.slice(0, at + marker.length)
  if (!bundles.has(root)) bundles.set(root, bundle(name, root).catch(() => undefined))
  const url = (await bundles.get(root))?.get(resolved.url)
  return url === undefined ? resolved : { url, format: 'module', shortCircuit: true }
}

/** Builds (or finds) the bundle of the package at `root`; answers its entry points' URLs to their bundled files'. */
async function bundle(name, root) {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
  const entryPoints = {}
  const entries = new Map()
  for (const [key, target] of Object.entries(pkg.exports ?? {})) {
    const file = typeof target === 'string' ? target : target?.import
    if (typeof file !== 'string' || !/\.m?js$/.test(file) || key.includes('*') || !existsSync(new URL(file, root))) continue
    const entry = key === '.' ? 'index' : key.slice(2).replaceAll('/', '~')
    entryPoints[entry] = fileURLToPath(new URL(file, root))
    entries.set(new URL(file, root).href, entry)
  }
  const dir = `${cacheDir}bundle-${name}@${pkg.version}-${VERSION.replaceAll(' ', '-')}`
  // The bundle imports the package's dependencies from the cache directory, which finds the project's top-level
  // ones: a package that keeps its own copy of one it imports is not bundled (noted, so that it is decided once).
  const refused = `${dir}.refused`
  if (existsSync(refused)) return undefined
  if (!existsSync(dir)) {
    const partial = `${dir}.${process.pid}.tmp`
    // A bundle that cannot be kept (a read-only node_modules) is not built: esbuild failed only on writing it, after
    // the whole build (about a second, in every test process).
    try {
      mkdirSync(partial, { recursive: true })
    } catch {
      return undefined
    }
    esbuild ??= await import('esbuild')
    try {
      const { metafile } = await esbuild.build({ entryPoints, bundle: true, splitting: true, format: 'esm', platform: 'node', packages: 'external', outdir: partial, outExtension: { '.js': '.mjs' }, logLevel: 'silent', metafile: true })
      const imported = Object.values(metafile.outputs).flatMap((output) => output.imports.filter((i) => i.external).map((i) => i.path))
      if (imported.some((path) => !path.startsWith('node:') && existsSync(new URL(`node_modules/${path.split('/').slice(0, path.startsWith('@') ? 2 : 1).join('/')}`, root)))) {
        writeFileSync(refused, '')
        throw new Error('nested dependency')
      }
      renameSync(partial, dir)
    } catch {
      rmSync(partial, { recursive: true, force: true })
      if (!existsSync(dir)) return undefined
    }
  }
  const real = realpathSync(dir)
  return new Map([...entries].map(([url, entry]) => [url, pathToFileURL(`${real}/${entry}.mjs`).href]))
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:')) return nextLoad(url, context)
  if (!new URL(url).pathname.endsWith('.ts')) {
    const plain = context.format === 'module' && !url.includes('?') && !url.includes('#') && Object.keys(context.importAttributes ?? {}).length === 0
    return plain ? { format: 'module', source: readFileSync(fileURLToPath(url)), shortCircuit: true } : nextLoad(url, context)
  }
  const path = fileURLToPath(url)
  const source = readFileSync(path, 'utf8')
  const key = createHash('sha256').update(VERSION).update('\0').update(path).update('\0').update(source).digest('hex')
  const cached = cacheDir + key + '.js'
  try {
    return { format: 'module', source: readFileSync(cached, 'utf8'), shortCircuit: true }
  } catch {}
  esbuild ??= await import('esbuild')
  const { code } = esbuild.transformSync(source, {
    loader: 'ts',
    format: 'esm',
    target: 'es2022',
    sourcemap: 'inline',
    sourcefile: path,
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
  })
  if (cacheWritable) {
    try {
      mkdirSync(cacheDir, { recursive: true })
      const partial = `${cached}.${process.pid}.tmp`
      writeFileSync(partial, code)
      renameSync(partial, cached)
    } catch {
      cacheWritable = false
    }
  }
  return { format: 'module', source: code, shortCircuit: true }
}
