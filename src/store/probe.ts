// Reads a whole data directory in a child process before the service maps it, then writes once to a scratch copy
// of data.mdb (deleted afterwards) to load the free-page list: LMDB crashes instead of throwing on damaged pages.

import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const CHILD = fileURLToPath(new URL('./probe-child.mjs', import.meta.url))
export const PROBE_TIMEOUT_MS_DEFAULT = 120_000

export type ProbeResult = { readonly ok: true; readonly entries: number } | { readonly ok: false; readonly reason: string }

export function probeDataDir(dir: string, dbNames: readonly string[], timeoutMs: number): Promise<ProbeResult> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-credit-probe-'))
  return new Promise<ProbeResult>((resolve) => {
    const child = spawn(process.execPath, [CHILD, dir, JSON.stringify(dbNames), scratch], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    })
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
    child.on('error', (error) => resolve({ ok: false, reason: `the probe could not start: ${error.message}` }))
    child.on('close', (code, signal) => {
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
  }).finally(() => fs.rmSync(scratch, { recursive: true, force: true }))
}
