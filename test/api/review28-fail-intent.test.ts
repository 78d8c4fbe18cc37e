// review28 (after money26): the repair of a failJob mined and never recorded reads the intent its /fail stored, and
// records the failure with that request's reason and caller. The caller an intent names may no longer be one the
// service takes a /fail from when the repair runs: an operator whose failJob waited in the pool when the service
// crashed, removed from OPERATORS (its key rotated) before the restart. Before, the repair planned the failure as that
// caller, was refused (403: not the client, not an operator) at each attempt, and the job stayed open in the service
// while the chain had failed it (its advances never defaulted, its borrower never suspended). The intent is written
// here as that request left it (its caller an address the configuration does not name), and the failJob it sent is
// mined out of band.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { sendFailJob } from '../../src/chain/operator.ts'
import { failureNoteHash } from '../../src/engine/jobs.ts'
import { startRpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { fundedJob, startHarness, usdc } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(() => devnet.stop())
const network = devnet.networks[0] as (typeof devnet.networks)[number]

t.test('the repair records the failure of an intent whose caller the configuration no longer names', async (t) => {
  const h = await startHarness({ devnet, config: { operatorRepairIntervalMs: 500 } })
  t.teardown(() => h.stop())
  const jobId = 'job_r28_removed_operator'
  const { jobClientApi, borrower } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const removedOperator = privateKeyToAccount(generatePrivateKey()).address
  const store = h.app.service.store
  const intents = store.collection<{ reason: string; noteHash: string | null; caller: string }>('failure-intents', { version: 1 })
  await store.commit({ records: [intents.putOp(jobId, { reason: 'late', noteHash: null, caller: removedOperator })] })

  await sendFailJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId) })
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason !== null, 20_000, 'the repair recorded the failure')
  const job = (await jobClientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.state, 'failed')
  t.equal(job.failureReason, 'late', 'the reason of the request that sent it')
  t.equal([...intents.iterate()].length, 0, 'its intent deleted with the record')
  const entries = store.collection<{ caller: string }>('failure-entries', { version: 1 })
  t.equal(entries.get(jobId)?.caller, removedOperator, 'the failure entry names the request\'s caller')
  t.equal(h.app.service.engine.getBorrower(borrower.address)?.suspended, true, 'the borrower suspended')
  // The client sent no such request: its /fail with that reason is not answered by it.
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })).status, 409)
})

t.test('a /fail refused JobNotOpen whose earlier failJob the lookup missed keeps its intent: the repair records its reason', async (t) => {
  // The service reads the chain through a proxy whose eth_getLogs the test fails: the lookup of the earlier failJob
  // (findEarlierOperatorTx) fails as an RPC error or a job funded past its 1,000,000-block window does, and the
  // follower sees the JobFailed only once the proxy forwards again.
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const h = await startHarness({ devnet: { ...devnet, networks: [{ ...network, rpcUrl: proxy.url }] }, config: { operatorRepairIntervalMs: 500 } })
  t.teardown(() => h.stop())
  const jobId = 'job_r28_lookup_missed'
  const { jobClientApi, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const note = 'never delivered'
  const failure = { reason: 'defective', note }
  // The client's first /fail: its intent stored, its failJob sent and mined, its answer lost (the service killed there:
  // money26-fail-intent.test.ts runs that part for real).
  const store = h.app.service.store
  const intents = store.collection<{ reason: string; noteHash: string | null; caller: string }>('failure-intents', { version: 1 })
  await store.commit({ records: [intents.putOp(jobId, { reason: failure.reason, noteHash: failureNoteHash(note), caller: jobClient.address })] })
  proxy.setFailing(['eth_getLogs'])
  await sendFailJob(createNetworkClients(network), { jobKey: jobKey(network, jobId) })
  // Its retry: the contract refuses the failJob (JobNotOpen) and the lookup of the earlier one fails.
  const retried = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.not(retried.status, 200, JSON.stringify(retried.body))
  t.equal([...intents.iterate()].length, 1, 'the intent is kept')
  proxy.setFailing(undefined)
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason !== null, 20_000, 'the repair recorded the failure')
  const job = (await jobClientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.failureReason, 'defective', 'the client\'s reason, not failed_on_chain')
  t.equal(job.failureNoteHash, failureNoteHash(note))
  const again = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.equal(again.status, 200, 'the same request answered as recorded')
})
