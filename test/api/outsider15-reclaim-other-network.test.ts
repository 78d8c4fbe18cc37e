// An outsider's probe (outsider15): a job key is per contract, and anyone may fund any key. A stranger funds the key of a
// job registered (and advanced on) on one network on the other network's contract, waits out the reclaim delay there
// and reclaims it: the JobReclaimed names the same key. The service must leave the registered job, its advance and its
// lender alone (the follower applies a reclaim to a registered job on its own network only).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim } from './fixtures/reclaim.ts'

let h: Harness
let other: NetworkConfig
t.before(async () => {
  h = await startHarness({ config: { offerTtlSeconds: 3600 } })
  other = h.devnet.networks.find((n) => n.slug !== h.network.slug) as NetworkConfig
})
t.teardown(async () => {
  await h.stop()
})

t.test('a stranger\'s reclaim of the same job key on the other network ends nothing on this one', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o15_other_network'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })
  const advanceId = advance.advanceId as string

  const stranger = await fundedAccount(h.devnet, other, usdc(1))
  const agent = new ChainAgent(other, stranger)
  await agent.fundJob(jobId, USDC, usdc(1), stranger.address)
  await pastReclaimDelay(other, 60)
  const reclaim = await sendReclaim(other, stranger, jobId)
  t.equal(reclaim.status, 'success', 'the stranger reclaimed its own job there')
  // The service's follower of the other network has applied the reclaim's block (its last applied block, as /health shows it).
  const mined = reclaim.blockNumber
  const followed = () => BigInt(h.app.service.followerHealth(other.slug).block ?? -1) >= mined
  await until(followed, 20_000, 'the other network\'s follower to pass the reclaim')

  const job = (await borrowerClient.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.state, 'active', `the registered job is untouched (${job.state} ${job.failureReason ?? ''})`)
  t.equal((await borrowerClient.get(`/credit/advances/${advanceId}`)).body.state, 'active', 'its advance is owed as before')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
  await expectReconciled(t, operator, other.slug)
})
