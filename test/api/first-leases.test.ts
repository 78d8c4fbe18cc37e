// First leases through the service (test/engine/first-leases.test.ts has the counts): a throw-away lender at 0 bps,
// first in the book, held every borrower's offer its wallet covered, each until its lease timed out unpaid, and fell
// below the reliability minimum only after 9 misses. Now a new lender holds one lease at a time until it pays one
// (lenderLeaseAllowanceInitial, the service's default 1), and its first miss puts it below the minimum. Fails on the
// old code: the second borrower's offer goes to the throw-away lender too.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, startHarness, usdc, type ReadyLender } from '../fixtures/service.ts'
import { actionFor } from './fixtures/api.ts'

// The service's default allowance (the harness starts lenders established otherwise).
const h = await startHarness({ config: { engine: { lenderLeaseAllowanceInitial: defaultEngineConfig.lenderLeaseAllowanceInitial } } })
t.teardown(() => h.stop())

/** A new borrower's funded job, an approved offer on it and its match: the offer and the lender leased, or null. */
async function leasedOffer(jobId: string): Promise<{ offerId: string; lender: string | null }> {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(200) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, usdc(40), usdc(2)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId as string
  const match = await job.borrowerClient.post('/credit/match', { offerId })
  if (match.status !== 200) throw new Error(JSON.stringify(match.body))
  return { offerId, lender: match.body.lease?.lender ?? null }
}

/** The lender pays the supplier under its lease of the offer, with its session key, and reports it. */
async function pay(lender: ReadyLender, offerId: string): Promise<void> {
  const action = await actionFor(lender, offerId)
  const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const reply = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
  if (reply.status !== 200) throw new Error(`supplier-payment: ${reply.status} ${JSON.stringify(reply.body)}`)
}

t.test('a new lender holds one offer until it pays one; its first miss puts it below the minimum', async (t) => {
  const griefer = await readyLender(h, { minFeeBps: 0, liquidityAtomic: usdc(1000) })
  const honest = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const profile = (l: ReadyLender) => h.app.service.engine.getLender(l.account.address)!

  t.equal((await leasedOffer('job_first_1')).lender, griefer.account.address, 'the cheapest lender first')
  const second = await leasedOffer('job_first_2')
  t.equal(second.lender, honest.account.address, 'its wallet covers more, but it holds one: the next borrower gets the honest lender')

  // The honest lender pays: its allowance is 2, and it holds two at once.
  await pay(honest, second.offerId)
  const third = await leasedOffer('job_first_3')
  const fourth = await leasedOffer('job_first_4')
  t.same([third.lender, fourth.lender], [honest.account.address, honest.account.address], 'paid once, it holds two at once')
  await pay(honest, third.offerId)
  await pay(honest, fourth.offerId)

  // The griefer's lease times out unpaid on the chain.
  await advanceChainTime(h, 35)
  t.match(profile(griefer), { leasesExpired: 1, reliabilityBps: 500 }, 'its one miss: below the minimum at once, not 4500')
  t.equal((await leasedOffer('job_first_5')).lender, honest.account.address, 'inactive: the next borrower gets the honest lender')
  t.match(profile(honest), { leasesPaid: 3, leasesExpired: 0 })
})
