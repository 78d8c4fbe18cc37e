// Reads a whole data directory in a child process before the service maps it (see probe-child.mjs for why).

import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const CHILD = fileURLToPath(new URL('./probe-child.mjs', import.meta.url))
export const PROBE_TIMEOUT_MS_DEFAULT = 120_000

export type ProbeResult = { readonly ok: true; readonly entries: number } | { readonly ok: false; readonly reason: string }

export function probeDataDir(dir: string, dbNames: readonly string[], timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, dir, JSON.stringify(dbNames)], {
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
  })
}
