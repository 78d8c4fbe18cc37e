// Reconciliation reads the ledger from the engine's live actors and the store's final ones. A job that has just ended
// leaves the engine at once, while its final snapshot reaches the store only with its group commit: the ledger read
// in between took the job's earlier stored snapshot (funded, open) and reported the chain's closed job as a difference
// (a one-off CI failure of test/api/reclaim.test.ts: expected open, actual reclaimed). It reads an ended actor whose
// commit is in flight from that commit (CreditService.stored), as GET routes do. Real service and anvil; the store's
// test hook holds the commits.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { fundedJob, signedIn, startHarness, usdc } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

let hold = false
const h = await startHarness({ holdCommitsWhile: () => hold })
t.teardown(() => h.stop())

t.test('a job failed while its commit is in flight: the ledger is the job as it ended, and equals the chain', async (t) => {
  const { jobClientApi } = await fundedJob(h, { jobId: 'job_in_flight', receivableAtomic: usdc(100) })
  const service = h.app.service
  hold = true
  // The operator's failJob is mined before the commit; the answer waits for the commit the hook holds.
  const failed = jobClientApi.post('/credit/jobs/job_in_flight/fail', { reason: 'work not delivered' })
  await until(() => service.engine.getJob('job_in_flight') === undefined, 20_000, 'the job to end and leave the engine')
  t.equal(service.store.getSnapshot('job', 'job_in_flight')?.snapshot !== undefined, true, 'the store still has its earlier snapshot')
  const [report] = await h.app.reconciliation.run(h.network.slug)
  t.equal(report?.status, 'ok', JSON.stringify(report?.differences))
  t.same(report?.differences, [], 'the ledger equals the chain while the commit is in flight')
  hold = false
  t.equal((await failed).status, 200)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.same((reply.body.networks as { differences: unknown[] }[])[0]?.differences, [], 'and after it')
})
