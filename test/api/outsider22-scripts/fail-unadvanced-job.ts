// outsider22: any client a borrower agrees to work for suspends it, for the gas of a funding, though nothing was lent
// on the job. The victim borrower has an honest job with an offer waiting for a lender. A competitor hires it for a
// second job (the victim consents, or registers the job itself: it wants the work), funds the escrow and fails the
// job at once, before any advance on it and long before its due time (`/fail` asks neither): the escrow goes back to
// the competitor in the same transaction (the operator pays failJob's gas), and the victim is suspended for at least
// borrowerSuspensionMinSeconds (7 days): its waiting offer on its OTHER job is withdrawn (declined), every request
// meanwhile is declined `borrower_suspended`, its credit score carries -250 while suspended, its reputation -1000, and
// its signed passport a `job_failed` entry with the competitor's reason code (`not_delivered`), for good. No lender was
// exposed on the failed job: nothing was owed, so nothing the suspension protects. Cost to the competitor: the gas of
// an approve and a fundJob per 7 days of the victim's credit. Prints what the victim lost; exits 1 while a job failed
// with nothing advanced on it suspends its borrower.
// node --import tsx test/api/outsider22-scripts/fail-unadvanced-job.ts
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../../fixtures/service.ts'

const h = await startHarness()
let suspended = false
try {
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000), riskBands: ['A'] })
  const honest = await fundedJob(h, { jobId: 'job_o22_victim_honest', receivableAtomic: usdc(1000) })
  const victim = honest.borrower
  // Band C (a fresh borrower's receivable does not count): no lender takes it, so the offer waits.
  const waiting = await honest.borrowerClient.post('/credit/request', creditRequest(h, victim.address, 'job_o22_victim_honest', usdc(100), usdc(5)))
  if (waiting.body.decision !== 'approved') throw new Error(JSON.stringify(waiting.body))
  const offerId = waiting.body.offer.offerId as string
  console.log('the victim\'s offer on its honest job:', (await honest.borrowerClient.get(`/credit/offers/${offerId}`)).body.state)

  const hired = await fundedJob(h, { jobId: 'job_o22_competitor', receivableAtomic: usdc(50), borrower: victim })
  const failed = await hired.jobClientApi.post('/credit/jobs/job_o22_competitor/fail', { reason: 'not_delivered' })
  console.log('the competitor fails its job at once:', failed.status, { borrowerSuspended: failed.body.borrowerSuspended, defaultedAdvanceIds: failed.body.defaultedAdvanceIds })
  const record = h.app.service.engine.getBorrower(victim.address)!
  suspended = record.suspended
  console.log('the victim:', { suspended: record.suspended, reputationBps: record.reputationBps, advancesDefaulted: record.advancesDefaulted })
  console.log('its offer on its honest job:', (await honest.borrowerClient.get(`/credit/offers/${offerId}`)).body.state)
  const again = await honest.borrowerClient.post('/credit/request', creditRequest(h, victim.address, 'job_o22_victim_honest', usdc(100), usdc(5)))
  console.log('its next request:', again.body.decision, JSON.stringify(again.body.reasons ?? []))
  const passport = (await honest.borrowerClient.get(`/passport/${victim.address}`)).body as Array<{ kind: string; details: string }>
  console.log('its passport:', passport.map((e) => `${e.kind} ${e.details}`))
} finally {
  await h.stop()
}
console.log(suspended ? 'a job failed with nothing advanced on it suspended its borrower' : 'the borrower was not suspended')
process.exit(suspended ? 1 : 0)
