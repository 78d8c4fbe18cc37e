// An outsider's finding (outsider19), fixed: a borrower could hand the cheapest lender leases it cannot pay, and each
// cost the lender a miss. A lease's deadline is never later than its offer's credit
// end (its job's due time less creditPeriodMinMs: README, "Leases"), and a request is approved while that credit end
// is still ahead of the service's clock, by any margin (src/engine/underwriting.ts, job_due_too_soon). So a borrower
// that registers its own job (its due time is the registrant's choice) and asks, then matches, in the last instant
// before the credit end gets leases whose authorization's deadline is the second the chain's latest block already
// has: on a chain whose block times increase (anvil's automine may repeat one; no real chain does) no block can
// include the payment any more. When the chain passes that second, every such lease times out as a lease its lender
// left unpaid: 500 bps of reliability and 50 of reputation each, the lease allowance used up (a new lender, at 1,
// goes inactive at once and waits out a probation, which the same move doubles for each probation lease), where the
// README's rule is that a lender is penalised only for its own failure ("the service's own clock never expires a
// lease"). Here four offers of 1 USDC on one job, asked and matched 300 ms before the credit end, take four misses
// from one established lender at once; a hundred (liveOffersPerBorrowerMax) would take its reliability to the floor.
// The cost to the attacker: a job's funding (gas, and an escrow of 1.25 USDC an offer, back with its completion at
// the operator's gas, or its reclaim) and free HTTP calls; a rival lender gains the top of the book. The rule checked:
// a request in the last instant before the credit end either gets no lease, or its unpayable leases cost the lender
// nothing (a fix in src/engine, outside this branch: e.g. an offer is matched only while a whole lease TTL fits
// before its credit end, and job_due_too_soon counts the TTL too; or a lease whose deadline was not after the chain's
// latest block at its grant ends without a penalty, as a cancelled one does).
// The fix taken: a lease always gets its whole TTL, so such a request is declined (job_due_too_soon counts the lease
// TTL), its offer expires when a whole lease no longer fits, and a match is refused when one does not (README "Leases").
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../fixtures/service.ts'
import { actionFor, until, type Json } from './fixtures/api.ts'

const OFFERS = 4

t.test('leases granted in the last instant before the credit end, unpayable on chain, cost their lender nothing', async (t) => {
  let offsetMs = 0
  const h = await startHarness({ clock: () => Date.now() + offsetMs })
  t.teardown(() => h.stop())
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const before = { ...h.app.service.engine.getLender(lender.account.address)! }
  const jobId = 'job_o19_credit_end'
  const { borrower, borrowerClient, job } = await fundedJob(h, { jobId, receivableAtomic: usdc(OFFERS * 3), dueInSeconds: 3600 })
  const creditEndMs = Date.parse(job.dueAt) - defaultEngineConfig.creditPeriodMinMs
  const lastSecond = BigInt(Math.floor(creditEndMs / 1000))

  // The chain's latest block is at the credit end's second (only the test mines from here on), and the service's
  // clock 300 ms before the credit end: the borrower asks and matches now.
  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)
  await anvil.setNextBlockTimestamp({ timestamp: lastSecond })
  await anvil.mine({ blocks: 1 })
  await until(() => (h.app.service.engine.chainTimeMs(h.network.slug) ?? 0) >= Number(lastSecond) * 1000, 10_000, 'the chain observed at the credit end\'s second')
  offsetMs = creditEndMs - 300 - Date.now()
  const leased: Json[] = []
  for (let i = 0; i < OFFERS; i++) {
    const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(1), usdc(1)))
    if (decision.body.decision !== 'approved') continue
    const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
    if (match.body.lease) leased.push(match.body.lease)
  }
  const latest = (await new ChainAgent(h.network, lender.session).publicClient.getBlock({ blockTag: 'latest' })).timestamp
  for (const lease of leased) {
    const deadline = BigInt((await actionFor(lender, lease['offerId']))['authorization'].deadline)
    t.comment(`${lease['leaseId']}: ${Date.parse(lease['expiresAt']) - Date.parse(lease['createdAt'])} ms to pay; deadline ${deadline}, latest block ${latest}`)
  }

  // The next block (a second later, as on any chain) passes every such deadline.
  await anvil.setNextBlockTimestamp({ timestamp: lastSecond + 1n })
  await anvil.mine({ blocks: 1 })
  const reader = new CreditClient(h.url)
  await until(async () => {
    const states = await Promise.all(leased.map(async (l) => (await reader.get(`/credit/offers/${l['offerId']}`)).body.state as string))
    return states.every((s) => s !== 'leased')
  }, 10_000, 'every lease ended')
  const after = h.app.service.engine.getLender(lender.account.address)!
  t.comment(`misses ${before.leasesExpired} -> ${after.leasesExpired}, reliability ${before.reliabilityBps} -> ${after.reliabilityBps}, reputation ${before.reputationBps} -> ${after.reputationBps}`)
  t.equal(after.leasesExpired, before.leasesExpired, `no miss counted (${leased.length} leases granted)`)
  t.equal(after.reliabilityBps, before.reliabilityBps, 'reliability unchanged')
  t.equal(after.reputationBps, before.reputationBps, 'reputation unchanged')
})
