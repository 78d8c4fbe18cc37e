// An outsider's probe (outsider15): a job advanced on and repaid in full may now be reclaimed by its client (today's
// rule) while its completion is on its way. The client's reclaim and the operator's settleJob (POST .../complete) in
// one block, the reclaim first (mining paused while both are sent): the service must record the reclaim, not a
// settlement, and a retry of the completion must learn the job ended. As found: the service's settleJob simulation sees
// the pending reclaim and answers 503 chain_unavailable (nothing sent); the retry once the follower applied the reclaim
// answers 409 job_closed.
import t from 'tap'
import { createTestClient, createWalletClient, http, parseGwei } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, fund, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'

const JOB_RECLAIMED = 5

let h: Harness
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs, config: { offerTtlSeconds: 3600 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a reclaim sent before the completion (mining paused): no settlement is recorded, the reclaim is, and a retry learns the job ended', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o15_reclaim_vs_complete'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })
  await fund(h.devnet, h.network, borrower.address, usdc(100))
  await new ChainAgent(h.network, borrower).sendAll((await borrowerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions`)).body.transactions)
  await until(async () => (await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state === 'repaid', 20_000, 'the repayment to be applied')
  const chainTimeMs = await advanceChainTime(h, Number(devnetReclaimDelaySeconds) + 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  const clientApi = await signedIn(h.url, jobClient)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))

  const chain = networkChain(h.network)
  const transport = http(h.network.rpcUrl)
  const anvil = createTestClient({ chain, transport, mode: 'anvil' })
  const wallet = createWalletClient({ account: jobClient, chain, transport })
  const pending = async () => Number(((await anvil.request({ method: 'txpool_status' } as never)) as { pending: string }).pending)
  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  let completed
  try {
    const reclaim = await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey(h.network, jobId)], gas: 300_000n, maxPriorityFeePerGas: parseGwei('50'), maxFeePerGas: parseGwei('100') })
    let answered = false
    const completing = clientApi.post(`/credit/jobs/${jobId}/complete`, {}).finally(() => { answered = true })
    // The completion either sends its settleJob (it waits in the pool behind the reclaim) or answers first.
    await until(async () => answered || (await pending()) >= 2, 20_000, 'the completion to send its settleJob or answer')
    await anvil.mine({ blocks: 1 })
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
    const receipt = await new ChainAgent(h.network, jobClient).publicClient.waitForTransactionReceipt({ hash: reclaim, pollingInterval: 50 })
    t.equal(receipt.status, 'success', 'the reclaim was mined')
    completed = await completing
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }
  t.not(completed!.status, 200, `no settlement is answered (${completed!.status} ${completed!.body.code})`)
  const onChain = await new ChainAgent(h.network, jobClient).publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })
  t.equal(onChain.status, JOB_RECLAIMED)
  await until(async () => (await operator.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal((await operator.get(`/credit/jobs/${jobId}`)).body.state, 'failed')
  t.equal((await operator.get(`/credit/advances/${advance.advanceId}`)).body.state, 'repaid')
  const retried = await clientApi.post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(retried.status, 409, 'a retry is told the job ended, not to retry')
  t.equal(retried.body.code, 'job_closed')
  await expectReconciled(t, operator, h.network.slug)
})
