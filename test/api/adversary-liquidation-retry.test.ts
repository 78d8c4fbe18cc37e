// A liquidation already on chain (a crash, or an RPC that lost the receipt, between the operator's transaction and its
// commit) is found and recorded by the next attempt, also when it recovered everything owed: the contract then answers
// a second liquidate with NothingOwed, not AlreadyLiquidated (the advance owes nothing any more), and the service took
// only AlreadyLiquidated as "done already", so the advance stayed defaulted in the service forever while the chain had
// paid its lender from the collateral and closed the job (an adversary's finding, reading src/service/operator-commands.ts).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { sendLiquidate } from '../../src/chain/operator.ts'
import { fund, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('a liquidation mined before its record, covered in full by the collateral, is recorded by the next attempt', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_adv_liq_retry'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  await fund(h.devnet, h.network, borrower.address, usdc(300))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(300))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(300).toString(), txHash: posting })).status, 201)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(200), maximumFeeAtomic: usdc(10) })
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 200)

  // The operator's liquidate is mined, and the service never recorded it.
  const earlier = await sendLiquidate(createNetworkClients(h.network), { offerKey: advance.advanceKey, backingCoveredAtomic: 0n })
  const onChain = earlier.facts.find((f) => f.name === 'Liquidated')
  t.ok(onChain, 'the contract liquidated the advance')

  const receipt = await lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(receipt.status, 200, JSON.stringify(receipt.body))
  t.equal(receipt.body.txHash, earlier.txHash, 'the earlier liquidation is what the receipt records')
  t.equal(receipt.body.shortfallAtomic, '0', 'the collateral covered everything owed')
  const owed = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic)
  const amountOf = (step: string) => receipt.body.steps.find((s: { step: string }) => s.step === step)?.amountAtomic
  t.equal(amountOf('collateral'), owed.toString(), 'all of it from the collateral, as on chain')
  t.equal((await lender.client.get(`/credit/advances/${advance.advanceId}`)).body.state, 'liquidated')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})
