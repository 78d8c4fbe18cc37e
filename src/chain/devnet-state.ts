// The embedded devnet's chain state on disk, made crash-safe (issue 10, hole 8). anvil writes its --state file only on
// a clean exit, and in place: a SIGKILL of the process group loses the chain, and a full disk leaves a torn or empty
// file that anvil then refuses to load, blocking every later start. So the devnet saves the state itself:
//
// - Saving: after every block that carries transactions (and every idleSaveIntervalMs otherwise), anvil_dumpState is
//   written to `<slug>.json` atomically: a temporary file, fsync, the current file kept as `<slug>.prev.json` (a hard
//   link, renamed into place), the temporary renamed over the current one, the directory fsynced. At every instant
//   `<slug>.json` is a complete state, old or new. A failed write (a full disk) keeps both good files and is retried.
// - Loading: the current file if it is a parseable state that anvil accepts, else the previous one, else a fresh
//   chain; unusable files are moved aside (never deleted) and the log says exactly which file, why, and what was used.
//
// What anvil cannot give: a transaction mined after the last save is lost by a SIGKILL. The saved block is reported
// (savedDevnetState, Devnet.stateReport) so that the service can reconcile its records with the chain at start-up.
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'

export type DevnetLogEntry = { level: 'info' | 'warn' | 'error'; msg: string; network: string } & Record<string, unknown>
export type DevnetLog = (entry: DevnetLogEntry) => void

/** Human-readable lines on stderr: what `npm start` shows an operator. */
export const stderrDevnetLog: DevnetLog = ({ level, msg, network, ...details }) => {
  const extra = Object.entries(details)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ')
  process.stderr.write(`devnet ${network}: ${level}: ${msg}${extra === '' ? '' : ` (${extra})`}\n`)
}

export function stateFiles(stateDir: string, slug: string): { current: string; previous: string } {
  return { current: join(stateDir, `${slug}.json`), previous: join(stateDir, `${slug}.prev.json`) }
}

export type StateFileCheck = { ok: true; blockNumber: bigint } | { ok: false; reason: string }

/** Whether `path` holds a state anvil can load: a non-empty JSON object with accounts and a block number. */
export function checkStateFile(path: string): StateFileCheck {
  if (!existsSync(path)) return { ok: false, reason: 'missing' }
  const size = statSync(path).size
  if (size === 0) return { ok: false, reason: 'empty (0 bytes)' }
  let parsed: { accounts?: unknown; block?: { number?: unknown } }
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as typeof parsed
  } catch (error) {
    return { ok: false, reason: `not JSON (${size} bytes): ${(error as Error).message}` }
  }
  const number = parsed?.block?.number
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.accounts !== 'object' || (typeof number !== 'string' && typeof number !== 'number')) {
    return { ok: false, reason: `not an anvil state (${size} bytes): no accounts or block number` }
  }
  try {
    return { ok: true, blockNumber: BigInt(number) }
  } catch {
    return { ok: false, reason: `not an anvil state (${size} bytes): block number ${String(number)}` }
  }
}

export type StateCandidate = { path: string; source: 'current' | 'previous'; blockNumber: bigint }

/** The state files worth trying, best first, and how many were unusable (moved aside and logged). */
export function stateCandidates(stateDir: string, slug: string, log: DevnetLog, nowMs = Date.now()): { candidates: StateCandidate[]; discarded: number } {
  const files = stateFiles(stateDir, slug)
  const candidates: StateCandidate[] = []
  let discarded = 0
  for (const [source, path] of [['current', files.current], ['previous', files.previous]] as const) {
    const check = checkStateFile(path)
    if (check.ok) {
      candidates.push({ path, source, blockNumber: check.blockNumber })
    } else if (check.reason !== 'missing') {
      setAside(path, check.reason, log, slug, nowMs)
      discarded++
    }
  }
  return { candidates, discarded }
}

/** Moves an unusable state file out of the way (kept for inspection), so that it never blocks a start again. */
export function setAside(path: string, reason: string, log: DevnetLog, slug: string, nowMs = Date.now()): string {
  const aside = `${path}.unusable-${new Date(nowMs).toISOString().replace(/[:.]/g, '-')}`
  renameSync(path, aside)
  log({ level: 'warn', msg: 'state file unusable, moved aside', network: slug, file: path, reason, movedTo: aside })
  return aside
}

/**
 * Writes `data` as the current state file atomically, keeping the current one as the previous. Throws on failure
 * (for example a full disk) with both good files untouched.
 */
