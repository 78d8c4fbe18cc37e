// The lease rules of spec section 3 over HTTP: a lender whose session wallet cannot pay gets a lease that expires at
// once (insufficient_balance) and the next eligible lender gets the offer in the same match response; a lease with no
// payment expires once the chain is observed past its deadline (the chain follower), and POST /credit/dispatch
// rematches the offer. (A payment made in time and reported late: test/api/chain-feed.test.ts.)
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, fundedAccount, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, expectDocumented, expectProblem, openApiDocument, type Json } from './fixtures/api.ts'

/** Long enough for a lender on a loaded machine to pay in time; the test moves the chain's time past a lease. */
const LEASE_TTL_SECONDS = 30

/** The service's time: the wall clock plus what the test moved it by, with the chain's time. */
let skewMs = 0
const clock = () => Date.now() + skewMs
const moveClockTo = (ms: number) => {
  skewMs = Math.max(skewMs, ms - Date.now())
}
/** Moves the chain past `deadlineMs` (and the service's clock with it); returns once the follower observed it. */
async function passChainTime(deadlineMs: number): Promise<void> {
  const chainNow = h.app.service.engine.chainTimeMs(h.network.slug) as number
  moveClockTo(await advanceChainTime(h, Math.max(1, Math.ceil((deadlineMs - chainNow) / 1000) + 2)))
}

let h: Harness
let doc: Json
t.before(async () => {
  h = await startHarness({ config: { leaseTtlSeconds: LEASE_TTL_SECONDS }, clock })
  doc = await openApiDocument(h.url)
})
t.teardown(async () => {
  await h.stop()
})

const lenders: Record<string, ReadyLender> = {}

t.test('an unfunded session wallet: the lender waits out of the book (issue 10), the next lender gets the offer', async (t) => {
  // Cheapest but unfunded: no asset on its session key.
  lenders['broke'] = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(2000), walletAtomic: 0n })
  lenders['next'] = await readyLender(h, { minFeeBps: 150, liquidityAtomic: usdc(2000) })
  lenders['last'] = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(2000) })
  const { broke, next } = lenders as Record<string, ReadyLender>
  const wallet = await broke!.client.get(`/lenders/${broke!.account.address}/wallet`)
  t.equal(wallet.body.holdings[0].spendableAtomic, '0', 'the watcher sees an empty session wallet')

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_lease_1', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_lease_1', usdc(500), usdc(50)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.status, 200, JSON.stringify(match.body))
  expectDocumented(t, doc, 'post', '/credit/match', match)
  t.same(match.body.refusedLeases, [], 'the unfunded lender is parked: no lease, not even a refused one (the funded-but-short case: test/api/strangers-matching.test.ts)')
  t.ok(h.app.service.engine.isParked(broke!.account.address))
  t.equal(match.body.lease.lender, next!.account.address, 'the next eligible lender (by ask) holds the lease')
  t.equal(match.body.lease.state, 'leased')
  t.equal(match.body.offer.state, 'leased')
  t.same(match.body.offer.excludedLenders, [], 'nobody excluded')

  const brokeActions = await broke!.client.get(`/lenders/${broke!.account.address}/actions`)
  t.same(brokeActions.body.filter((a: Json) => a['kind'] === 'pay_supplier'), [], 'the refused lender has nothing to pay')
  t.match(brokeActions.body, [{ kind: 'top_up', signer: 'lender', amountAtomic: usdc(2000).toString() }], 'it is told what restores its wallet to its policy')
  const activity = (await broke!.client.get(`/lenders/${broke!.account.address}/wallet`)).body.activity
  t.match(activity, { liveLeases: 0, reservedAtomic: '0', policyAvailableAtomic: usdc(2000).toString(), availableAtomic: '0' }, 'nothing stays reserved on the refused lender; its empty wallet can lend nothing')
  const nextAction = await actionFor(next!, offerId)
  t.equal(nextAction['lease']['leaseId'], match.body.lease.leaseId)
})

