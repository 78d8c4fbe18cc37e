// Every credit mutation's error classes over HTTP: 400 validation, 401 without or with an unknown token, 403 the
// wrong actor (DESIGN section 7), 404 an unknown resource, 409 the wrong state, 422 a proof that does not prove what
// it must (wrong supplier, amount, contract, job; no such transaction) and 409 proof_already_used for a replayed one.
import t from 'tap'
import type { Hash } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, expectDocumented, expectProblem, fundAdvance, openApiDocument, randomHash, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let lender: ReadyLender
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  lender = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(20_000) })
})
t.teardown(async () => {
  await h.stop()
})

const due = () => new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString()

t.test('POST /credit/jobs: 201; 401, 400, 403 a third party, 422 wrong amount / no tx / wrong contract, 409 replayed proof', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(1000))
  const chain = new ChainAgent(h.network, client)
  const funding = await chain.fundJob('job_err_1', USDC, usdc(1000), borrower.address)
  const body = { jobId: 'job_err_1', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(1000).toString(), dueAt: due(), fundingTxHash: funding }
  const borrowerApi = await signedIn(h.url, borrower)
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))

  expectProblem(t, await borrowerApi.post('/credit/jobs', body, { token: '' }), 401, 'unauthorized', 'no token')
  expectProblem(t, await borrowerApi.post('/credit/jobs', body, { token: 'x'.repeat(43) }), 401, 'unauthorized', 'unknown token')
  const invalid = await borrowerApi.post('/credit/jobs', { ...body, receivableAtomic: '-5' })
  expectProblem(t, invalid, 400, 'validation_failed', 'negative amount')
  expectDocumented(t, doc, 'post', '/credit/jobs', invalid)
  t.match(invalid.body.errors, [{ path: '/body/receivableAtomic' }], 'the failing field is named')
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, network: 'no-such-net' }), 400, 'unknown_network')
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, asset: 'DAI' }), 400, 'unknown_asset')
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, jobId: 'not a job id' }), 400, 'validation_failed')
  const foreign = await stranger.post('/credit/jobs', body)
  expectProblem(t, foreign, 403, 'forbidden', 'neither the client nor the borrower')
  expectDocumented(t, doc, 'post', '/credit/jobs', foreign)
  const wrongAmount = await borrowerApi.post('/credit/jobs', { ...body, receivableAtomic: usdc(2000).toString() })
  expectProblem(t, wrongAmount, 422, 'proof_wrong_arguments', 'a receivable the funding does not prove')
  expectDocumented(t, doc, 'post', '/credit/jobs', wrongAmount)
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, jobId: 'job_err_other' }), 422, 'proof_wrong_arguments', 'the funding of another job')
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, fundingTxHash: randomHash() }), 422, 'proof_not_found', 'no such transaction')
  const transfer = await chain.transferToken(USDC, borrower.address, 0n)
  expectProblem(t, await borrowerApi.post('/credit/jobs', { ...body, fundingTxHash: transfer }), 422, 'proof_wrong_contract', 'a token transfer')

  const created = await borrowerApi.post('/credit/jobs', body)
  t.equal(created.status, 201, JSON.stringify(created.body))
  expectDocumented(t, doc, 'post', '/credit/jobs', created)
  t.match(created.body, { jobId: 'job_err_1', state: 'funded', client: client.address, borrower: borrower.address, receivableAtomic: usdc(1000).toString() })
  const replay = await borrowerApi.post('/credit/jobs', body)
  expectProblem(t, replay, 409, 'proof_already_used', 'the same funding twice')
  expectDocumented(t, doc, 'post', '/credit/jobs', replay)
  const state = await stranger.get('/credit/state')
  t.equal(state.body.counts.liveJobs, 1, 'only the one job exists')
})

