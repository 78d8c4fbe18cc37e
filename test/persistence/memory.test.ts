// DESIGN section 3: final-state actors are persisted, stopped and evicted from memory. After 100,000 offers reached a
// final state the heap holds the live set only: measured in a child process (node --expose-gc, full collections)
// against the same setup without the 100,000 offers. The final offers stay readable from the store by id.
import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { REPO, removeDir } from './fixtures/child-service.ts'
import { tempDataDir } from '../fixtures/service.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const RUN = fileURLToPath(new URL('./fixtures/heap-run.ts', import.meta.url))
const FINAL_OFFERS = 100_000
const LIVE_OFFERS = 1000

interface HeapRun {
  finalOffers: number
  liveOffers: number
  matched: number
  churnMs: number
  heapSetupBytes: number
  heapAfterChurnBytes: number
  heapFinalBytes: number
  finalInStore: number
  liveInStore: number
  liveIndexOffers: number
  engineLiveOffers: number
  engineLiveLeases: number
}

function heapRun(finalOffers: number): Promise<HeapRun> {
  const dataDir = tempDataDir('agent-credit-heap-')
  return new Promise<HeapRun>((resolve, reject) => {
    // A larger young generation only makes the run faster (fewer scavenges); measurements follow full collections.
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--max-semi-space-size=32', ...TS_LOADER_ARGS, RUN, dataDir, String(finalOffers), String(LIVE_OFFERS)],
      { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    t.teardown(() => {
      child.kill('SIGKILL')
    })
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      removeDir(dataDir)
      if (code !== 0) reject(new Error(`heap run exited ${code}: ${err.slice(0, 2000)}`))
      else resolve(JSON.parse(out.trim()) as HeapRun)
    })
  })
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MB`

t.test('after 100,000 offers reach a final state the heap holds only the live ones', async (t) => {
  const baseline = await heapRun(0)
  const churned = await heapRun(FINAL_OFFERS)
  t.comment(`baseline ${JSON.stringify(baseline)}`)
  t.comment(`churned ${JSON.stringify(churned)}`)

  t.equal(churned.finalInStore, FINAL_OFFERS, 'every final offer is readable from the store by id, in state expired')
  t.equal(churned.matched, FINAL_OFFERS / 10, 'one in ten went through a lease that timed out')
  t.equal(churned.engineLiveOffers, LIVE_OFFERS, 'the engine holds the live offers only')
  t.equal(churned.engineLiveLeases, 0)
  t.equal(churned.liveIndexOffers, LIVE_OFFERS, "the store's live index names the live offers only")
  t.equal(churned.liveInStore, LIVE_OFFERS)

  // The unit of the bound is the live set itself: the heap that 1,000 live offers take in the baseline (about
  // 4 KB each: an XState actor with its context). Retaining anything per final offer breaks it: even a bare Map
  // entry keyed by its id (about 60 bytes) would add 6 MB over 100,000 offers, more than the live set; retaining
  // the actors would add hundreds of MB. What remains is noise between processes (JIT code, hash tables).
  const liveSetBytes = baseline.heapFinalBytes - baseline.heapAfterChurnBytes
  t.ok(liveSetBytes > 0, `the live set of ${LIVE_OFFERS} offers takes ${mb(liveSetBytes)}`)
  const growth = churned.heapFinalBytes - baseline.heapFinalBytes
  t.ok(
    growth < liveSetBytes,
    `heap with the same live set: ${mb(churned.heapFinalBytes)} after ${FINAL_OFFERS} final offers vs ${mb(baseline.heapFinalBytes)} ` +
      `without (growth ${mb(growth)}, bound ${mb(liveSetBytes)})`,
  )
  const churnLeft = churned.heapAfterChurnBytes - churned.heapSetupBytes
  t.ok(churnLeft < liveSetBytes, `the churn itself left ${mb(churnLeft)} on the heap (bound ${mb(liveSetBytes)})`)
})
