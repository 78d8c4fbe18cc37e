// The cheap way to raise a credit score, against the devnet service: a borrower takes ten 1-USDC advances from its
// own second wallet as lender and has them repaid. Under formula version 1 that bought +200; now a repaid advance
// counts only when its principal reached its asset's minimum (100 USDC), so the ten raise nothing, while one real
// advance of 100 USDC repaid still gives +20. The score is read as /credit-score reads it (scoreInputsOf over the
// service's engine and passport), without the payment and the encryption, which test/score/credit-score.test.ts covers.
import t from 'tap'
import { creditScore, SCORE_TERMS } from '../../src/score/formula.ts'
import { scoreInputsOf } from '../../src/score/inputs.ts'
import { repaymentMinimumsOf } from '../../src/score/settings.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

/** Requests and matches `amountAtomic` on the job, and the lender pays the supplier and reports it. */
async function advanceOn(lender: ReadyLender, borrower: { address: `0x${string}`; client: CreditClient }, jobId: string, amountAtomic: bigint): Promise<void> {
  const decision = await borrower.client.post('/credit/request', creditRequest(h, borrower.address, jobId, amountAtomic, usdc(10)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId as string
  const match = await borrower.client.post('/credit/match', { offerId })
  if (match.body.lease?.lender !== lender.account.address) throw new Error(JSON.stringify(match.body))
  const actions = await lender.client.get(`/lenders/${lender.account.address}/actions`)
  const action = (actions.body as any[]).find((a) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
  const txHash = await new ChainAgent(h.network, lender.session).sendUnsigned(action.transaction)
  const paid = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: txHash })
  if (paid.status !== 200) throw new Error(JSON.stringify(paid.body))
}

/** The job's client completes the job (the escrow repays its advances); resolves once the borrower's record counts them. */
async function repaid(jobClient: CreditClient, jobId: string, borrower: `0x${string}`, repaidAdvances: number): Promise<void> {
  const settled = await jobClient.post(`/credit/jobs/${jobId}/complete`, {})
  if (settled.status !== 200) throw new Error(JSON.stringify(settled.body))
  for (let waitedMs = 0; h.app.service.engine.getBorrower(borrower)?.advancesRepaid !== repaidAdvances; waitedMs += 50) {
    if (waitedMs > 20_000) throw new Error(`${borrower}: ${repaidAdvances} repaid advances not counted`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const scoreOf = (borrower: `0x${string}`) =>
  creditScore(scoreInputsOf(h.app.service.engine, h.app.service.passport, repaymentMinimumsOf([h.network]), borrower, Date.now())!)

t.test('ten 1-USDC advances lent by the borrower\'s own wallet and repaid raise nothing; one real advance repaid still does', async (t) => {
  // The attacker's second wallet, as the only lender.
  const ownLender = await readyLender(h, { minFeeBps: 10, liquidityAtomic: usdc(1000) })
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const tiny = await fundedJob(h, { jobId: 'job_sybil_tiny', receivableAtomic: usdc(100), borrower })
  const before = scoreOf(borrower.address)

  for (let i = 0; i < 10; i++) await advanceOn(ownLender, { address: borrower.address, client: tiny.borrowerClient }, 'job_sybil_tiny', usdc(1))
  await repaid(tiny.jobClientApi, 'job_sybil_tiny', borrower.address, 10)
  const afterTiny = scoreOf(borrower.address)
  t.equal(afterTiny.inputs.repaidAdvances, 10, 'ten advances repaid in full')
  t.strictSame(afterTiny.inputs.scoredRepayments, [], 'none reached the 100 USDC minimum')
  t.equal(afterTiny.factors.repayments, 0, 'the repayment term gives nothing (+200 under version 1)')
  t.equal(afterTiny.score, before.score, 'the score did not move')

  const real = await fundedJob(h, { jobId: 'job_sybil_real', receivableAtomic: usdc(1000), borrower })
  const minimumAtomic = BigInt(SCORE_TERMS.repaymentMinPrincipalUnits) * 10n ** BigInt(h.network.tokens[0]!.decimals)
  await advanceOn(ownLender, { address: borrower.address, client: real.borrowerClient }, 'job_sybil_real', minimumAtomic)
  await repaid(real.jobClientApi, 'job_sybil_real', borrower.address, 11)
  const afterReal = scoreOf(borrower.address)
  t.match(afterReal.inputs.scoredRepayments, [{ network: h.network.slug, asset: 'USDC', principalAtomic: minimumAtomic }], 'the real advance is scored, as its passport event names it')
  t.equal(afterReal.factors.repayments, SCORE_TERMS.repaymentPoints, 'and raises the term by one repayment\'s points')
})
