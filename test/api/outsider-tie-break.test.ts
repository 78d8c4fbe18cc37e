// An outsider reading the matching rule (README "Matching", llms.txt "Rules", catalog rules.matchingOrder): among
// lenders with the same ask and reputation, the documents said the one with more available liquidity wins, while every
// lender view reports availableAtomic = min(policy, what the session wallet can pay) and the book orders by the
// policy's liquidity. The documents now say which: the policy's liquidity not lent, not the wallet-capped figure.
import t from 'tap'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: 120 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a tie on ask and reputation goes to the policy liquidity not lent, as the documents say, not the wallet-capped availableAtomic', async (t) => {
  const catalog = (await (await fetch(`${h.url}/.well-known/service.json`)).json()) as { rules: { matchingOrder: string[] } }
  t.match(catalog.rules.matchingOrder[2], /^policy liquidity not lent descending/, 'the catalog names the policy\'s liquidity')
  t.match(await (await fetch(`${h.url}/llms.txt`)).text(), /ties: reputationBps descending, then policy liquidity not lent descending/)

  const funded = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const claimed = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(10_000), walletAtomic: usdc(100) })
  const available = async (address: string) => BigInt((await funded.client.get(`/lenders/${address}/wallet`)).body.activity.availableAtomic)
  t.ok((await available(funded.account.address)) > (await available(claimed.account.address)), 'the funded lender shows more available')
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_tie', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_tie', usdc(50), usdc(5)))
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  t.equal(match.body.lease?.lender, claimed.account.address, 'the lender with more policy liquidity not lent is leased (its wallet covers the amount)')
})
