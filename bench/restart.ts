// Restart time: a data directory holding RECORDS stored snapshots, LIVE of them live actors, is built through the real
// store API, then a fresh process times what the service runs at start (src/app/app.ts): Store.open (the snapshot
// versions and migrations; the deep check of every entry, in a child process, unless the store was closed cleanly,
// started there and run beside the restore), then the engine restored from storedSnapshots (every engine record, the
// live actors only), checkInvariants, and the wait for the deep check's verdict.
// Timed twice: after a clean stop (the build closes the store cleanly, so the deep check is skipped: the headline
// figures) and as after a crash (--verify deep: the deep check runs; `afterCrash`).
// The live actors are made by the engine itself: LENDERS lenders, LIVE / 2 offers opened and matched (a matched offer
// stays live beside its live lease), each command's changes one commit, as the service commits them. The rest is
// history, as a service that ran a while holds it: final offers, leases and advances, copies under fresh ids of the
// final snapshots of one real request-match-pay-repay cycle, committed 5,000 to a commit (the restore skips final
// actors; the open check reads them). The page cache is warm from the build (a restart after a crash, not a reboot).
// Writes bench/results/restart-latest.json (or --out). --keep-data <dir> builds there and keeps it; --reuse-data <dir>
// times the start-up again on a directory kept so (no build: cheap A/B runs of the start-up path).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Engine } from '../src/engine/index.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../src/engine/migrations.ts'
import { ACTOR_KINDS, ENGINE_RECORD_KINDS, Store, type Change } from '../src/store/index.ts'
import { amountsOf, buildBook, ESTABLISHED_ALLOWANCE, matchOffer, NET, ASSET, openOffer, SUPPLIER, T0 } from './fixtures/book.ts'
import { TS_IMPORT } from './fixtures/ts-import.ts'

const { values: args } = parseArgs({ options: { restore: { type: 'string' }, verify: { type: 'string' }, records: { type: 'string' }, live: { type: 'string' }, lenders: { type: 'string' }, 'keep-data': { type: 'string' }, 'reuse-data': { type: 'string' }, out: { type: 'string' }, quick: { type: 'boolean', default: false } }, strict: false })
const ENGINE_CONFIG = { liveOffersPerBorrowerMax: 1000, lenderLeaseAllowanceInitial: ESTABLISHED_ALLOWANCE }
// --verify deep: the deep check as after a crash; --verify header: none, to see the rest apart. (The service's default
// runs it unless the store was closed cleanly.)
const verifyOnOpen = args.verify === 'deep' || args.verify === 'header' ? { verifyOnOpen: args.verify as 'deep' | 'header' } : {}
const storeOptions = (dataDir: string) => ({ dataDir, durability: 'sync' as const, snapshotVersions: SNAPSHOT_VERSIONS, migrations: snapshotMigrations(), deepCheckBesideReads: true, ...verifyOnOpen })

/** CPU time of this process's threads, and of its children waited for (the deep check's), in ms (Linux). */
function cpuMillis(): { self: number; children: number } {
  const usage = process.cpuUsage()
  let children = 0
  try {
    // Fields after the command name: utime stime cutime cstime are the 12th to 15th, in clock ticks (100 per second).
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? []
    children = (Number(fields[13]) + Number(fields[14])) * 10
  } catch {
    // not Linux: children's CPU unknown
  }
  return { self: Math.round((usage.user + usage.system) / 1000), children }
}

/** The start-up path of src/app/app.ts, timed in its phases; runs in a fresh process. */
async function restore(dataDir: string) {
  // The service's own reader of the store (imported here only: the build needs none of the app).
  const { storedSnapshots } = await import('../src/app/app.ts')
  const cpu0 = cpuMillis()
  const t0 = performance.now()
  const store = await Store.open(storeOptions(dataDir))
  const t1 = performance.now()
  const engine = new Engine(ENGINE_CONFIG, { spendableAtomic: () => 10n ** 15n }, storedSnapshots(store))
  const t2 = performance.now()
  engine.checkInvariants()
  const t3 = performance.now()
  await store.checked()
  const t4 = performance.now()
  const cpu4 = cpuMillis()
  const { counts } = engine.creditState()
  const memory = process.memoryUsage()
  await store.close()
  const ms = (v: number) => Math.round(v)
  return {
    openCheck: store.openCheck,
    openMillis: ms(t1 - t0),
    restoreMillis: ms(t2 - t1),
    invariantsMillis: ms(t3 - t2),
    // Waiting for the deep check's verdict once the engine is restored (0 when none ran).
    checkWaitMillis: ms(t4 - t3),
    totalMillis: ms(t4 - t0),
    // CPU of the start-up path: the service process's, and the deep check's child process's.
    cpuMillis: cpu4.self - cpu0.self,
    checkCpuMillis: cpu4.children - cpu0.children,
    restored: { liveOffers: counts.liveOffers, liveLeases: counts.liveLeases },
    heapUsedMiB: Math.round(memory.heapUsed / 2 ** 20),
    rssMiB: Math.round(memory.rss / 2 ** 20),
  }
}