export function writeStateAtomically(stateDir: string, slug: string, data: Buffer): void {
  const { current, previous } = stateFiles(stateDir, slug)
  const temporary = `${current}.tmp-${process.pid}`
  try {
    const fd = openSync(temporary, 'w')
    try {
      let written = 0
      while (written < data.length) written += writeSync(fd, data, written, data.length - written)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    if (existsSync(current)) {
      const previousTemporary = `${previous}.tmp-${process.pid}`
      rmSync(previousTemporary, { force: true })
      linkSync(current, previousTemporary)
      renameSync(previousTemporary, previous)
    }
    renameSync(temporary, current)
    const dir = openSync(stateDir, 'r')
    try {
      fsyncSync(dir)
    } finally {
      closeSync(dir)
    }
  } catch (error) {
    try {
      rmSync(temporary, { force: true })
    } catch {
      // Not ours to clean (e.g. a directory in the way): the write failed all the same, and the good files stand.
    }
    throw error
  }
}

/** The block of the saved state of each network of a state directory (no chain needed): the reconciliation hook. */
export function savedDevnetState(stateDir: string, slugs: readonly string[]): { network: string; savedBlock: bigint | undefined; file: string }[] {
  return slugs.map((slug) => {
    const { current } = stateFiles(stateDir, slug)
    const check = checkStateFile(current)
    return { network: slug, savedBlock: check.ok ? check.blockNumber : undefined, file: current }
  })
}

type Rpc = (method: string, params?: unknown[]) => Promise<unknown>

function jsonRpc(rpcUrl: string, timeoutMs: number): Rpc {
  let id = 0
  return async (method, params = []) => {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    })
    const body = (await response.json()) as { result?: unknown; error?: { message: string } }
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`)
    return body.result
  }
}

export type StateSaverOptions = {
  /** How often the head is checked for new blocks with transactions. */
  checkIntervalMs?: number
  /** Blocks without transactions are saved at most this often (they move the chain's height and time only). */
  idleSaveIntervalMs?: number
  rpcTimeoutMs?: number
}

/** Keeps one anvil chain's state file current; stop() saves a last time. */
export class StateSaver {
  readonly #slug: string
  readonly #stateDir: string
  readonly #rpc: Rpc
  readonly #log: DevnetLog
  readonly #checkIntervalMs: number
  readonly #idleSaveIntervalMs: number
  #checkedBlock: bigint
  #savedBlock: bigint | undefined
  #savedAtMs = 0
  #dirty = false
  #failing = false
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> = Promise.resolve()
  #stopped = false

  constructor(slug: string, stateDir: string, rpcUrl: string, log: DevnetLog, options: StateSaverOptions = {}) {
    this.#slug = slug
    this.#stateDir = stateDir
    this.#rpc = jsonRpc(rpcUrl, options.rpcTimeoutMs ?? 10_000)
    this.#log = log
    this.#checkIntervalMs = options.checkIntervalMs ?? 200
    this.#idleSaveIntervalMs = options.idleSaveIntervalMs ?? 10_000
    this.#checkedBlock = -1n
    this.#savedBlock = undefined
  }

  /** The block of the last state written by this saver. */
  get savedBlock(): bigint | undefined {
    return this.#savedBlock
  }

  /** Saves now (a deployment just happened), then keeps saving. */
  async start(): Promise<void> {
    this.#checkedBlock = BigInt((await this.#rpc('eth_blockNumber')) as string)
    await this.save()
    this.#schedule()
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#running = this.#tick().finally(() => this.#schedule())
    }, this.#checkIntervalMs)
    this.#timer.unref()
  }

  async #tick(): Promise<void> {
    try {
      const head = BigInt((await this.#rpc('eth_blockNumber')) as string)
      // A block with transactions changes balances and escrows: what the service may already have acknowledged.
      for (let n = this.#checkedBlock + 1n; n <= head && !this.#dirty; n++) {
        const block = (await this.#rpc('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as { transactions?: unknown[] } | null
        if ((block?.transactions?.length ?? 0) > 0) this.#dirty = true
      }
      this.#checkedBlock = head
      const idle = head !== this.#savedBlock && Date.now() - this.#savedAtMs >= this.#idleSaveIntervalMs
      if (this.#dirty || idle) await this.save()
    } catch (error) {
      this.#failed(error)
    }
  }

  /** Dumps anvil's state and writes it atomically. Failures are logged; the previous files stay. */
  async save(): Promise<void> {
    try {
      const head = BigInt((await this.#rpc('eth_blockNumber')) as string)
      const dumped = (await this.#rpc('anvil_dumpState')) as string
      const json = gunzipSync(Buffer.from(dumped.slice(2), 'hex'))
      writeStateAtomically(this.#stateDir, this.#slug, json)
      this.#dirty = false
      this.#savedBlock = head
      this.#savedAtMs = Date.now()
      if (this.#failing) {
        this.#failing = false
        this.#log({ level: 'info', msg: 'saving chain state again', network: this.#slug, block: head.toString() })
      }
    } catch (error) {
      this.#failed(error)
    }
  }

  #failed(error: unknown): void {
    if (this.#failing) return
    this.#failing = true
    this.#log({
      level: 'error',
      msg: 'could not save chain state; the last saved state is kept and saving is retried',
      network: this.#slug,
      error: (error as Error).message ?? String(error),
      savedBlock: this.#savedBlock?.toString() ?? 'none',
    })
  }

  /** Stops the loop and saves a last time (a clean stop loses nothing). */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
    await this.save()
  }
}
