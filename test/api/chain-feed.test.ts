// Issue 9 case 1 and issue 10 "lease timers on observed chain time", over HTTP against the devnet: the service follows
// the credit contract, so a SupplierPaid creates the advance whether or not, and whenever, the lender reports it; a
// lease expires only once the chain is observed past its deadline with no payment (never on the service's clock);
// and a restart between a payment and its observation loses nothing (the follower resumes from its cursor).
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, expectDocumented, openApiDocument, until, type Json } from './fixtures/api.ts'

const LEASE_TTL_SECONDS = 30

/** The service's time: the wall clock plus what the test moved it by; moved with the chain's time, as in production. */
let skewMs = 0
const clock = () => Date.now() + skewMs
const moveClockTo = (ms: number) => {
  skewMs = Math.max(skewMs, ms - Date.now())
}
/** Moves the chain (and the service's clock with it) by `seconds`, and waits until the follower observed it. */
async function advanceTime(seconds: number): Promise<number> {
  const chainTimeMs = await advanceChainTime(h, seconds)
  moveClockTo(chainTimeMs)
  return chainTimeMs
}

let h: Harness
let doc: Json
let lender: ReadyLender
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: LEASE_TTL_SECONDS }, clock })
  doc = await openApiDocument(h.url)
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(5000) })
})
t.teardown(async () => {
  await h.stop()
})

let jobSeq = 0
/** A funded job, an approved request on it and its offer leased to `lender`: the offer id and the lease. */
async function leasedOffer(amount = usdc(100)): Promise<{ offerId: string; lease: Json; borrowerClient: any }> {
  jobSeq += 1
  const jobId = `job_feed_${jobSeq}`
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, amount, usdc(10)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  const offerId = decision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId })
  if (match.status !== 200 || match.body.lease?.lender !== lender.account.address) throw new Error(JSON.stringify(match.body))
  return { offerId, lease: match.body.lease, borrowerClient }
}

async function pay(offerId: string): Promise<`0x${string}`> {
  const action = await actionFor(lender, offerId)
  return new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
}

t.test('case 1: paid before the deadline, reported after it: the advance exists and the report answers it', async (t) => {
  const { offerId, lease } = await leasedOffer()
  const paid = await pay(offerId)
  const expiresAtMs = Date.parse(lease['expiresAt'])
  // The chain moves well past the lease's deadline before anyone reports the payment.
  const chainTimeMs = await advanceTime(LEASE_TTL_SECONDS + 10)
  t.ok(chainTimeMs > expiresAtMs, 'the chain is observed past the deadline')
  const offer = await lender.client.get(`/credit/offers/${offerId}`)
  t.equal(offer.body.state, 'funded', 'the follower funded the offer from the SupplierPaid alone')
  const advanceId = offer.body.advanceId as string
  t.ok(advanceId)
  t.notOk((offer.body.excludedLenders as string[]).includes(lender.account.address), 'the lender is not excluded: its lease was paid, not expired')

  const report = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(report.status, 200, JSON.stringify(report.body))
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', report)
  t.equal(report.body.advanceId, advanceId, 'the late report answers the same advance')
  t.equal(report.body.payment.txHash, paid.toLowerCase())
  const again = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(again.status, 200, 'a second report answers it again')
  t.equal(again.body.advanceId, advanceId)
  const state = await lender.client.get('/credit/state')
  t.equal(state.body.counts.liveAdvances, 1, 'one advance, not two')
})

t.test('case 1 without any report: the follower alone creates the advance', async (t) => {
  const { offerId } = await leasedOffer()
  const paid = await pay(offerId)
  await until(async () => (await lender.client.get(`/credit/offers/${offerId}`)).body.state === 'funded', 20_000, 'the follower to fund the offer')
  const offer = await lender.client.get(`/credit/offers/${offerId}`)
  const advance = await lender.client.get(`/credit/advances/${offer.body.advanceId}`)
  t.equal(advance.status, 200)
  t.match(advance.body, { offerId, lender: lender.account.address, state: 'active', payment: { txHash: paid.toLowerCase() } })
  t.equal(advance.body.principalAtomic, usdc(100).toString())
})

