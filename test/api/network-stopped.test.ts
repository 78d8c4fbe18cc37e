// A network whose chain follower stopped for good (here chain_replaced: its RPC now serves another chain) is refused
// clearly on every route that needs it: 503 network_stopped without Retry-After (before, 503 chain_unavailable with
// Retry-After, "retry", for ever; a credit request or a match, which read no chain, went on), and nothing changes. The
// other network, and routes that need no chain, are served as before.
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { startApp } from '../../src/app/app.ts'
import type { Reply } from '../../src/client/client.ts'
import { toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { demoAccounts, startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { creditRequest, fundedJob, signedIn, tempDataDir, testConfig, usdc, type Harness } from '../fixtures/service.ts'
import { expectProblem, openApiDocument, randomHash, until, type Json } from './fixtures/api.ts'

t.test('every route on a network whose follower stopped answers 503 network_stopped, without Retry-After; the other network is served', async (t) => {
  const dir = tempDataDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const devnet = await startDevnet({ log: () => {} })
  t.teardown(() => devnet.stop())
  const [a, b] = devnet.networks as [NetworkConfig, NetworkConfig]
  // Network b's RPC is a proxy: pointed at network a's chain later, it serves a replaced chain.
  const proxy = await startRpcProxy(b.rpcUrl)
  t.teardown(() => proxy.close())
  const accounts = demoAccounts()
  process.env['TEST_STOPPED_SIGNER_KEY'] = accounts.leaseSigner.privateKey
  process.env['TEST_STOPPED_OPERATOR_KEY'] = accounts.operator.privateKey
  t.teardown(() => {
    delete process.env['TEST_STOPPED_SIGNER_KEY']
    delete process.env['TEST_STOPPED_OPERATOR_KEY']
  })
  const file = join(dir, 'networks.json')
  const keys = { leaseSignerKeyEnv: 'TEST_STOPPED_SIGNER_KEY', operatorKeyEnv: 'TEST_STOPPED_OPERATOR_KEY' }
  writeFileSync(file, JSON.stringify({ networks: toNetworksFile([a, { ...b, rpcUrl: proxy.url }]).networks.map((n) => ({ ...n, ...keys })) }))
  const app = await startApp(
    testConfig(join(dir, 'data'), {
      networksFile: file,
      operators: [accounts.operator.address],
      attesters: [accounts.attester.address],
      suppliers: [{ domain: 'supplier.devnet', name: 'Devnet demo supplier', address: accounts.supplier.address }],
    }),
    { validateResponses: true },
  )
  t.teardown(() => app.stop())
  // The fixtures' helpers on one network: they fund on the devnet's own RPC and register through the service.
  const on = (network: NetworkConfig) => ({ devnet, network, url: app.url, app }) as unknown as Harness

  // A job and a waiting offer on network b while it is followed.
  const jobId = 'job_on_stopped_network'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(on(b), { jobId, receivableAtomic: usdc(500) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(on(b), borrower.address, jobId, usdc(100), usdc(5)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string

  // Network a's chain made longer than b's: under its head, b's follower finds its cursor's block with another hash.
  await fetch(a.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x3e8'] }) })
  proxy.setTarget(a.rpcUrl)
  const followerOf = async (slug: string): Promise<Json | undefined> =>
    ((await (await fetch(`${app.url}/health`)).json()) as { networks: { network: string; follower: Json }[] }).networks.find((n) => n.network === slug)?.follower
  await until(async () => (await followerOf(b.slug))?.['state'] === 'stopped', 30_000, "network b's follower stopped")
  t.match(await followerOf(b.slug), { state: 'stopped', error: /chain_replaced/ })

  const document = await openApiDocument(app.url)
  const stopped = (reply: Reply, template: string, what: string) => {
    const body = expectProblem(t, reply, 503, 'network_stopped', what)
    t.match(body['detail'], /chain_replaced[\s\S]*do not retry/, `${what}: says why, and not to retry`)
    t.equal(reply.headers.get('retry-after'), null, `${what}: no Retry-After`)
    t.match(document['paths'][template]['post']['responses']['503']['description'], /network_stopped/, `${what}: the OpenAPI document lists the code`)
  }
  const jobBody = {
    jobId: 'job_new_on_stopped_network', network: b.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: usdc(10).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: randomHash(),
  }
  stopped(await borrowerClient.post('/credit/jobs', jobBody), '/credit/jobs', 'a job registration naming it')
  stopped(await borrowerClient.post('/credit/request', creditRequest(on(b), borrower.address, jobId, usdc(50), usdc(5))), '/credit/request', 'a credit request naming it')
  stopped(await borrowerClient.post('/credit/match', { offerId }), '/credit/match', 'a match of an offer on it')
  stopped(await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(1).toString(), txHash: randomHash() }), '/credit/jobs/{jobId}/collateral', 'a collateral report on it')
  stopped(await jobClientApi.post(`/credit/jobs/${jobId}/complete`, {}), '/credit/jobs/{jobId}/complete', 'a completion (operator transaction) on it')
  stopped(await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' }), '/credit/jobs/{jobId}/fail', 'a failure (operator transaction) on it')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'offered', 'nothing changed: the offer still waits')
  t.equal((await borrowerClient.get(`/credit/jobs/${jobId}`)).status, 200, 'a route that reads no chain is served')

  // The operator's reconciliation still reads it: the replaced chain's stop asks for one before resuming.
  const operator = await signedIn(app.url, privateKeyToAccount(accounts.operator.privateKey))
  const reconciled = await operator.post('/operator/reconcile', { network: b.slug })
  t.equal(reconciled.status, 200, 'an operator reconciles the stopped network', { body: reconciled.body })

  // Network a: followed, and a registration on it (chain reads) succeeds.
  t.match(await followerOf(a.slug), { state: 'ok' })
  const onA = await fundedJob(on(a), { jobId: 'job_on_running_network', receivableAtomic: usdc(500) })
  t.equal(onA.job.network, a.slug, 'registered on the other network')
  const offerA = await onA.borrowerClient.post('/credit/request', creditRequest(on(a), onA.borrower.address, 'job_on_running_network', usdc(100), usdc(5)))
  t.equal(offerA.body.decision, 'approved', 'a credit request on it')
  t.equal((await onA.borrowerClient.post('/credit/match', { offerId: offerA.body.offer.offerId })).status, 200, 'and a match')
})
