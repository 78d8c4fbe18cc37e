// Registration naming an ERC-8004 agent, over HTTP (issue 13): verified on chain before the engine command, the
// initial reputation from trusted feedback, refusals that record nothing, the link ending after a transfer, and
// matching order following reputation (the tie-breaker after the ask).
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditClient } from '../../src/client/client.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectProblem } from '../api/fixtures/api.ts'
import { registries } from './fixtures/erc8004.ts'

const trusted = privateKeyToAccount(generatePrivateKey())
const untrusted = privateKeyToAccount(generatePrivateKey())
// A chain-read budget small enough that one wallet's burst of re-checks outruns its share's refill (the last test).
const h = await startHarness({ config: { chainReadsPerSecond: 50, chainReadsBurst: 100, reputation: { trustedClients: [trusted.address], priorWeight: 5, halfLifeSeconds: undefined, feedbackFromBlock: 0n, linkRecheckIntervalMs: 0 } } })
t.teardown(() => h.stop())
const reg = registries(h.network)
const { fund } = await import('../fixtures/service.ts')
const gas = (address: `0x${string}`) => fund(h.devnet, h.network, address, 0n)
await gas(trusted.address)
await gas(untrusted.address)

const policy = { asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'] }
const agentRef = (agentId: bigint) => ({ network: h.network.slug, registry: h.network.identityRegistry, agentId: agentId.toString() })

t.test('refusals: a stranger, an unknown agent, another registry; nothing recorded', async (t) => {
  const owner = await fundedAccount(h.devnet, h.network, 0n)
  const agentId = await reg.register(owner)
  const stranger = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, stranger)
  const body = { ...policy, availableLiquidityAtomic: usdc(100).toString() }
  expectProblem(t, await client.post('/lenders/register', { ...body, agent: agentRef(agentId) }), 403, 'agent_not_controlled')
  expectProblem(t, await client.post('/lenders/register', { ...body, agent: agentRef(10_000n) }), 422, 'agent_not_found')
  expectProblem(t, await client.post('/lenders/register', { ...body, agent: { ...agentRef(agentId), registry: h.network.reputationRegistry } }), 422, 'agent_registry_unknown')
  expectProblem(t, await client.post('/lenders/register', { ...body, agent: { ...agentRef(agentId), network: 'nowhere' } }), 400, 'unknown_network')
  expectProblem(t, await client.post('/lenders/register', { ...body, agent: { ...agentRef(agentId), agentId: '-1' } }), 400, 'validation_failed')
  t.equal(h.app.service.engine.getLender(stranger.address), undefined, 'no lender recorded')
  expectProblem(t, await new CreditClient(h.url).get(`/lenders/${stranger.address}/agent`), 404, 'agent_link_not_found')
})

