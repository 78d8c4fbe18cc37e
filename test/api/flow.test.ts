// The typical flow of spec section 4 end to end, over real HTTP, with real signatures and real transactions on the
// devnet: register lenders, fund them, submit setup transactions, create a job, request credit, match, poll the
// actions, pay the supplier with the session key, report it, complete the job; then a flow that ends in liquidation.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { sendSettleJob } from '../../src/chain/operator.ts'
import type { DispatchOutcome } from '../../src/engine/index.ts'
import { verifyPassport, type SignedPassportEvent } from '../../src/passport/passport.ts'
import { creditRequest, fundedJob, readyLender, startHarness, USDC, usdc, type Harness } from './../fixtures/service.ts'
import { jobKey } from '../../src/chain/ids.ts'

let h: Harness
/** The advance of the first flow, read back by id in the last test. */
let firstAdvanceId = ''
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('lender registration, job, credit, match, supplier paid by the session key, job completed', async (t) => {
  const expensive = await readyLender(h, { minFeeBps: 900, liquidityAtomic: usdc(5000) })
  const cheap = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(5000) })
  t.equal(cheap.registration.sessionKey.privateKey.length, 66, 'the session key is returned once, in full')
  t.equal(cheap.registration.setupTransactions.length, 1, 'one setup transaction per network')

  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_flow_1', receivableAtomic: usdc(2000) })
  const supplier = h.devnet.accounts.supplier.address
  const chain = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))
  const supplierBefore = await chain.balanceOf(USDC, supplier)

  // Borrower max 10%: both asks are within it; the cheapest (2.5%) wins.
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_flow_1', usdc(1000), usdc(100)))
  t.equal(decision.status, 200)
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body.reasons))
  const offerId = decision.body.offer.offerId

  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.status, 200)
  t.equal(match.body.lease.lender, cheap.account.address, 'the lowest ask among eligible lenders is selected')
  t.equal(match.body.lease.feeAtomic, usdc(25).toString(), 'fee = ceil(amount x 250 / 10000)')

  const actions = await cheap.client.get(`/lenders/${cheap.account.address}/actions`)
  t.equal(actions.status, 200)
  t.equal(actions.body.length, 1)
  const action = actions.body[0]
  t.equal(action.lease.offerId, offerId)
  const paid = await new ChainAgent(h.network, cheap.session).sendUnsigned(action.transaction)

  const report = await cheap.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: cheap.account.address, supplierPaymentId: paid })
  t.equal(report.status, 200, JSON.stringify(report.body))
  t.equal(report.body.state, 'active')
  t.equal(report.body.principalAtomic, usdc(1000).toString())
  firstAdvanceId = report.body.advanceId
  t.equal(await chain.balanceOf(USDC, supplier), supplierBefore + usdc(1000), 'the lender\'s wallet paid the supplier directly')

  const replay = await cheap.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: cheap.account.address, supplierPaymentId: paid })
  t.equal(replay.status, 200, 'a payment reported twice answers its advance again')
  t.equal(replay.body.advanceId, firstAdvanceId, 'the same advance: a proof funds once')

  const lenderBefore = await chain.balanceOf(USDC, cheap.session.address)
  const complete = await jobClientApi.post('/credit/jobs/job_flow_1/complete', {})
  t.equal(complete.status, 200, JSON.stringify(complete.body))
  t.equal(complete.body.advances.length, 1)
  const owedToLender = BigInt(complete.body.advances[0].amountAtomic)
  t.equal(await chain.balanceOf(USDC, cheap.session.address), lenderBefore + owedToLender, "the escrow repaid the lender first, into its session wallet, on chain")
  t.equal(owedToLender + BigInt(complete.body.toReserveAtomic), usdc(1025), 'principal plus fee, split between lender and reserve')

  const wallet = await h.app.service.engine.getLender(cheap.account.address)
  t.equal(wallet?.feesEarnedAtomic, usdc(25) - BigInt(complete.body.toReserveAtomic))
  const state = await borrowerClient.get('/credit/state')
  t.equal(state.body.counts.liveAdvances, 0)
  t.equal(expensive.registration.lender.askBps, 900)
})

