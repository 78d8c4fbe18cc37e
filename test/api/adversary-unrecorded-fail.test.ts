// A failJob mined and never recorded left the job open in the service: its borrower still drew, the lender's
// paySupplier reverted (JobNotOpen) and the lease expired at the lender's cost (an adversary's finding). Now the chain
// follower stores a repair and the service records the failure itself, with the reserved reason failed_on_chain (the
// request's own reason was lost with it): the leased offer is closing and its lease ends at no cost to its lender.
// Fails on 6754042 (the job stays open).
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { sendFailJob } from '../../src/chain/operator.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

let h: Harness
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs, config: { operatorRepairIntervalMs: 1000 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a failure mined and never recorded is recorded (failed_on_chain); a lease on the job ends at no cost to its lender', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_adv_unrecorded_fail'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(5)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address)
  const reliabilityBefore = h.app.service.engine.getLender(lender.account.address)!.reliabilityBps
  // The lender's payment, as its actions listed it before the failure (they stop listing a closing offer's).
  const action = await actionFor(lender, offerId)

  await sendFailJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId) })
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason === 'failed_on_chain', 20_000, 'the failure recorded')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'closing', 'the leased offer is closing')
  t.equal(h.app.service.engine.getBorrower(borrower.address)!.suspended, true, 'the borrower is suspended, as by /fail')
  const refused = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })
  t.equal(refused.status, 409, 'a retry after the repair records nothing')

  await t.rejects(new ChainAgent(h.network, lender.session).sendUnsigned(action.transaction), 'the payment reverts: the job is not open on chain')
  const chainTimeMs = await advanceChainTime(h, 120)
  skewMs = chainTimeMs - Date.now()
  t.equal((await borrowerClient.post('/credit/dispatch', {})).status, 200)
  t.equal(h.app.service.engine.getLender(lender.account.address)!.reliabilityBps, reliabilityBefore, 'the lender did no wrong: no penalty')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'declined', 'the lease ended, and its offer with it')
})

t.test('/fail refuses the reserved reason failed_on_chain', async (t) => {
  const jobId = 'job_adv_reserved_reason'
  const { jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const reply = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'failed_on_chain' })
  t.equal(reply.status, 400)
  t.equal(reply.body.code, 'failure_reason_reserved')
  t.equal((await jobClientApi.get(`/credit/jobs/${jobId}`)).body.state, 'funded', 'nothing changed')
})
