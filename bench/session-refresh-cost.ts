// What a session refresh (POST /auth/session/refresh, branch `signin12`) costs the service, against a sign-in's
// (bench/signin-cost.ts: 2.1 KB of LMDB pages and ~6 ms of the service thread a sign-in, kept for a day): one wallet
// signs in, then refreshes its session N times over HTTP against the real service and the embedded devnet, in
// process, the service's clock moved a minute per refresh so that each extends the session (a durable rewrite). The
// LMDB pages in use and the heap after a full GC are compared with before, per refresh; the process's CPU per
// refresh includes the client's fetch. Run: node --expose-gc --import tsx bench/session-refresh-cost.ts [N] (default 2000).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { heapAfterGc, pagesInUse } from './fixtures/store-cost.ts'
import { signedIn, startHarness } from '../test/fixtures/service.ts'

const N = Number(process.argv[2] ?? 2000)
let nowMs = Date.now()
const h = await startHarness({ clock: () => nowMs })
try {
  const client = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const refresh = async (): Promise<void> => {
    nowMs += 60_000
    const reply = await client.call('POST', '/auth/session/refresh')
    if (reply.status !== 200) throw new Error(`refresh: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
  for (let i = 0; i < 50; i++) await refresh()
  const heapBefore = heapAfterGc()
  const bytesBefore = await pagesInUse(h.dataDir)
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < N; i++) await refresh()
  const wallMs = performance.now() - t0
  const used = process.cpuUsage(cpu)
  const bytesAfter = await pagesInUse(h.dataDir)
  const heapAfter = heapAfterGc()
  console.log(JSON.stringify({
    refreshes: N,
    lmdbBytesPerRefresh: Math.round((bytesAfter - bytesBefore) / N),
    heapBytesPerRefresh: Math.round((heapAfter - heapBefore) / N),
    processCpuUsPerRefresh: Math.round((used.user + used.system) / N),
    refreshesPerSecondOneClient: Math.round(N / (wallMs / 1000)),
  }))
} finally {
  await h.stop()
}