async function build(dataDir: string, records: number, live: number, lenders: number) {
  const store = await Store.open(storeOptions(dataDir))
  const pairs = Math.floor(live / 2)
  const book = buildBook(lenders, Math.ceil((pairs + 1) / 1000) + 1, ENGINE_CONFIG)
  const chunks = (changes: Change[], size: number) => Array.from({ length: Math.ceil(changes.length / size) }, (_, i) => changes.slice(i * size, (i + 1) * size))
  for (const changes of chunks(book.setupChanges, 5000)) await store.commit({ changes })

  // One real cycle gives the final snapshots the history copies.
  const amounts = amountsOf(pairs + 1)
  const first = openOffer(book, 0, amounts[0] as bigint)
  const m = book.engine.matchOffer({ offerId: first.offerId, caller: first.agent }, T0)
  if (!m.ok || !m.value.lease) throw new Error('restart bench: first offer not matched')
  const lease = m.value.lease
  const paid = book.engine.recordSupplierPayment({ network: NET, txHash: `0x${'11'.repeat(32)}`, logIndex: 0, offerId: first.offerId, payer: lease.payer, supplier: SUPPLIER, asset: ASSET, amountAtomic: amounts[0] as bigint, caller: lease.lender }, T0)
  if (!paid.ok) throw new Error(paid.error.message)
  const plan = book.engine.planRepayment(paid.value.advanceId)
  if (!plan.ok) throw new Error(plan.error.message)
  const repaid = book.engine.repayAdvance({ network: NET, txHash: `0x${'22'.repeat(32)}`, logIndex: 0, advanceId: paid.value.advanceId, lender: lease.payer, payer: first.agent, amountAtomic: plan.value.amountAtomic, reserveAmountAtomic: plan.value.reserveAmountAtomic, lenderOwedAtomic: 0n, reserveOwedAtomic: 0n }, T0)
  if (!repaid.ok) throw new Error(repaid.error.message)
  const cycle = [...first.changes, ...m.changes, ...paid.changes, ...repaid.changes]
  await store.commit({ changes: cycle })
  const templates = cycle.filter((c) => c.final)
  if (templates.length === 0) throw new Error('restart bench: the cycle ended no actor')

  // The live actors, each command its own commit (group commit merges them), awaited every 2,000 commands.
  for (let i = 1; i <= pairs; i++) {
    const offer = openOffer(book, i, amounts[i] as bigint)
    void store.commit({ changes: [...offer.changes] })
    void store.commit({ changes: [...matchOffer(book, offer)] })
    if (i % 2000 === 0 || i === pairs) {
      await store.durable()
      if (i % 10_000 === 0 || i === pairs) process.stdout.write(`  live: ${i}/${pairs} offers matched and committed\n`)
    }
  }
  book.engine.checkInvariants()

  let stored = 0
  for (const kind of [...ENGINE_RECORD_KINDS, ...ACTOR_KINDS]) for (const _ of store.iterateKind(kind)) stored += 1
  const history = Math.max(0, records - stored)
  // Ids far above any the engine mints here, so no restored sequence ever reaches them.
  for (let n = 0; n < history; n += 5000) {
    const changes: Change[] = []
    for (let j = n; j < Math.min(history, n + 5000); j++) {
      const t = templates[j % templates.length] as Change
      changes.push({ ...t, id: `${t.id.slice(0, t.id.indexOf('_') + 1)}${1_000_000_000 + j}` })
    }
    void store.commit({ changes })
    if ((n / 5000) % 20 === 19 || n + 5000 >= history) {
      await store.durable()
      process.stdout.write(`  history: ${Math.min(history, n + 5000)}/${history} final snapshots committed\n`)
    }
  }
  const liveStored = ACTOR_KINDS.reduce((sum, kind) => sum + store.countLive(kind), 0)
  await store.close()
  return { storedSnapshots: stored + history, liveActors: liveStored, lenders, history }
}

