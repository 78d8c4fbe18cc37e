// An advance past due by the service's clock (from the second after its due time's, machines/advance.ts pastDueAtMs)
// while the chain's latest block is still at its due second: the operator's liquidate, simulated at that block, is
// refused by the contract (NotDefaulted, block.timestamp > dueAt). The route answers 503 chain_unavailable with
// Retry-After, recording nothing, and the same request succeeds once a later block is mined (review23's finding: it
// answered 409 contract_not_defaulted, which tells an agent the contract refuses the liquidation).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { fundedJob, readyLender, startHarness, usdc } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'

t.test('a liquidation refused only by a chain behind the due second answers 503, then succeeds a block later', async (t) => {
  let frozen: number | null = null
  const h = await startHarness({ clock: () => frozen ?? Date.now() })
  t.teardown(() => h.stop())
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_chain_behind_due'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(500), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const dueS = BigInt(Math.floor(Date.parse(advance.dueAt) / 1000))
  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)
  await anvil.setNextBlockTimestamp({ timestamp: dueS })
  await anvil.mine({ blocks: 1 })
  await until(() => (h.app.service.engine.chainTimeMs(h.network.slug) ?? 0) >= Number(dueS) * 1000, 10_000, 'the chain observed at the due second')
  frozen = Number(dueS + 1n) * 1000
  const path = `/credit/advances/${advance.advanceId}/liquidate`
  const behind = await lender.client.post(path, {})
  t.equal(behind.status, 503, `${behind.status} ${behind.body.code ?? ''}`)
  t.equal(behind.body.code, 'chain_unavailable')
  t.match(behind.body.detail, /not past the advance's due second/)
  t.equal(behind.headers.get('retry-after'), '1', 'Retry-After')
  const still = await lender.client.get(`/credit/advances/${advance.advanceId}`)
  t.equal(still.body.state, 'active', 'nothing recorded')
  await anvil.setNextBlockTimestamp({ timestamp: dueS + 1n })
  await anvil.mine({ blocks: 1 })
  const liquidated = await lender.client.post(path, {})
  t.equal(liquidated.status, 200, `${liquidated.status} ${liquidated.body.code ?? ''}`)
})
