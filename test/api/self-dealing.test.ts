// Self-dealing among strangers (an outsider's finding), over HTTP against the devnet: a borrower that
// escrowed its own "receivable" is declined (client_is_borrower, documented in the OpenAPI decision), and a borrower
// that registered its own wallet as a lender never gets its own offer leased to itself.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectDocumented, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let stranger: ReadyLender
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  stranger = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a job the borrower funded itself gets no credit: 200 declined, client_is_borrower; the job can still be completed', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, usdc(500))
  const fundingTxHash = await new ChainAgent(h.network, borrower).fundJob('job_self_funded', USDC, usdc(500), borrower.address)
  const api = await signedIn(h.url, borrower)
  const created = await api.post('/credit/jobs', {
    jobId: 'job_self_funded', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(500).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash,
  })
  t.equal(created.status, 201, JSON.stringify(created.body))
  const decision = await api.post('/credit/request', creditRequest(h, borrower.address, 'job_self_funded', usdc(100), usdc(10)))
  t.equal(decision.status, 200)
  expectDocumented(t, doc, 'post', '/credit/request', decision)
  t.match(decision.body, { decision: 'declined', reasons: [{ code: 'client_is_borrower' }], offer: null })
  t.equal((await api.get('/credit/jobs/job_self_funded')).body.committedAtomic, '0', 'nothing committed')
  const completed = await api.post('/credit/jobs/job_self_funded/complete', {})
  t.equal(completed.status, 200, 'the escrow is not stuck: its client completes it')
})

t.test('a borrower registered as a lender, however cheap, is never leased its own offer', async (t) => {
  const self = await readyLender(h, { minFeeBps: 10, liquidityAtomic: usdc(1000) })
  const { borrowerClient } = await fundedJob(h, { jobId: 'job_self_lender', receivableAtomic: usdc(1000), borrower: self.account })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, self.account.address, 'job_self_lender', usdc(100), usdc(10)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body))
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  t.equal(match.status, 200)
  t.equal(match.body.lease?.lender, stranger.account.address, 'the cheapest lender that is not the borrower')
})
