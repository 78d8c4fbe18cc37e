// outsider24: llms.txt's typical flow, its example bodies verbatim, ended in a lease that never came: the lender of
// step 2 accepts bands A and B, step 3 called collateral "optional", and a borrower that has repaid nothing yet gets
// a job alone rated band C (coverageBps 0: its receivable does not count until it has repaid principal, the Rules
// say further down), so step 5's match answers lease null, with no reason, for as long as the offer lives. Nor did
// llms.txt say which of the two hashes of funding-transactions is the job's fundingTxHash (the approve's is refused
// 422). Here the service does what llms.txt now says, the offer waiting for a lender of its band and leased in the
// background when one comes. Fails on 022db7b (the llms.txt sentences).
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../fixtures/service.ts'

// The ticker on, as in a deployment (tests turn it off): it leases waiting offers.
const h = await startHarness({ config: { dispatchIntervalMs: 200 } })
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('a fresh borrower\'s job alone is band C, which llms.txt\'s example lender does not take, and llms.txt says so', async (t) => {
  await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000), riskBands: ['A', 'B'] })
  const jobId = `job_${crypto.randomUUID()}`
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(5000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(1000), usdc(100)))
  t.equal(decision.body.decision, 'approved')
  t.equal(decision.body.riskBand, 'C')
  t.equal(decision.body.coverageBps, 0)
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  t.equal(match.status, 200)
  t.equal(match.body.lease, null, 'no lender of band C')
  t.equal(match.body.noLease?.reason, 'risk_band_not_accepted', 'and the answer says so')

  const llms: string = (await anyone.get('/llms.txt')).body
  t.match(llms, /"acceptedRiskBands":\["A","B"\]/, 'the example lender takes A and B')
  t.match(llms, /so a job alone is risk band C \(coverageBps 0\), which the lender above \(bands A and B\) does not take/)
  t.notMatch(llms, /Collateral \(optional/)
  t.match(llms, /lease null: no eligible lender yet,\s+and noLease says why/)
  t.match(llms, /fundingTxHash: the hash of the second, the fundJob/)
  t.match(llms, /"kind":"pay_supplier","lease":\{"offerId"[\s\S]*POST \/credit\/offers\/<lease.offerId>\/supplier-payment/, 'the lender learns the offer id from its action')

  // The offer waits, and a lender of band C entering the book takes it without the borrower asking again.
  t.match(llms, /Except offer_expired the offer waits: once a lender takes it, it is leased in the\s+background/)
  const bandC = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(2000), riskBands: ['A', 'B', 'C'] })
  const offerId = decision.body.offer.offerId
  for (let i = 0; i < 400 && (await anyone.get(`/credit/offers/${offerId}`)).body.state !== 'leased'; i++) await new Promise((r) => setTimeout(r, 50))
  t.equal((await anyone.get(`/credit/offers/${offerId}`)).body.state, 'leased', 'leased in the background')
  const actions = (await bandC.client.get(`/lenders/${bandC.account.address}/actions`)).body
  t.equal(actions.find((a: { kind: string }) => a.kind === 'pay_supplier')?.lease.offerId, offerId, 'its pay_supplier action names the offer to report')
})

t.test('llms.txt bounds a job\'s dueAt as the registration does, and a past one is told by its wire name', async (t) => {
  const llms: string = (await anyone.get('/llms.txt')).body
  t.match(llms, /dueAt: when the client pays, in the future and before the client may take its escrow back on chain \(the credit contract's\s+reclaimDelay\(\) after the funding, the catalog's networks\[\]\.reclaimDelaySeconds, 10 days on this devnet\): a later one is 422 job_reclaimable_before_due/)
  const late = await fundedJob(h, { jobId: `job_${crypto.randomUUID()}`, receivableAtomic: usdc(10), dueInSeconds: 11 * 86_400 }).then(() => undefined, (e: Error) => e.message)
  t.match(late, /job: 422 .*job_reclaimable_before_due/, 'eleven days out is refused')
  const past = await fundedJob(h, { jobId: `job_${crypto.randomUUID()}`, receivableAtomic: usdc(10), dueInSeconds: -60 }).then(() => undefined, (e: Error) => e.message)
  t.match(past, /job: 400 .*"detail":"dueAt must be in the future"/, 'the detail names the field sent, dueAt')
})
