// An outsider's probe (outsider23): the job's client fails its job while the lender liquidates the job's advance past
// due, at once. The failure takes the job's lock and the liquidation the advance's, so both operator transactions are
// simulated, their gas estimated against the same state and sent; mining is paused until both are in the pool, so
// they are mined in one block, in the order sent. Whichever is second finds the job's last unresolved advance
// resolved (or the job failed) and closes the job (the collateral left goes back to the borrower): more gas than its
// estimate, so it ran out of gas and reverted. As found: that request answered 409 contract_reverted, "nothing was
// recorded" (409: do not retry), the operator paid the gas, and the same request sent again succeeded. Now a reverted
// operator transaction is simulated again: a refusal the contract names is answered as such, and one the state
// no longer refuses is sent again, once. Both requests are answered 200 and the records equal the chain.
import t from 'tap'
import { createTestClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { Reply } from '../../src/client/client.ts'
import { advanceChainTime, fund, fundedJob, readyLender, signedIn, startHarness, usdc } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'

const JOB_CLOSED = 4

t.test('a failure and a liquidation sent at once, mined in one block: both recorded, neither answered refused', async (t) => {
  // The service's clock follows the chain's: the advance is past due on both once the test moves them.
  let skewMs = 0
  const h = await startHarness({ clock: () => Date.now() + skewMs })
  t.teardown(() => h.stop())
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o23_fail_and_liquidate'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  // Collateral beyond what the advance owes: the liquidation is covered and the job's close returns the rest.
  await fund(h.devnet, h.network, borrower.address, usdc(150))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, 'USDC', usdc(150))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(150).toString(), txHash: posting })).status, 201)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const chainTimeMs = await advanceChainTime(h, 2 * 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  // Sessions signed in before the jump have expired on the service's clock.
  const clientApi = await signedIn(h.url, jobClient)
  const lenderApi = await signedIn(h.url, lender.account)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))

  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  const pending = async () => Number(((await anvil.request({ method: 'txpool_status' } as never)) as { pending: string }).pending)
  const raceFrom = await new ChainAgent(h.network, jobClient).publicClient.getBlockNumber({ cacheTime: 0 })
  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  let answers
  try {
    let answered = 0
    const calls = [
      clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' }),
      lenderApi.post(`/credit/advances/${advance.advanceId}/liquidate`, {}),
    ].map((call) => call.finally(() => answered++))
    await until(async () => answered > 0 || (await pending()) >= 2, 20_000, 'both operator transactions in the pool')
    await anvil.mine({ blocks: 1 })
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
    answers = await Promise.all(calls)
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }
  const [failed, liquidated] = answers as [Reply, Reply]
  t.equal(failed.status, 200, `the failure is recorded (${failed.status} ${failed.body.code ?? ''} ${failed.body.detail ?? ''})`)
  t.equal(liquidated.status, 200, `the liquidation is recorded (${liquidated.status} ${liquidated.body.code ?? ''} ${liquidated.body.detail ?? ''})`)
  const agent = new ChainAgent(h.network, jobClient)
  const onChainJob = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })
  const onChainAdvance = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey] })
  t.equal(onChainJob.status, JOB_CLOSED, 'the job closed on chain')
  t.ok(onChainAdvance.liquidated, 'the advance liquidated on chain')
  t.equal((await operator.get(`/credit/advances/${advance.advanceId}`)).body.state, 'liquidated')
  t.equal((await operator.get(`/credit/jobs/${jobId}`)).body.failureReason, 'late')
  await expectReconciled(t, operator, h.network.slug)
  // Each operator transaction carries a margin over its estimate: the one mined second does more than estimated (it
  // closes the job) and still fits, so none reverted (before the margin, it ran out of gas and was sent again).
  const operatorAddress = h.devnet.accounts.operator.address.toLowerCase()
  const reverted = []
  const head = await agent.publicClient.getBlockNumber({ cacheTime: 0 })
  for (let n = raceFrom + 1n; n <= head; n++) {
    const block = await agent.publicClient.getBlock({ blockNumber: n, includeTransactions: true })
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== operatorAddress) continue
      const receipt = await agent.publicClient.getTransactionReceipt({ hash: tx.hash })
      if (receipt.status !== 'success') reverted.push({ hash: tx.hash, gasUsed: String(receipt.gasUsed), gas: String(tx.gas) })
    }
  }
  t.same(reverted, [], 'no operator transaction reverted')
})
