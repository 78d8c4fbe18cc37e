// Issue 9, case 6: a lender can keep lending and can stop, over HTTP on the devnet. After a cycle (lend, repay to the
// session wallet) every lender view reports as available exactly what the session wallet can pay; the top-up actions
// of GET /lenders/{address}/actions (transfer from the main wallet, approve by the session key), sent with viem,
// bring the lender back in the books; POST /lenders/{address}/withdraw lowers what the service may lend while a lease
// is live: that lease can still be paid, no new lease goes beyond the lowered liquidity, and the session key's
// transfer back returns the rest to the lender's wallet.
import t, { type Test } from 'tap'
import { erc20Abi } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fund, fundedAccount, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, backingSourceBody, expectDocumented, expectProblem, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let borrower: PrivateKeyAccount
let borrowerClient: CreditClient
let anonymous: CreditClient
const SOURCE = 'src-capital-1'

t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  borrower = await fundedAccount(h.devnet, h.network, usdc(5000))
  borrowerClient = await signedIn(h.url, borrower)
  anonymous = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: SOURCE, valueAtomic: usdc(20_000), liquidationValueAtomic: usdc(10_000), advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(`source: ${source.status} ${JSON.stringify(source.body)}`)
})
t.teardown(async () => {
  await h.stop()
})

/** What the session wallet can pay on chain now: min(balance, allowance to the credit contract). */
async function spendableOnChain(lender: ReadyLender): Promise<{ balance: bigint; allowance: bigint; spendable: bigint }> {
  const chain = new ChainAgent(h.network, lender.account)
  const balance = await chain.balanceOf(USDC, lender.session.address)
  const allowance = await chain.publicClient.readContract({ address: chain.token(USDC), abi: erc20Abi, functionName: 'allowance', args: [lender.session.address, h.network.creditContract] })
  return { balance, allowance, spendable: balance < allowance ? balance : allowance }
}

/** Waits until the service's wallet watcher holds the chain's current balance and allowance of the session wallet. */
async function watcherCurrent(lender: ReadyLender): Promise<void> {
  const { balance, allowance } = await spendableOnChain(lender)
  const watcher = h.app.service.watcher
  await watcher.waitFor(() => {
    const holding = watcher.holding(h.network.slug, USDC, lender.session.address)
    return holding?.balanceAtomic === balance && holding.allowanceAtomic === allowance
  }, 10_000)
}

async function profileOf(t: Test, lender: ReadyLender): Promise<Json> {
  const list = await anonymous.get('/lenders?limit=1000')
  t.equal(list.status, 200)
  expectDocumented(t, doc, 'get', '/lenders', list)
  const profile = (list.body as Json[]).find((l) => l['address'] === lender.account.address)
  if (profile === undefined) throw new Error(`${lender.account.address} not listed`)
  return profile
}

async function actionsOf(t: Test, lender: ReadyLender): Promise<Json[]> {
  const reply = await lender.client.get(`/lenders/${lender.account.address}/actions`)
  t.equal(reply.status, 200)
  expectDocumented(t, doc, 'get', '/lenders/{address}/actions', reply)
  return reply.body as Json[]
}

const lenders: Record<string, ReadyLender> = {}

