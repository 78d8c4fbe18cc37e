// Starts and stops a local anvil chain. The platform binary is spawned directly, so the PID we hold is anvil's
// own; a small watchdog process ends it if this process dies without running its exit handlers (SIGKILL, OOM).
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)

export type AnvilOptions = {
  chainId: number
  /** 0 (the default) lets the OS choose a free port; give one to restart a chain on the same address. */
  port?: number
  host?: string
  /** Interval mining on top of mining each transaction at once, so block time and confirmations progress. */
  blockTimeSeconds?: number
  /** Load this state at start and dump to it at exit (anvil --state). Not crash-safe: see devnet-state.ts. */
  stateFile?: string
  /** Load this state at start only (anvil --load-state); the caller saves the state itself. */
  loadStateFile?: string
  startTimeoutMs?: number
}

export type AnvilProcess = {
  chainId: number
  host: string
  port: number
  rpcUrl: string
  pid: number
  /** Stops anvil (SIGTERM, then SIGKILL after a grace period); resolves once the process is gone. */
  stop(): Promise<void>
  /** Resolves when the process exits, for whatever reason. */
  exited: Promise<number | null>
}

export class AnvilStartError extends Error {
  override readonly name = 'AnvilStartError'
}

export function anvilBinaryPath(): string {
  return join(dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil')
}

const running = new Set<ChildProcess>()
let exitHandlersInstalled = false

function installExitHandlers(): void {
  if (exitHandlersInstalled) return
  exitHandlersInstalled = true
  // 'exit' handlers must be synchronous: a signal is all we can send. SIGTERM lets anvil dump its --state file.
  // No signal handlers are installed here, so the service keeps its own shutdown semantics; if it dies of a signal
  // without running 'exit' handlers, the watchdog below ends anvil.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGTERM')
  })
}

// Runs in its own node process: polls the parent and anvil; when the parent is gone, kills anvil and exits.
const watchdogSource = `
const [parentPid, anvilPid] = process.argv.slice(1).map(Number)
const alive = (pid) => { try { process.kill(pid, 0); return true } catch (e) { return e.code === 'EPERM' } }
const timer = setInterval(() => {
  if (!alive(anvilPid)) process.exit(0)
  if (!alive(parentPid)) {
    clearInterval(timer)
    // SIGTERM first so that anvil can dump its state, SIGKILL if it has not exited within 3 s.
    try { process.kill(anvilPid, 'SIGTERM') } catch {}
    setTimeout(() => { try { process.kill(anvilPid, 'SIGKILL') } catch {} process.exit(0) }, 3000)
    setInterval(() => { if (!alive(anvilPid)) process.exit(0) }, 100)
  }
}, 250)
`

function spawnWatchdog(anvilPid: number): void {
  const watchdog = spawn(process.execPath, ['-e', watchdogSource, String(process.pid), String(anvilPid)], {
    stdio: 'ignore',
    detached: true,
  })
  watchdog.unref()
}

export async function startAnvil(options: AnvilOptions): Promise<AnvilProcess> {
  installExitHandlers()
  const host = options.host ?? '127.0.0.1'
  const args = ['--host', host, '--port', String(options.port ?? 0), '--chain-id', String(options.chainId)]
  if (options.blockTimeSeconds !== undefined) args.push('--block-time', String(options.blockTimeSeconds), '--mixed-mining')
  if (options.stateFile !== undefined) args.push('--state', options.stateFile)
  if (options.loadStateFile !== undefined) args.push('--load-state', options.loadStateFile)
  // Its own process group: a terminal's Ctrl-C (SIGINT to the foreground group) reaches the service, which saves the
  // chain's state a last time and then stops anvil; in the service's group anvil died of it first, the last save failed
  // ("could not save chain state") and what was mined since the previous save was lost. The watchdog and the exit
  // handler still end it when the service dies.
  const child = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  running.add(child)
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      running.delete(child)
      resolve(code)
    })
  })
  if (child.pid === undefined) {
    running.delete(child)
    throw new AnvilStartError(`cannot spawn ${anvilBinaryPath()}`)
  }
  const pid = child.pid
  spawnWatchdog(pid)

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000)
    await exited
    clearTimeout(timer)
  }

  const listening = new Promise<{ host: string; port: number }>((resolve, reject) => {
    let output = ''
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8')
      const match = /Listening on ([0-9.]+|\[[0-9a-f:]+\]|[a-z0-9.-]+):(\d+)/i.exec(output)
      if (match !== null) {
        child.stdout?.off('data', onData)
        // Keep draining stdout so anvil never blocks on a full pipe.
        child.stdout?.resume()
        resolve({ host: match[1] as string, port: Number(match[2]) })
      } else if (output.length > 64_000) {
        output = output.slice(-4_000)
      }
    }
    let errorOutput = ''
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => {
      errorOutput = (errorOutput + chunk.toString('utf8')).slice(-4_000)
    })
    void exited.then((code) =>
      reject(new AnvilStartError(`anvil exited (code ${code}) before listening: ${errorOutput.trim() || output.slice(-1000)}`)),
    )
    setTimeout(
      () => reject(new AnvilStartError(`anvil did not listen within ${options.startTimeoutMs ?? 15_000} ms`)),
      options.startTimeoutMs ?? 15_000,
    ).unref()
  })

  try {
    const address = await listening
    return {
      chainId: options.chainId,
      host: address.host,
      port: address.port,
      rpcUrl: `http://${address.host}:${address.port}`,
      pid,
      stop,
      exited,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
