// An adversary's finding (contracts9): CreditFacilityV2.settleJob names every advance of a job that still owes in one
// transaction (about 21,800 gas each), and only the job's capacity and the least advance bounded how many a job could
// carry: a borrower taking one-unit advances on a large job made a job no transaction could settle. A job's open
// advances plus its borrower's live offers are bounded by advancesPerJobMax (engine config): one more request is
// refused 409 job_advances_limit and changes nothing; the job settles on chain with the advances it has.
import t from 'tap'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc } from '../fixtures/service.ts'
import { expectProblem, fundAdvance } from './fixtures/api.ts'

const h = await startHarness({ config: { offerTtlSeconds: 600, engine: { advancesPerJobMax: 3 } } })
t.teardown(() => h.stop())

t.test('a job carries at most advancesPerJobMax open advances and live offers; it still settles', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1_000) })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_many_advances', receivableAtomic: usdc(1_000) })
  for (let i = 0; i < 2; i++) {
    await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_many_advances', amountAtomic: usdc(1), maximumFeeAtomic: usdc(1) })
  }
  const ask = () => borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_many_advances', usdc(1), usdc(1)))
  const waiting = await ask()
  t.equal(waiting.body.decision, 'approved', 'two advances and one live offer fit')
  const before = h.app.service.store.stats().commits
  expectProblem(t, await ask(), 409, 'job_advances_limit', 'a fourth on the job')
  t.equal(h.app.service.store.stats().commits, before, 'the refusal wrote nothing')
  t.equal((await (await signedIn(h.url, borrower)).get('/.well-known/service.json')).body.limits.advancesPerJobMax, 3, 'the catalog publishes the bound')

  // The job completes: its settlement pays both advances on chain.
  const completed = await jobClientApi.post('/credit/jobs/job_many_advances/complete', {})
  t.equal(completed.status, 200, 'the job completes')
  const job = await new ChainAgent(h.network, borrower).publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, 'job_many_advances')] })
  t.equal(job.status, 2, 'Settled on chain')
  t.equal(job.outstanding, 0n)
})
