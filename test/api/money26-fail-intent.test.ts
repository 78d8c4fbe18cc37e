// money26 (A): a client's POST /credit/jobs/{jobId}/fail whose failJob is mined and never recorded by its request (here
// a SIGKILL between the two: the service runs as its own process, mining is paused while its failJob waits in the
// pool, the process is killed there, the block mined, the service started again). Before (outsider23's
// kill-during-end.ts), the operator repair recorded the failure with reason failed_on_chain, the client's reason and
// note lost, and the client's retry of the same request answered 409 job_not_open. Now the request stores its intent
// (reason, note hash, caller) durably before the failJob is sent: the repair records the client's reason, and the retry
// answers the failure as recorded (200, the passport event, the same signed entry); a /fail with another reason is
// still 409 (another request: the job failed already).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { failureNoteHash } from '../../src/engine/jobs.ts'
import { killAllServices, removeDir, startService, writeServiceFiles } from '../persistence/fixtures/child-service.ts'
import { creditRequest, fundedAccount, tempDataDir, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(async () => {
  killAllServices()
  await devnet.stop()
})
const network = devnet.networks[0] as (typeof devnet.networks)[number]

const signedIn = async (url: string, account: ReturnType<typeof privateKeyToAccount>) => {
  const client = new CreditClient(url)
  await client.signIn(account)
  return client
}

t.test('a failure mined and never recorded keeps the client\'s reason, and the client\'s retry answers it as recorded', async (t) => {
  const dataDir = tempDataDir()
  const files = writeServiceFiles(devnet.accounts, devnet.networks, { operatorRepairIntervalMs: 500 })
  t.teardown(() => {
    removeDir(dataDir)
    removeDir(files.dir)
  })
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0' }
  const anvil = createTestClient({ chain: networkChain(network), transport: http(network.rpcUrl), mode: 'anvil' })
  let service = await startService(env)

  // A lender, over HTTP only, and a job with one advance.
  const lenderAccount = await fundedAccount(devnet, network, usdc(1000))
  const lender = await signedIn(service.url, lenderAccount)
  const reg = await lender.post('/lenders/register', { availableLiquidityAtomic: usdc(1000).toString(), asset: USDC, networks: [network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 86400, acceptedRiskBands: ['A', 'B', 'C'] })
  t.equal(reg.status, 201)
  const session = privateKeyToAccount(reg.body.sessionKey.privateKey)
  const owner = new ChainAgent(network, lenderAccount)
  await owner.sendGas(session.address, 10n ** 18n)
  await owner.transferToken(USDC, session.address, usdc(1000))
  for (const tx of reg.body.setupTransactions) if (tx.network === network.slug) await new ChainAgent(network, session).sendUnsigned(tx)
  const jobId = 'job_m26_fail_intent'
  const borrower = await fundedAccount(devnet, network, 0n)
  const jobClient = await fundedAccount(devnet, network, usdc(300))
  const fundingTx = await new ChainAgent(network, jobClient).fundJob(jobId, USDC, usdc(300), borrower.address)
  const borrowerApi = await signedIn(service.url, borrower)
  const job = await borrowerApi.post('/credit/jobs', { jobId, network: network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(300).toString(), dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: fundingTx })
  t.equal(job.status, 201)
  let offerId = ''
  await until(async () => {
    const decision = await borrowerApi.post('/credit/request', creditRequest({ network } as unknown as Harness, borrower.address, jobId, usdc(50), usdc(3)))
    offerId = decision.body.offer?.offerId
    return (await borrowerApi.post('/credit/match', { offerId })).body.lease?.lender === lenderAccount.address
  }, 20_000, 'the lender leased')
  const action = ((await lender.get(`/lenders/${lenderAccount.address}/actions`)).body as any[]).find((a) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
  const paid = await new ChainAgent(network, session).sendUnsigned(action.transaction)
  const advance = await lender.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lenderAccount.address, supplierPaymentId: paid })
  t.equal(advance.status, 200)

  // The client fails the job; its failJob waits in the pool and the service is killed there.
  const note = 'the goods never arrived'
  const failure = { reason: 'not_delivered', note }
  let clientApi = await signedIn(service.url, jobClient)
  const pending = async () => Number(((await anvil.request({ method: 'txpool_status' } as never)) as { pending: string }).pending)
  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  try {
    let answered = false
    void clientApi.post(`/credit/jobs/${jobId}/fail`, failure, { idempotencyKey: 'm26-fail' }).then(() => (answered = true), () => undefined)
    await until(async () => answered || (await pending()) >= 1, 20_000, 'the failJob in the pool')
    t.equal(answered, false, 'killed before the failure was answered')
    await service.stop('SIGKILL')
    await anvil.mine({ blocks: 1 })
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }

  service = await startService(env)
  clientApi = await signedIn(service.url, jobClient)
  await until(async () => (await clientApi.get(`/credit/jobs/${jobId}`)).body.failureReason !== null, 30_000, 'the repair recorded the failure')
  const recorded = (await clientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(recorded.failureReason, 'not_delivered', 'the client\'s reason, not failed_on_chain')
  t.equal(recorded.failureNoteHash, failureNoteHash(note), 'and its note\'s hash')
  const passport = (await clientApi.get(`/passport/${borrower.address}`)).body as any[]
  const entries = passport.filter((e) => e.kind === 'job_failed')
  t.equal(entries.length, 1, 'one job_failed entry')
  t.match(JSON.parse(entries[0].details), { jobId, reason: 'not_delivered', noteHash: failureNoteHash(note), defaultedAdvanceIds: [advance.body.advanceId] })

  // The client retries the same request (same key: the kill lost its answer): the failure as recorded.
  const retried = await clientApi.post(`/credit/jobs/${jobId}/fail`, failure, { idempotencyKey: 'm26-fail' })
  t.equal(retried.status, 200, JSON.stringify(retried.body))
  t.match(retried.body, { type: 'job_failed', jobId, reason: 'not_delivered', noteHash: failureNoteHash(note), borrower: borrower.address, defaultedAdvanceIds: [advance.body.advanceId], borrowerSuspended: true })
  t.same(retried.body.signed, entries[0], 'the signed passport entry, as the passport holds it')
  const unkeyed = await clientApi.post(`/credit/jobs/${jobId}/fail`, failure)
  t.equal(unkeyed.status, 200, 'without the key too: the same request')
  t.equal(unkeyed.body.signed.hash, entries[0].hash)
  // Another request (another reason, or another note) is not answered by it: the job failed already.
  t.equal((await clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })).status, 409, 'another reason: 409')
  t.equal((await clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 409, 'without the note: another request')
  t.equal((await borrowerApi.post(`/credit/jobs/${jobId}/fail`, failure).catch(() => ({ status: 0 }))).status !== 200, true, 'the borrower is not answered it')
  t.equal(((await clientApi.get(`/passport/${borrower.address}`)).body as any[]).filter((e) => e.kind === 'job_failed').length, 1, 'still one entry')
  await service.stop('SIGKILL')
})
