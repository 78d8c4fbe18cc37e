// A job advanced on whose every advance is repaid in full: its client takes the escrow back on chain alone
// (CreditFacilityV2.reclaimJob), and the borrower its collateral. An outsider's finding (outsider14): reclaimJob refused
// any job a paySupplier had ever touched, also once nobody was owed anything, so the client's escrow and the borrower's
// collateral waited on the operator's settleJob or failJob, for good if the service stopped. The service follows the
// reclaim as any other (test/api/reclaim.test.ts): the job ends failed (escrow_reclaimed), nobody is penalised, the
// repaid advance stays repaid, and reconciliation agrees. Its own harness: reclaim.test.ts moves the chain's clock
// weeks ahead of the service's, past any new advance's due time.
import t from 'tap'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fund, fundedJob, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim, tryReclaim } from './fixtures/reclaim.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

const JOB_RECLAIMED = 5

let h: Harness
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  ({ h, lender, operator } = await lenderHarness(t, { config: { offerTtlSeconds: 3600 } }))
})

t.test('a job whose advance was repaid in full is reclaimed by its client alone (an outsider\'s finding: it waited on the operator for good); the service follows', async (t) => {
  const jobId = 'job_rc_repaid'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })
  const advanceId = advance.advanceId as string

  // While the advance is owed, the client's reclaim reverts (AdvancesOwed): the escrow backs the lender.
  await pastReclaimDelay(h.network)
  t.match(await tryReclaim(h.network, jobClient, jobId), /AdvancesOwed/, 'refused while the lender is owed')

  await fund(h.devnet, h.network, borrower.address, usdc(100))
  await new ChainAgent(h.network, borrower).sendAll((await borrowerClient.get(`/credit/advances/${advanceId}/repay-transactions`)).body.transactions)
  await until(async () => (await borrowerClient.get(`/credit/advances/${advanceId}`)).body.state === 'repaid', 20_000, 'the repayment to be applied')
  const borrowerBefore = h.app.service.engine.getBorrower(borrower.address)

  t.equal((await sendReclaim(h.network, jobClient, jobId)).status, 'success')
  const onChain = await new ChainAgent(h.network, jobClient).publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)],
  })
  t.equal(onChain.status, JOB_RECLAIMED, 'the contract took it back without the operator')
  await until(async () => (await borrowerClient.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal((await borrowerClient.get(`/credit/jobs/${jobId}`)).body.state, 'failed')
  t.equal((await borrowerClient.get(`/credit/advances/${advanceId}`)).body.state, 'repaid', 'the repaid advance stays repaid')
  const borrowerAfter = h.app.service.engine.getBorrower(borrower.address)
  t.equal(borrowerAfter?.suspended, false, 'the borrower is not suspended')
  t.equal(borrowerAfter?.reputationBps, borrowerBefore?.reputationBps, 'nor penalised: nobody defaulted')
  await expectReconciled(t, operator, h.network.slug)
})
