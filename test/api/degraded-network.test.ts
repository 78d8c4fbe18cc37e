// A network whose chain follower cannot see the chain (its RPC failing, or answering a chain behind the follower) while
// it retries, not stopped: a lease there ends only once the follower sees the chain past its deadline, and the lender
// cannot prove its payment meanwhile, so every lease made then held the lender's capacity and the borrower's offer
// until the chain was seen again. Before, POST /credit/match and dispatch went on leasing there. Now, once /health
// says the follower degraded (failing for the health hold), a match of an offer there is 503 chain_unavailable with
// Retry-After and dispatch leaves the offer waiting, nothing changed (the offer's expiry either); as soon as the
// follower reads the chain again, the same match succeeds. The same for an RPC that hangs (seen once a call of the
// follower's is unanswered for rpcStalledMs, not at its 10 s deadline) and one whose head stops advancing (a node that
// lost its peers: the head's block older than headStaleBlocks block times), which before was never seen at all.
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startApp } from '../../src/app/app.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { toNetworksFile, type NetworkConfig } from '../../src/chain/config.ts'
import { demoAccounts, startDevnet } from '../../src/chain/devnet.ts'
import { startRpcProxy } from '../chain/fixtures/rpc-proxy.ts'
import { creditRequest, devnetRoles, fundedJob, readyLender, tempDataDir, testConfig, usdc, type Harness } from '../fixtures/service.ts'
import { expectProblem, openApiDocument, until, type Json } from './fixtures/api.ts'

