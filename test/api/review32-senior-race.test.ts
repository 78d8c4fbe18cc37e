// review32: a liquidation first liquidates the job's older advances that may be liquidated (outsider28); one that its
// own lender's request liquidated meanwhile is passed over, and the caller's liquidation goes on. Before, the caller's
// request waited for that advance's lock, then failed on it ("advance adv_1 has reached a final state", naming the
// other advance), nothing of the caller's recorded. Fails without the fix: the later advance's liquidation rejects.
import t, { type Test } from 'tap'
import type { Address } from 'viem'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedJob, readyLender, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

const unanswered = { ticket: undefined, encode: () => ({ status: 200, body: null }) }

/**
 * outsider28's job: 25 of collateral, an offer of 10 (band A) to a band-A-only lender, then one of 20 (band C) to a
 * lender of band C only, the job failed. The borrower keeps 15 in its wallet (to repay the first).
 */
async function twoOnFailedJob(t: Test, jobId: string) {
  const honest = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100), riskBands: ['A'] })
  const party = await readyLender(h, { minFeeBps: 1, liquidityAtomic: usdc(30), riskBands: ['C'] })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  await fund(h.devnet, h.network, borrower.address, usdc(40))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(25))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(25).toString(), txHash: posting })).status, 201)
  const first = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: honest, source: jobId, amountAtomic: usdc(10), maximumFeeAtomic: usdc(1) })
  const second = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: party, source: jobId, amountAtomic: usdc(20), maximumFeeAtomic: usdc(1) })
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 200)
  return { honest, party, borrower, first, second }
}

t.test('an older advance its own lender liquidates meanwhile is passed over, and the later one is liquidated', async (t) => {
  const { honest, party, borrower, first, second } = await twoOnFailedJob(t, 'job_r32_senior_race')

  const service = h.app.service
  const seniorId: string = first.advance.advanceId
  const juniorId: string = second.advance.advanceId
  // The band-A lender's own liquidation holds its advance's lock (it waits for its transaction) ...
  const own = service.liquidate(unanswered, honest.account.address as Address, seniorId)
  await new Promise((resolve) => setImmediate(resolve))
  // ... when the later advance's liquidation finds it older and still to liquidate, and waits for it.
  t.same(service.engine.seniorLiquidations({ advanceId: juniorId, caller: party.account.address as Address }, service.now()).map((s) => s.advanceId), [seniorId])
  const later = service.liquidate(unanswered, party.account.address as Address, juniorId)
  const [ownDone, laterDone] = await Promise.allSettled([own, later])
  t.equal(ownDone.status, 'fulfilled', 'the band-A lender\'s own liquidation is recorded')
  t.equal(laterDone.status, 'fulfilled', `the later advance's liquidation goes on: ${laterDone.status === 'rejected' ? String(laterDone.reason) : ''}`)

  const honestOwed = BigInt(first.advance.lenderOwedAtomic) + BigInt(first.advance.reserveOwedAtomic)
  const senior = (await honest.client.get(`/credit/advances/${seniorId}`)).body
  t.equal(senior.state, 'liquidated')
  t.equal(BigInt(senior.recovery.fromCollateralAtomic), honestOwed, 'the band-A advance took its collateral first')
  const junior = (await party.client.get(`/credit/advances/${juniorId}`)).body
  t.not(junior.recovery, null, 'the later advance is liquidated')
  t.equal(BigInt(junior.recovery.fromCollateralAtomic), usdc(25) - honestOwed, 'and took what was left of the collateral')
})

// The older advance repaid in full on chain, the repayment not counted yet (the chain follower stopped meanwhile): the
// contract answers its liquidation NothingOwed, it takes no collateral, and the caller's liquidation goes on. Before,
// the caller's request failed 409 on the other advance's refusal until the follower counted the repayment.
t.test('an older advance repaid on chain and not counted yet is passed over', async (t) => {
  const { honest, party, borrower, first, second } = await twoOnFailedJob(t, 'job_r32_senior_repaid')

  const service = h.app.service
  const follower = service.followers.get(h.network.slug)!
  await follower.stop()
  const honestOwed = BigInt(first.advance.lenderOwedAtomic) + BigInt(first.advance.reserveOwedAtomic)
  await new ChainAgent(h.network, borrower).repay(first.advance.advanceKey, USDC, honestOwed)
  const juniorId: string = second.advance.advanceId
  t.same(service.engine.seniorLiquidations({ advanceId: juniorId, caller: party.account.address as Address }, service.now()).map((s) => s.advanceId), [first.advance.advanceId], 'the service still holds the older one owing')
  const later = await service.liquidate(unanswered, party.account.address as Address, juniorId).then(() => 'recorded', (error: unknown) => String(error))
  follower.start()
  t.equal(later, 'recorded', 'the later advance\'s liquidation goes on')
  const juniorOwed = BigInt(second.advance.lenderOwedAtomic) + BigInt(second.advance.reserveOwedAtomic)
  const junior = (await party.client.get(`/credit/advances/${juniorId}`)).body
  t.equal(BigInt(junior.recovery.fromCollateralAtomic), juniorOwed < usdc(25) ? juniorOwed : usdc(25), 'it took the collateral the repaid one did not need')
  await until(async () => (await honest.client.get(`/credit/advances/${first.advance.advanceId}`)).body.state === 'repaid', 10_000, 'the follower counts the repayment')
})