if (typeof args.restore === 'string') {
  process.stdout.write(`${JSON.stringify(await restore(args.restore))}\n`)
} else {
  const quick = args.quick === true
  const RECORDS = Number(args.records ?? (quick ? 5000 : 1_000_000))
  const LIVE = Number(args.live ?? (quick ? 1000 : 100_000))
  const LENDERS = Number(args.lenders ?? (quick ? 200 : 10_000))
  // --keep-data <dir>: build there and keep it (with built.json), to time again with --reuse-data <dir> or to profile
  // the restore alone (node --cpu-prof bench/restart.ts --restore <dir>/data --verify header).
  const reused = typeof args['reuse-data'] === 'string' ? args['reuse-data'] : undefined
  const kept = reused ?? (typeof args['keep-data'] === 'string' ? args['keep-data'] : undefined)
  const dir = kept ?? mkdtempSync(join(tmpdir(), 'agent-credit-restart-'))
  try {
    const loadBefore = loadavg()[0] as number
    let built: Awaited<ReturnType<typeof build>> & { buildSeconds: number }
    if (reused === undefined) {
      process.stdout.write(`restart: building ${RECORDS} stored snapshots, ${LIVE} live actors, ${LENDERS} lenders\n`)
      const buildStarted = performance.now()
      built = { ...(await build(join(dir, 'data'), RECORDS, LIVE, LENDERS)), buildSeconds: Math.round((performance.now() - buildStarted) / 100) / 10 }
      if (kept !== undefined) writeFileSync(join(dir, 'built.json'), JSON.stringify(built))
      process.stdout.write(`  built in ${built.buildSeconds} s; timing the start-up path in a fresh process\n`)
    } else {
      built = JSON.parse(readFileSync(join(dir, 'built.json'), 'utf8')) as typeof built
      process.stdout.write(`restart: reusing ${dir} (${built.storedSnapshots} stored snapshots, ${built.liveActors} live actors)\n`)
    }
    type Figures = Awaited<ReturnType<typeof restore>>
    const restoreIn = (verify: string[]) => {
      const started = performance.now()
      const child = spawnSync(process.execPath, [...TS_IMPORT, fileURLToPath(import.meta.url), '--restore', join(dir, 'data'), ...verify], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 20 })
      const wallMillis = Math.round(performance.now() - started)
      if (child.status === 0) return { ok: true as const, figures: JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as Figures }
      return { ok: false as const, wallMillis, reason: (child.stderr.split('\n').find((line) => /Error/.test(line)) ?? `exited with ${child.status ?? child.signal}`).slice(0, 400) }
    }
    const checkRestored = (figures: Figures) => {
      if (figures.restored.liveOffers + figures.restored.liveLeases !== built.liveActors) throw new Error(`restored ${JSON.stringify(figures.restored)}, the store holds ${built.liveActors} live actors`)
      return figures
    }
    // After a clean stop: each timed start closes the store cleanly, as the build does, so the deep check is skipped.
    const clean = restoreIn([])
    if (!clean.ok) throw new Error(`restart after a clean stop failed: ${clean.reason}`)
    if (clean.figures.openCheck !== 'clean-shutdown') throw new Error(`after a clean stop the open check was ${clean.figures.openCheck}`)
    // As after a crash. The service's start refuses a data directory whose deep check fails (or outlasts its
    // timeout): that is the figure, and the rest of the path is then timed without it.
    const deep = restoreIn(['--verify', 'deep'])
    const header = deep.ok ? null : restoreIn(['--verify', 'header'])
    if (header !== null && !header.ok) throw new Error(`restore failed even without the deep check: ${header.reason}`)
    const afterCrash = checkRestored(deep.ok ? deep.figures : (header as { figures: Figures }).figures)
    const deepCheck = deep.ok ? { ok: true } : { ok: false, failedAfterMillis: deep.wallMillis, reason: deep.reason }
    if (!deep.ok) process.stdout.write(`  the deep check failed after ${deep.wallMillis} ms (${deep.reason}); timed again with --verify header\n`)
    const result = { ...built, deepCheck, ...checkRestored(clean.figures), afterCrash, goal: { totalMillis: 5000 }, loadAverage: { before: loadBefore, after: loadavg()[0] } }
    const line = (r: Figures) => `${r.totalMillis} ms (Store.open ${r.openMillis} ms, engine restore ${r.restoreMillis} ms, invariants ${r.invariantsMillis} ms, then the deep check's verdict ${r.checkWaitMillis} ms; CPU ${r.cpuMillis} ms + deep check ${r.checkCpuMillis} ms)`
    process.stdout.write(`restart after a clean stop: ${line(result)}; after a crash: ${line(afterCrash)}; for ${result.storedSnapshots} snapshots, ${result.liveActors} live actors; heap ${result.heapUsedMiB} MiB, rss ${result.rssMiB} MiB; load ${loadBefore} -> ${result.loadAverage.after}\n`)
    if (typeof args.out === 'string') writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`)
  } finally {
    if (kept === undefined) rmSync(dir, { recursive: true, force: true })
  }
}