t.test('after a cycle (lend, repay to the session wallet) every lender view reports what the session wallet can pay; its approve restores the rest', async (t) => {
  // The setup approve allows exactly the policy (1000); paySupplier spends allowance, the repayment refills the balance only.
  const lender = (lenders['cycled'] = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(1000) }))
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: SOURCE, amountAtomic: usdc(190), maximumFeeAtomic: usdc(10), productType: 'asset-backed' })
  const advance = funded.advance
  const principal = BigInt(advance['principalAtomic'])
  const fee = BigInt(advance['feeAtomic'])
  const insurance = BigInt(advance['insuranceAtomic'])
  // Lent, not yet repaid: the wallet paid the principal, the policy lent it; both say the same.
  await watcherCurrent(lender)
  const lent = await spendableOnChain(lender)
  t.equal(lent.spendable, usdc(1000) - principal)
  t.equal((await profileOf(t, lender))['availableAtomic'], lent.spendable.toString(), 'before the repayment: available is what the wallet can pay')
  const repaid = await new ChainAgent(h.network, borrower).repay(advance['advanceKey'] as `0x${string}`, USDC, principal + fee)
  const receipt = await borrowerClient.post(`/credit/advances/${advance['advanceId']}/repay`, { txHash: repaid })
  t.equal(receipt.status, 200, JSON.stringify(receipt.body))
  await watcherCurrent(lender)

  const chain = await spendableOnChain(lender)
  const policy = usdc(1000) + fee - insurance
  t.equal(chain.balance, policy, 'the repayment reached the session wallet: its balance is back at the policy')
  t.equal(chain.allowance, usdc(1000) - principal, 'the payment used up allowance that nothing restored')
  const profile = await profileOf(t, lender)
  t.equal(profile['availableAtomic'], chain.spendable.toString(), 'GET /lenders: available is exactly what the session wallet can pay')
  t.equal(profile['policyAvailableAtomic'], policy.toString(), 'the policy alone would lend more')
  const wallet = await anonymous.get(`/lenders/${lender.account.address}/wallet`)
  expectDocumented(t, doc, 'get', '/lenders/{address}/wallet', wallet)
  t.equal(wallet.body.activity.availableAtomic, chain.spendable.toString(), 'GET /lenders/{address}/wallet says the same')
  const wallets = await anonymous.get('/lenders/wallets?limit=200')
  t.equal((wallets.body as Json[]).find((w) => w['lender'] === lender.account.address)?.['activity']['availableAtomic'], chain.spendable.toString(), 'GET /lenders/wallets says the same')
  const state = await anonymous.get('/credit/state')
  expectDocumented(t, doc, 'get', '/credit/state', state)
  const totals = state.body.totals
  t.ok(BigInt(totals.availableAtomic) < BigInt(totals.policyAvailableAtomic), '/credit/state totals: available within what the wallets can pay')

  // The wallet holds the policy's tokens but allows less: the one action is the session key's approve.
  const actions = await actionsOf(t, lender)
  t.match(actions, [{ kind: 'approve', signer: 'session_key', network: h.network.slug, asset: USDC, transaction: { from: lender.session.address, to: new ChainAgent(h.network, lender.account).token(USDC), chainId: h.network.chainId } }])
  t.equal(actions.length, 1, 'no top-up: the balance already covers the policy')
  await new ChainAgent(h.network, lender.session).sendUnsigned(actions[0]!['transaction'])
  await watcherCurrent(lender)
  t.equal((await profileOf(t, lender))['availableAtomic'], policy.toString(), 'approved: the whole policy is available again')
  t.same(await actionsOf(t, lender), [], 'nothing left to do')
})

