// money26 (A): a client's POST /credit/jobs/{jobId}/fail whose failJob is mined and never recorded by its request (here
// a SIGKILL between the two: the service runs as its own process, mining is paused while its failJob waits in the
// pool, the process is killed there, the block mined, the service started again). Before (outsider23's
// kill-during-end.ts), the operator repair recorded the failure with reason failed_on_chain, the client's reason and
// note lost, and the client's retry of the same request answered 409 job_not_open. Now the request stores its intent
// (reason, note hash, caller) durably before the failJob is sent: the repair records the client's reason, and the retry
// answers the failure as recorded (200, the passport event, the same signed entry); a /fail with another reason is
// still 409 (another request: the job failed already).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { sendFailJob } from '../../src/chain/operator.ts'
import { failureNoteHash } from '../../src/engine/jobs.ts'
import { killAllServices, killWithTransactionInPool, removeDir, startService, writeServiceFiles } from '../persistence/fixtures/child-service.ts'
import { fundedJob, readyLender, signedIn, startHarness, tempDataDir, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(async () => {
  killAllServices()
  await devnet.stop()
})
const network = devnet.networks[0] as (typeof devnet.networks)[number]

t.test('a failure mined and never recorded keeps the client\'s reason, and the client\'s retry answers it as recorded', async (t) => {
  const dataDir = tempDataDir()
  const files = writeServiceFiles(devnet.accounts, devnet.networks, { operatorRepairIntervalMs: 500 })
  t.teardown(() => {
    removeDir(dataDir)
    removeDir(files.dir)
  })
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0' }
  let service = await startService(env)

  // A lender, over HTTP only, and a job with one advance (the lease once the service's watcher sees the lender funded).
  const h = { devnet, network, url: service.url } as Harness
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_m26_fail_intent'
  const { borrower, borrowerClient: borrowerApi, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300) })
  let advanceId = ''
  await until(async () => {
    const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient: borrowerApi, lender, source: jobId, amountAtomic: usdc(50), maximumFeeAtomic: usdc(3) }).catch(() => undefined)
    advanceId = funded?.advance.advanceId ?? ''
    return funded !== undefined
  }, 20_000, 'the lender leased and paid')

  // The client fails the job; its failJob waits in the pool and the service is killed there.
  const note = 'the goods never arrived'
  const failure = { reason: 'not_delivered', note }
  let clientApi = await signedIn(service.url, jobClient)
  const answered = await killWithTransactionInPool(service, network, () => clientApi.post(`/credit/jobs/${jobId}/fail`, failure, { idempotencyKey: 'm26-fail' }))
  t.equal(answered, false, 'killed before the failure was answered, its failJob mined')

  service = await startService(env)
  clientApi = await signedIn(service.url, jobClient)
  await until(async () => (await clientApi.get(`/credit/jobs/${jobId}`)).body.failureReason !== null, 30_000, 'the repair recorded the failure')
  const recorded = (await clientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(recorded.failureReason, 'not_delivered', 'the client\'s reason, not failed_on_chain')
  t.equal(recorded.failureNoteHash, failureNoteHash(note), 'and its note\'s hash')
  const passport = (await clientApi.get(`/passport/${borrower.address}`)).body as any[]
  const entries = passport.filter((e) => e.kind === 'job_failed')
  t.equal(entries.length, 1, 'one job_failed entry')
  t.match(JSON.parse(entries[0].details), { jobId, reason: 'not_delivered', noteHash: failureNoteHash(note), defaultedAdvanceIds: [advanceId] })

  // The client retries the same request (same key: the kill lost its answer): the failure as recorded.
  const retried = await clientApi.post(`/credit/jobs/${jobId}/fail`, failure, { idempotencyKey: 'm26-fail' })
  t.equal(retried.status, 200, JSON.stringify(retried.body))
  t.match(retried.body, { type: 'job_failed', jobId, reason: 'not_delivered', noteHash: failureNoteHash(note), borrower: borrower.address, defaultedAdvanceIds: [advanceId], borrowerSuspended: true })
  t.same(retried.body.signed, entries[0], 'the signed passport entry, as the passport holds it')
  const unkeyed = await clientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.equal(unkeyed.status, 200, 'without the key too: the same request')
  t.equal(unkeyed.body.signed.hash, entries[0].hash)
  // Another request (another reason, or another note) is not answered by it: the job failed already.
  t.equal((await clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })).status, 409, 'another reason: 409')
  t.equal((await clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 409, 'without the note: another request')
  t.equal((await (await signedIn(service.url, borrower)).post(`/credit/jobs/${jobId}/fail`, failure)).status, 403, 'the borrower is not answered it')
  t.equal(((await clientApi.get(`/passport/${borrower.address}`)).body as any[]).filter((e) => e.kind === 'job_failed').length, 1, 'still one entry')
  await service.stop('SIGKILL')
})

t.test('a /fail answered and sent again answers the same failure; its intent is gone with the record', async (t) => {
  const h = await startHarness({ devnet })
  t.teardown(() => h.stop())
  const jobId = 'job_m26_fail_again'
  const { jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const failure = { reason: 'defective', note: 'broken on arrival' }
  const first = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.equal(first.status, 200)
  const intents = h.app.service.store.collection('failure-intents', { version: 1 })
  t.equal([...intents.iterate()].length, 0, 'no intent left once the failure is recorded')
  // The answer lost (a client that timed out): the same request again is answered the same, nothing recorded twice.
  const again = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.equal(again.status, 200)
  t.same(again.body, first.body, 'the same passport event and signed entry')
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })).status, 409, 'another request: the job failed already')
  const operator = await signedIn(h.url, privateKeyToAccount(devnet.accounts.operator.privateKey))
  t.equal((await operator.post(`/credit/jobs/${jobId}/fail`, failure)).status, 409, 'another caller\'s request too')
})

t.test('a job recorded failed_on_chain (its failJob sent by no request of the service): no /fail is answered by it', async (t) => {
  const h = await startHarness({ devnet, config: { operatorRepairIntervalMs: 500 } })
  t.teardown(() => h.stop())
  const jobId = 'job_m26_failed_on_chain'
  const { jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  await sendFailJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId) })
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason === 'failed_on_chain', 20_000, 'the repair recorded it')
  // The reserved reason is no request's: refused as before (the job is final: 409 job_closed).
  const reserved = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'failed_on_chain' })
  t.equal(reserved.status, 409)
  t.equal(reserved.body.code, 'job_closed')
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })).status, 409, 'no request of the service sent it: not answered as recorded')
})