t.test("no lease on a network whose follower cannot see the chain: match 503 chain_unavailable, dispatch leaves the offer waiting; matched once it sees the chain again", async (t) => {
  const dir = tempDataDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const devnet = await startDevnet({ log: () => {} })
  t.teardown(() => devnet.stop())
  // Network a: no x402 facilitator of its own to configure.
  const network = devnet.networks[0] as NetworkConfig
  // The service reads the chain through a proxy the test cuts, makes hang, or makes answer as a node behind the
  // follower or one whose head stopped.
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const accounts = demoAccounts()
  process.env['TEST_DEGRADED_SIGNER_KEY'] = accounts.leaseSigner.privateKey
  process.env['TEST_DEGRADED_OPERATOR_KEY'] = accounts.operator.privateKey
  t.teardown(() => {
    delete process.env['TEST_DEGRADED_SIGNER_KEY']
    delete process.env['TEST_DEGRADED_OPERATOR_KEY']
  })
  const file = join(dir, 'networks.json')
  const keys = { leaseSignerKeyEnv: 'TEST_DEGRADED_SIGNER_KEY', operatorKeyEnv: 'TEST_DEGRADED_OPERATOR_KEY' }
  // The devnet mines a block a second: a head older than 3 of them (4 s with the slack) is taken as stopped. A call of
  // the follower unanswered for 1 s (not the default 2 s) counts as failing: the hanging RPC below is seen sooner. /health
  // holds each state half a second (not the default 1 s): each case below waits for the hold twice.
  const entries = toNetworksFile([{ ...network, rpcUrl: proxy.url, headStaleBlocks: 3, rpcStalledMs: 1_000, healthHoldMs: 500 }]).networks.map((n) => ({ ...n, ...keys }))
  writeFileSync(file, JSON.stringify({ networks: entries }))
  const app = await startApp(
    testConfig(join(dir, 'data'), {
      networksFile: file,
      ...devnetRoles(accounts),
    }),
    { validateResponses: true },
  )
  t.teardown(() => app.stop())
  // The fixtures' helpers fund on the devnet's own RPC and register through the service.
  const h = { devnet, network, url: app.url, app } as unknown as Harness

  // A lender that could take the offers, registered while the chain is seen (its registration reads the chain).
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1_000) })
  const waitingOffer = async (jobId: string): Promise<{ borrowerClient: CreditClient; offer: Json }> => {
    const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
    const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(5)))
    t.equal(decision.body.decision, 'approved', `${jobId}: approved`)
    return { borrowerClient, offer: decision.body.offer }
  }
  const follower = async (): Promise<Json> => ((await (await fetch(`${app.url}/health`)).json()) as { networks: { follower: Json }[] }).networks[0]?.follower as Json
  const document = await openApiDocument(app.url)
  const dispatcher = lender.client

  /** Checks that nothing is leased while /health says the follower degraded; returns what /health said first. */
  const unseen = async (what: string, borrowerClient: CreditClient, offer: Json): Promise<Json> => {
    let health: Json = {}
    await until(async () => (health = await follower())['state'] === 'degraded', 30_000, `${what}: /health says the follower degraded`)
    const liveLeases = app.service.engine.creditState().counts.liveLeases
    const waits = async (after: string) => {
      const read = await borrowerClient.get(`/credit/offers/${offer['offerId']}`)
      t.equal(read.status, 200, `${what}, ${after}: the offer is read`)
      t.match(read.body, { state: 'offered', currentLeaseId: null, leaseIds: [], expiresAt: offer['expiresAt'] }, `${what}, ${after}: the offer waits, its expiry unchanged`)
      t.equal(app.service.engine.creditState().counts.liveLeases, liveLeases, `${what}, ${after}: no lease holds the lender`)
    }
    t.equal((await dispatcher.post('/credit/dispatch', {})).status, 200, `${what}: dispatch runs`)
    await waits('dispatch')
    const match = await borrowerClient.post('/credit/match', { offerId: offer['offerId'] })
    const body = expectProblem(t, match, 503, 'chain_unavailable', `${what}: a match of an offer on it`)
    t.match(body['detail'], /not observed[\s\S]*retry/, `${what}: says why, and to retry`)
    t.ok(Number(match.headers.get('retry-after')) >= 1, `${what}: with Retry-After`)
    t.match(document['paths']['/credit/match']['post']['responses']['503']['description'], /chain_unavailable[\s\S]*Retry-After/, 'the OpenAPI document says so')
    await waits('a match')
    return health
  }
  const seenAgain = async (what: string, borrowerClient: CreditClient, offer: Json) => {
    let match = await borrowerClient.post('/credit/match', { offerId: offer['offerId'] })
    await until(async () => {
      if (match.status === 503) match = await borrowerClient.post('/credit/match', { offerId: offer['offerId'] })
      return match.status !== 503
    }, 30_000, `${what}: the match answered once the follower reads the chain`)
    t.equal(match.status, 200, `${what}: matched`, { body: match.body })
    t.equal(match.body.lease?.lender, lender.account.address, `${what}: leased to the lender`)
    // /health says ok again once the follower has followed for the hold (matching did not wait for it).
    await until(async () => (await follower())['state'] === 'ok', 30_000, `${what}: /health says the follower ok`)
  }

  // The RPC fails: every call answered 503.
  const first = await waitingOffer('job_rpc_down')
  proxy.setMode('down')
  await unseen('the RPC down', first.borrowerClient, first.offer)
  proxy.setMode('forward')
  await seenAgain('the RPC back', first.borrowerClient, first.offer)

  // The RPC answers as a node that has not seen the follower's last blocks (a head below its cursor): waited for.
  const second = await waitingOffer('job_rpc_behind')
  const cursor = BigInt((await follower())['block'] as string)
  proxy.setLagging({ head: cursor - 2n, headToo: true })
  await unseen('the RPC behind the follower', second.borrowerClient, second.offer)
  proxy.setLagging(undefined)
  await seenAgain('the RPC caught up', second.borrowerClient, second.offer)
  t.equal((await follower())['state'] === 'stopped', false, 'the follower waited for the node: never stopped')

  // The RPC hangs: calls accepted and never answered (its head still answered by another node): seen while the
  // follower's call is still unanswered, before its 10 s deadline.
  const third = await waitingOffer('job_rpc_hangs')
  proxy.setHanging({ headToo: false })
  const hanging = await unseen('the RPC hanging', third.borrowerClient, third.offer)
  t.match(hanging['error'], /has not answered a call of the chain follower for 1000 ms/, 'seen as a call unanswered for rpcStalledMs, not at its deadline')
  proxy.setHanging(undefined)
  await seenAgain('the RPC answering again', third.borrowerClient, third.offer)

  // The RPC's head stops where it is (its node lost its peers): the follower is at it, nothing fails, but the chain
  // it sees does not move, and no payment or deadline after it would be seen.
  const fourth = await waitingOffer('job_rpc_stale')
  const head = BigInt(((await (await fetch(network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }) })).json()) as { result: string }).result)
  proxy.setLagging({ head, headToo: true })
  const stale = await unseen('the RPC\'s head stopped', fourth.borrowerClient, fourth.offer)
  t.match(stale['error'], new RegExp(`block ${head}, was mined \\d+ s ago .* does not move`), 'seen as a stale head')
  proxy.setLagging(undefined)
  await seenAgain('the head moving again', fourth.borrowerClient, fourth.offer)
})
