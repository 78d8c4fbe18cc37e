// A settlement mined and not recorded (an earlier attempt that crashed or lost its receipt) while an offer on the job
// was leased since: the contract refuses every payment on a settled job (JobNotOpen), so that lease can never be paid.
// The retry of the completion was refused (409 job_has_leased_offer) while the lease was live, and the lease then
// expired at its lender's cost; a borrower asking again before each expiry kept the completion refused for ever
// (an adversary's finding, reading src/engine/plans.ts). Now the retry sees the job settled on chain and records the
// settlement; the leased offer is closing and its lease ends without a penalty. The engine's side of the same race
// (a lease granted while the settlement waits for its confirmations): test/engine/adversary-settlement-race.test.ts.
import t from 'tap'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { sendSettleJob } from '../../src/chain/operator.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

let h: Harness
// The service's clock follows the chain's once the test moves it (sessions and due times run on it).
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a settlement mined before its record, with a lease granted since, is recorded by the retry; the lease costs its lender nothing', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_adv_settle_race'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const earlier = await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [advance.advanceKey] })

  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(50), usdc(5)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address, 'leased since the settlement was mined')
  const engine = h.app.service.engine
  const reliabilityBps = engine.getLender(lender.account.address)!.reliabilityBps

  const complete = await (await signedIn(h.url, jobClient)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(complete.status, 200, JSON.stringify(complete.body))
  t.equal(complete.body.txHash, earlier.txHash, 'the earlier settlement is what the receipt records')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'closing', 'the leased offer is closing')

  // Past the lease's deadline on chain: it ends, unpaid, without a penalty.
  const chainTimeMs = await advanceChainTime(h, 120)
  skewMs = chainTimeMs - Date.now()
  t.equal((await (await signedIn(h.url, lender.account)).post('/credit/dispatch', {})).status, 200)
  t.equal(engine.getLender(lender.account.address)!.reliabilityBps, reliabilityBps, 'no penalty: the lender could not have paid')
  t.equal(engine.getLender(lender.account.address)!.reservedAtomic, 0n, 'its liquidity came back')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'declined')
})