t.test('reputation from the agent orders matching; after a transfer the evidence no longer counts', async (t) => {
  // A: no agent, more liquidity, registered first: without reputation it would win every tie.
  const plain = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  t.equal(h.app.service.engine.getLender(plain.account.address)?.reputationBps, 5000, 'no agent: neutral')

  // B: an agent with three perfect feedbacks from the trusted client and bad ones from an untrusted one.
  const b = await fundedAccount(h.devnet, h.network, usdc(500))
  const agentId = await reg.register(b)
  for (let i = 0; i < 3; i++) await reg.giveFeedback(trusted, agentId, 100n)
  await reg.giveFeedback(untrusted, agentId, 0n)
  const bClient = await signedIn(h.url, b)
  const registered = await bClient.post('/lenders/register', { ...policy, availableLiquidityAtomic: usdc(500).toString(), agent: agentRef(agentId) })
  t.equal(registered.status, 201, JSON.stringify(registered.body))
  // (5 x 5000 + 3 x 10000) / 8
  t.equal(registered.body.lender.reputationBps, 6875, 'initial reputation from the trusted feedback only')
  const link = await new CreditClient(h.url).get(`/lenders/${b.address}/agent`)
  t.equal(link.status, 200)
  t.match(link.body, { lender: b.address, agent: agentRef(agentId), role: 'agent_wallet', feedbackCount: 3, offsetBps: 1875, active: true, endedAt: null, reputationBps: 6875 })

  // A second lender cannot reuse the same agent's evidence, even as an approved operator.
  const operator = await fundedAccount(h.devnet, h.network, 0n)
  await reg.approveOperator(b, operator.address)
  const opClient = await signedIn(h.url, operator)
  expectProblem(t, await opClient.post('/lenders/register', { ...policy, availableLiquidityAtomic: usdc(100).toString(), agent: agentRef(agentId) }), 409, 'agent_already_linked')

  // Fund B's session wallet as readyLender does.
  const { ChainAgent } = await import('../../src/client/chain.ts')
  const session = privateKeyToAccount(registered.body.sessionKey.privateKey)
  const owner = new ChainAgent(h.network, b)
  await owner.sendGas(session.address, 10n ** 18n)
  await owner.transferToken(USDC, session.address, usdc(500))
  for (const tx of registered.body.setupTransactions) await new ChainAgent(h.network, session).sendUnsigned(tx)
  await h.app.service.watcher.waitFor(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, session.address) === usdc(500), 10_000)

  const matchOne = async (jobId: string) => {
    const job = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
    const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(10), usdc(5)))
    const match = await job.borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
    return match.body.lease?.lender as string
  }
  t.equal(await matchOne('job_rep_1'), b.address, 'same ask: the higher reputation wins over more liquidity and earlier registration')

  // The agent moves to a buyer; the buyer has the link re-checked at once.
  const buyer = await fundedAccount(h.devnet, h.network, 0n)
  await reg.transfer(b, agentId, buyer.address)
  const buyerClient = await signedIn(h.url, buyer)
  const rechecked = await buyerClient.post(`/lenders/${b.address}/agent/recheck`, {})
  t.equal(rechecked.status, 200, JSON.stringify(rechecked.body))
  t.match(rechecked.body, { active: false, reputationBps: 5000 })
  t.type(rechecked.body.endedAt, 'string')
  t.equal(h.app.service.engine.getLender(b.address)?.reputationBps, 5000, 'the evidence\'s offset taken back')
  t.equal(await matchOne('job_rep_2'), plain.account.address, 'with equal reputation, liquidity decides again: the order changed')

  // Ended is durable and final: a restart reads it back, and the agent may now back its new holder.
  await h.restart()
  const after = await new CreditClient(h.url).get(`/lenders/${b.address}/agent`)
  t.match(after.body, { active: false, reputationBps: 5000 })
  const buyerAgain = await signedIn(h.url, buyer)
  const mine = await buyerAgain.post('/lenders/register', { ...policy, availableLiquidityAtomic: usdc(100).toString(), agent: agentRef(agentId) })
  t.equal(mine.status, 201, 'the new owner may link it')
  t.equal(mine.body.lender.reputationBps, 6875)
})

t.test('re-checks are chain reads from the caller\'s share of the budget: past it 503 chain_reads_exhausted, the link unchanged', async (t) => {
  const lender = await fundedAccount(h.devnet, h.network, 0n)
  const agentId = await reg.register(lender)
  const registered = await (await signedIn(h.url, lender)).post('/lenders/register', { ...policy, availableLiquidityAtomic: usdc(100).toString(), agent: agentRef(agentId) })
  t.equal(registered.status, 201, JSON.stringify(registered.body))
  const { checkedAt: checkedBefore, ...before } = (await new CreditClient(h.url).get(`/lenders/${lender.address}/agent`)).body
  t.equal(checkedBefore, null, 'not re-checked yet')

  // A fresh wallet asks for more re-checks at once than its share of the network's chain reads.
  const share = Math.floor(h.app.service.config.chainReadsBurst / WALLET_SHARE_DIVISOR)
  const stranger = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const replies = await Promise.all(Array.from({ length: share + 10 }, () => stranger.post(`/lenders/${lender.address}/agent/recheck`, {})))
  const refused = replies.filter((r) => r.status !== 200)
  t.ok(refused.length > 0, `some of ${replies.length} re-checks past a share of ${share} were refused`)
  for (const r of refused) {
    expectProblem(t, r, 503, 'chain_reads_exhausted', 'past the share')
    t.match(r.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
  }
  // The re-checks within the share found the lender still in control: only the time it was last seen so changed.
  const { checkedAt, ...after } = (await new CreditClient(h.url).get(`/lenders/${lender.address}/agent`)).body
  t.same(after, before, 'the link unchanged')
  t.type(checkedAt, 'string', 'the re-checks within the share were read')
})
