// The durable write path alone: commits shaped like one match (a new live lease, the offer turned final, the lender
// record and a used-proof record) through the store with durability 'sync', IN_FLIGHT at a time so the group commit
// fills, as the service issues them. Reports commits/s, latency per commit, and the process CPU per commit.
// BENCH_STORE_MODULE names another store module (an older checkout's src/store/index.ts) to measure it the same way.
// --durability none (LMDB noSync) leaves the disk out: the store's own CPU per commit, steadier on a loaded machine.
// --shape match commits the changes of real matches instead (bench/fixtures/book.ts: the offer, the new lease, the
// lender and the engine's id sequences; made by the engine before the timed window), as bench/match-durable.ts does
// with the engine's cost left out. The main thread's CPU per commit is reported beside the process's (the LMDB
// writer thread's commit and sync are the difference): the main thread is what paces durable matching (issue 11).
// Reports data.mdb's size per commit at the end (the setup's commits included): what the value encoding leaves LMDB.
// Writes bench/results/durable-commit-latest.json (or --out).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { Change } from '../src/store/index.ts'

const { values: args } = parseArgs({ options: { commits: { type: 'string' }, 'in-flight': { type: 'string' }, out: { type: 'string' }, durability: { type: 'string' }, shape: { type: 'string' }, quick: { type: 'boolean', default: false } }, strict: false })
const COMMITS = Number(args.commits ?? (args.quick === true ? 2000 : 20_000))
const IN_FLIGHT = Number(args['in-flight'] ?? 64)
const DURABILITY = args.durability === 'none' ? 'none' : 'sync'
const SHAPE = args.shape === 'match' ? 'match' : 'synthetic'
const moduleUrl = process.env.BENCH_STORE_MODULE === undefined ? new URL('../src/store/index.ts', import.meta.url).href : pathToFileURL(resolve(process.env.BENCH_STORE_MODULE)).href
const { Store } = (await import(moduleUrl)) as typeof import('../src/store/index.ts')

const dir = mkdtempSync(join(tmpdir(), 'agent-credit-durable-commit-'))
const store = await Store.open({ dataDir: join(dir, 'data'), durability: DURABILITY })
const lenders = store.collection<{ availableAtomic: string }>('bench-lender')
const matchCommits = SHAPE === 'match' ? await matchShaped(COMMITS) : []

/** The changes of COMMITS matches on a book of 2,000 lenders, the lenders and offers committed first. */
async function matchShaped(count: number): Promise<{ changes: Change[] }[]> {
  const { amountsOf, buildBook, matchOffer, openOffer } = await import('./fixtures/book.ts')
  const book = buildBook(2000, Math.ceil(count / 1000) + 1)
  const setup = [...book.setupChanges]
  const offers = amountsOf(count).map((amountAtomic, i) => {
    const offer = openOffer(book, i, amountAtomic)
    setup.push(...offer.changes)
    return offer
  })
  for (let i = 0; i < setup.length; i += 5000) await store.commit({ changes: setup.slice(i, i + 5000) })
  return offers.map((offer) => ({ changes: [...matchOffer(book, offer)] }))
}

/** The main thread's CPU so far, in µs (Linux: its task's utime + stime, in clock ticks of 10 ms); null elsewhere. */
function mainThreadCpuMicros(): number | null {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return null
  }
}
const latencies: number[] = []
let next = 0
const loadBefore = loadavg()[0] as number
const cpuBefore = process.cpuUsage()
const mainBefore = mainThreadCpuMicros()
const started = performance.now()
async function worker(): Promise<void> {
  while (next < COMMITS) {
    const i = next++
    const t0 = performance.now()
    if (SHAPE === 'match') {
      await store.commit(matchCommits[i] as { changes: Change[] })
      latencies.push(performance.now() - t0)
      continue
    }
    await store.commit({
      changes: [
        { kind: 'lease', id: `lease_${i}`, record: { value: 'active', context: { leaseId: `lease_${i}`, amountAtomic: 1_000_000n + BigInt(i), lender: `0x${'ab'.repeat(20)}`, expiresAtMs: 1_700_000_000_000 + i } }, final: false },
        { kind: 'offer', id: `offer_${i}`, record: { value: 'matched', context: { offerId: `offer_${i}`, leaseId: `lease_${i}`, feeBps: 120 } }, final: true },
        { kind: 'lender', id: `lender_${i % 1000}`, record: { address: `0x${'cd'.repeat(20)}`, availableAtomic: 10n ** 12n - BigInt(i) }, final: false },
      ],
      records: [lenders.putOp(`l_${i % 1000}`, { availableAtomic: String(i) }), store.proofs.addOp(`p_${i}`, { usedBy: `lease_${i}`, usedAtMs: i })],
    })
    latencies.push(performance.now() - t0)
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
const seconds = (performance.now() - started) / 1000
const cpu = process.cpuUsage(cpuBefore)
const mainAfter = mainThreadCpuMicros()
const stats = store.stats()
await store.close()
// What the encoding leaves LMDB to write (and a restart to read): the file's size over the commits, setup included.
const dataFileBytes = statSync(join(dir, 'data', 'data.mdb')).size
rmSync(dir, { recursive: true, force: true })
latencies.sort((a, b) => a - b)
const at = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] as number) * 1000) / 1000
const result = {
  store: process.env.BENCH_STORE_MODULE ?? 'src/store',
  commits: COMMITS,
  inFlight: IN_FLIGHT,
  durability: DURABILITY,
  shape: SHAPE,
  commitsPerSecond: Math.round(COMMITS / seconds),
  latencyMillis: { p50: at(0.5), p90: at(0.9), p99: at(0.99) },
  cpuMicrosPerCommit: Math.round((cpu.user + cpu.system) / COMMITS),
  userCpuMicrosPerCommit: Math.round(cpu.user / COMMITS),
  systemCpuMicrosPerCommit: Math.round(cpu.system / COMMITS),
  mainThreadCpuMicrosPerCommit: mainBefore === null || mainAfter === null ? null : Math.round((mainAfter - mainBefore) / COMMITS),
  transactions: stats.transactions,
  commitsPerTransaction: Math.round((stats.commits / stats.transactions) * 10) / 10,
  dataFileBytesPerCommit: Math.round(dataFileBytes / COMMITS),
  loadAverage: { before: loadBefore, after: loadavg()[0] },
}
process.stdout.write(`${JSON.stringify(result)}\n`)
if (typeof args.out === 'string') writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`)
