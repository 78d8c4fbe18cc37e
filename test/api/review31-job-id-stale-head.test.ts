// A job id belongs to its earliest funding on any network, and the fundings are ordered on the service's clock through
// each chain's latest block (src/service/funding-order.ts, outsider23's clock skew): a funding's age by its own chain's
// clock places it, taking the latest block as at most a block time old. A latest block older than that (a lagging RPC
// node, a chain that mines only on transactions with a blockTimeMs set, missed blocks) made the real funding look later
// than it was: with two chains whose clocks agree, a stranger's squat funded 2 s after the real job and registered 8 s
// later, while the real chain's latest block was still its funding's, took the id (201; the real job then 409
// job_exists), where the timestamps alone had refused it; and the real job, registered through that latest block, was
// refused 409 job_id_funded_elsewhere as if for good (a review's finding). Where the clocks' order goes against the
// timestamps only through a latest block older by the wall clock than a block time, the order is now unsettled: 503
// chain_unavailable, retry; through a newer block the real job registers. And the read of the other network's latest
// block, added for the clocks, passes that network over when it fails, as its job's read always did (no 500).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { squatAfter } from './fixtures/job-id-squat.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const real = h.network
const squat = h.devnet.networks[1] as NetworkConfig
const anvil = createTestClient({ chain: networkChain(real), transport: http(real.rpcUrl), mode: 'anvil' })

t.test('through a stale latest block of the real chain, a later squat is not let pass, and the real job is asked to retry, not refused', async (t) => {
  // The real chain mines only on transactions from here (its blockTimeMs, 1 s, is then wrong): its latest block stays
  // the real funding's, as from an RPC node that lags.
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)
  let mining = false
  const resumeMining = async () => {
    if (mining) return
    mining = true
    await anvil.setAutomine(false)
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.mine({ blocks: 1 })
  }
  t.teardown(resumeMining)
  const scenario = await squatAfter(h, real, squat, 2_000, {
    squatRegistersAfterMs: 8_000,
    beforeReal: async (registerReal) => {
      const early = await registerReal()
      t.equal(early.status, 503, `the real job, through its chain's stale latest block, is asked to retry (got ${early.status} ${early.body?.code ?? early.body?.state})`)
      t.equal(early.body.code, 'chain_unavailable')
      t.equal(early.headers.get('retry-after') !== null, true, 'with Retry-After')
      await resumeMining()
    },
  })
  t.comment(scenario.story)
  t.ok(scenario.squatFundedAt > scenario.realFundedAt, 'the squat\'s timestamp is the later one (the clocks agree)')
  t.equal(scenario.squatReply.status, 503, `the squat does not take the id (got ${scenario.squatReply.status} ${scenario.squatReply.body?.code ?? scenario.squatReply.body?.state})`)
  t.equal(scenario.squatReply.body.code, 'chain_unavailable')
  t.match(scenario.squatReply.body.detail, new RegExp(`the chain of network ${real.slug} is behind: its latest block read now is \\d+ s older`))
  t.equal(scenario.realReply.status, 201, `through a newer block the real job registers (got ${scenario.realReply.status} ${scenario.realReply.body?.code})`)
  t.equal(scenario.realReply.body.network, real.slug)
})

t.test('another network whose latest block cannot be read is passed over, as one whose RPC is down: the registration is not a 500', async (t) => {
  // The other network's latest block is read with its job (the clocks' order): a failure of that read, the job's read
  // answering, passes the network over as before (an outage there stops no registration here).
  const { publicClient } = h.app.service.clientsOf(squat.slug)
  const getBlock = publicClient.getBlock
  publicClient.getBlock = (async () => {
    throw new Error('the RPC is down (test)')
  }) as typeof getBlock
  t.teardown(() => {
    publicClient.getBlock = getBlock
  })
  const jobId = `job_${crypto.randomUUID()}`
  const borrower = await fundedAccount(h.devnet, real, 0n)
  const client = await fundedAccount(h.devnet, real, usdc(100))
  const fundingTxHash = await new ChainAgent(real, client).fundJob(jobId, USDC, usdc(100), borrower.address)
  const reply = await (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: real.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), fundingTxHash,
  })
  t.equal(reply.status, 201, `the job registers (got ${reply.status} ${reply.body?.code})`)
})
