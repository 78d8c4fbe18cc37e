// A job id belongs to its earliest funding on any network (outsider8), and "earliest" compared the two chains' block
// timestamps, which keep two clocks: with devnet-a's chain 10 minutes ahead of devnet-b's, a stranger who read the id
// from the real mined fundJob on devnet-a funded it on devnet-b for 1 atomic unit, naming itself the borrower, and
// registered first (201); the real job was refused (409), its escrow idle until reclaimDelay (outsider23's finding,
// test/api/outsider23-scripts/job-id-clock-skew.ts). The fundings are now ordered on the service's clock through each
// chain's latest block (src/service/funding-order.ts). Both directions: the squat on the lagging chain is refused, and
// the real funding on the lagging chain still wins against a later squat on the leading one (were the correction's
// sign wrong or one chain's offset left out, the squat there would be the "earlier").
// The squat comes some seconds after the real funding, past the devnet's uncertainty (both block times, 1 s each, two
// seconds for the whole-second timestamps, and the reads' span): closer than that the timestamps order the two, as
// before (the script measures that window).
import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestClient, http, type Hash } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const leading = h.network
const lagging = h.devnet.networks[1] as NetworkConfig
/** How long the squatter takes after the real funding was mined: past the devnet's 4 s and the reads' span. */
const SQUAT_AFTER_MS = 8_000

t.before(async () => {
  // devnet-a's chain 10 minutes ahead of devnet-b's, as the outsider's script moved it.
  const anvil = createTestClient({ chain: networkChain(leading), transport: http(leading.rpcUrl), mode: 'anvil' })
  await anvil.increaseTime({ seconds: 600 })
  await anvil.mine({ blocks: 1 })
})

const blockTime = async (agent: ChainAgent, hash: Hash) =>
  (await agent.publicClient.getBlock({ blockNumber: (await agent.publicClient.getTransactionReceipt({ hash })).blockNumber })).timestamp

/** The real job funded on `real`, then, SQUAT_AFTER_MS after its receipt, the same id funded on `squat` by a stranger for 1 unit, who registers it first. */
async function squatAfter(t: Test, real: NetworkConfig, squat: NetworkConfig, squatAfterMs = SQUAT_AFTER_MS) {
  const jobId = `job_${crypto.randomUUID()}`
  const dueAt = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const borrower = await fundedAccount(h.devnet, real, 0n)
  const client = await fundedAccount(h.devnet, real, usdc(5000))
  const stranger = await fundedAccount(h.devnet, squat, 1n)
  const realChain = new ChainAgent(real, client)
  const fundingTxHash = await realChain.fundJob(jobId, USDC, usdc(5000), borrower.address)
  const realFundedAt = await blockTime(realChain, fundingTxHash)
  await sleep(squatAfterMs)
  const squatChain = new ChainAgent(squat, stranger)
  const squatTxHash = await squatChain.fundJob(jobId, USDC, 1n, stranger.address)
  const squatFundedAt = await blockTime(squatChain, squatTxHash)
  t.comment(`fundedAt: the real job's on ${real.slug} ${new Date(Number(realFundedAt) * 1000).toISOString()}, the squat's on ${squat.slug} ${new Date(Number(squatFundedAt) * 1000).toISOString()}`)
  const squatReply = await (await signedIn(h.url, stranger)).post('/credit/jobs', {
    jobId, network: squat.slug, asset: USDC, agent: stranger.address, receivableAtomic: '1', dueAt, fundingTxHash: squatTxHash,
  })
  const realReply = await (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: real.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(5000).toString(), dueAt, fundingTxHash,
  })
  return { squatReply, realReply, realFundedAt, squatFundedAt }
}

t.test('a squat on the chain whose clock lags, funded after the real job, is refused though its timestamp is earlier', async (t) => {
  const { squatReply, realReply, realFundedAt, squatFundedAt } = await squatAfter(t, leading, lagging)
  t.ok(squatFundedAt < realFundedAt, 'the squat\'s timestamp is the earlier one (the scenario holds)')
  t.equal(squatReply.status, 409, `the later funding does not take the id (got ${squatReply.status} ${squatReply.body?.code})`)
  t.equal(squatReply.body.code, 'job_id_funded_elsewhere')
  t.match(squatReply.body.detail, new RegExp(`was funded on ${leading.slug} at .* by the chains' latest blocks .* earlier, more than the \\d+ s the chains' clocks leave uncertain`), 'the refusal says how the two were ordered')
  t.equal(realReply.status, 201, `the real job registers (got ${realReply.status} ${realReply.body?.code})`)
  t.equal(realReply.body.network, leading.slug)
})

t.test('the real funding on the chain whose clock lags still wins against a later squat on the leading chain', async (t) => {
  const { squatReply, realReply, realFundedAt, squatFundedAt } = await squatAfter(t, lagging, leading)
  t.ok(squatFundedAt > realFundedAt, 'the squat\'s timestamp is the later one')
  t.equal(squatReply.status, 409, `the squat on the leading chain is refused (got ${squatReply.status} ${squatReply.body?.code})`)
  t.equal(squatReply.body.code, 'job_id_funded_elsewhere')
  t.equal(realReply.status, 201, `the real job registers (got ${realReply.status} ${realReply.body?.code})`)
  t.equal(realReply.body.network, lagging.slug)
})

t.test('a squat on the leading chain right after the real funding, too close for the clocks, is still refused by the timestamps', async (t) => {
  const { squatReply, realReply } = await squatAfter(t, lagging, leading, 0)
  t.equal(squatReply.status, 409, `the squat is refused (got ${squatReply.status} ${squatReply.body?.code})`)
  t.equal(squatReply.body.code, 'job_id_funded_elsewhere')
  t.match(squatReply.body.detail, /too close for their clocks to order, so their timestamps do/)
  t.equal(realReply.status, 201, `the real job registers (got ${realReply.status} ${realReply.body?.code})`)
})
