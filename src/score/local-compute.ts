// The local compute component: one long-lived child process that computes and seals scores, so the plaintext score
// exists only in that process's memory, never in the HTTP process's. The child gets, per call, only that call's
// inputs and the caller's public key, and sends back only the JWE. It starts with an empty environment (no
// operator keys, no RPC URLs) and a small heap, on the first call (most deployments never serve a score), and again
// after it dies. What it does not give: any proof to the caller of where the score was computed (no hardware
// attestation); a TEE-backed component implements the same CreditScoreCompute interface and returns one.
import { fork, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ComputeFailedError, type CreditScoreCompute, type ScoreCall, type SealedScore } from './compute.ts'

const CHILD = fileURLToPath(new URL('./compute-child.ts', import.meta.url))
// Resolved from this file rather than the working directory, so the service may run from anywhere.
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

export const CALL_TIMEOUT_MS_DEFAULT = 10_000
export const CALLS_IN_FLIGHT_MAX_DEFAULT = 64
export const CHILD_HEAP_MB_DEFAULT = 128

export interface LocalScoreComputeOptions {
  /** Longest wait for one answer; past it the call fails and the child is replaced. */
  callTimeoutMs?: number
  /** Calls sent and not yet answered; beyond it a call fails at once (nothing is charged for it). */
  callsInFlightMax?: number
  /** The child's V8 heap limit. */
  heapMb?: number
}

/** What the parent sends for one call, and what the child answers. */
export type ChildRequest = { id: number } & ScoreCall
export type ChildAnswer = { id: number; ok: true; jwe: string } | { id: number; ok: false; message: string }

type Pending = { resolve: (sealed: SealedScore) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }

export class LocalScoreCompute implements CreditScoreCompute {
  readonly component = 'local-process'
  private readonly callTimeoutMs: number
  private readonly callsInFlightMax: number
  private readonly heapMb: number
  private child: ChildProcess | undefined
  private nextId = 1
  private readonly pending = new Map<number, Pending>()

  constructor(options: LocalScoreComputeOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? CALL_TIMEOUT_MS_DEFAULT
    this.callsInFlightMax = options.callsInFlightMax ?? CALLS_IN_FLIGHT_MAX_DEFAULT
    this.heapMb = options.heapMb ?? CHILD_HEAP_MB_DEFAULT
  }

  /** The child's process id while it runs (tests end it to see a failure settle nothing). */
  get pid(): number | undefined {
    return this.child?.pid
  }

  score(call: ScoreCall): Promise<SealedScore> {
    if (this.pending.size >= this.callsInFlightMax) {
      return Promise.reject(new ComputeFailedError(`${this.callsInFlightMax} score calls are already running`))
    }
    const child = this.running()
    const id = this.nextId++
    return new Promise<SealedScore>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(id, new ComputeFailedError(`no answer within ${this.callTimeoutMs} ms`))
        // A child that does not answer in time is not trusted with the next call.
        child.kill('SIGKILL')
      }, this.callTimeoutMs)
      this.pending.set(id, { resolve, reject, timer })
      this.hold(child, true)
      const request: ChildRequest = { id, inputs: call.inputs, recipient: call.recipient }
      child.send(request, (error) => {
        if (error) this.settle(id, new ComputeFailedError(`the score process did not take the call: ${error.message}`))
      })
    })
  }

  async close(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    this.child = undefined
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    // Held until it has exited: an idle child is unreferenced, and waiting on it alone would let the process end.
    this.hold(child, true)
    child.kill('SIGKILL')
    await exited
    this.failAll(new ComputeFailedError('the score component was closed'))
  }

  private running(): ChildProcess {
    if (this.child !== undefined) return this.child
    const child = fork(CHILD, [], {
      execArgv: ['--import', TSX_LOADER, `--max-old-space-size=${this.heapMb}`],
      // Nothing of the service's environment: the child needs no key, no URL, no configuration.
      env: process.env['TMPDIR'] === undefined ? {} : { TMPDIR: process.env['TMPDIR'] },
      // Structured clone keeps bigints; JSON would not.
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    })
    child.on('message', (message: ChildAnswer) => {
      if (message.ok) this.settle(message.id, { jwe: message.jwe })
      else this.settle(message.id, new ComputeFailedError(message.message))
    })
    const gone = (why: string) => {
      if (this.child === child) this.child = undefined
      this.failAll(new ComputeFailedError(`the score process ${why}`))
    }
    child.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`))
    child.on('error', (error) => gone(`failed: ${error.message}`))
    this.child = child
    this.hold(child, false)
    return child
  }

  private settle(id: number, outcome: SealedScore | Error): void {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    clearTimeout(pending.timer)
    if (outcome instanceof Error) pending.reject(outcome)
    else pending.resolve(outcome)
    if (this.pending.size === 0 && this.child !== undefined) this.hold(this.child, false)
  }

  private failAll(error: Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id, error)
  }

  /** An idle child must not keep the service's process alive; one with calls in flight must. */
  private hold(child: ChildProcess, busy: boolean): void {
    const channel = child.channel as { ref(): void; unref(): void } | null | undefined
    if (busy) {
      child.ref()
      channel?.ref()
    } else {
      child.unref()
      channel?.unref()
    }
  }
}