t.test('repayments nobody reports are counted from the chain; a later report answers the same receipt', async (t) => {
  const { offerId, borrowerClient } = await leasedOffer(usdc(100))
  await pay(offerId)
  await until(async () => (await lender.client.get(`/credit/offers/${offerId}`)).body.state === 'funded', 20_000, 'the follower funded the offer')
  const advanceId = (await lender.client.get(`/credit/offers/${offerId}`)).body.advanceId as string
  const advance = (await lender.client.get(`/credit/advances/${advanceId}`)).body
  const owed = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic)
  const payer = new ChainAgent(h.network, await fundedAccount(h.devnet, h.network, usdc(200)))
  const sessionBefore = await payer.balanceOf(USDC, lender.session.address)

  // A partial repayment on chain, by a stranger, reported by no one: what the advance owes goes down.
  const first = await payer.repay(advance.advanceKey, USDC, usdc(60))
  await until(async () => (await lender.client.get(`/credit/advances/${advanceId}`)).body.lenderOwedAtomic === (BigInt(advance.lenderOwedAtomic) - usdc(60)).toString(), 20_000, 'the follower counted the partial repayment')
  const partly = (await lender.client.get(`/credit/advances/${advanceId}`)).body
  t.equal(partly.state, 'active', 'still active: something is owed')
  t.equal(partly.repayments.length, 1)
  t.equal(partly.repayments[0].txHash, first.toLowerCase())

  // The rest, overpaid: only what is owed moves, and the advance is repaid without a report.
  const second = await payer.repay(advance.advanceKey, USDC, owed)
  await until(async () => (await lender.client.get(`/credit/advances/${advanceId}`)).body.state === 'repaid', 20_000, 'the follower counted the last repayment')
  t.equal(await payer.balanceOf(USDC, lender.session.address) - sessionBefore, BigInt(advance.lenderOwedAtomic), 'the session wallet got exactly the lender\'s part')
  const passport = (await borrowerClient.get(`/passport/${advance.borrower}`, { token: '' })).body as Json[]
  t.same(passport.map((e) => e.kind), ['advance_repaid'], 'the passport records the advance repaid once')

  // Late reports of both payments answer what was counted, not an error.
  const lateFirst = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: first })
  t.equal(lateFirst.status, 200, JSON.stringify(lateFirst.body))
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/repay', lateFirst)
  t.match(lateFirst.body, { advanceId, txHash: first.toLowerCase(), lenderAmountAtomic: usdc(60).toString(), repaid: false })
  const lateSecond = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: second })
  t.equal(lateSecond.status, 200, JSON.stringify(lateSecond.body))
  t.match(lateSecond.body, { advanceId, txHash: second.toLowerCase(), lenderOwedAtomic: '0', reserveOwedAtomic: '0', repaid: true })
})

t.test('a lease with no payment expires once the chain is observed past its deadline, never on the service clock alone', async (t) => {
  const { offerId, lease, borrowerClient } = await leasedOffer()
  const expiresAtMs = Date.parse(lease['expiresAt'])
  // The service's clock (the wall) moves far past the deadline; the chain does not. Dispatch runs: nothing expires.
  moveClockTo(expiresAtMs + 120_000)
  const dispatch = await borrowerClient.post('/credit/dispatch', {})
  t.equal(dispatch.status, 200)
  t.notOk((dispatch.body.expiredLeases as Json[]).some((l) => l['leaseId'] === lease['leaseId']), 'dispatch does not expire a lease on wall time')
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'leased', 'the lease holds while the chain is not past its deadline')
  const chainNow = h.app.service.engine.chainTimeMs(h.network.slug) as number
  t.ok(chainNow < expiresAtMs + 1000, 'the chain has not been observed past the deadline', { chainNow, expiresAtMs })

  // Now the chain passes the deadline: the follower's batch expires the lease and the offer waits again.
  await advanceTime(Math.ceil((expiresAtMs - chainNow) / 1000) + 2)
  const offer = await borrowerClient.get(`/credit/offers/${offerId}`)
  t.not(offer.body.state, 'leased', 'the lease expired on chain time')
  t.ok((offer.body.excludedLenders as string[]).includes(lender.account.address), 'the lender that did not pay is excluded')
  const gone = await lender.client.get(`/lenders/${lender.account.address}/actions`)
  t.notOk((gone.body as Json[]).some((a) => a['kind'] === 'pay_supplier' && a['lease']['leaseId'] === lease['leaseId']), 'nothing left to pay for it')
})

t.test('a restart between the payment and its observation loses nothing', async (t) => {
  const { offerId } = await leasedOffer()
  const slug = h.network.slug
  const action = await actionFor(lender, offerId)
  // The service stops before the payment is mined: its follower cannot have observed it.
  await h.app.stop()
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  await h.restart()
  const client = await signedIn(h.url, lender.account)
  await until(async () => (await client.get(`/credit/offers/${offerId}`)).body.state === 'funded', 20_000, 'the restarted follower to fund the offer')
  const offer = await client.get(`/credit/offers/${offerId}`)
  const advance = await client.get(`/credit/advances/${offer.body.advanceId}`)
  t.match(advance.body, { offerId, state: 'active', payment: { txHash: paid.toLowerCase() } }, 'the payment made while the service was down became its advance')
  const report = await client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(report.body.advanceId, offer.body.advanceId, 'its report answers the same advance')
  const health = await client.get('/health')
  expectDocumented(t, doc, 'get', '/health', health)
  const follower = (health.body.networks as Json[]).find((n) => n['network'] === slug)?.['follower']
  t.match(follower, { state: 'ok' }, 'health shows the follower following')
  t.ok(follower['lagBlocks'] >= 0, 'and its lag')
})
