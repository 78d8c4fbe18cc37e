// The load hook register.mjs installs: a `.ts` file of ours becomes JavaScript by esbuild's transform (types
// stripped, nothing else: the imports already name their `.ts` files, tsconfig.json's verbatimModuleSyntax keeps
// every import that is not `import type`, ES2022 keeps class fields as they are), with an inline source map so that
// stacks name the TypeScript lines. Each transform is kept in node_modules/.cache/ts-loader under the hash of its
// source, so the next process reads it instead of starting esbuild; where that directory cannot be written, nothing
// is kept. Every other module goes on to Node's own loader untouched.
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
  if (!url.startsWith('file:') || !new URL(url).pathname.endsWith('.ts')) return nextLoad(url, context)
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
