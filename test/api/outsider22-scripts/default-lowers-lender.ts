// outsider22: a stranger lowers an honest lender's reputation, which orders the book among equal asks, for the price
// of the least advance. Its two fresh wallets (a job's client and the borrower, who consents) fund a job, the borrower
// asks the least advance (1 USDC) and the cheapest lender, the victim, pays the supplier as it should; then the client
// fails the job (its escrow back at once, the operator pays failJob's gas): the advance defaults and the victim's
// reputation falls by lenderReputationDefaultPenaltyBps (100), whatever the amount and whatever is recovered, while its
// repayments earn +50 each. A rival at the same ask (the stranger's own lender, or anyone's) is then first in the book
// for every borrower until the victim earns two repayments; the victim registered first and has twice the liquidity
// not lent, so it won every tie before. Cost to the stranger per -100: 1 USDC spent at a directory supplier (its
// purchase), the gas of an approve and a fundJob, and a borrower wallet suspended for good (fresh, worth nothing);
// the victim loses the 1 USDC less what the collateral and the insurance reserve recover. The same shape raises the
// rival's own reputation by +50 per least advance it lends to its own borrower and gets repaid. Prints the
// reputations and the honest match; exits 1 while a defaulted least advance moves the victim behind its rival.
// node --import tsx test/api/outsider22-scripts/default-lowers-lender.ts (CONTROL=1 without the failure)
// Since repweight22 the penalty weighs the principal (README, "Weighed by the principal"): the least advance's default
// costs the victim 1, not 100 (-100 takes 100 USDC defaulted); one point still loses exact ties, so this still exits 1.
import { fundedJob, readyLender, startHarness, usdc } from '../../fixtures/service.ts'
import { fundAdvance } from '../fixtures/api.ts'

const h = await startHarness()
let passedOver = false
try {
  const victim = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(2000) })
  const rival = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const reputation = (address: `0x${string}`) => h.app.service.engine.getLender(address)!.reputationBps
  const stranger = await fundedJob(h, { jobId: 'job_o22_default_victim', receivableAtomic: usdc(10) })
  await fundAdvance(h, { borrower: stranger.borrower.address, borrowerClient: stranger.borrowerClient, lender: victim, source: 'job_o22_default_victim', amountAtomic: usdc(1), maximumFeeAtomic: usdc(1) })
  console.log('the victim paid the stranger\'s least advance; reputations', { victim: reputation(victim.account.address), rival: reputation(rival.account.address) })
  // CONTROL=1: the job is not failed, and the victim keeps every tie (the script exits 0).
  if (process.env['CONTROL'] !== '1') {
    const failed = await stranger.jobClientApi.post('/credit/jobs/job_o22_default_victim/fail', { reason: 'not_delivered' })
    if (failed.status !== 200) throw new Error(JSON.stringify(failed.body))
  }
  console.log(process.env['CONTROL'] === '1' ? 'no failure (CONTROL); reputations' : 'the stranger\'s client failed the job; reputations', { victim: reputation(victim.account.address), rival: reputation(rival.account.address) })
  const honest = await fundedJob(h, { jobId: 'job_o22_default_honest', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: honest.borrower.address, borrowerClient: honest.borrowerClient, lender: rival, source: 'job_o22_default_honest', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) }).then(
    (funded) => funded,
    (error: Error) => {
      console.log('the honest borrower\'s match did not go to the rival:', error.message.slice(0, 200))
      return { advance: null }
    },
  )
  passedOver = advance !== null
  console.log('honest borrower\'s 100 USDC:', passedOver ? 'leased to the rival' : 'leased to the victim')
} finally {
  await h.stop()
}
console.log(passedOver ? 'a 1 USDC default moved the honest lender behind its rival at the same ask' : 'the victim kept its place')
process.exit(passedOver ? 1 : 0)
