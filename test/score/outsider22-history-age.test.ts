// outsider22: the credit score's age of history (+150 at 730 days) read only the borrower's LIVE jobs, open advances
// and backing sources ("the earliest activity the service holds"): final actors leave the engine's memory, so a
// borrower whose job was completed and whose advance was repaid had no history at all (historyStartedAt null, +0),
// and its next job started the clock again at that job's registration. A year of repaid advances counted nothing
// for age, while a wallet that never borrowed and kept one job of 1 atomic unit of escrow open (its own second
// wallet as the client, the gas of a funding) got +75 a year. Now the history starts at the earlier of that and the
// subject's first passport event (public and signed, so a caller still recomputes the score): the repaid advance's
// `advance_repaid` keeps it. Fails on the code before: historyStartedAt is null after the completion, then the new
// job's registration time.
import t from 'tap'
import { creditScore } from '../../src/score/formula.ts'
import { scoreInputsOf } from '../../src/score/inputs.ts'
import { repaymentMinimumsOf } from '../../src/score/settings.ts'
import { fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance, until } from '../api/fixtures/api.ts'

const YEAR_MS = 365 * 24 * 3600 * 1000

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

const scoreAt = (borrower: `0x${string}`, atMs: number) =>
  creditScore(scoreInputsOf(h.app.service.engine, h.app.service.passport, repaymentMinimumsOf([h.network]), borrower, atMs)!)

t.test('a borrower\'s repaid advance keeps its history\'s start after its job ended, and a new job does not restart it', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const first = await fundedJob(h, { jobId: 'job_o22_history_first', receivableAtomic: usdc(1000) })
  const borrower = first.borrower.address
  await fundAdvance(h, { borrower, borrowerClient: first.borrowerClient, lender, source: 'job_o22_history_first', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const completed = await first.jobClientApi.post('/credit/jobs/job_o22_history_first/complete', {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  await until(async () => h.app.service.engine.getBorrower(borrower)?.advancesRepaid === 1, 20_000, 'the settlement repays the advance')
  const repaidEvent = h.app.service.passport.page(borrower, 0, 16).find((e) => e.kind === 'advance_repaid')
  t.ok(repaidEvent, 'the passport holds the repaid advance')
  const repaidAtMs = repaidEvent!.issuedAtMs

  const idle = scoreAt(borrower, Date.now() + YEAR_MS)
  t.equal(idle.inputs.historyStartedAtMs, repaidAtMs, 'idle a year later: the history starts at the repayment (null before)')
  t.equal(idle.factors.historyAge, 75, 'a year of history: +75')

  // A year later (the clock read at a year ahead) the borrower takes on a new job: its history is still a year old.
  await fundedJob(h, { jobId: 'job_o22_history_second', receivableAtomic: usdc(1000), borrower: first.borrower })
  const busy = scoreAt(borrower, Date.now() + YEAR_MS)
  t.equal(busy.inputs.historyStartedAtMs, repaidAtMs, 'a new job does not restart the history (its registration, before)')
})