t.test('POST /credit/request: 200 approved / declined; 403, 404 unknown source, 400 unknown asset, 422 self supplier', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_req_1', receivableAtomic: usdc(1000) })
  const other = await fundedJob(h, { jobId: 'job_req_2', receivableAtomic: usdc(1000) })
  const base = creditRequest(h, borrower.address, 'job_req_1', usdc(100), usdc(10))

  const foreign = await other.borrowerClient.post('/credit/request', base)
  expectProblem(t, foreign, 403, 'forbidden', 'a request for another agent')
  expectDocumented(t, doc, 'post', '/credit/request', foreign)
  const missing = await borrowerClient.post('/credit/request', { ...base, repaymentSource: 'job_missing' })
  expectProblem(t, missing, 404, 'repayment_source_not_found')
  expectDocumented(t, doc, 'post', '/credit/request', missing)
  expectProblem(t, await borrowerClient.post('/credit/request', { ...base, asset: 'EUR' }), 400, 'unknown_asset')
  t.match((await borrowerClient.post('/credit/request', { ...base, supplierDomain: 'unknown.example' })).body, { decision: 'declined', reasons: [{ code: 'supplier_unknown' }], offer: null }, 'an unknown supplier domain is declined (test/api/suppliers.test.ts)')
  expectProblem(t, await borrowerClient.post('/credit/request', { ...base, supplierAddress: borrower.address }), 422, 'supplier_is_borrower')
  expectProblem(t, await borrowerClient.post('/credit/request', { ...base, amountAtomic: '1e6' }), 400, 'validation_failed')
  expectProblem(t, await borrowerClient.post('/credit/request', base, { token: '' }), 401, 'unauthorized')

  const notOwned = await borrowerClient.post('/credit/request', { ...base, repaymentSource: 'job_req_2' })
  t.equal(notOwned.status, 200)
  t.equal(notOwned.body.decision, 'declined')
  t.match(notOwned.body.reasons, [{ code: 'source_not_owned' }])
  t.equal(notOwned.body.offer, null, 'a declined decision creates no offer')
  // Capacity 800: the amount and its maximum fee count against it.
  const over = await borrowerClient.post('/credit/request', { ...base, amountAtomic: usdc(701).toString(), maximumFeeAtomic: usdc(100).toString() })
  t.equal(over.body.decision, 'declined', 'over 80% of the receivable')
  t.match(over.body.reasons, [{ code: 'over_capacity' }])
  const approved = await borrowerClient.post('/credit/request', { ...base, amountAtomic: usdc(700).toString(), maximumFeeAtomic: usdc(100).toString() })
  t.equal(approved.status, 200)
  expectDocumented(t, doc, 'post', '/credit/request', approved)
  t.equal(approved.body.decision, 'approved')
  t.equal(approved.body.capacityAtomic, usdc(800).toString())
  t.match(approved.body.offer, { state: 'offered', borrower: borrower.address, amountAtomic: usdc(700).toString(), supplierAddress: h.devnet.accounts.supplier.address })
})

t.test('POST /credit/match: 200; 401, 400, 403 not the borrower, 404 unknown offer; a leased offer answers its lease; no eligible lender -> lease null', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_match_1', receivableAtomic: usdc(1000) })
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const offer = (await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_match_1', usdc(100), usdc(10)))).body.offer
  const tooCheap = (await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_match_1', usdc(100), usdc(1)))).body.offer

  expectProblem(t, await borrowerClient.post('/credit/match', { offerId: offer.offerId }, { token: '' }), 401, 'unauthorized')
  expectProblem(t, await borrowerClient.post('/credit/match', { offerId: 'offer-1' }), 400, 'validation_failed')
  const foreign = await stranger.post('/credit/match', { offerId: offer.offerId })
  expectProblem(t, foreign, 403, 'forbidden', 'another agent matching the offer')
  expectDocumented(t, doc, 'post', '/credit/match', foreign)
  const unknown = await borrowerClient.post('/credit/match', { offerId: 'off_99999' })
  expectProblem(t, unknown, 404, 'offer_not_found')
  expectDocumented(t, doc, 'post', '/credit/match', unknown)

  const none = await borrowerClient.post('/credit/match', { offerId: tooCheap.offerId })
  t.equal(none.status, 200)
  t.equal(none.body.lease, null, 'no lender asks a fee within 1 USDC on 100 (3% ask = 3 USDC)')
  t.equal(none.body.offer.state, 'offered')

  const matched = await borrowerClient.post('/credit/match', { offerId: offer.offerId })
  t.equal(matched.status, 200)
  expectDocumented(t, doc, 'post', '/credit/match', matched)
  t.equal(matched.body.lease.lender, lender.account.address)
  t.equal(matched.body.lease.feeAtomic, usdc(3).toString(), 'ceil(100 x 300 / 10000)')
  // An offer already leased (by this match or by dispatch) answers its live lease again rather than a second one.
  const again = await borrowerClient.post('/credit/match', { offerId: offer.offerId })
  t.equal(again.status, 200)
  t.equal(again.body.lease.leaseId, matched.body.lease.leaseId, 'the same lease, no second one')
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveLeases, 1)
})

