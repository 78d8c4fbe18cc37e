// Backing sources over HTTP (attested registration, refusals, listing), credit drawn on one and repaid on chain with
// POST /credit/advances/{advanceId}/repay, and collateral posted on a job with its proof; each with its error classes.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { backingSourceBody, expectDocumented, expectProblem, fundAdvance, openApiDocument, randomHash, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let lender: ReadyLender
let borrower: PrivateKeyAccount
let borrowerClient: CreditClient
let other: CreditClient

t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  lender = await readyLender(h, { minFeeBps: 200, liquidityAtomic: usdc(5000) })
  borrower = await fundedAccount(h.devnet, h.network, usdc(6000))
  borrowerClient = await signedIn(h.url, borrower)
  other = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
})
t.teardown(async () => {
  await h.stop()
})

t.test('backing source: attested 201, wrong signature 422, another agent 403, duplicate 409, 401, 400, listed once', async (t) => {
  const fields = { sourceId: 'src-gold-1', valueAtomic: usdc(4000), liquidationValueAtomic: usdc(2500), advanceRateBps: 5000 }
  const body = await backingSourceBody(h, borrower.address, fields)

  expectProblem(t, await borrowerClient.post('/credit/backing-sources', body, { token: '' }), 401, 'unauthorized', 'no token')
  expectProblem(t, await borrowerClient.post('/credit/backing-sources', body, { token: 'not-a-session' }), 401, 'unauthorized', 'unknown token')

  const stranger = privateKeyToAccount(generatePrivateKey())
  const forged = await backingSourceBody(h, borrower.address, { ...fields, sourceId: 'src-forged' }, stranger)
  const refused = await borrowerClient.post('/credit/backing-sources', forged)
  expectProblem(t, refused, 422, 'attestation_invalid', 'signed by a key that is not an attester')
  expectDocumented(t, doc, 'post', '/credit/backing-sources', refused)
  const inflated = { ...(await backingSourceBody(h, borrower.address, { ...fields, sourceId: 'src-inflated' })), valueAtomic: usdc(40_000).toString() }
  expectProblem(t, await borrowerClient.post('/credit/backing-sources', inflated), 422, 'attestation_invalid', 'a field changed after signing')

  const foreign = await other.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { ...fields, sourceId: 'src-foreign' }))
  expectProblem(t, foreign, 403, 'forbidden', 'a source of another agent')
  expectDocumented(t, doc, 'post', '/credit/backing-sources', foreign)

  expectProblem(t, await borrowerClient.post('/credit/backing-sources', { ...body, note: 'x' }), 400, 'validation_failed', 'unknown field')
  expectProblem(t, await borrowerClient.post('/credit/backing-sources', { ...body, advanceRateBps: 10_001 }), 400, 'validation_failed', 'bps over 10000')

  const created = await borrowerClient.post('/credit/backing-sources', body)
  t.equal(created.status, 201, JSON.stringify(created.body))
  t.match(created.body, { sourceId: 'src-gold-1', agent: borrower.address, valueAtomic: usdc(4000).toString(), liquidationValueAtomic: usdc(2500).toString(), advanceRateBps: 5000, committedAtomic: '0' })
  expectDocumented(t, doc, 'post', '/credit/backing-sources', created)
  expectProblem(t, await borrowerClient.post('/credit/backing-sources', body), 409, 'source_exists', 'the same sourceId again')

  const list = await other.get('/credit/backing-sources', { token: '' })
  t.equal(list.status, 200)
  expectDocumented(t, doc, 'get', '/credit/backing-sources', list)
  t.same(list.body.map((s: Json) => s['sourceId']), ['src-gold-1'], 'only the verified source, once')
})

