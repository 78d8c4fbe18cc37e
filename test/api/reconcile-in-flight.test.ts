// Reconciliation reads the ledger from the engine's live actors and the store's final ones. A job that has just ended
// leaves the engine at once, while its final snapshot reaches the store only with its group commit: the ledger read
// in between took the job's earlier stored snapshot (funded, open) and reported the chain's closed job as a difference
// (a one-off CI failure of test/api/reclaim.test.ts: expected open, actual reclaimed). It reads an ended actor whose
// commit is in flight from that commit (CreditService.stored), as GET routes do. A job registered in a commit still in
// flight is in the engine, not the store; ended before that commit landed, in neither: the ledger reads it from the
// engine, or from its commit in flight (it was counted unregistered, then reported unexpected with the escrow flows
// short). Real service and anvil; the store's test hook holds the commits. The jobs end by completion (settleJob, no
// commit before it): since money26 a failure first commits its intent durably, so it waits for the commits held.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, fundedJob, signedIn, startHarness, usdc, USDC } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

let hold = false
const h = await startHarness({ holdCommitsWhile: () => hold })
t.teardown(() => h.stop())

t.test('a job completed while its commit is in flight: the ledger is the job as it ended, and equals the chain', async (t) => {
  const { jobClientApi } = await fundedJob(h, { jobId: 'job_in_flight', receivableAtomic: usdc(100) })
  const service = h.app.service
  hold = true
  // The operator's settleJob is mined before the commit; the answer waits for the commit the hook holds.
  const ended = jobClientApi.post('/credit/jobs/job_in_flight/complete', {})
  await until(() => service.engine.getJob('job_in_flight') === undefined, 20_000, 'the job to end and leave the engine')
  t.equal(service.store.getSnapshot('job', 'job_in_flight')?.snapshot !== undefined, true, 'the store still has its earlier snapshot')
  const [report] = await h.app.reconciliation.run(h.network.slug)
  t.equal(report?.status, 'ok', JSON.stringify(report?.differences))
  t.same(report?.differences, [], 'the ledger equals the chain while the commit is in flight')
  hold = false
  t.equal((await ended).status, 200)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.same((reply.body.networks as { differences: unknown[] }[])[0]?.differences, [], 'and after it')
})

t.test('a job registered and completed while both commits are in flight: neither stored nor live, it is in the ledger, which equals the chain', async (t) => {
  const jobId = 'job_created_in_flight'
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const jobClient = await fundedAccount(h.devnet, h.network, usdc(100))
  const fundingTxHash = await new ChainAgent(h.network, jobClient).fundJob(jobId, USDC, usdc(100), borrower.address)
  const [borrowerApi, jobClientApi] = [await signedIn(h.url, borrower), await signedIn(h.url, jobClient)]
  const service = h.app.service
  const [before] = await h.app.reconciliation.run(h.network.slug)
  t.equal(before?.unregisteredJobs, 1, 'funded on chain, not registered yet')
  hold = true
  // The registration is in the engine at once; its answer waits for the commit the hook holds, as the completion's does.
  const created = borrowerApi.post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(), dueAt: new Date(Date.now() + 86_400_000).toISOString(), fundingTxHash,
  })
  await until(() => service.engine.getJob(jobId) !== undefined, 20_000, 'the job to be registered in the engine')
  const [live] = await h.app.reconciliation.run(h.network.slug)
  t.equal(live?.unregisteredJobs, 0, 'live in the engine, its registration in flight: registered')
  t.same(live?.differences, [])
  const ended = jobClientApi.post(`/credit/jobs/${jobId}/complete`, {})
  await until(() => service.engine.getJob(jobId) === undefined, 20_000, 'the job to end and leave the engine')
  t.equal(service.store.getSnapshot('job', jobId), undefined, 'the store has never had it')
  const [report] = await h.app.reconciliation.run(h.network.slug)
  t.equal(report?.status, 'ok', JSON.stringify(report?.differences))
  t.same(report?.differences, [], 'the ledger equals the chain while both commits are in flight')
  hold = false
  t.equal((await created).status, 201)
  t.equal((await ended).status, 200)
  const [after] = await h.app.reconciliation.run(h.network.slug)
  t.same(after?.differences, [], 'and after them')
})