t.test('a failed job suspends the borrower and its advance is liquidated in the recovery order', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(3000) })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_flow_2', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_flow_2', usdc(500), usdc(50)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address)
  const [action] = (await lender.client.get(`/lenders/${lender.account.address}/actions`)).body
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(action.transaction)
  const advance = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(advance.status, 200)

  const failed = await jobClientApi.post('/credit/jobs/job_flow_2/fail', { reason: 'not_delivered' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  t.equal(failed.body.type, 'job_failed')
  t.equal(failed.body.borrowerSuspended, true)
  t.same(failed.body.defaultedAdvanceIds, [advance.body.advanceId])

  const again = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_flow_2', usdc(10), usdc(5)))
  t.equal(again.body.decision, 'declined')
  t.ok(again.body.reasons.some((r: { code: string }) => r.code === 'borrower_suspended'), 'a suspended borrower is declined')

  const chain = new ChainAgent(h.network, lender.account)
  const before = await chain.balanceOf(USDC, lender.session.address)
  const read = <T>(functionName: 'reserveOf' | 'getAdvance', arg: string): Promise<T> =>
    chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName, args: [arg as never] }) as Promise<T>
  // The first flow's settlement put its insurance share in the reserve: the contract pays the lender from it.
  const reserveBefore = await read<bigint>('reserveOf', chain.token(USDC))
  t.ok(reserveBefore > 0n, 'the reserve holds the first flow\'s insurance share')
  const owedBefore = await read<{ lenderOwed: bigint; reserveOwed: bigint }>('getAdvance', advance.body.advanceKey)
  t.equal(owedBefore.lenderOwed + owedBefore.reserveOwed, usdc(505), 'principal plus fee owed on chain')
  const receipt = await lender.client.post(`/credit/advances/${advance.body.advanceId}/liquidate`, {})
  t.equal(receipt.status, 200, JSON.stringify(receipt.body))
  t.same(receipt.body.steps.map((s: { step: string }) => s.step), ['source_revenue', 'collateral', 'backing_liquidation', 'insurance_reserve', 'shortfall'])
  t.equal(receipt.body.owedAtomic, usdc(505).toString())
  // A failed job earned nothing: failJob gave its escrow back to the client, so (no collateral, no backing) only the
  // reserve pays, up to what the lender is owed; the rest is shortfall, still owed by the borrower.
  const fromReserve = reserveBefore < owedBefore.lenderOwed ? reserveBefore : owedBefore.lenderOwed
  const amountOf = (step: string) => receipt.body.steps.find((s: { step: string }) => s.step === step)?.amountAtomic
  t.equal(amountOf('source_revenue'), '0', 'the escrow is not a recovery source of a failed job')
  t.equal(amountOf('collateral'), '0')
  t.equal(amountOf('insurance_reserve'), fromReserve.toString(), 'the reserve paid what the contract paid')
  t.equal(receipt.body.stoppedAt, 'shortfall')
  t.equal(receipt.body.shortfallAtomic, (usdc(505) - fromReserve).toString(), 'the shortfall is what nobody covered')
  t.equal(await chain.balanceOf(USDC, lender.session.address), before + fromReserve, 'the reserve\'s tokens reached the session wallet')
  t.equal(await read<bigint>('reserveOf', chain.token(USDC)), reserveBefore - fromReserve)
  const owedAfter = await read<{ lenderOwed: bigint; reserveOwed: bigint; liquidated: boolean }>('getAdvance', advance.body.advanceKey)
  t.equal(owedAfter.liquidated, true)
  t.equal(owedAfter.lenderOwed, owedBefore.lenderOwed - fromReserve, 'the lender is still owed what nobody covered')
  t.equal(owedAfter.reserveOwed, owedBefore.reserveOwed + fromReserve, 'the reserve is subrogated for what it paid')
  const recorded = await lender.client.get(`/credit/advances/${advance.body.advanceId}`)
  t.equal(recorded.body.state, 'shortfall')
  // The borrower's passport: the failed job, then the liquidation's shortfall, chained and signed by the issuer.
  const passport = (await lender.client.get(`/passport/${borrower.address}`, { token: '' })).body as SignedPassportEvent[]
  t.same(passport.map((e) => e.kind), ['job_failed', 'liquidated_with_shortfall'])
  t.match(JSON.parse(passport[1]?.details as string), { advanceId: advance.body.advanceId, shortfallAtomic: receipt.body.shortfallAtomic, txHash: receipt.body.txHash })
  const issuer = (await lender.client.get('/.well-known/service.json')).body.passport.issuer
  t.same(await verifyPassport(passport, { issuer }), { ok: true, problems: [] })
})

