// outsider14: a lender registered on two networks that funds its session wallet on one of them only (it lends there,
// and may fund the other later). A stranger's offer on the unfunded network leases it, finds its wallet there unable to
// pay (insufficient_balance, at no cost to it), and the refusal parked the lender "out of every book" until its session
// wallet changed: on the network its wallet can pay too, where nothing changes until it lends or tops up. One credit
// request on the other network (a borrower's own small funded job) kept the cheapest lender out of matching on the
// network it funded, for good, and sent that network's borrowers to a dearer lender (a rival lender's gain, the
// borrowers' fees). Found against `npm start` (test/api/outsider14-scripts/park-other-network.ts).
// Fails on base 8811308 (the last check gets the dearer rival; without the stranger's request it passes). Now: a refusal
// takes the lender out of the offer's book only (src/engine/matching.ts parkIn), back in it when its wallet changes.
import t from 'tap'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedAccount, readyLender, signedIn, startHarness, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'

let h: Harness
let other: NetworkConfig
let victim: ReadyLender
let rival: ReadyLender
t.before(async () => {
  h = await startHarness()
  other = h.devnet.networks.find((n) => n.slug !== h.network.slug) as NetworkConfig
  // The cheapest lender: both networks, its session wallet funded on the first only.
  victim = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000), networks: [h.network.slug, other.slug] })
  rival = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

/** A fresh borrower with a job its own client funded on `network`, its credit request for 5 USDC there, matched. */
async function leaseOn(network: NetworkConfig, jobId: string): Promise<{ lender: string | null; offerId: string }> {
  const borrower = await fundedAccount(h.devnet, network, 0n)
  const jobClient = await fundedAccount(h.devnet, network, usdc(200))
  const fundingTxHash = await new ChainAgent(network, jobClient).fundJob(jobId, USDC, usdc(200), borrower.address)
  const client = await signedIn(h.url, borrower)
  const dueAt = new Date(Date.now() + 86_400_000).toISOString()
  const job = await client.post('/credit/jobs', { jobId, network: network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(200).toString(), dueAt, fundingTxHash })
  if (job.status !== 201) throw new Error(`job: ${job.status} ${JSON.stringify(job.body)}`)
  const decision = await client.post('/credit/request', { ...creditRequest(h, borrower.address, jobId, usdc(5), usdc(1)), network: network.slug })
  if (decision.body.decision !== 'approved') throw new Error(`request: ${JSON.stringify(decision.body)}`)
  const offerId = decision.body.offer.offerId as string
  const match = await client.post('/credit/match', { offerId })
  return { lender: match.body.lease?.lender ?? null, offerId }
}

t.test('a lease refused on a network the lender never funded leaves it in the book of the network it funded', async (t) => {
  t.equal((await leaseOn(h.network, 'job_outsider14_park_before')).lender, victim.account.address, 'before: the cheapest lender gets the offer on the network it funded')

  const stranger = await leaseOn(other, 'job_outsider14_park_other')
  t.equal(stranger.lender, null, `on the unfunded network nobody can pay (got ${stranger.lender})`)
  const refused = h.app.service.engine.getOffer(stranger.offerId)
  t.ok(refused, 'the stranger\'s offer waits')
  h.app.service.engine.checkInvariants()

  const after = await leaseOn(h.network, 'job_outsider14_park_after')
  t.equal(after.lender, victim.account.address, `after: still the cheapest lender on the network it funded (got ${after.lender === rival.account.address ? 'the dearer rival' : after.lender})`)

  // Funded on the other network too, its wallet changed: back in that book, the stranger's waiting offer goes to it.
  await fund(h.devnet, other, victim.session.address, usdc(100))
  for (const tx of victim.registration.setupTransactions) if (tx.network === other.slug) await new ChainAgent(other, victim.session).sendUnsigned(tx)
  await h.app.service.watcher.waitFor(() => h.app.service.watcher.spendableAtomic(other.slug, USDC, victim.session.address) === usdc(100), 10_000)
  const dispatched = await victim.client.post('/credit/dispatch', {})
  t.equal(dispatched.status, 200, 'dispatch')
  const leaseId = h.app.service.engine.getOffer(stranger.offerId)?.currentLeaseId
  t.equal(leaseId ? h.app.service.engine.getLease(leaseId)?.lender : null, victim.account.address, 'leased on the other network once its wallet there can pay')
  h.app.service.engine.checkInvariants()
})
