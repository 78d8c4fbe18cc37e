// outsider22: what a point of a lender's reputation (the book's order among equal asks) costs its owner. The rival
// lends the least advance (1 USDC) to its own borrower wallet, on a job its own third wallet funded (no rule sees
// the three as one party), and has it repaid at once: +50 (lenderReputationRepaidRewardBps), whatever the amount.
// Only the rival is eligible for that offer (its job is due in 7 days, past the victim's maxDurationSeconds of 5;
// a band the victim does not accept does the same). The victim at the same ask, registered first with twice the
// liquidity not lent, won every tie; after one such cycle every honest borrower at that ask goes to the rival. Cost
// per +50: 1 USDC spent at a directory supplier (the party's purchase), the fee paid to itself less the insurance
// share (10 % of 1 % of 1 USDC), and the gas of an approve, a fundJob, a paySupplier, an approve and a repay. To
// 10,000 from 5,000: 100 cycles, 100 USDC of purchases. Prints the reputations and the honest match; exits 1 while
// one repaid least advance lent to oneself moves the rival ahead. CONTROL=1: no repayment, exits 0.
// node --import tsx test/api/outsider22-scripts/wash-raises-lender.ts
// Since repweight22 the reward weighs the principal (README, "Weighed by the principal"): a repaid least advance earns
// +0 (+50 takes 100 USDC lent and repaid), so this exits 0.
import { ChainAgent } from '../../../src/client/chain.ts'
import { fund, fundedJob, readyLender, startHarness, usdc } from '../../fixtures/service.ts'
import { fundAdvance, until } from '../fixtures/api.ts'

const h = await startHarness()
let ahead = false
try {
  const victim = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(2000), maxDurationSeconds: 5 * 24 * 3600 })
  const rival = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000), maxDurationSeconds: 30 * 24 * 3600 })
  const reputation = (address: `0x${string}`) => h.app.service.engine.getLender(address)!.reputationBps
  const own = await fundedJob(h, { jobId: 'job_o22_wash', receivableAtomic: usdc(10), dueInSeconds: 7 * 24 * 3600 })
  const { advance } = await fundAdvance(h, { borrower: own.borrower.address, borrowerClient: own.borrowerClient, lender: rival, source: 'job_o22_wash', amountAtomic: usdc(1), maximumFeeAtomic: usdc(1) })
  if (process.env['CONTROL'] !== '1') {
    const repay = await own.borrowerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions`)
    await fund(h.devnet, h.network, own.borrower.address, BigInt(repay.body.amountAtomic))
    await new ChainAgent(h.network, own.borrower).sendAll(repay.body.transactions)
    await until(async () => (await own.borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state === 'repaid', 20_000, 'the repayment')
  }
  console.log('after the rival\'s own least advance' + (process.env['CONTROL'] === '1' ? ' (not repaid: CONTROL)' : ', repaid') + '; reputations', { victim: reputation(victim.account.address), rival: reputation(rival.account.address) })
  const honest = await fundedJob(h, { jobId: 'job_o22_wash_honest', receivableAtomic: usdc(1000), dueInSeconds: 3 * 24 * 3600 })
  const funded = await fundAdvance(h, { borrower: honest.borrower.address, borrowerClient: honest.borrowerClient, lender: rival, source: 'job_o22_wash_honest', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) }).catch(() => null)
  ahead = funded !== null
  console.log('honest borrower\'s 100 USDC:', ahead ? 'leased to the rival' : 'leased to the victim')
} finally {
  await h.stop()
}
console.log(ahead ? 'one repaid least advance lent to itself moved the rival ahead of the victim at the same ask' : 'the victim kept its place')
process.exit(ahead ? 1 : 0)
