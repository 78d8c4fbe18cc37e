// review30 (after probe28): a /fail deletes its intent when the contract refused its failJob, nothing done. viem reads
// an RPC error coded -32603 (internal error: what providers answer for their own failures) as a contract revert,
// whatever its message and without revert data. A retry of a /fail whose first failJob was mined (its answer lost)
// met such an error at its simulation: the service took it for a refusal and deleted the intent, and the repair of the
// mined failJob recorded failed_on_chain, the client's reason lost. Now only a refusal with the contract's revert data
// (or a transaction mined reverted) deletes it.
import t from 'tap'
import { encodeErrorResult, type Address } from 'viem'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { sendFailJob } from '../../src/chain/operator.ts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { failureNoteHash } from '../../src/engine/jobs.ts'
import { startRpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { fundedJob, startHarness, usdc } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(() => devnet.stop())
const network = devnet.networks[0] as (typeof devnet.networks)[number]

t.test('a retry whose simulation meets an RPC internal error keeps the intent: the repair records the client\'s reason', async (t) => {
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const h = await startHarness({ devnet: { ...devnet, networks: [{ ...network, rpcUrl: proxy.url }] }, config: { operatorRepairIntervalMs: 200 } })
  t.teardown(() => h.stop())
  const jobId = 'job_r30_internal_error'
  const { jobClientApi, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const follower = h.app.service.followers.get(h.network.slug)
  if (follower === undefined) throw new Error('no follower')
  const store = h.app.service.store
  const intents = store.collection<{ reason: string; noteHash: string | null; caller: string }>('failure-intents', { version: 1 })
  const note = 'never delivered'
  const failure = { reason: 'defective', note }

  // The client's first /fail: its intent stored, its failJob sent and mined, its answer lost (as review28's test).
  await follower.stop()
  await store.commit({ records: [intents.putOp(jobId, { reason: failure.reason, noteHash: failureNoteHash(note), caller: jobClient.address })] })
  await sendFailJob(createNetworkClients(network), { jobKey: jobKey(network, jobId) })
  // Its retry: the provider answers the failJob's simulation with an internal error (-32603), no revert data.
  proxy.setRewrite((text) => text.replace(/"error":\{"code":3,[^}]*\}/, '"error":{"code":-32603,"message":"Internal error"}'))
  const retried = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  proxy.setRewrite(undefined)
  t.match(retried, { status: 503, body: { code: 'chain_unavailable' } }, 'an outage, retried: before, 409 contract_internal_error, "refused"')
  t.equal(intents.get(jobId)?.reason, 'defective', 'the intent is kept: nothing says the failJob was not mined')

  follower.start()
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason !== null, 20_000, 'the repair recorded the failure')
  const job = (await jobClientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.failureReason, 'defective', 'the client\'s reason, not failed_on_chain')
  t.equal(job.failureNoteHash, failureNoteHash(note))
  t.equal([...intents.iterate()].length, 0, 'its intent deleted with the record')
})

t.test('a refusal with the contract\'s revert data still deletes the intent (nothing done)', async (t) => {
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const h = await startHarness({ devnet: { ...devnet, networks: [{ ...network, rpcUrl: proxy.url }] } })
  t.teardown(() => h.stop())
  const jobId = 'job_r30_refused'
  const { jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const intents = h.app.service.store.collection<{ reason: string }>('failure-intents', { version: 1 })
  // The contract refuses the failJob's simulation with one of its errors (NotOperator, with its data): nothing sent.
  const data = encodeErrorResult({ abi: creditFacilityV2Abi, errorName: 'NotOperator', args: [network.tokens[0]?.address as Address] })
  const refusal = JSON.stringify({ code: 3, message: 'execution reverted', data })
  // The failJob's simulation is the eth_call answered "0x" (failJob returns nothing; the follower's and the watcher's
  // reads return data): answered with the refusal instead.
  proxy.setRewrite((text) => text.replace(/"result":"0x"(?=[,}])/, `"error":${refusal}`))
  const refused = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })
  proxy.setRewrite(undefined)
  t.equal(refused.status, 409, JSON.stringify(refused.body))
  t.equal(intents.get(jobId), undefined, 'the intent is gone: the contract refused, nothing was sent')
  t.equal((await jobClientApi.get(`/credit/jobs/${jobId}`)).body.state, 'funded', 'the job is still open')
})
