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
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/** What a cached transform depends on besides its file: this hook's options and esbuild's version. */
const VERSION = `1 esbuild ${createRequire(import.meta.url)('esbuild/package.json').version}`
const cacheDir = fileURLToPath(new URL('../../../node_modules/.cache/ts-loader/', import.meta.url))
let cacheWritable = true
let esbuild

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
