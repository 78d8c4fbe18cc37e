// review23's reproduction (not a suite test: run it with npx tap; it fails while the finding holds): the service judges
// an advance past due by its own clock (from the second after the due time's, machines/advance.ts pastDueAtMs), and
// the operator's liquidate is simulated first (src/chain/operator.ts simulateContract, at the latest block), which the
// contract judges by that block's time (block.timestamp > dueAt). From the first past-due millisecond until a block
// after the due second is mined (a block interval, more with a chain clock behind the service's), the route answers
// 409 contract_not_defaulted; nothing is recorded and a retry later succeeds. Simulating at the pending block
// (blockTag 'pending') made this pass on anvil; whether every provider honours it is the open question.
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../../src/chain/clients.ts'
import { fundedJob, readyLender, startHarness, usdc } from '../../fixtures/service.ts'
import { fundAdvance, until } from '../fixtures/api.ts'

t.test('an advance past due by the service clock, the latest block at its due second: liquidated', async (t) => {
  let frozen: number | null = null
  const h = await startHarness({ clock: () => frozen ?? Date.now() })
  t.teardown(() => h.stop())
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_r23_due'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(500), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const dueS = BigInt(Math.floor(Date.parse(advance.dueAt) / 1000))
  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)
  await anvil.setNextBlockTimestamp({ timestamp: dueS })
  await anvil.mine({ blocks: 1 })
  await until(() => (h.app.service.engine.chainTimeMs(h.network.slug) ?? 0) >= Number(dueS) * 1000, 10_000, 'the chain observed at the due second')
  // The liquidation's own block would be the next second: the contract takes it there.
  await anvil.setNextBlockTimestamp({ timestamp: dueS + 1n })
  frozen = Number(dueS + 1n) * 1000
  const reply = await lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(reply.status, 200, `${reply.status} ${reply.body.code ?? ''}`)
})
