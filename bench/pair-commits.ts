// The store's cost of what two engines hand out for the same request + match pairs (issue 11): each engine (this
// checkout's bench/fixtures/book.ts and, with `--against`, another checkout's) runs the pairs of the load mix (request,
// match, the follower's batch timing the lease out, the ticker expiring the offer: 3 s leases and offers, no miss
// penalties) before the timed window, and the four commits of each pair go through this checkout's store, one store
// per engine, in blocks alternated (A B, B A, ...) within one process: process and main-thread CPU per pair, puts
// per pair. Both see the same load and the same garbage, which separate runs on a loaded machine do not.
// With --against-store <other checkout's src/store/index.ts> instead, the two are stores: this checkout's engine hands
// out the pairs (an engine per store), and their commits go to each store (the other checkout's node_modules
// linked), alternated the same way: a store change measured on the load mix's own commits (a group of 256 holds many pairs' requests and matches,
// the book's cheapest lender in most of them), which match-shaped commits alone (bench/store-interleaved.ts) do not show.
// Options: --against <other checkout's bench/fixtures/book.ts> or --against-store <module> (one is required), --block
// 2000 --rounds 6 --durability none|sync (default none: the store's own CPU) --in-flight 256. Writes nothing under
// bench/results. The second side (this checkout's) measured 1.7-3.2 µs per pair less main thread in A/A runs (the same
// store on both, 2026-11-28): measure a store change from both checkouts, each naming the other's store.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../src/engine/migrations.ts'
import * as thisStore from '../src/store/index.ts'
import type { Change } from '../src/store/index.ts'
import { loadMixPairs, type BookModule } from './fixtures/pairs.ts'

const { values: args } = parseArgs({ options: { against: { type: 'string' }, 'against-store': { type: 'string' }, durability: { type: 'string' }, block: { type: 'string' }, rounds: { type: 'string' }, 'in-flight': { type: 'string' } }, strict: true })
if ((args.against === undefined) === (args['against-store'] === undefined)) {
  throw new Error('--against <path of the other checkout\'s bench/fixtures/book.ts> or --against-store <path of its src/store/index.ts> is required')
}
const DURABILITY = args.durability === 'sync' ? 'sync' : 'none'
const BLOCK = Number(args.block ?? 2000)
const ROUNDS = Number(args.rounds ?? 6)
const IN_FLIGHT = Number(args['in-flight'] ?? 256)
/** Pairs each store takes before the window (JIT and the stores' first pages), alternated like the rest. */
const WARMUP = Math.floor(BLOCK / 2)
const PAIRS = WARMUP + BLOCK * Math.ceil(ROUNDS / 2) * 2
/**
 * The main thread's CPU so far, in µs (Linux): its time on a CPU from schedstat, in ns (a block of 2,000 pairs is
 * 20-60 ms of it, which the task's utime + stime, in clock ticks of 10 ms, measured to a few tenths of a µs per pair).
 */
function mainThreadCpuMicros(): number {
  const schedstat = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')
  return Number(schedstat[0]) / 1000
}

type StoreModule = typeof thisStore
const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(path)).href)) as T
const thisBook: BookModule = await import('./fixtures/book.ts')
/** [name, engine, store] of each run; with --against-store each store takes pairs of an engine of its own, both this checkout's. */
const sides: [string, BookModule, StoreModule][] = args.against !== undefined
  ? [[args.against, await load<BookModule>(args.against), thisStore], ['bench/fixtures/book.ts', thisBook, thisStore]]
  : [[args['against-store'] as string, thisBook, await load<StoreModule>(args['against-store'] as string)], ['src/store', thisBook, thisStore]]
const runs = await Promise.all(sides.map(async ([name, module, { Store }]) => {
  const { setup, pairs } = loadMixPairs(module, PAIRS)
  const dir = mkdtempSync(join(tmpdir(), 'agent-credit-pair-commits-'))
  const store = await Store.open({ dataDir: join(dir, 'data'), durability: DURABILITY, snapshotVersions: SNAPSHOT_VERSIONS, migrations: snapshotMigrations() })
  for (let i = 0; i < setup.length; i += 5000) await store.commit({ changes: setup.slice(i, i + 5000) })
  const changesPerPair = pairs.reduce((n, pair) => n + pair.reduce((m, changes) => m + changes.length, 0), 0) / pairs.length
  return { name, dir, store, pairs, changesPerPair, processMicros: 0, mainMicros: 0, done: 0, mainPerPairByRound: [] as number[] }
}))

/** Commits the run's next `count` pairs, IN_FLIGHT commits waiting at most. */
async function commitPairs(run: (typeof runs)[number], count: number): Promise<void> {
  let waiting: Promise<unknown>[] = []
  for (const end = run.done + count; run.done < end; run.done++) {
    for (const changes of run.pairs[run.done] as Change[][]) {
      if (changes.length > 0) waiting.push(run.store.commit({ changes }))
    }
    if (waiting.length >= IN_FLIGHT) {
      await Promise.all(waiting)
      waiting = []
    }
  }
  await Promise.all(waiting)
}

for (const run of runs) await commitPairs(run, WARMUP)
const loadBefore = loadavg()[0] as number
for (let round = 0; round < ROUNDS; round++) {
  for (const run of round % 2 === 0 ? runs : [...runs].reverse()) {
    const cpu0 = process.cpuUsage()
    const main0 = mainThreadCpuMicros()
    await commitPairs(run, BLOCK)
    const cpu = process.cpuUsage(cpu0)
    run.processMicros += cpu.user + cpu.system
    const main = mainThreadCpuMicros() - main0
    run.mainMicros += main
    run.mainPerPairByRound.push(main / BLOCK)
  }
}
const loadAfter = loadavg()[0] as number
/** A round's figure without the garbage collector's odd major collection, which lands on either store's block. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length % 2 === 1 ? (sorted[sorted.length >> 1] as number) : ((sorted[sorted.length / 2 - 1] as number) + (sorted[sorted.length / 2] as number)) / 2
}
for (const run of runs) {
  const measured = run.done - WARMUP
  process.stdout.write(`${run.name}: ${run.changesPerPair.toFixed(2)} changes per pair; per pair ${(run.processMicros / measured).toFixed(1)} µs process CPU, ${(run.mainMicros / measured).toFixed(1)} µs main thread, its median round ${median(run.mainPerPairByRound).toFixed(1)} µs (${measured} pairs, durability ${DURABILITY})\n`)
  await run.store.close()
  rmSync(run.dir, { recursive: true, force: true })
}
process.stdout.write(`load average ${loadBefore.toFixed(1)} -> ${loadAfter.toFixed(1)}\n`)