t.test('lease expiry: the chain passes the deadline with no payment, the lease expires and dispatch rematches', async (t) => {
  const { next, last } = lenders as Record<string, ReadyLender>
  // The first test's lease to `next` is live; the chain passes it, so that this test sees only its own.
  const first = await actionFor(next!, ((await next!.client.get(`/lenders/${next!.account.address}/actions`)).body as Json[])[0]!['lease']['offerId'])
  await passChainTime(Date.parse(first['lease']['expiresAt']))
  const cleanup = await next!.client.post('/credit/dispatch', {})
  t.equal(cleanup.status, 200)

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_lease_2', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_lease_2', usdc(400), usdc(40)))
  const offerId = decision.body.offer.offerId as string
  const chainBeforeMs = h.app.service.engine.chainTimeMs(h.network.slug) as number
  const wallBeforeMs = clock()
  const match = await borrowerClient.post('/credit/match', { offerId })
  const wallAfterMs = clock()
  const chainAfterMs = h.app.service.engine.chainTimeMs(h.network.slug) as number
  t.equal(match.body.lease.lender, next!.account.address)
  t.same(match.body.refusedLeases, [], 'the unfunded lender stays out of the book')
  const lease = match.body.lease as Json
  const expiresAtMs = Date.parse(lease['expiresAt'])
  // The deadline counts from the later of the service clock and the observed chain time at the grant (the observed
  // chain time trails the head: counted from it alone, the lender would get less than the TTL on chain).
  const earliestMs = Math.max(chainBeforeMs, wallBeforeMs) + LEASE_TTL_SECONDS * 1000
  const latestMs = Math.max(chainAfterMs, wallAfterMs) + LEASE_TTL_SECONDS * 1000
  t.ok(expiresAtMs >= earliestMs && expiresAtMs <= latestMs, 'the lease lasts at least the configured TTL on chain time', { chainBeforeMs, chainAfterMs, wallBeforeMs, wallAfterMs, expiresAtMs })

  // The lender does not pay; the chain passes the deadline: the follower's batch expires the lease.
  await passChainTime(expiresAtMs)
  const waiting = await borrowerClient.get(`/credit/offers/${offerId}`)
  t.equal(waiting.body.state, 'offered', 'the lease expired on chain time: the offer waits for a lender')
  t.ok((waiting.body.excludedLenders as string[]).includes(next!.account.address), 'the expired lender is excluded from this offer')
  const dispatch = await borrowerClient.post('/credit/dispatch', {})
  t.equal(dispatch.status, 200, JSON.stringify(dispatch.body))
  expectDocumented(t, doc, 'post', '/credit/dispatch', dispatch)
  const rematch = (dispatch.body.matches as Json[]).find((m) => m['offer']['offerId'] === offerId)
  t.ok(rematch, 'dispatch rematches the offer')
  t.equal(rematch?.['lease']?.['lender'], last!.account.address, 'to the next eligible lender')

  const profile = ((await next!.client.get('/lenders')).body as Json[]).find((l) => l['address'] === next!.account.address)
  t.ok(profile, 'the lender is still listed')
  t.ok(profile!['reliabilityBps'] < 5000, 'its reliability went down from the neutral start', { reliabilityBps: profile!['reliabilityBps'] })
  t.ok(profile!['leasesExpired'] >= 2)
  const state = await borrowerClient.get('/credit/state')
  t.equal(state.body.counts.liveAdvances, 0, 'no advance: nobody paid')
})

t.test('any session may dispatch; with every eligible lender excluded or unable to pay, the offer waits without a lease', async (t) => {
  const { last, broke } = lenders as Record<string, ReadyLender>
  const live = ((await last!.client.get(`/lenders/${last!.account.address}/actions`)).body as Json[])[0]
  t.ok(live, 'the rematched lease is live')
  const expiresAtMs = Date.parse(live!['lease']['expiresAt'])
  await passChainTime(expiresAtMs)
  expectProblem(t, await last!.client.post('/credit/dispatch', {}, { token: '' }), 401, 'unauthorized', 'dispatch without a session')
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const dispatch = await stranger.post('/credit/dispatch', {})
  t.equal(dispatch.status, 200)
  t.same(dispatch.body.expiredLeases, [], 'the follower expired the lease already, as the chain passed its deadline')
  const offerId = live!['lease']['offerId']
  t.notOk((dispatch.body.matches as Json[]).some((m) => m['offer']['offerId'] === offerId), 'no lender is left for the offer: next and last expired on it, broke is parked (unfunded)')
  t.notOk((dispatch.body.expiredOffers as Json[]).some((o) => o['offerId'] === offerId), 'the offer itself is not expired: it waits')
  const state = await stranger.get('/credit/state')
  t.equal(state.body.counts.liveLeases, 0, 'no live lease remains')
  t.ok(state.body.counts.liveOffers >= 2, 'the offers wait for a lender')
  const brokeWallet = await broke!.client.get(`/lenders/${broke!.account.address}/wallet`)
  t.equal(brokeWallet.body.activity.liveLeases, 0)
})
