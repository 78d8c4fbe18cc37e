// What one unfunded lender registration costs the service (branch `registrations`): N fresh wallets sign in and
// register over HTTP against the real service and the embedded devnet, in process; then the heap after a full GC and
// the LMDB pages in use are compared with before (per registration), and one pass of the unfunded-lender sweep, the
// service's clock moved past lenderUnfundedTtlSeconds, removes them (CPU per removal, heap and pages after).
// Run: node --expose-gc --import tsx bench/registration-cost.ts [N] (default 2000).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { heapAfterGc, pagesInUse as pagesOf } from './fixtures/store-cost.ts'
import { signedIn, startHarness, USDC, usdc } from '../test/fixtures/service.ts'

const N = Number(process.argv[2] ?? 2000)
let nowMs = Date.now()
// Every registration comes from this one address: the per-client bound on waiting registrations is not what is measured.
const h = await startHarness({ clock: () => nowMs, config: { lendersPendingPerClientMax: 1_000_000 } })
const heap = heapAfterGc
const pagesInUse = (): Promise<number> => pagesOf(h.dataDir)
try {
  const body = { availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A', 'B'] }
  // Warm-up: the first registrations compile the paths and create the books.
  for (let i = 0; i < 50; i++) await (await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))).post('/lenders/register', body)
  const heapBefore = heap()
  const bytesBefore = await pagesInUse()
  for (let i = 0; i < N; i++) {
    const reply = await (await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))).post('/lenders/register', body)
    if (reply.status !== 201) throw new Error(`register: ${reply.status}`)
  }
  const heapAfter = heap()
  const bytesAfter = await pagesInUse()
  const watcher = h.app.service.watcher.status()[0]
  nowMs += h.app.config.lenderUnfundedTtlSeconds * 1000 + 1000
  const cpu = process.cpuUsage()
  let removed = 0
  do removed += (await h.app.lenderSweep.run()).length
  while (h.app.lenderSweep.due)
  const sweepCpu = process.cpuUsage(cpu)
  const heapSwept = heap()
  console.log(JSON.stringify({
    registrations: N,
    heapBytesPerRegistration: Math.round((heapAfter - heapBefore) / N),
    lmdbBytesPerRegistration: Math.round((bytesAfter - bytesBefore) / N),
    watcherUnfundedEntries: watcher?.unfunded,
    removed,
    sweepCpuUsPerRemoval: Math.round((sweepCpu.user + sweepCpu.system) / removed),
    heapBytesLeftPerRegistrationAfterSweep: Math.round((heapSwept - heapBefore) / N),
    // LMDB keeps freed pages for reuse: the file does not shrink, the next registrations take those pages.
    lmdbBytesAfterSweep: (await pagesInUse()) - bytesBefore,
  }))
} finally {
  await h.stop()
}
