// An outsider's probe (outsider15): the borrower's last repayment and the client's reclaim in one block, the repayment
// first (so the reclaim finds nothing owed and succeeds). The service learns both from the chain follower in one batch,
// with the advance still active in its own books until the Repaid: it must end the advance repaid, the job failed
// (escrow_reclaimed) and its waiting offer (the service's clock is still before the job's due time) declined, penalise
// nobody, and agree with the contract.
import t from 'tap'
import { createTestClient, createWalletClient, erc20Abi, http, maxUint256, parseGwei, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { offerTtlSeconds: 3600 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a full repayment and the reclaim in one block: the service ends the advance repaid and the job reclaimed', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o15_repay_reclaim_block'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })
  const advanceId = advance.advanceId as string
  const repay = (await borrowerClient.get(`/credit/advances/${advanceId}/repay-transactions`)).body
  // A second request on the job: its offer waits, never matched.
  const waiting = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(5), usdc(1)))
  t.equal(waiting.body.decision, 'approved', JSON.stringify(waiting.body.reasons))
  const waitingOfferId = waiting.body.offer.offerId as string
  const key = repay.key as Hex
  await fund(h.devnet, h.network, borrower.address, usdc(100))
  const chain = networkChain(h.network)
  const transport = http(h.network.rpcUrl)
  const agent = new ChainAgent(h.network, borrower)
  const borrowerWallet = createWalletClient({ account: borrower, chain, transport })
  const clientWallet = createWalletClient({ account: jobClient, chain, transport })
  await agent.publicClient.waitForTransactionReceipt({ hash: await borrowerWallet.writeContract({ address: agent.token(USDC), abi: erc20Abi, functionName: 'approve', args: [h.network.creditContract, maxUint256] }) })
  const borrowerBefore = structuredClone(h.app.service.engine.getBorrower(borrower.address))
  const anvil = createTestClient({ chain, transport, mode: 'anvil' })
  await anvil.increaseTime({ seconds: Number(devnetReclaimDelaySeconds) + 60 })

  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  let hashes: Hex[]
  try {
    hashes = [
      await borrowerWallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'repay', args: [key, BigInt(repay.amountAtomic)], gas: 300_000n, maxPriorityFeePerGas: parseGwei('50'), maxFeePerGas: parseGwei('100') }),
      await clientWallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey(h.network, jobId)], gas: 300_000n, maxPriorityFeePerGas: parseGwei('1'), maxFeePerGas: parseGwei('100') }),
    ]
    await anvil.mine({ blocks: 1 })
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }
  const receipts = await Promise.all(hashes.map((hash) => agent.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })))
  t.same(receipts.map((r) => r.status), ['success', 'success'], 'both mined')
  t.equal(receipts[0]!.blockNumber, receipts[1]!.blockNumber, 'in one block')
  t.ok(receipts[0]!.transactionIndex < receipts[1]!.transactionIndex, 'the repayment first')

  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await until(async () => (await operator.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal((await operator.get(`/credit/jobs/${jobId}`)).body.state, 'failed')
  t.equal((await operator.get(`/credit/advances/${advanceId}`)).body.state, 'repaid', 'the advance is repaid')
  t.match((await borrowerClient.get(`/credit/offers/${waitingOfferId}`)).body, { state: 'declined', endReason: 'source_closed' }, 'the waiting offer on the job is declined')
  const after = h.app.service.engine.getBorrower(borrower.address)
  t.equal(after?.suspended, false, 'the borrower is not suspended')
  t.ok((after?.reputationBps ?? 0) >= (borrowerBefore?.reputationBps ?? 0), 'nor penalised')
  await expectReconciled(t, operator, h.network.slug)
})
