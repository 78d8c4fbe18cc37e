// The deep check of a data directory, before the service maps it: a child process reads every entry (a damaged page
// makes LMDB crash the process that reads it instead of throwing), while this process checks the free-page list
// with plain reads (free-pages.ts), which reading entries does not touch. Neither writes anything.

import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DataFileCheck } from './data-file.ts'
import { checkFreePages } from './free-pages.ts'

const CHILD = fileURLToPath(new URL('./probe-child.mjs', import.meta.url))
/** The deep check's least time limit; a bigger data.mdb gets more (probeTimeoutMsFor). */
export const PROBE_TIMEOUT_MS_DEFAULT = 120_000
/** The slowest read rate the limit allows for (bytes per ms: 10 MB/s, far below any disk's sequential rate). */
const PROBE_BYTES_PER_MS_MIN = 10_000

export type ProbeResult =
  | { readonly ok: true; readonly entries: number }
  | { readonly ok: false; readonly reason: string; readonly timedOut?: true }

/** The time limit for a data directory: the default, or more for a data.mdb too big to read twice over within it. */
export function probeTimeoutMsFor(dir: string): number {
  let bytes = 0
  try {
    bytes = fs.statSync(path.join(dir, 'data.mdb')).size
  } catch {
    // no data.mdb: the open checks report it
  }
  return Math.max(PROBE_TIMEOUT_MS_DEFAULT, Math.ceil((2 * bytes) / PROBE_BYTES_PER_MS_MIN))
}

/** `check`: data.mdb's header check, passed (every page up to the meta pages' last is in the file). */
export function probeDataDir(dir: string, check: Extract<DataFileCheck, { ok: true }>, dbNames: readonly string[], timeoutMs: number): Promise<ProbeResult> {
  const startedMs = performance.now()
  const child = spawn(process.execPath, [CHILD, dir, JSON.stringify(dbNames)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  })
  const entries = new Promise<ProbeResult>((resolve) => {
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
    child.on('error', (error) => resolve({ ok: false, reason: `the probe could not start: ${error.message}` }))
    child.on('close', (code, signal) => {
      // Killed at the time limit: not evidence of damage, and said so (the caller refuses to start either way).
      if (signal !== null && performance.now() - startedMs >= timeoutMs) {
        resolve({ ok: false, timedOut: true, reason: `the check of every page did not finish within ${Math.round(timeoutMs / 1000)} s` })
        return
      }
      if (signal !== null) {
        resolve({ ok: false, reason: `reading the data crashed LMDB (${signal}): pages are damaged` })
        return
      }
      const line = out.trim().split('\n').pop() ?? ''
      try {
        const parsed = JSON.parse(line) as ProbeResult
        resolve(parsed)
      } catch {
        resolve({ ok: false, reason: `the probe exited with code ${code}: ${err.trim().slice(0, 500)}` })
      }
    })
  })
  // While the child starts and reads.
  const freePages = checkFreePages(path.join(dir, 'data.mdb'), check)
  if (freePages.ok) return entries
  child.kill('SIGKILL')
  return entries.then(() => freePages)
}