t.test('credit on a backing source: match, pay, report, repay on chain, POST repay answers the receipt', async (t) => {
  const chain = new ChainAgent(h.network, borrower)
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'src-gold-1', amountAtomic: usdc(1000), maximumFeeAtomic: usdc(50), productType: 'asset-backed' })
  t.match(funded.decision.offer.source, { kind: 'backing', id: 'src-gold-1' })
  t.equal(funded.match.lease.feeAtomic, usdc(20).toString(), 'fee = ceil(1000 x 200 / 10000)')
  const advance = funded.advance
  const advanceId = advance['advanceId'] as string
  t.equal(advance['principalAtomic'], usdc(1000).toString())
  const principal = BigInt(advance['principalAtomic'])
  const fee = BigInt(advance['feeAtomic'])
  const insurance = BigInt(advance['insuranceAtomic'])
  t.equal(insurance, (fee * 1000n) / 10_000n, 'insurance share of the fee (catalog insuranceShareBps)')
  const sources = await other.get('/credit/backing-sources')
  t.equal(sources.body[0].committedAtomic, usdc(1000).toString(), 'the advance is committed on the source')

  // Proofs that do not prove the repayment (a repayment of any amount is a real one: issue 9 case 4).
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: randomHash() }), 422, 'proof_not_found', 'no such transaction')
  const transfer = await chain.transferToken(USDC, lender.account.address, 1n)
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: transfer }), 422, 'proof_wrong_contract', 'a transaction of another contract')
  expectProblem(t, await borrowerClient.post('/credit/advances/adv_424242/repay', { txHash: randomHash() }), 404, 'advance_not_found', 'unknown advance')
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: '0x1234' }), 400, 'validation_failed', 'not a hash')
  expectProblem(t, await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: randomHash() }, { token: '' }), 401, 'unauthorized', 'no token')

  // The repayment the engine's rule asks for: principal + fee in total, the insurance share to the reserve.
  const lenderBefore = await chain.balanceOf(USDC, lender.session.address)
  const repaid = await chain.repay(advance['advanceKey'] as `0x${string}`, USDC, principal + fee)
  const receipt = await other.post(`/credit/advances/${advanceId}/repay`, { txHash: repaid })
  t.equal(receipt.status, 200, JSON.stringify(receipt.body))
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/repay', receipt)
  t.match(receipt.body, {
    advanceId,
    lender: lender.account.address,
    principalAtomic: principal.toString(),
    feeAtomic: fee.toString(),
    lenderAmountAtomic: (principal + fee - insurance).toString(),
    reserveAmountAtomic: insurance.toString(),
    txHash: repaid,
  })
  t.equal(await chain.balanceOf(USDC, lender.session.address), lenderBefore + principal + fee - insurance, "the lender's session wallet was paid on chain (capital recycles into the wallet that lends)")

  const state = await other.get('/credit/state')
  t.equal(state.body.counts.liveAdvances, 0)
  t.match(state.body.reserves, [{ network: h.network.slug, asset: USDC, balanceAtomic: insurance.toString() }], 'the insurance share is in the reserve')
  const after = await other.get('/credit/backing-sources')
  t.equal(after.body[0].committedAtomic, '0', 'the source is free again')
  const wallet = await other.get(`/lenders/${lender.account.address}/wallet`)
  t.match(wallet.body.activity, { advancesRepaid: 1, deployedAtomic: '0', feesEarnedAtomic: (fee - insurance).toString() })

  // Its repayment reported again answers the same receipt and counts nothing twice (a new repay of an advance that
  // owes nothing reverts on chain, so there is no other proof to show).
  const again = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: repaid })
  t.equal(again.status, 200, 'the same repayment again: the same receipt')
  t.match(again.body, { advanceId, repaid: true, lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
  t.match((await other.get(`/lenders/${lender.account.address}/wallet`)).body.activity, { advancesRepaid: 1, feesEarnedAtomic: (fee - insurance).toString() }, 'counted once')
})

t.test('collateral on a job: 201 with a proof; a replay answers the same position, wrong amount or job 422, 403, 404', async (t) => {
  const owner = await fundedAccount(h.devnet, h.network, usdc(500))
  const { borrowerClient: jobBorrower, jobClientApi } = await fundedJob(h, { jobId: 'job_coll_1', receivableAtomic: usdc(1000), borrower: owner })
  await fundedJob(h, { jobId: 'job_coll_2', receivableAtomic: usdc(1000), borrower: owner })
  const chain = new ChainAgent(h.network, owner)
  const posted = await chain.postCollateral('job_coll_1', USDC, usdc(100))

  expectProblem(t, await jobBorrower.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(100).toString(), txHash: posted }, { token: '' }), 401, 'unauthorized')
  const byClient = await jobClientApi.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(100).toString(), txHash: posted })
  expectProblem(t, byClient, 403, 'forbidden', 'collateral is posted by the job\'s borrower')
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/collateral', byClient)
  const unknown = await jobBorrower.post('/credit/jobs/job_nope/collateral', { amountAtomic: usdc(100).toString(), txHash: posted })
  expectProblem(t, unknown, 404, 'job_not_found')
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/collateral', unknown)
  expectProblem(t, await jobBorrower.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(99).toString(), txHash: posted }), 422, 'proof_wrong_arguments', 'wrong amount')
  expectProblem(t, await jobBorrower.post('/credit/jobs/job_coll_2/collateral', { amountAtomic: usdc(100).toString(), txHash: posted }), 422, 'proof_wrong_arguments', 'posted for another job')
  expectProblem(t, await jobBorrower.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(100).toString(), txHash: randomHash() }), 422, 'proof_not_found')

  const position = await jobBorrower.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(100).toString(), txHash: posted })
  t.equal(position.status, 201, JSON.stringify(position.body))
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/collateral', position)
  t.match(position.body, { jobId: 'job_coll_1', borrower: owner.address, amountAtomic: usdc(100).toString(), totalCollateralAtomic: usdc(100).toString(), proof: { txHash: posted } })
  // The same posting again (or after the chain follower counted it) answers the same position and counts it once.
  const replay = await jobBorrower.post('/credit/jobs/job_coll_1/collateral', { amountAtomic: usdc(100).toString(), txHash: posted })
  t.equal(replay.status, 201, JSON.stringify(replay.body))
  t.match(replay.body, { amountAtomic: usdc(100).toString(), totalCollateralAtomic: usdc(100).toString() }, 'the same proof twice: counted once')
  expectDocumented(t, doc, 'post', '/credit/jobs/{jobId}/collateral', replay)

  // Capacity = receivable x 80% + collateral: 850 and its maximum fee of 50 are within it only thanks to the collateral.
  const decision = await jobBorrower.post('/credit/request', creditRequest(h, owner.address, 'job_coll_1', usdc(850), usdc(50)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body.reasons))
  t.equal(decision.body.capacityAtomic, usdc(900).toString())
  const over = await jobBorrower.post('/credit/request', creditRequest(h, owner.address, 'job_coll_2', usdc(900), usdc(50)))
  t.equal(over.body.decision, 'declined')
  t.match(over.body.reasons, [{ code: 'over_capacity' }])
})
