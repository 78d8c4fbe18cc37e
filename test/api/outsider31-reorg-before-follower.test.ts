// An outsider's probe (outsider31): a repayment REPORTED (POST /credit/advances/{id}/repay, the fast path) and then
// taken back by the chain before the chain follower read its block. outsider19 (outsider19-reorg-after-repayment)
// covers a block the follower applied: its cursor's hash stops it. Here the follower never read the block, so that
// check never sees it: the follower went on `ok` over the new history, the service kept the 5 no transaction proves,
// refused the new history's repayments of the advance (409 repayment_mismatch) and the job's completion mined a
// settlement it did not record (409 contract_settlement_differs). Now the follower's batch over the reported block
// must hold the reported fact, or the follower stops (chain_replaced) as the README says of a reorganisation deeper
// than the confirmations. Fails without refuseVanishedReports (src/service/chain-observation.ts): the follower stays
// ok (probe cost: 5 USDC the reorganisation gives back, and gas; the reorganisation is a validator's or sequencer's power). The same for an operator's
// settlement recorded from its receipt (the second test: the service said completed, the chain held the job open with
// its escrow, the follower went on); fails without the note in operatorSend (src/service/operator-commands.ts).
import t, { type Test } from 'tap'
import { keccak256, toHex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { fund, fundedAccount, fundedJob, signedIn, USDC, usdc } from '../fixtures/service.ts'
import { expectProblem, fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

t.test('a reported repayment the chain takes back before the follower read its block stops the follower', async (t) => {
  // The follower polls every 4 s (a real network's default is 1 s): the report is counted before it reads the block.
  const devnet = await startDevnet({ pollingIntervalMs: 4000 })
  t.teardown(() => devnet.stop())
  const { h, lender } = await lenderHarness(t, { devnet }, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o31_reorg'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const advanceId = advance.advanceId as string
  const lenderOwed = BigInt(advance.lenderOwedAtomic)
  const stranger = await fundedAccount(h.devnet, h.network, usdc(20))
  const strangerChain = new ChainAgent(h.network, stranger)
  const strangerClient = await signedIn(h.url, stranger)
  const read = async (): Promise<Json> => (await new CreditClient(h.url).get(`/credit/advances/${advanceId}`)).body
  const onChainOwed = async () =>
    (await strangerChain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey] })).lenderOwed
  const follower = () => h.app.service.followers.get(h.network.slug)?.status()

  const vanishing = await strangerChain.repay(advance.advanceKey, USDC, usdc(5))
  const reported = await strangerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: vanishing })
  const repaidIn = (await strangerChain.publicClient.getTransactionReceipt({ hash: vanishing })).blockNumber
  const depth = Number((await strangerChain.publicClient.getBlockNumber({ cacheTime: 0 })) - repaidIn) + 1
  const followerBlock = follower()?.cursor?.blockNumber
  const reorg = await fetch(h.network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_reorg', params: [depth, []] }) })
  t.equal(reported.status, 200, 'the report counted the 5')
  t.ok(followerBlock !== undefined && followerBlock < repaidIn, `the follower (at ${followerBlock}) had not read block ${repaidIn}`)
  t.notOk(((await reorg.json()) as Json)['error'], 'anvil reorganised its last blocks')
  t.equal(await onChainOwed(), lenderOwed, 'the contract owes the lender all of it again')
  await fund(h.devnet, h.network, stranger.address, usdc(20))
  const other = await strangerChain.repay(advance.advanceKey, USDC, usdc(7))
  const otherIn = (await strangerChain.publicClient.getTransactionReceipt({ hash: other })).blockNumber

  await until(() => follower()?.state === 'stopped' || (follower()?.cursor?.blockNumber ?? 0n) >= otherIn, 30_000, 'the follower stopped or passed the new repayment')
  t.equal(follower()?.state, 'stopped', 'the follower does not go on over a history without a repayment the service counted')
  t.match(follower()?.error, /chain_replaced[\s\S]*no longer holds the event/, 'it says why')
  t.equal((await new CreditClient(h.url).get('/health')).body.status, 'degraded')
  expectProblem(t, await strangerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: other }), 503, 'network_stopped', 'the new history\'s repayment reported')
  const counted = await read()
  t.equal(BigInt(counted.lenderOwedAtomic), lenderOwed - usdc(5), 'what was counted stays, nothing of the new history is added (reconcile names it)')
})

/**
 * The operator's settlement recorded, then taken back before the follower read its block. `strangerReports`: before
 * the reorganisation a stranger names the settlement's hash in a report of the advance's repayment (refused: it holds
 * no Repaid); before review38 the report's note of its receipt replaced the operator's (counted whatever its use) by
 * one counted only once its proof is used, so the follower went on over the history without the settlement.
 */
async function settlementTakenBack(t: Test, jobId: string, strangerReports: boolean): Promise<void> {
  const devnet = await startDevnet({ pollingIntervalMs: 4000 })
  t.teardown(() => devnet.stop())
  const { h, lender, operator } = await lenderHarness(t, { devnet }, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const follower = () => h.app.service.followers.get(h.network.slug)?.status()
  const chain = new ChainAgent(h.network, borrower)
  await until(() => (follower()?.cursor?.blockNumber ?? 0n) > 0n, 30_000, 'the follower read a batch')
  const completed = await operator.post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, 'the completion recorded the settlement')
  const settledIn = (await chain.publicClient.getTransactionReceipt({ hash: completed.body.txHash })).blockNumber
  if (strangerReports) {
    const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, usdc(1)))
    const named = await stranger.post(`/credit/advances/${advance.advanceId as string}/repay`, { txHash: completed.body.txHash })
    expectProblem(t, named, 422, 'proof_wrong_arguments', 'a stranger names the settlement in a report: refused')
  }
  const depth = Number((await chain.publicClient.getBlockNumber({ cacheTime: 0 })) - settledIn) + 1
  const followerBlock = follower()?.cursor?.blockNumber
  const reorg = await fetch(h.network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_reorg', params: [depth, []] }) })
  t.notOk(((await reorg.json()) as Json)['error'], 'anvil reorganised its last blocks')
  t.ok(followerBlock !== undefined && followerBlock < settledIn, `the follower (at ${followerBlock}) had not read block ${settledIn}`)
  const onChain = await chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [keccak256(toHex(jobId))] })
  t.comment(`job on chain after the reorganisation: status ${onChain.status}, escrow ${onChain.escrow}; service: ${(await new CreditClient(h.url).get(`/credit/jobs/${jobId}`)).body.state}`)
  const head = await chain.publicClient.getBlockNumber({ cacheTime: 0 })
  await until(() => follower()?.state === 'stopped' || (follower()?.cursor?.blockNumber ?? 0n) >= head + 2n, 30_000, 'the follower stopped or passed the settlement\'s height')
  t.equal(follower()?.state, 'stopped', 'the follower does not go on over a history without the settlement the service recorded')
  t.match(follower()?.error, /chain_replaced[\s\S]*no longer holds the event/, 'it says why')
  t.equal((await new CreditClient(h.url).get('/health')).body.status, 'degraded')
}

t.test('a settlement the chain takes back before the follower read its block stops the follower', (t) => settlementTakenBack(t, 'job_o31_reorg_settled', false))

t.test('a stranger naming the settlement in a report before the reorganisation does not keep the follower going', (t) => settlementTakenBack(t, 'job_r38_reorg_named', true))