t.test('an offer that dispatch already leased is answered with that lease by POST /credit/match', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_flow_3', receivableAtomic: usdc(500) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_flow_3', usdc(100), usdc(10)))
  const offerId = decision.body.offer.offerId
  const dispatched = await borrowerClient.post('/credit/dispatch', {})
  t.equal(dispatched.status, 200)
  const leased = dispatched.body.matches.find((m: { offer: { offerId: string } }) => m.offer.offerId === offerId)
  t.equal(leased?.lease?.lender, lender.account.address, 'dispatch leased the pending offer to the cheapest lender')
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.status, 200)
  t.equal(match.body.lease.leaseId, leased.lease.leaseId, 'the existing lease, not a second one')
  t.equal(h.app.service.engine.liveLeasesOf(lender.account.address).length, 1)
})

t.test('jobs, offers and advances are readable by id, final ones from the store', async (t) => {
  const job = await h.app.service.store.getSnapshot('job', 'job_flow_1')
  t.equal(job?.final, true, 'the completed job left memory')
  t.equal(h.app.service.engine.getJob('job_flow_1'), undefined)
  const client = new CreditClient(h.url)
  const read = await client.get('/credit/jobs/job_flow_1')
  t.equal(read.status, 200)
  t.equal(read.body.state, 'completed')
  const advance = await client.get(`/credit/advances/${firstAdvanceId}`)
  t.equal(advance.status, 200)
  t.equal(advance.body.state, 'repaid')
  const offer = await client.get(`/credit/offers/${advance.body.offerId}`)
  t.equal(offer.status, 200)
  t.equal(offer.body.state, 'funded')
  t.equal(offer.body.advanceId, advance.body.advanceId)
  const missing = await client.get('/credit/offers/off_999999')
  t.equal(missing.status, 404)
  t.equal(missing.body.code, 'offer_not_found')
})

t.test('lists are paged in registration order: limit, after, next-after', async (t) => {
  const client = new CreditClient(h.url)
  const all = await client.get('/lenders?limit=1000')
  t.ok(all.body.length >= 3, 'the lenders of the flows above')
  t.equal(all.headers.get('next-after'), null, 'no next page when everything fits')
  const seen: string[] = []
  let after: string | null = null
  for (let pages = 0; pages < all.body.length + 1; pages++) {
    const reply: { status: number; body: { address: string }[]; headers: Headers } = await client.get(`/lenders?limit=2${after === null ? '' : `&after=${after}`}`)
    t.equal(reply.status, 200)
    t.ok(reply.body.length <= 2)
    seen.push(...reply.body.map((l) => l.address))
    after = reply.headers.get('next-after')
    if (after === null) break
  }
  t.same(seen, all.body.map((l: { address: string }) => l.address), 'the pages together are the whole list, in order')
  const bad = await client.get('/lenders?limit=0')
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'validation_failed')
})

t.test('a settlement already on chain (a crash between the transaction and its commit) is found and recorded by the next attempt', async (t) => {
  const { jobClientApi } = await fundedJob(h, { jobId: 'job_flow_4', receivableAtomic: usdc(100) })
  const earlier = await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, 'job_flow_4'), offerKeys: [] })
  const complete = await jobClientApi.post('/credit/jobs/job_flow_4/complete', {})
  t.equal(complete.status, 200, JSON.stringify(complete.body))
  t.equal(complete.body.txHash, earlier.txHash, 'the earlier settlement is what the receipt records')
  t.equal((await jobClientApi.get('/credit/jobs/job_flow_4')).body.state, 'completed')
})


t.test('a match answered with a lease that dispatch created waits until that lease is durable', async (t) => {
  await readyLender(h, { minFeeBps: 5, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_flow_6', receivableAtomic: usdc(500) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_flow_6', usdc(100), usdc(10)))
  const offerId = decision.body.offer.offerId
  const { service } = h.app
  // What the ticker does: dispatch leases the offer, and its commit is on its way to the disk.
  let dispatched: DispatchOutcome | undefined
  const persisted = service.dispatch({ ticket: undefined, encode: (outcome) => ({ status: 200, body: (dispatched = outcome) }) })
  t.ok(dispatched !== undefined && dispatched.matches.some((m) => m.offer.offerId === offerId && m.lease !== null))
  const reply = await service.match({ ticket: undefined, encode: (outcome) => ({ status: 200, body: outcome }) }, borrower.address, offerId)
  const { leaseId } = (reply.body as { lease: { leaseId: string } }).lease
  t.ok(service.store.getSnapshot('lease', leaseId), 'the answer left only after the commit that created the lease')
  await persisted
})