t.test('POST supplier-payment: 200; 403, 404, 409 no lease / already paid / funded offer matched, 422 another offer\'s payment, contract, missing tx; another supplier or amount reverts on chain', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_pay_1', receivableAtomic: usdc(5000) })
  const request = (amount: bigint) => creditRequest(h, borrower.address, 'job_pay_1', amount, usdc(100))
  const leased = async (amount: bigint) => {
    const offerId = (await borrowerClient.post('/credit/request', request(amount))).body.offer.offerId as string
    const match = await borrowerClient.post('/credit/match', { offerId })
    t.equal(match.body.lease?.lender, lender.account.address)
    return { offerId, action: await actionFor(lender, offerId) }
  }
  const session = new ChainAgent(h.network, lender.session)
  /** What the contract answers to a paySupplier of the session key under an authorization of the test's choosing. */
  const simulatePay = (authorization: Json, signature: string) =>
    session.publicClient.simulateContract({
      account: lender.session.address, address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'paySupplier',
      args: [{ ...authorization, amount: BigInt(authorization['amount']), fee: BigInt(authorization['fee']), reserveShare: BigInt(authorization['reserveShare']), deadline: BigInt(authorization['deadline']), dueAt: BigInt(authorization['dueAt']) } as never, signature as Hash],
    })
  const report = (offerId: string, supplierPaymentId: string, who = lender) => who.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: who.account.address, supplierPaymentId })

  // Offer A: the lender cannot pay anyone but the authorized supplier, nor another amount: the contract checks the
  // service's signature over the terms (issue 10, hole 1), so nothing a lender reports can differ from the lease.
  const a = await leased(usdc(100))
  await t.rejects(simulatePay({ ...a.action['authorization'], supplier: privateKeyToAccount(generatePrivateKey()).address }, a.action['signature']), /WrongLeaseSigner/, 'paid to another supplier: reverts')
  await t.rejects(simulatePay({ ...a.action['authorization'], amount: usdc(99).toString() }, a.action['signature']), /WrongLeaseSigner/, 'another amount: reverts')
  expectProblem(t, await report(a.offerId, randomHash()), 422, 'proof_not_found', 'no such transaction')
  const transfer = await session.transferToken(USDC, h.devnet.accounts.supplier.address, 1n)
  const refusedA = await report(a.offerId, transfer)
  expectProblem(t, refusedA, 422, 'proof_wrong_contract', 'a plain token transfer')
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', refusedA)

  // Offer B paid as its action says; its payment reported for offer C is not C's payment.
  const b = await leased(usdc(200))
  const paidB = await session.sendUnsigned(b.action['transaction'])

  // Offer C: B's payment reported for it while its own lease is live (once C is paid, the chain follower may fund it
  // before any report, and a report then answers for the paid lease); then paid as its action says.
  const c = await leased(usdc(300))
  expectProblem(t, await report(c.offerId, paidB), 422, 'proof_wrong_arguments', 'the payment of another offer')
  const paid = await session.sendUnsigned(c.action['transaction'])
  const otherLender = await readyLender(h, { minFeeBps: 9000, liquidityAtomic: usdc(10), walletAtomic: 0n })
  const notHolder = await report(c.offerId, paid, otherLender)
  expectProblem(t, notHolder, 409, 'no_lease', 'a lender without a lease on the offer')
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', notHolder)
  const impostor = await otherLender.client.post(`/credit/offers/${c.offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  expectProblem(t, impostor, 403, 'forbidden', 'reporting in the name of another lender')
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', impostor)
  const unknown = await report('off_77777', paid)
  expectProblem(t, unknown, 404, 'offer_not_found')
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', unknown)
  expectProblem(t, await lender.client.post(`/credit/offers/${c.offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid }, { token: '' }), 401, 'unauthorized')
  expectProblem(t, await lender.client.post(`/credit/offers/${c.offerId}/supplier-payment`, { lender: 'lender', supplierPaymentId: paid }), 400, 'validation_failed')

  const advance = await report(c.offerId, paid)
  t.equal(advance.status, 200, JSON.stringify(advance.body))
  expectDocumented(t, doc, 'post', '/credit/offers/{offerId}/supplier-payment', advance)
  t.match(advance.body, { state: 'active', offerId: c.offerId, lender: lender.account.address, payer: lender.session.address, principalAtomic: usdc(300).toString(), payment: { txHash: paid } })
  // The same payment reported twice (or after the chain follower saw it) answers the same advance; it funds once.
  const twice = await report(c.offerId, paid)
  t.equal(twice.status, 200, 'the same report twice: the same advance, not an error')
  t.equal(twice.body.advanceId, advance.body.advanceId)
  const funded = await borrowerClient.post('/credit/match', { offerId: c.offerId })
  expectProblem(t, funded, 409, 'offer_closed', 'a funded offer cannot be matched again')
  expectDocumented(t, doc, 'post', '/credit/match', funded)
})