t.test('a session wallet short of the policy: the top-up transfer, sent from the lender\'s wallet, brings the lender back in the books', async (t) => {
  // Cheapest, but its session wallet holds 100 of the 500 its policy lends.
  const short = (lenders['short'] = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(500), walletAtomic: usdc(100) }))
  await watcherCurrent(short)
  t.equal((await profileOf(t, short))['availableAtomic'], usdc(100).toString(), 'available: what the wallet holds, not the policy')
  const actions = await actionsOf(t, short)
  t.match(actions, [{ kind: 'top_up', signer: 'lender', amountAtomic: usdc(400).toString(), transaction: { from: short.account.address, to: new ChainAgent(h.network, short.account).token(USDC) } }])
  t.equal(actions.length, 1, 'the allowance covers the policy: no approve')

  // Short of 300: passed over, as liquidity that does not cover it; its wallet pays the least advance (1 USDC), so it is
  // not refused, and stays in its book for smaller offers (outsider21).
  const passed = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, SOURCE, usdc(300), usdc(30)), productType: 'asset-backed' })
  const passedMatch = await borrowerClient.post('/credit/match', { offerId: passed.body.offer.offerId })
  t.equal(passedMatch.status, 200, JSON.stringify(passedMatch.body))
  t.not(passedMatch.body.lease?.lender, short.account.address, 'the short wallet is passed over')
  t.notOk(passedMatch.body.refusedLeases.some((l: Json) => l['lender'] === short.account.address), 'not refused')
  t.notOk(h.app.service.engine.isParked(short.account.address), 'and still in the books')

  // The session key sends all but half a USDC away: below the least advance, refused once (insufficient balance) and
  // parked; the next lender gets the offer.
  await new ChainAgent(h.network, short.session).transferToken(USDC, short.account.address, usdc(100) - usdc(1) / 2n)
  await watcherCurrent(short)
  const first = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, SOURCE, usdc(300), usdc(30)), productType: 'asset-backed' })
  const refusedMatch = await borrowerClient.post('/credit/match', { offerId: first.body.offer.offerId })
  t.equal(refusedMatch.status, 200, JSON.stringify(refusedMatch.body))
  t.not(refusedMatch.body.lease?.lender, short.account.address, 'the short wallet is passed over')
  t.ok(refusedMatch.body.refusedLeases.some((l: Json) => l['lender'] === short.account.address && l['endReason'] === 'insufficient_balance'), 'refused')
  t.ok(h.app.service.engine.isParked(short.account.address), 'and out of the books')
  const topUp = await actionsOf(t, short)
  t.match(topUp, [{ kind: 'top_up', signer: 'lender', amountAtomic: (usdc(500) - usdc(1) / 2n).toString() }])

  // The lender's own wallet has the tokens to send (it kept none after funding the session wallet with 100, and got
  // 99.5 back).
  await fund(h.devnet, h.network, short.account.address, usdc(400))
  const before = await new ChainAgent(h.network, short.account).balanceOf(USDC, short.session.address)
  await new ChainAgent(h.network, short.account).sendUnsigned(topUp[0]!['transaction'])
  t.equal(await new ChainAgent(h.network, short.account).balanceOf(USDC, short.session.address), before + usdc(500) - usdc(1) / 2n, 'the top-up reached the session wallet')
  await watcherCurrent(short)
  t.notOk(h.app.service.engine.isParked(short.account.address), 'back in the books')
  t.equal((await profileOf(t, short))['availableAtomic'], usdc(500).toString(), 'the whole policy is available')
  t.same(await actionsOf(t, short), [], 'nothing left to do')
  const second = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, SOURCE, usdc(300), usdc(30)), productType: 'asset-backed' })
  const match = await borrowerClient.post('/credit/match', { offerId: second.body.offer.offerId })
  t.equal(match.body.lease?.lender, short.account.address, 'the topped-up lender, cheapest, gets the next offer')
})

