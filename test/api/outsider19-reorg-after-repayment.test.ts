// An outsider's probe (outsider19): the chain takes back a repayment the service already counted. A stranger repays
// 5 USDC of a borrower's advance straight on the contract and never reports it; the chain follower counts it (the
// devnet's 1 confirmation). Then the node reorganises its last blocks (anvil_reorg, the same node and chain id, not a
// replaced one: test/api/network-stopped.test.ts replaces the chain behind a proxy) and the repayment is gone; on the
// new history the stranger repays 7 instead. The rule: the service never goes on counting on another history than
// the one it counted (README, "The chain follower": a cursor's block with another hash stops it). Its follower stops
// (chain_replaced), the network's routes answer 503 network_stopped (the vanished payment's report is not answered
// from the follower's memory of it, the new one is not counted), a restart stays stopped, the other network is
// served, and the operator's reconciliation names the advance the two histories disagree on, as the follower's error
// asks ("reconcile before resuming"). What breaking it would take: a reorganisation deeper than the confirmations
// (a validator's or a sequencer's power, or a chain's own reorg); what it would give: repayments counted that the
// chain no longer has, and the other history's own counted on top. Fails if the follower's check of its cursor's
// hash is taken out (src/chain/follower.ts #checkHash): the follower never stops, degraded for ever ("block N does
// not follow block N-1 read before it", its check of each block's parent), and the network goes on being served.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fund, fundedAccount, fundedJob, signedIn, USDC, usdc } from '../fixtures/service.ts'
import { expectProblem, fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

t.test('a repayment the chain takes back after it was counted stops the network instead of counting another history', async (t) => {
  const { h, lender } = await lenderHarness(t, {}, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o19_reorg'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const advanceId = advance.advanceId as string
  const lenderOwed = BigInt(advance.lenderOwedAtomic)
  const stranger = await fundedAccount(h.devnet, h.network, usdc(20))
  const strangerChain = new ChainAgent(h.network, stranger)
  const reader = () => new CreditClient(h.url)
  const read = async (): Promise<Json> => (await reader().get(`/credit/advances/${advanceId}`)).body
  const onChainOwed = async () =>
    (await strangerChain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey] })).lenderOwed

  // Repaid on chain, never reported: the follower counts it.
  const vanishing = await strangerChain.repay(advance.advanceKey, USDC, usdc(5))
  await until(async () => BigInt((await read()).lenderOwedAtomic) === lenderOwed - usdc(5), 10_000, 'the follower counted the stranger\'s 5')
  const follower = () => h.app.service.followers.get(h.network.slug)?.status()
  t.equal(follower()?.state, 'ok')

  // The node takes its blocks back from the repayment's on (however many the devnet mined meanwhile); the new history
  // holds none of it, and the stranger (funded again there) repays 7.
  const repaidIn = (await strangerChain.publicClient.getTransactionReceipt({ hash: vanishing })).blockNumber
  const depth = Number((await strangerChain.publicClient.getBlockNumber({ cacheTime: 0 })) - repaidIn) + 1
  const reorg = await fetch(h.network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_reorg', params: [depth, []] }) })
  t.notOk(((await reorg.json()) as Json)['error'], 'anvil reorganised its last blocks')
  await t.rejects(strangerChain.publicClient.getTransactionReceipt({ hash: vanishing }), /not be found|not found/i, 'the counted repayment is no longer on chain')
  t.equal(await onChainOwed(), lenderOwed, 'the contract owes the lender all of it again')
  await fund(h.devnet, h.network, stranger.address, usdc(20))
  const other = await strangerChain.repay(advance.advanceKey, USDC, usdc(7))
  t.equal(await onChainOwed(), lenderOwed - usdc(7), 'the new history has the 7')

  // The follower stops; the network refuses what needs it; the 7 is not counted, the 5 stays as counted.
  await until(() => follower()?.state === 'stopped', 10_000, 'the follower stopped')
  t.match(follower()?.error, /chain_replaced[\s\S]*reorganised deeper than the 1 confirmation/, 'it says why')
  const health = (await reader().get('/health')).body
  t.equal(health.status, 'degraded')
  t.match(health.networks.find((n: Json) => n.network === h.network.slug).follower, { state: 'stopped', error: /chain_replaced/ })
  t.equal(health.networks.find((n: Json) => n.network !== h.network.slug).follower.state, 'ok', 'the other network is followed')
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: vanishing }), 503, 'network_stopped', 'the vanished repayment reported')
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: other }), 503, 'network_stopped', 'the new history\'s repayment reported')
  expectProblem(t, await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(50), usdc(5))), 503, 'network_stopped', 'a credit request there')
  const counted = await read()
  t.equal(BigInt(counted.lenderOwedAtomic), lenderOwed - usdc(5), 'what was counted stays, nothing of the new history is added')
  t.same(counted.repayments.map((r: Json) => r.txHash), [vanishing])

  // The operator's reconciliation names the advance the ledger and the chain disagree on.
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const run = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.equal(run.status, 200)
  const differences = (run.body.networks as Json[])[0]?.['differences'] as Json[]
  t.match(differences, [{ kind: 'advance_lender_owed', key: advance.advanceKey, expected: String(lenderOwed - usdc(5)), actual: String(lenderOwed - usdc(7)) }, { kind: 'total', key: 'repaidToLendersAtomic', expected: String(usdc(5)), actual: String(usdc(7)) }])
  t.equal(differences.length, 2, 'those two, nothing else')

  // A restart does not resume on the new history: the stored cursor's block has another hash.
  await h.restart()
  await until(() => follower()?.state === 'stopped', 10_000, 'stopped again after the restart')
  expectProblem(t, await (await signedIn(h.url, borrower)).post(`/credit/advances/${advanceId}/repay`, { txHash: other }), 503, 'network_stopped', 'after the restart')
  t.equal(BigInt((await read()).lenderOwedAtomic), lenderOwed - usdc(5), 'still what was counted')
})
