// outsider23: SIGKILL between an operator transaction and its record. The service runs as its own process; a job with
// one advance; its client asks POST /fail (or, with O23_MODE=complete, POST /complete), with an Idempotency-Key, while
// the devnet's mining is paused, so the service's failJob (settleJob) waits in the pool; the process is killed there,
// the transaction mined, the service started again (operator repairs every 500 ms). Then the client sends the same
// request again (same key). Checks: the job ended once (one job_failed, or one advance_repaid, in the passport), the
// advance defaulted (repaid), the reconciliation clean, the health ok; after a failure the lender's liquidation
// works. Holds in both modes (exit 0): the repair records the mined transaction and the retry answers 409 job_not_open
// (job_closed) after a completion; after a failure (since money26) the repair records the client's reason (`late`,
// from the request's stored intent; before, failed_on_chain) and the retry answers the failure as recorded (200).
// O23_MODE=pay: the service is killed with a lease live, the lender pays meanwhile and the chain passes the lease's
// deadline before the restart: the payment counts (offer funded, the late report answers the advance, the lender's
// leasesExpired 0). Holds too.
// node --import tsx test/api/outsider23-scripts/kill-during-end.ts
import { createTestClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../../src/chain/devnet.ts'
import { ChainAgent } from '../../../src/client/chain.ts'
import { CreditClient } from '../../../src/client/client.ts'
import { killAllServices, killWithTransactionInPool, removeDir, startService, writeServiceFiles } from '../../persistence/fixtures/child-service.ts'
import { creditRequest, fundedAccount, tempDataDir, usdc, USDC, type Harness } from '../../fixtures/service.ts'
import { until } from '../fixtures/api.ts'

const MODE = process.env['O23_MODE'] === 'complete' || process.env['O23_MODE'] === 'pay' ? process.env['O23_MODE'] : 'fail'
const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
const network = devnet.networks[0] as (typeof devnet.networks)[number]
const dataDir = tempDataDir()
const files = writeServiceFiles(devnet.accounts, devnet.networks, { operatorRepairIntervalMs: 500 })
const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0' }
const anvil = createTestClient({ chain: networkChain(network), transport: http(network.rpcUrl), mode: 'anvil' })
let bad = 0
const fail = (what: string, detail: unknown) => {
  bad++
  console.log('DIFFERENCE:', what, JSON.stringify(detail))
}
const signedIn = async (url: string, account: ReturnType<typeof privateKeyToAccount>) => {
  const client = new CreditClient(url)
  await client.signIn(account)
  return client
}
let service = await startService(env)
try {
  // A lender as an agent sets one up, over HTTP only.
  const lenderAccount = await fundedAccount(devnet, network, usdc(1000))
  let lender = await signedIn(service.url, lenderAccount)
  const reg = await lender.post('/lenders/register', { availableLiquidityAtomic: usdc(1000).toString(), asset: USDC, networks: [network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 86400, acceptedRiskBands: ['A', 'B', 'C'] })
  if (reg.status !== 201) throw new Error(JSON.stringify(reg.body))
  const session = privateKeyToAccount(reg.body.sessionKey.privateKey)
  const owner = new ChainAgent(network, lenderAccount)
  await owner.sendGas(session.address, 10n ** 18n)
  await owner.transferToken(USDC, session.address, usdc(1000))
  for (const tx of reg.body.setupTransactions) if (tx.network === network.slug) await new ChainAgent(network, session).sendUnsigned(tx)

  const jobId = 'job_o23_kill_fail'
  const borrower = await fundedAccount(devnet, network, 0n)
  const jobClient = await fundedAccount(devnet, network, usdc(300))
  const fundingTx = await new ChainAgent(network, jobClient).fundJob(jobId, USDC, usdc(300), borrower.address)
  let borrowerApi = await signedIn(service.url, borrower)
  const job = await borrowerApi.post('/credit/jobs', { jobId, network: network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(300).toString(), dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: fundingTx })
  if (job.status !== 201) throw new Error(JSON.stringify(job.body))
  const h = { network } as unknown as Harness
  let offerId = ''
  await until(async () => {
    const decision = await borrowerApi.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(50), usdc(3)))
    if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
    offerId = decision.body.offer.offerId
    const match = await borrowerApi.post('/credit/match', { offerId })
    return match.body.lease?.lender === lenderAccount.address
  }, 20_000, 'the lender leased')
  const actions = (await lender.get(`/lenders/${lenderAccount.address}/actions`)).body as any[]
  const action = actions.find((a) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
  if (MODE === 'pay') {
    // The service is killed with the lease live; the lender pays meanwhile, then the chain passes the lease's deadline
    // (and its TTL) before the service is back.
    await service.stop('SIGKILL')
    const paid = await new ChainAgent(network, session).sendUnsigned(action.transaction)
    await anvil.increaseTime({ seconds: 3600 })
    await anvil.mine({ blocks: 1 })
    service = await startService(env)
    const reader = await signedIn(service.url, lenderAccount)
    await until(async () => (await reader.get(`/credit/offers/${offerId}`)).body.state !== 'leased', 20_000, 'the offer to leave leased')
    const offer = (await reader.get(`/credit/offers/${offerId}`)).body
    const late = await reader.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lenderAccount.address, supplierPaymentId: paid })
    const lenderView = ((await reader.get('/lenders')).body as any[]).find((l) => l.address === lenderAccount.address)
    console.log('after the restart: offer', offer.state, offer.endReason ?? '', '| late report', late.status, late.body.code ?? late.body.advanceId, '| lender', JSON.stringify({ paid: lenderView.leasesPaid, expired: lenderView.leasesExpired, reliabilityBps: lenderView.reliabilityBps }))
    if (offer.state !== 'funded' || late.status !== 200 || lenderView.leasesExpired !== 0 || lenderView.leasesPaid !== 1) fail('a payment mined in time while the service was down', { offer: offer.state, late: late.status, lenderView })
    const operator = await signedIn(service.url, privateKeyToAccount(devnet.accounts.operator.privateKey))
    const differences = (await operator.post('/operator/reconcile', { network: network.slug })).body.networks?.[0]?.differences
    console.log('reconciliation differences', JSON.stringify(differences))
    if ((differences ?? [1]).length !== 0) fail('reconciliation', differences)
  } else {
    const paymentTx = await new ChainAgent(network, session).sendUnsigned(action.transaction)
    const advance = await lender.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lenderAccount.address, supplierPaymentId: paymentTx })
    if (advance.status !== 200) throw new Error(JSON.stringify(advance.body))
    console.log('advance', advance.body.advanceId, advance.body.state)

    let clientApi = await signedIn(service.url, jobClient)
    const end = (api: CreditClient) => MODE === 'fail'
      ? api.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' }, { idempotencyKey: 'o23-end' })
      : api.post(`/credit/jobs/${jobId}/complete`, {}, { idempotencyKey: 'o23-end' })
    const answered = await killWithTransactionInPool(service, network, () => end(clientApi).then((r) => console.log('first fail answered', r.status, r.body.code ?? '')))
    console.log('answered before the kill:', answered)
    service = await startService(env)
    clientApi = await signedIn(service.url, jobClient)
    borrowerApi = await signedIn(service.url, borrower)
    lender = await signedIn(service.url, lenderAccount)
    const retried = await end(clientApi)
    console.log('retry after the restart:', retried.status, retried.body.code ?? '', retried.body.reason ?? '')
    await until(async () => (await clientApi.get(`/credit/jobs/${jobId}`)).body.state !== 'active' && (await clientApi.get(`/credit/jobs/${jobId}`)).body.state !== 'funded', 20_000, 'the job ended')
    const again = await end(clientApi)
    console.log('the same key again:', again.status, again.headers.get('idempotent-replayed') ?? '', again.body.code ?? '')
    const jobView = (await clientApi.get(`/credit/jobs/${jobId}`)).body
    const adv = (await clientApi.get(`/credit/advances/${advance.body.advanceId}`)).body
    console.log('job', jobView.state, jobView.failureReason, '| advance', adv.state)
    if (adv.state !== (MODE === 'fail' ? 'defaulted' : 'repaid')) fail('advance state', adv.state)
    const passport = (await clientApi.get(`/passport/${borrower.address}`)).body as Array<{ kind: string; details: any }>
    console.log('passport', passport.map((e) => e.kind).join(', '))
    const endKind = MODE === 'fail' ? 'job_failed' : 'advance_repaid'
    if (passport.filter((e) => e.kind === endKind).length !== 1) fail(`${endKind} entries`, passport.map((e) => e.kind))
    const lenderView = ((await clientApi.get('/lenders')).body as any[]).find((l) => l.address === lenderAccount.address)
    console.log('lender', JSON.stringify(lenderView))
    const operator = await signedIn(service.url, privateKeyToAccount(devnet.accounts.operator.privateKey))
    const reconciled = await operator.post('/operator/reconcile', { network: network.slug })
    console.log('reconciliation differences', JSON.stringify(reconciled.body.networks?.[0]?.differences))
    if ((reconciled.body.networks?.[0]?.differences ?? [1]).length !== 0) fail('reconciliation', reconciled.body)
    const health = (await operator.get('/health')).body
    console.log('health', health.status)
    if (health.status !== 'ok') fail('health', health)
    // The lender liquidates the defaulted advance after the restart.
    if (MODE === 'fail') {
    const liquidated = await lender.post(`/credit/advances/${advance.body.advanceId}/liquidate`, {})
    console.log('liquidation', liquidated.status, liquidated.body.code ?? '', liquidated.body.shortfallAtomic ?? '')
    if (liquidated.status !== 200) fail('liquidation after the restart', liquidated.body)
    }
  }
} finally {
  await service.stop('SIGKILL').catch(() => undefined)
  killAllServices()
  await devnet.stop()
  removeDir(dataDir)
  removeDir(files.dir)
}
console.log(bad === 0 ? 'no difference found' : `${bad} difference(s)`)
process.exit(bad === 0 ? 0 : 1)
