// Issue 10, hole 2 over HTTP: lenders who risk nothing cannot jam matching. Unfunded registrations wait outside the
// books (and outside the watch cap), and so do lenders whose wallet holds less than the least advance (1 USDC here); a
// lender whose wallet falls below it is refused once and parked until its wallet changes; refused leases do not use up
// an offer's leases.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditClient } from '../../src/client/client.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

const WATCH_CAP = 8
// Two leases per offer, so that a few refusals would exhaust an offer if they counted.
const h = await startHarness({ config: { walletsWatchedPerNetworkMax: WATCH_CAP, engine: { leasesPerOfferMax: 2 } } })
t.teardown(() => h.stop())
const HUGE = (10n ** 30n).toString()

async function sybil(minFeeBps = 0) {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(h.url)
  await client.signIn(account)
  const reply = await client.post('/lenders/register', {
    availableLiquidityAtomic: HUGE, asset: USDC, networks: [h.network.slug], minFeeBps, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
  })
  return { account, client, reply }
}

async function offerFor(jobId: string, amount = usdc(10)) {
  const job = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await job.borrowerClient.post('/credit/request', creditRequest(h, job.borrower.address, jobId, amount, usdc(5)))
  if (decision.body.decision !== 'approved') throw new Error(JSON.stringify(decision.body))
  return { ...job, offerId: decision.body.offer.offerId as string }
}

let honest: Awaited<ReturnType<typeof readyLender>>

/**
 * A lender in the book (its session wallet held the least advance, 1 USDC) whose session key then sent 1 atomic unit
 * away: below the least advance, it can pay no offer.
 */
async function poorLender(minFeeBps: number) {
  const lender = await readyLender(h, { minFeeBps, liquidityAtomic: usdc(1000), walletAtomic: usdc(1) })
  if (h.app.service.engine.isParked(lender.account.address)) throw new Error('a wallet holding the least advance is in the book')
  await new ChainAgent(h.network, lender.session).transferToken(USDC, lender.account.address, 1n)
  await until(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, lender.session.address) === usdc(1) - 1n, 10_000, 'the transfer seen')
  return lender
}

t.test('16 unfunded sybils at 0 bps, beyond the watch cap: registered, but the honest funded lender gets the lease', async (t) => {
  const sybils = []
  for (let i = 0; i < 16; i++) sybils.push(await sybil())
  t.same(sybils.map((s) => s.reply.status), Array(16).fill(201), `16 registrations beyond a watch cap of ${WATCH_CAP}: none refused wallet_watch_full`)
  const status = h.app.service.watcher.status().find((s) => s.network === h.network.slug)
  t.equal(status?.holders, 0, 'no unfunded wallet takes a watch slot')
  t.equal(status?.unfunded, 16, 'they wait in the membership set')
  honest = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrowerClient, offerId } = await offerFor('job_sybil_1')
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.status, 200)
  t.equal(match.body.lease?.lender, honest.account.address, 'the lease goes to the funded lender')
  t.same(match.body.refusedLeases, [], 'no sybil was offered a lease')
  t.equal(match.body.offerExpired, false)
})

t.test('a lender whose wallet cannot pay the least advance is in no book, or is refused once, parked, and back when its wallet changes', async (t) => {
  const dust = await readyLender(h, { minFeeBps: 0, liquidityAtomic: usdc(1000), walletAtomic: 1n })
  t.ok(h.app.service.engine.isParked(dust.account.address), 'a session wallet holding 1 atomic unit puts its lender in no book')
  const poor = await poorLender(0)
  const first = await offerFor('job_park_1')
  const m1 = await first.borrowerClient.post('/credit/match', { offerId: first.offerId })
  t.same(m1.body.refusedLeases.map((l: { lender: string; state: string; endReason: string }) => [l.lender, l.state, l.endReason]), [[poor.account.address, 'expired', 'insufficient_balance']], 'one insufficient-balance refusal')
  t.equal(m1.body.lease?.lender, honest.account.address, 'matching went on to the next lender')
  const second = await offerFor('job_park_2')
  const m2 = await second.borrowerClient.post('/credit/match', { offerId: second.offerId })
  t.same(m2.body.refusedLeases, [], 'parked: not refused again on another offer')
  t.equal(m2.body.lease?.lender, honest.account.address)
  await fund(h.devnet, h.network, poor.session.address, usdc(100))
  await until(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, poor.session.address) === usdc(101) - 1n, 10_000, 'the top-up seen')
  const third = await offerFor('job_park_3')
  const m3 = await third.borrowerClient.post('/credit/match', { offerId: third.offerId })
  t.equal(m3.body.lease?.lender, poor.account.address, 'after its wallet changed the cheapest lender is back in the book')
})

t.test('refused leases do not use up an offer\'s leases', async (t) => {
  // Four poor lenders, cheaper than the honest one: four refusals on an offer of two leases at most; the offer is still
  // leased. (The test before's, its wallet at 101 USDC less 1 unit, is passed over for 200: it pays the least advance.)
  for (let i = 0; i < 4; i++) await poorLender(1)
  const { borrowerClient, offerId } = await offerFor('job_refused_cap', usdc(200))
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.refusedLeases.length, 4, 'four refusals (insufficient balance)')
  t.equal(match.body.offerExpired, false, 'the offer did not end leases_exhausted')
  t.equal(match.body.lease?.lender, honest.account.address, 'the honest lender got the lease')
})
