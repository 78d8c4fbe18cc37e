// Two stores in one process, the same match-shaped commits (bench/fixtures/book.ts: real engine matches on 2,000
// lenders) committed to each in blocks, alternated (A B, B A, ...): process and main-thread CPU per commit of each.
// On a machine others load, runs in separate processes differ by more than a store change does (issue 11); blocks
// alternated within one process see the same load and the same engine-made garbage. `--against <module>` names the
// other store (an older checkout's src/store/index.ts, its node_modules linked); this checkout's is the second.
// Also reports each data.mdb's size (what the value encoding leaves LMDB). Writes nothing under bench/results.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { Change } from '../src/store/index.ts'
import { amountsOf, buildBook, matchOffer, openOffer } from './fixtures/book.ts'

const { values: args } = parseArgs({ options: { against: { type: 'string' }, durability: { type: 'string' }, block: { type: 'string' }, rounds: { type: 'string' }, 'in-flight': { type: 'string' } }, strict: true })
if (args.against === undefined) throw new Error('--against <path of the other store module> is required')
const DURABILITY = args.durability === 'none' ? 'none' : 'sync'
const BLOCK = Number(args.block ?? 4000)
const ROUNDS = Number(args.rounds ?? 6)
const IN_FLIGHT = Number(args['in-flight'] ?? 256)
type StoreModule = typeof import('../src/store/index.ts')
const modules: [string, StoreModule][] = [
  [args.against, (await import(pathToFileURL(resolve(args.against)).href)) as StoreModule],
  ['src/store', await import('../src/store/index.ts')],
]

const book = buildBook(2000, Math.ceil((BLOCK * ROUNDS * modules.length) / 1000) + 1)
const setup = [...book.setupChanges]
const offers = amountsOf(BLOCK * ROUNDS * modules.length).map((amountAtomic, i) => {
  const offer = openOffer(book, i, amountAtomic)
  setup.push(...offer.changes)
  return offer
})
const commits: Change[][] = offers.map((offer) => [...matchOffer(book, offer)])

/** The main thread's CPU so far, in µs (its task's utime + stime, clock ticks of 10 ms; Linux). */
function mainThreadCpuMicros(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

const runs = await Promise.all(modules.map(async ([name, module]) => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-credit-store-interleaved-'))
  const store = await module.Store.open({ dataDir: join(dir, 'data'), durability: DURABILITY })
  return { name, dir, store, processMicros: 0, mainMicros: 0, commits: 0 }
}))
for (const run of runs) for (let i = 0; i < setup.length; i += 5000) await run.store.commit({ changes: setup.slice(i, i + 5000) })

const loadBefore = loadavg()[0] as number
let next = 0
for (let round = 0; round < ROUNDS; round++) {
  for (const run of round % 2 === 0 ? runs : [...runs].reverse()) {
    const cpu0 = process.cpuUsage()
    const main0 = mainThreadCpuMicros()
    let waiting: Promise<unknown>[] = []
    for (const end = next + BLOCK; next < end; next++) {
      waiting.push(run.store.commit({ changes: commits[next] as Change[] }))
      if (waiting.length >= IN_FLIGHT) {
        await Promise.all(waiting)
        waiting = []
      }
    }
    await Promise.all(waiting)
    const cpu = process.cpuUsage(cpu0)
    run.processMicros += cpu.user + cpu.system
    run.mainMicros += mainThreadCpuMicros() - main0
    run.commits += BLOCK
  }
}
for (const run of runs) {
  await run.store.close()
  const dataFileMB = Math.round(statSync(join(run.dir, 'data', 'data.mdb')).size / 1e5) / 10
  rmSync(run.dir, { recursive: true, force: true })
  process.stdout.write(`${JSON.stringify({ store: run.name, durability: DURABILITY, commits: run.commits, cpuMicrosPerCommit: Math.round((run.processMicros / run.commits) * 10) / 10, mainThreadCpuMicrosPerCommit: Math.round((run.mainMicros / run.commits) * 10) / 10, dataFileMB })}\n`)
}
process.stdout.write(`load average ${loadBefore} -> ${loadavg()[0]}\n`)