t.test('complete, fail, liquidate: the actor rules, 404, 409 wrong state, and an operator may act', async (t) => {
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const job = await fundedJob(h, { jobId: 'job_end_1', receivableAtomic: usdc(1000) })
  const funded = await fundAdvance(h, { borrower: job.borrower.address, borrowerClient: job.borrowerClient, lender, source: 'job_end_1', amountAtomic: usdc(400), maximumFeeAtomic: usdc(40) })
  const advanceId = funded.advance['advanceId'] as string

  // Complete and fail belong to the job's client (or an operator); liquidate to the advance's lender (or an operator).
  const byBorrower = await job.borrowerClient.post('/credit/jobs/job_end_1/complete', {})
  expectProblem(t, byBorrower, 403, 'forbidden', 'the borrower completing its own job')
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/complete', byBorrower)
  expectProblem(t, await job.borrowerClient.post('/credit/jobs/job_end_1/fail', { reason: 'not_delivered' }), 403, 'forbidden', 'the borrower failing its own job')
  const notLender = await job.jobClientApi.post(`/credit/advances/${advanceId}/liquidate`, {})
  expectProblem(t, notLender, 403, 'forbidden', 'the job client liquidating')
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/liquidate', notLender)
  const early = await lender.client.post(`/credit/advances/${advanceId}/liquidate`, {})
  expectProblem(t, early, 409, 'advance_not_in_default', 'an active advance is not liquidated')
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/liquidate', early)
  expectProblem(t, await job.jobClientApi.post('/credit/jobs/job_nope/complete', {}), 404, 'job_not_found')
  expectProblem(t, await job.jobClientApi.post('/credit/jobs/job_nope/fail', { reason: 'not_delivered' }), 404, 'job_not_found')
  expectProblem(t, await lender.client.post('/credit/advances/adv_31337/liquidate', {}), 404, 'advance_not_found')
  expectProblem(t, await job.jobClientApi.post('/credit/jobs/job_end_1/fail', {}), 400, 'validation_failed', 'a failure without a reason')
  expectProblem(t, await job.jobClientApi.post('/credit/jobs/job_end_1/complete', { now: true }), 400, 'validation_failed', 'an unknown field')
  expectProblem(t, await job.jobClientApi.post('/credit/jobs/job_end_1/complete', {}, { token: '' }), 401, 'unauthorized')

  // The operator fails the job; the lender's advance defaults; the operator liquidates it.
  const failed = await operator.post('/credit/jobs/job_end_1/fail', { reason: 'not_delivered' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/fail', failed)
  t.match(failed.body, { type: 'job_failed', jobId: 'job_end_1', borrower: job.borrower.address, defaultedAdvanceIds: [advanceId], borrowerSuspended: true })
  const refail = await job.jobClientApi.post('/credit/jobs/job_end_1/fail', { reason: 'not_delivered' })
  expectProblem(t, refail, 409, undefined, 'a failed job cannot fail again')
  const recomplete = await job.jobClientApi.post('/credit/jobs/job_end_1/complete', {})
  expectProblem(t, recomplete, 409, undefined, 'nor be completed')
  const chain = new ChainAgent(h.network, lender.session)
  const reserveBefore = await chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reserveOf', args: [chain.token(USDC)] })
  const liquidated = await operator.post(`/credit/advances/${advanceId}/liquidate`, {})
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/liquidate', liquidated)
  t.equal(liquidated.body.owedAtomic, usdc(412).toString(), 'principal + 3% fee')
  // The failed job's escrow went back to its client: no revenue; no collateral; the reserve pays what it holds.
  const fromReserve = liquidated.body.steps.find((s: Json) => s['step'] === 'insurance_reserve')?.amountAtomic
  t.equal(liquidated.body.steps.find((s: Json) => s['step'] === 'source_revenue')?.amountAtomic, '0', 'a failed job\'s escrow is no recovery source')
  t.ok(BigInt(fromReserve) <= reserveBefore, 'the reserve pays at most what it holds')
  t.equal(liquidated.body.stoppedAt, BigInt(liquidated.body.shortfallAtomic) > 0n ? 'shortfall' : 'insurance_reserve')
  expectProblem(t, await lender.client.post(`/credit/advances/${advanceId}/liquidate`, {}), 409, 'advance_closed', 'a liquidated advance')

  // Completion by the job's client: 200, then 409 once closed (a waiting or leased offer on the job:
  // test/api/outsider-completion.test.ts).
  const job3 = await fundedJob(h, { jobId: 'job_end_3', receivableAtomic: usdc(500) })
  const completed = await job3.jobClientApi.post('/credit/jobs/job_end_3/complete', {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/complete', completed)
  t.match(completed.body, { jobId: 'job_end_3', advances: [], toLendersAtomic: '0', toBorrowerAtomic: usdc(500).toString() })
  expectProblem(t, await job3.jobClientApi.post('/credit/jobs/job_end_3/complete', {}), 409, 'job_closed', 'a completed job')
})
