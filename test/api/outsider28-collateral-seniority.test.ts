// An outsider's finding (outsider28, test/api/outsider28-scripts/collateral-captured.ts): the collateral that made an
// honest lender's offer band A was taken by a later advance on the same job. A fresh borrower posts 25 of collateral;
// an offer of 10 is band A (25 for 10) and goes to a band-A-only lender; a second offer of 20 on the same job is band C
// (what the first holds is not there for it) and goes to a lender of the borrower's party (band C only, cheapest). The
// party's client fails the job (its escrow back) and its lender liquidates first: the contract's liquidate takes the
// job's collateral for whichever advance it is sent for first, so the band-C advance took 20 of the 25 and the band-A
// advance recovered 5 of its 10.27. Now a liquidation first liquidates the job's older advances (by their offers'
// order, the order their bands counted the collateral in) that may be liquidated: the band-A lender is paid in full
// from the collateral, the later advance takes what is left. A backing source's liquidation value went the same way
// (10 at band A, then 10 at band B from a lender asking 5000 bps, whose liquidation took 14.5 of the 20 first).
// Fails without the fix: the first lender's collateral (backing) step is about 5 (5.5), not 10.3 (10.27).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { ChainAgent } from '../../src/client/chain.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { fund, fundedAccount, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { backingSourceBody, fundAdvance, until } from './fixtures/api.ts'

let h: Harness
let offsetMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + offsetMs })
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

t.test('a later advance on a backing source does not take the liquidation value an earlier band-A advance counted on', async (t) => {
  const honest = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100), riskBands: ['A'] })
  const party = await readyLender(h, { minFeeBps: 5000, liquidityAtomic: usdc(30), riskBands: ['B', 'C'] })
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const borrowerClient = await signedIn(h.url, borrower)
  const sourceId = 'src-o28-seniority'
  const validUntilMs = Math.floor(Date.now() / 1000 + 60 * 24 * 3600) * 1000
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId, valueAtomic: usdc(25), liquidationValueAtomic: usdc(20), advanceRateBps: 10_000, validUntilMs }))
  t.equal(source.status, 201, JSON.stringify(source.body))
  const first = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: honest, source: sourceId, amountAtomic: usdc(10), maximumFeeAtomic: usdc(1), productType: 'asset-backed' })
  t.equal(first.decision.offer.riskBand, 'A', 'the first offer: 25 of value for 10, band A')
  const second = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: party, source: sourceId, amountAtomic: usdc(10), maximumFeeAtomic: usdc(6), productType: 'asset-backed' })
  t.equal(second.decision.offer.riskBand, 'B', 'the second offer: 15 left for 10, band B, to the party\'s lender at 5000 bps')

  // Both past due (the later one is due a moment after the earlier one), on the chain and on the service's clock.
  const pastS = BigInt(Math.floor(Date.parse(second.advance.dueAt) / 1000) + 2)
  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)
  await anvil.setNextBlockTimestamp({ timestamp: pastS })
  await anvil.mine({ blocks: 1 })
  await until(() => (h.app.service.engine.chainTimeMs(h.network.slug) ?? 0) >= Number(pastS) * 1000, 10_000, 'the chain observed past both due times')
  offsetMs = Number(pastS) * 1000 - Date.now()
  // A month on, the sessions have ended: both lenders sign in again.
  const partyClient = await signedIn(h.url, party.account)
  const honestClient = await signedIn(h.url, honest.account)

  const junior = await partyClient.post(`/credit/advances/${second.advance.advanceId}/liquidate`, {})
  t.equal(junior.status, 200, `the later advance is liquidated: ${JSON.stringify(junior.body).slice(0, 300)}`)
  const seniorView = (await honestClient.get(`/credit/advances/${first.advance.advanceId}`)).body
  t.equal(BigInt(seniorView.recovery?.fromBackingAtomic ?? -1), BigInt(first.advance.lenderOwedAtomic), 'the band-A lender recovered its part from the backing first')
  t.equal(stepOf(junior.body, 'backing_liquidation'), usdc(20) - BigInt(first.advance.lenderOwedAtomic), 'the later advance took what was left of it')
  t.equal((await honestClient.post(`/credit/advances/${first.advance.advanceId}/liquidate`, {})).status, 409, 'the band-A lender\'s own liquidation finds it done')
})
