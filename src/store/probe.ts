// The deep check of a data directory: a child process reads every entry (a damaged page makes LMDB crash the process
// that reads it instead of throwing), while this process checks the free-page list with plain reads (page-walk.ts),
// which reading entries does not touch. Neither writes to data.mdb.
//
// Run before the store maps the file (deepCheck), or beside the service's first reads (checkBesideReads, issue 11:
// the engine's restore needs no verdict until the service writes or serves). Beside reads, a damaged page the
// service reads before the verdict crashes the service, not only the child; so first the main database and every
// branch page are checked by plain reads (what every read descends through), and a marker file
// (DEEP_CHECK_RUNNING_FILE) is written, synced, before the file is mapped and removed at the verdict: a start that
// finds it (the previous one died before its verdict, whatever killed it) runs the check alone first, so damage
// that crashed one start is refused clearly by the next. Why that is sound: README, Persistence.

import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { syncDirectory } from './clean-shutdown.ts'
import type { DataFileCheck } from './data-file.ts'
import { StoreOpenError } from './errors.ts'
import { checkFreePages, checkTreeTops } from './page-walk.ts'

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
function probeDataDir(dir: string, check: Extract<DataFileCheck, { ok: true }>, dbNames: readonly string[], timeoutMs: number): Promise<ProbeResult> {
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

function damaged(dataDir: string, reason: string): StoreOpenError {
  return new StoreOpenError(
    'store_corrupt',
    dataDir,
    `data directory ${dataDir} is damaged: ${reason}. Nothing was changed; restore it from a backup or point DATA_DIR to ` +
      'another directory.',
  )
}

/** The deep check's verdict: resolves if the data is sound, else rejects with the StoreOpenError to refuse with. */
export async function deepCheck(dataDir: string, check: Extract<DataFileCheck, { ok: true }>, dbNames: readonly string[], timeoutMs: number): Promise<void> {
  const probe = await probeDataDir(dataDir, check, dbNames, timeoutMs)
  if (!probe.ok && probe.timedOut === true) {
    throw new StoreOpenError(
      'store_check_timeout',
      dataDir,
      `data directory ${dataDir} could not be checked: ${probe.reason} (the machine is overloaded or the disk slow). ` +
        'Nothing was changed; start again when the machine is less busy.',
    )
  }
  if (!probe.ok) throw damaged(dataDir, probe.reason)
}

/** Present while a deep check runs beside the service's reads: a start that finds it runs the check alone first. */
export const DEEP_CHECK_RUNNING_FILE = 'deep-check-running'

/** Whether a start that ran the deep check beside its reads died before the verdict. */
export function deepCheckWasCut(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, DEEP_CHECK_RUNNING_FILE))
}

/** Removes the marker (after a verdict). Not synced: a removal lost to a power cut only makes a start check alone. */
export function clearDeepCheckRunning(dataDir: string): void {
  fs.rmSync(path.join(dataDir, DEEP_CHECK_RUNNING_FILE), { force: true })
}

/**
 * Starts the deep check to run beside the caller's reads, to be called before the caller maps data.mdb. Throws the
 * refusal at once if the main database or a branch page is damaged; otherwise writes the marker, synced, and returns
 * the verdict, which removes the marker either way (a refused directory is left as it was found). The caller must
 * write nothing to the store, nor serve, before the verdict resolves.
 */
export function checkBesideReads(dataDir: string, check: Extract<DataFileCheck, { ok: true }>, dbNames: readonly string[], timeoutMs: number): Promise<void> {
  const tops = checkTreeTops(path.join(dataDir, 'data.mdb'), check)
  if (!tops.ok) throw damaged(dataDir, tops.reason)
  const marker = path.join(dataDir, DEEP_CHECK_RUNNING_FILE)
  const fd = fs.openSync(marker, 'w')
  try {
    fs.writeSync(fd, `${JSON.stringify({ pid: process.pid, startedAtMs: Date.now() })}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  syncDirectory(dataDir)
  const verdict = deepCheck(dataDir, check, dbNames, timeoutMs).finally(() => clearDeepCheckRunning(dataDir))
  // Awaited by the store's checked(); until then a refusal is not an unhandled rejection.
  verdict.catch(() => {})
  return verdict
}
