// The adversary's dust leases, rebuilt against the real service and anvil. Two fresh wallets escrowed 250 atomic
// units in jobs and requested credit of 1 atomic unit, maximum fee 1, ten times: every request was approved and
// leased to the cheapest lender, which a rational lender leaves unpaid (the fee is worth less than paySupplier's
// gas), and each unpaid expiry cost it 500 bps of reliability, down below the active minimum, for free. Now a request
// below the asset's least advance (one whole unit by default) is refused and changes nothing; at the minimum a
// lease is worth paying, and the borrower owes what it drew.
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedJob, readyLender, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'

const MINIMUM = usdc(1)

const h = await startHarness()
t.teardown(() => h.stop())
const doc = await openApiDocument(h.url)
const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })

t.test('the catalog names the least advance of each asset: one whole unit unless the networks file sets it', async (t) => {
  const catalog = await new CreditClient(h.url).get('/.well-known/service.json')
  const asset = (catalog.body.networks as Json[]).find((n) => n['slug'] === h.network.slug)?.['assets'].find((a: Json) => a['symbol'] === USDC)
  t.equal(asset?.['advanceMinAtomic'], MINIMUM.toString())
})

t.test('dust requests are refused 422 amount_below_minimum and change nothing: no offer, no lease, no reliability lost', async (t) => {
  const engine = h.app.service.engine
  const reliabilityBefore = engine.getLender(lender.account.address)!.reliabilityBps
  for (const [n, jobId] of ['job_dust_a', 'job_dust_b'].entries()) {
    const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: 250n })
    const jobBefore = engine.getJob(jobId)
    for (let i = 0; i < 5; i += 1) {
      const reply = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, 1n, 1n))
      const problem = expectProblem(t, reply, 422, 'amount_below_minimum', `dust request ${n * 5 + i + 1}`)
      t.match(problem['detail'], MINIMUM.toString(), 'the problem names the minimum')
      expectDocumented(t, doc, 'post', '/credit/request', reply)
    }
    t.same(engine.getJob(jobId), jobBefore, 'the job commits nothing')
  }
  // One unit short of the minimum is dust too.
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_dust_edge', receivableAtomic: usdc(10) })
  expectProblem(t, await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_dust_edge', MINIMUM - 1n, 1n)), 422, 'amount_below_minimum')
  await borrowerClient.post('/credit/dispatch', {})
  t.same(engine.liveLeasesOf(lender.account.address), [], 'no lease went to the lender')
  t.equal(engine.getLender(lender.account.address)!.reliabilityBps, reliabilityBefore, 'its reliability is untouched')
})

t.test('at the minimum the lease is worth paying: the lender pays and the borrower owes principal and fee', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_dust_minimum', receivableAtomic: usdc(10) })
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_dust_minimum', amountAtomic: MINIMUM, maximumFeeAtomic: usdc(1) })
  t.equal(funded.advance['principalAtomic'], MINIMUM.toString(), 'the advance is the minimum principal')
  t.ok(BigInt(funded.advance['feeAtomic']) > 0n, 'and the borrower owes a fee on it', { advance: funded.advance })
})
