// An outsider's finding (outsider28, test/api/outsider28-scripts/collateral-captured.ts): the collateral that made an
// honest lender's offer band A was taken by a later advance on the same job. A fresh borrower posts 25 of collateral;
// an offer of 10 is band A (25 for 10) and goes to a band-A-only lender; a second offer of 20 on the same job is band C
// (what the first holds is not there for it) and goes to a lender of the borrower's party (band C only, cheapest). The
// party's client fails the job (its escrow back) and its lender liquidates first: the contract's liquidate takes the
// job's collateral for whichever advance it is sent for first, so the band-C advance took 20 of the 25 and the band-A
// advance recovered 5 of its 10.27. Now a liquidation first liquidates the job's older advances (by their offers'
// order, the order their bands counted the collateral in) that may be liquidated: the band-A lender is paid in full
// from the collateral, the later advance takes what is left. Fails without the fix: the first lender's collateral step
// is about 5, not 10.27.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedJob, readyLender, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

const stepOf = (receipt: any, step: string): bigint => BigInt(receipt.steps.find((s: any) => s.step === step).amountAtomic)

t.test('a later advance\'s liquidation does not take the collateral an earlier band-A advance counted on', async (t) => {
  const honest = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100), riskBands: ['A'] })
  const party = await readyLender(h, { minFeeBps: 1, liquidityAtomic: usdc(30), riskBands: ['C'] })
  const jobId = 'job_o28_collateral_seniority'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  await fund(h.devnet, h.network, borrower.address, usdc(25))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(25))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(25).toString(), txHash: posting })).status, 201)

  const first = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: honest, source: jobId, amountAtomic: usdc(10), maximumFeeAtomic: usdc(1) })
  t.equal(first.decision.offer.riskBand, 'A', 'the first offer: 25 of collateral for 10, band A')
  const second = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: party, source: jobId, amountAtomic: usdc(20), maximumFeeAtomic: usdc(1) })
  t.equal(second.decision.offer.riskBand, 'C', 'the second offer: band C, to the party\'s lender')

  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 200)
  const junior = await party.client.post(`/credit/advances/${second.advance.advanceId}/liquidate`, {})
  t.equal(junior.status, 200, 'the later advance is liquidated')
  const honestOwed = BigInt(first.advance.lenderOwedAtomic) + BigInt(first.advance.reserveOwedAtomic)
  const seniorView = (await honest.client.get(`/credit/advances/${first.advance.advanceId}`)).body
  t.equal(seniorView.state, 'liquidated', 'the earlier advance was liquidated first, in full')
  t.equal(BigInt(seniorView.recovery?.fromCollateralAtomic ?? -1), honestOwed, 'the band-A lender recovered all it was owed from the collateral')
  t.equal(stepOf(junior.body, 'collateral'), usdc(25) - honestOwed, 'the later advance took what was left of the collateral')
  const again = await honest.client.post(`/credit/advances/${first.advance.advanceId}/liquidate`, {})
  t.equal(again.status, 409, 'the band-A lender\'s own liquidation finds it done')
})