t.test('withdrawal while a lease is live: the lease can still be paid, no new lease beyond the lowered liquidity, the rest goes back', async (t) => {
  const leaving = await readyLender(h, { minFeeBps: 20, liquidityAtomic: usdc(1000) })
  const other = lenders['cycled'] as ReadyLender
  const offer = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, SOURCE, usdc(400), usdc(40)), productType: 'asset-backed' })
  const offerId = offer.body.offer.offerId as string
  const leased = await borrowerClient.post('/credit/match', { offerId })
  t.equal(leased.body.lease?.lender, leaving.account.address, 'the cheapest lender holds a live lease of 400')

  const path = `/lenders/${leaving.account.address}/withdraw`
  expectProblem(t, await leaving.client.post(path, { amountAtomic: '1' }, { token: '' }), 401, 'unauthorized', 'without a session')
  const foreign = await other.client.post(path, { amountAtomic: usdc(100).toString() })
  expectProblem(t, foreign, 403, 'forbidden', 'another lender may not withdraw it')
  expectDocumented(t, doc, 'post', '/lenders/{address}/withdraw', foreign)
  expectProblem(t, await leaving.client.post(path, { amountAtomic: '0' }), 400, 'invalid_amount')
  const tooMuch = await leaving.client.post(path, { amountAtomic: (usdc(1000) + 1n).toString() })
  expectProblem(t, tooMuch, 409, 'withdrawal_exceeds_liquidity', 'more than the lender has')
  expectDocumented(t, doc, 'post', '/lenders/{address}/withdraw', tooMuch)

  // Everything: the 600 available leaves now; the live lease keeps its 400 reserved, pending.
  const withdrawn = await leaving.client.post(path, { amountAtomic: usdc(1000).toString() })
  t.equal(withdrawn.status, 200, JSON.stringify(withdrawn.body))
  expectDocumented(t, doc, 'post', '/lenders/{address}/withdraw', withdrawn)
  t.match(withdrawn.body.lender, { availableAtomic: '0', policyAvailableAtomic: '0', reservedAtomic: usdc(400).toString(), withdrawnAtomic: usdc(600).toString(), withdrawalPendingAtomic: usdc(400).toString() })
  t.match(withdrawn.body.actions, [{ kind: 'withdraw', signer: 'session_key', amountAtomic: usdc(600).toString(), transaction: { from: leaving.session.address, to: new ChainAgent(h.network, leaving.account).token(USDC) } }], 'the transfer back of what no live lease needs')
  t.equal(withdrawn.body.actions.length, 1)
  t.ok(h.app.service.engine.isParked(leaving.account.address), 'nothing available: out of the books')
  t.equal((await profileOf(t, leaving))['availableAtomic'], '0')

  // A new offer the withdrawn lender would have won goes to another lender.
  const next = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, SOURCE, usdc(100), usdc(10)), productType: 'asset-backed' })
  const nextMatch = await borrowerClient.post('/credit/match', { offerId: next.body.offer.offerId })
  t.equal(nextMatch.status, 200)
  t.not(nextMatch.body.lease?.lender, leaving.account.address, 'no new lease beyond the lowered liquidity')
  t.same(nextMatch.body.refusedLeases, [], 'not even a refused one: it is out of the books')

  // The live lease is honoured: its action is still delivered, and its payment creates the advance.
  const action = await actionFor(leaving, offerId)
  const paid = await new ChainAgent(h.network, leaving.session).sendUnsigned(action['transaction'])
  const advance = await leaving.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: leaving.account.address, supplierPaymentId: paid })
  t.equal(advance.status, 200, JSON.stringify(advance.body))
  t.equal(advance.body.principalAtomic, usdc(400).toString())

  // The session key sends the rest back to the lender's wallet.
  const owner = new ChainAgent(h.network, leaving.account)
  const ownerBefore = await owner.balanceOf(USDC, leaving.account.address)
  await new ChainAgent(h.network, leaving.session).sendUnsigned(withdrawn.body.actions[0]['transaction'])
  t.equal(await owner.balanceOf(USDC, leaving.account.address), ownerBefore + usdc(600), 'the lender\'s wallet got its 600 back')
  t.equal(await owner.balanceOf(USDC, leaving.session.address), 0n, 'the session wallet holds nothing the service could lend')
  await watcherCurrent(leaving)
  t.same(await actionsOf(t, leaving), [], 'nothing left to do')
  const profile = await profileOf(t, leaving)
  t.match(profile, { availableAtomic: '0', deployedAtomic: usdc(400).toString(), withdrawalPendingAtomic: usdc(400).toString() }, 'the advance\'s principal leaves when it is repaid')
  const again = await leaving.client.post(path, { amountAtomic: '1' })
  expectProblem(t, again, 409, 'withdrawal_exceeds_liquidity', 'everything is withdrawn or pending')
})

// Last in this file: it stops the watcher's reading for a moment.
t.test('a payment the service applied never shows as surplus: wallet actions wait for a reading made after it', async (t) => {
  const watcher = h.app.service.watcher
  const payer = await readyLender(h, { minFeeBps: 1, liquidityAtomic: usdc(400) })
  t.same((await payer.client.get(`/lenders/${payer.account.address}/actions`)).body, [], 'nothing to do before: the wallet holds the policy')
  // The watcher stops reading: its last reading of the session wallet is from before the payment, as it is for a
  // moment after every payment (it polls the chain).
  await watcher.stop()
  t.teardown(() => watcher.start())
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: payer, source: SOURCE, amountAtomic: usdc(150), maximumFeeAtomic: usdc(10), productType: 'asset-backed' })
  t.equal(funded.advance.principalAtomic, String(usdc(150)), 'paid and reported')
  t.equal(watcher.holding(h.network.slug, USDC, payer.session.address)?.balanceAtomic, usdc(400), 'the last reading predates the payment')
  t.same((await payer.client.get(`/lenders/${payer.account.address}/actions`)).body, [], 'no withdraw of the principal already paid out')
  watcher.start()
  await watcher.waitFor(() => watcher.isCurrent(h.network.slug, payer.session.address), 10_000)
  t.equal(watcher.holding(h.network.slug, USDC, payer.session.address)?.balanceAtomic, usdc(250), 'read again after the payment')
  t.same((await payer.client.get(`/lenders/${payer.account.address}/actions`)).body, [], 'and the wallet holds what the policy needs')
})
