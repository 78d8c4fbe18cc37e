// A network whose chain follower stopped for good (here chain_replaced: its RPC now serves another chain) is refused
// clearly on every route that needs it: 503 network_stopped without Retry-After (before, 503 chain_unavailable with
// Retry-After, "retry", for ever; a credit request or a match, which read no chain, went on), and nothing changes. The
// other network, and routes that need no chain, are served as before. So are the routes that take a payment on it
// (/credit-score, its x402 facilitator's verify and settle: nothing settled), a lender registration naming it and its
// unsigned transactions (before, served as if its chain were followed).
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { exportJWK, generateKeyPair } from 'jose'
import { startApp } from '../../src/app/app.ts'
import { CreditClient, type Reply } from '../../src/client/client.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { demoAccounts, startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { creditRequest, devnetRoles, fundedJob, readyLender, signedIn, tempDataDir, testConfig, usdc, type Harness } from '../fixtures/service.ts'
import { exactRequirements, pay } from '../x402/fixtures/payments.ts'
import { expectProblem, fundAdvance, openApiDocument, randomHash, until, type Json } from './fixtures/api.ts'

const SCORE_PRICE = 2_000n

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
  process.env['TEST_STOPPED_FACILITATOR_KEY'] = accounts.facilitator.privateKey
  t.teardown(() => {
    delete process.env['TEST_STOPPED_SIGNER_KEY']
    delete process.env['TEST_STOPPED_OPERATOR_KEY']
    delete process.env['TEST_STOPPED_FACILITATOR_KEY']
  })
  const file = join(dir, 'networks.json')
  const keys = { leaseSignerKeyEnv: 'TEST_STOPPED_SIGNER_KEY', operatorKeyEnv: 'TEST_STOPPED_OPERATOR_KEY' }
  // Network b runs its x402 facilitator, which takes /credit-score's payments.
  const facilitatorKey = (n: { x402SelfFacilitate: boolean }) => (n.x402SelfFacilitate ? { facilitatorKeyEnv: 'TEST_STOPPED_FACILITATOR_KEY' } : {})
  // A chain read's deadline a loaded CI meets through the proxy (the default 750 ms was overrun: 503 chain_unavailable
  // registering the job); what this test stops is the follower, not the RPC.
  const rpcTimeoutMs = 10_000
  writeFileSync(file, JSON.stringify({ networks: toNetworksFile([a, { ...b, rpcUrl: proxy.url }]).networks.map((n) => ({ ...n, ...keys, ...facilitatorKey(n), rpcTimeoutMs })) }))
  t.ok(b.x402SelfFacilitate, 'network b is self-facilitated')
  const app = await startApp(
    testConfig(join(dir, 'data'), {
      networksFile: file,
      ...devnetRoles(accounts),
      creditScore: { enabled: true, network: b.slug, priceAtomic: SCORE_PRICE.toString(), payTo: accounts.scorePayee.address },
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
  // An advance on network b, whose repayment transactions are asked for once it stopped.
  const lender = await readyLender(on(b), { minFeeBps: 100, liquidityAtomic: usdc(1_000) })
  const advanced = await fundedJob(on(b), { jobId: 'job_advanced_on_stopped_network', receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(on(b), { borrower: advanced.borrower.address, borrowerClient: advanced.borrowerClient, lender, source: 'job_advanced_on_stopped_network', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const advanceId = advance.advanceId as string

  // Network a's chain made longer than b's: under its head, b's follower finds its cursor's block with another hash.
  await fetch(a.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x3e8'] }) })
  proxy.setTarget(a.rpcUrl)
  const followerOf = async (slug: string): Promise<Json | undefined> =>
    ((await (await fetch(`${app.url}/health`)).json()) as { networks: { network: string; follower: Json }[] }).networks.find((n) => n.network === slug)?.follower
  await until(async () => (await followerOf(b.slug))?.['state'] === 'stopped', 30_000, "network b's follower stopped")
  t.match(await followerOf(b.slug), { state: 'stopped', error: /chain_replaced/ })

  const document = await openApiDocument(app.url)
  const stopped = (reply: Reply, template: string, what: string, method: 'get' | 'post' = 'post') => {
    const body = expectProblem(t, reply, 503, 'network_stopped', what)
    t.match(body['detail'], /chain_replaced[\s\S]*do not retry/, `${what}: says why, and not to retry`)
    t.equal(reply.headers.get('retry-after'), null, `${what}: no Retry-After`)
    t.match(document['paths'][template][method]['responses']['503']['description'], /network_stopped/, `${what}: the OpenAPI document lists the code`)
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
  const newLender = await signedIn(app.url, privateKeyToAccount(generatePrivateKey()))
  const lenderBody = { availableLiquidityAtomic: usdc(100).toString(), asset: 'USDC', networks: [a.slug, b.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'] }
  stopped(await newLender.post('/lenders/register', lenderBody), '/lenders/register', 'a lender registration (without an agent) naming it')
  t.equal((await newLender.get(`/lenders/${newLender.address}/wallet`)).status, 404, 'nothing changed: no lender registered')
  const fundingQuery = `network=${b.slug}&asset=USDC&receivableAtomic=${usdc(10)}&client=${accounts.supplier.address}&agent=${borrower.address}`
  stopped(await borrowerClient.get(`/credit/jobs/job_unfunded/funding-transactions?${fundingQuery}`), '/credit/jobs/{jobId}/funding-transactions', 'its funding transactions', 'get')
  stopped(await borrowerClient.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${usdc(1)}`), '/credit/jobs/{jobId}/collateral-transactions', 'its collateral transactions', 'get')
  stopped(await borrowerClient.get(`/credit/advances/${advanceId}/repay-transactions`), '/credit/advances/{advanceId}/repay-transactions', 'its repayment transactions', 'get')

  // Payments on it: none asked for, verified or settled (the payer's balance, read on b's own chain, is unchanged).
  const anonymous = new CreditClient(app.url)
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })
  stopped(await anonymous.post('/credit-score', { subject: borrower.address, publicKey: await exportJWK(publicKey) }), '/credit-score', 'a credit score paid on it')
  const token = b.tokens[0]?.address as Address
  const chainB = createPublicClient({ chain: networkChain(b), transport: http(b.rpcUrl) })
  const payerBalance = () => chainB.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [accounts.borrower.address] })
  const balanceBefore = await payerBalance()
  const requirements = exactRequirements({ network: b, payTo: accounts.scorePayee.address, amountAtomic: SCORE_PRICE })
  const payment = { x402Version: 2, paymentPayload: await pay(accounts.borrower.privateKey, requirements), paymentRequirements: requirements }
  const facilitator = `/x402/${b.slug}-facilitator`
  stopped(await anonymous.post(`${facilitator}/verify`, payment), `${facilitator}/verify`, 'its x402 facilitator verifying a payment')
  stopped(await anonymous.post(`${facilitator}/settle`, payment), `${facilitator}/settle`, 'its x402 facilitator settling a payment')
  t.equal(await payerBalance(), balanceBefore, 'nothing settled: the payer still holds its tokens')
  t.equal((await anonymous.get(`${facilitator}/supported`)).status, 200, 'what its facilitator serves is still said (no chain read)')

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
