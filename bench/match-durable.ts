// In-process matching WITH durable commits: the engine's matchOffer on a book of LENDERS lenders, each match's
// changes committed through the real Store (LMDB, durability 'sync', group commit) the way the service's run path
// does it: the command and the enqueue in one synchronous section, the acknowledgement once the disk has it. Up to
// IN_FLIGHT commits wait for the disk at once (the service's concurrent requests); the next match waits for a slot.
// The offers are opened (and committed) before the timed window, so the window is matches and their commits only.
// Reports matches/s over the wall clock of the window (first match to last acknowledgement), p99 of the match call
// and of the commit acknowledgement (enqueue to durable), and commits per group transaction.
// Writes bench/results/match-durable-latest.json (or --out).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../src/engine/migrations.ts'
import { Store } from '../src/store/index.ts'
import { amountsOf, buildBook, histogramMicros, matchOffer, openOffer } from './fixtures/book.ts'
import { threadCpuMicros } from './fixtures/service.ts'

const { values: args } = parseArgs({ options: { lenders: { type: 'string' }, matches: { type: 'string' }, 'in-flight': { type: 'string' }, out: { type: 'string' }, quick: { type: 'boolean', default: false } }, strict: false })
const quick = args.quick === true
const LENDERS = Number(args.lenders ?? (quick ? 2000 : 10_000))
const MATCHES = Number(args.matches ?? (quick ? 2000 : 20_000))
const IN_FLIGHT = Number(args['in-flight'] ?? 256)
const WARMUP = Math.min(2000, Math.floor(MATCHES / 10))

const dir = mkdtempSync(join(tmpdir(), 'agent-credit-match-durable-'))
try {
  const store = await Store.open({ dataDir: join(dir, 'data'), durability: 'sync', snapshotVersions: SNAPSHOT_VERSIONS, migrations: snapshotMigrations(), verifyOnOpen: 'header' })
  // Live offers per borrower are capped (1000 here): spread the window's offers over enough borrowers.
  const book = buildBook(LENDERS, Math.ceil((WARMUP + MATCHES) / 1000) + 1)
  process.stdout.write(`match-durable: ${LENDERS} lenders, ${WARMUP} warm-up + ${MATCHES} matches, ${IN_FLIGHT} commits in flight\n`)
  const amounts = amountsOf(WARMUP + MATCHES)
  const setup = [book.setupChanges]
  const offers = amounts.map((amountAtomic, i) => {
    const offer = openOffer(book, i, amountAtomic)
    setup.push([...offer.changes])
    return offer
  })
  // Setup in big commits (the store takes up to 10,000 changes per commit), awaited: the window starts on an idle store.
  for (const changes of setup.flat().reduce<(typeof setup)[number][]>((chunks, c) => {
    const last = chunks.at(-1)
    if (last === undefined || last.length >= 5000) chunks.push([c])
    else last.push(c)
    return chunks
  }, [])) {
    await store.commit({ changes })
  }
  process.stdout.write(`  opened ${offers.length} offers; ${store.stats().commits} setup commits durable\n`)

  const matchNs = new Float64Array(MATCHES)
  const ackNs = new Float64Array(MATCHES)
  let inFlight = 0
  let slotFreed: (() => void) | null = null
  let failed: unknown
  const loadBefore = loadavg()[0] as number
  // The window's figures start after the warm-up (they were taken before it, and its matches counted for nothing).
  let statsBefore = store.stats()
  let cpuBefore = process.cpuUsage()
  let started = 0n
  let mainBefore = Number.NaN
  for (let i = 0; i < offers.length; i++) {
    if (i === WARMUP) {
      await store.durable()
      started = process.hrtime.bigint()
      statsBefore = store.stats()
      cpuBefore = process.cpuUsage()
      mainBefore = threadCpuMicros()
    }
    while (inFlight >= IN_FLIGHT) await new Promise<void>((resolve) => (slotFreed = resolve))
    if (failed !== undefined) throw failed
    const t0 = process.hrtime.bigint()
    const changes = matchOffer(book, offers[i] as (typeof offers)[number])
    const t1 = process.hrtime.bigint()
    inFlight += 1
    const k = i - WARMUP
    store.commit({ changes: [...changes] }).then(
      () => {
        if (k >= 0) ackNs[k] = Number(process.hrtime.bigint() - t1)
      },
      (error) => (failed = error),
    ).finally(() => {
      inFlight -= 1
      const wake = slotFreed
      slotFreed = null
      wake?.()
    })
    if (k >= 0) {
      matchNs[k] = Number(t1 - t0)
      if ((k + 1) % Math.max(1, Math.floor(MATCHES / 5)) === 0) process.stdout.write(`  matched ${k + 1}/${MATCHES}\n`)
    }
  }
  await store.durable()
  if (failed !== undefined) throw failed
  const windowNs = Number(process.hrtime.bigint() - started)
  const cpu = process.cpuUsage(cpuBefore)
  const mainCpuMicros = threadCpuMicros() - mainBefore
  const stats = store.stats()
  book.engine.checkInvariants()
  await store.close()
  const transactions = stats.transactions - statsBefore.transactions
  const commits = stats.commits - statsBefore.commits
  const result = {
    lenders: LENDERS,
    matches: MATCHES,
    inFlight: IN_FLIGHT,
    durability: 'sync',
    matchesPerSecond: Math.round((MATCHES * 1e9) / windowNs),
    matchCallMicros: histogramMicros(matchNs.sort()),
    commitAckMicros: histogramMicros(ackNs.sort()),
    cpuMicrosPerMatch: Math.round((cpu.user + cpu.system) / MATCHES),
    // The main thread's share (Linux /proc, 10 ms ticks; null elsewhere): it runs the engine, the encoding and the
    // group's puts, and paces the matches; the rest is LMDB's writer thread and V8's helper threads (the GC).
    mainThreadCpuMicrosPerMatch: Number.isNaN(mainCpuMicros) ? null : Math.round(mainCpuMicros / MATCHES),
    // What one core would sustain if the disk kept up: the window's process CPU per match, inverted.
    cpuBoundMatchesPerSecond: Math.round((MATCHES * 1e6) / (cpu.user + cpu.system)),
    transactions,
    // Wall time per group transaction: with IN_FLIGHT commits waiting, each transaction's sync paces the matches.
    millisPerTransaction: Math.round(windowNs / 1e4 / Math.max(1, transactions)) / 100,
    commitsPerTransaction: Math.round((commits / Math.max(1, transactions)) * 10) / 10,
    changesPerCommit: Math.round(((stats.changes - statsBefore.changes) / Math.max(1, commits)) * 10) / 10,
    goal: { matchesPerSecond: 25_000, p99Micros: 250 },
    loadAverage: { before: loadBefore, after: loadavg()[0] },
  }
  process.stdout.write(`match-durable: ${result.matchesPerSecond} matches/s; match call p50 ${result.matchCallMicros.p50} us p99 ${result.matchCallMicros.p99} us; ` +
    `commit ack p50 ${result.commitAckMicros.p50} us p99 ${result.commitAckMicros.p99} us; ${result.commitsPerTransaction} commits per transaction, ${result.millisPerTransaction} ms per transaction; ${result.cpuMicrosPerMatch} us CPU per match, ${result.mainThreadCpuMicrosPerMatch} us of it the main thread's (${result.cpuBoundMatchesPerSecond}/s if the disk kept up)\n`)
  if (typeof args.out === 'string') writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
