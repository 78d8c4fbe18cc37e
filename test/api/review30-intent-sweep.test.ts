// review30 (after probe28): a job its client reclaimed on chain now takes its /fail intent with it, in the follower
// batch's commit that applies the reclaim. A store written between money26 and probe28 may still hold such intents,
// one per job, for ever: the start-up deletes, in one commit, every intent whose job the engine does not hold open
// (ended, or never registered here), logs failure_intents_swept once, and keeps the intent of a job still open (the
// repair of a failJob mined and not recorded reads it).
import { rmSync } from 'node:fs'
import t from 'tap'
import { startApp, type App } from '../../src/app/app.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import type { Store } from '../../src/store/index.ts'
import { fundedJob, startHarness, tempDataDir, testConfig, usdc } from '../fixtures/service.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(() => devnet.stop())

type Intent = { reason: string; noteHash: string | null; caller: string }
const intentsOf = (store: Store) => store.collection<Intent>('failure-intents', { version: 1 })
const keys = (store: Store) => [...intentsOf(store).iterate()].map(({ key }) => key)

t.test('the start-up deletes the failure intents of jobs not open, once, and keeps an open job\'s', async (t) => {
  const dataDir = tempDataDir()
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const h = await startHarness({ devnet, dataDir })
  t.teardown(() => h.stop())
  const open = await fundedJob(h, { jobId: 'job_r30_open', receivableAtomic: usdc(100) })
  const failed = await fundedJob(h, { jobId: 'job_r30_failed', receivableAtomic: usdc(100) })
  const completed = await fundedJob(h, { jobId: 'job_r30_completed', receivableAtomic: usdc(100) })
  t.equal((await failed.jobClientApi.post('/credit/jobs/job_r30_failed/fail', { reason: 'late' })).status, 200, 'one job failed')
  t.equal((await completed.jobClientApi.post('/credit/jobs/job_r30_completed/complete', {})).status, 200, 'one job completed')

  // What a store of money26..probe28 may hold: intents of ended jobs (the reclaim's left them), of a job never
  // registered here, beside the intent of a job still open.
  const store = h.app.service.store
  const intents = intentsOf(store)
  const intent = (caller: string): Intent => ({ reason: 'late', noteHash: null, caller })
  await store.commit({
    records: [
      intents.putOp('job_r30_open', intent(open.jobClient.address)),
      intents.putOp('job_r30_failed', intent(failed.jobClient.address)),
      intents.putOp('job_r30_completed', intent(completed.jobClient.address)),
      intents.putOp('job_r30_never_registered', intent(open.jobClient.address)),
    ],
  })
  t.same(keys(store), ['job_r30_completed', 'job_r30_failed', 'job_r30_never_registered', 'job_r30_open'])
  await h.app.stop()

  const started = async (): Promise<{ app: App; logged: Record<string, unknown>[] }> => {
    const logged: Record<string, unknown>[] = []
    const app = await startApp(testConfig(dataDir), { devnet, log: (entry) => void logged.push(entry as Record<string, unknown>) })
    return { app, logged }
  }
  const first = await started()
  t.same(keys(first.app.service.store), ['job_r30_open'], 'only the open job\'s intent is left')
  const sweeps = first.logged.filter((entry) => entry['msg'] === 'failure_intents_swept')
  t.equal(sweeps.length, 1, 'the sweep is logged')
  t.match(sweeps[0], { level: 'warn', count: 3, jobIds: JSON.stringify(['job_r30_completed', 'job_r30_failed', 'job_r30_never_registered']) })
  t.equal(first.app.service.engine.getJob('job_r30_open')?.state, 'funded', 'the open job is untouched')
  await first.app.stop()

  // Nothing left to sweep: no line at the next start.
  const second = await started()
  t.teardown(() => second.app.stop())
  t.same(keys(second.app.service.store), ['job_r30_open'])
  t.equal(second.logged.filter((entry) => entry['msg'] === 'failure_intents_swept').length, 0, 'nothing swept, nothing logged')
})
