// A job id belongs to its earliest funding on any network, and the fundings are ordered on the service's clock through
// each chain's latest block (src/service/funding-order.ts, outsider23's clock skew): a funding's age by its own chain's
// clock places it, taking the latest block as at most a block time old. A latest block older than that (a lagging RPC
// node, a chain that mines only on transactions with a blockTimeMs set, missed blocks) made the real funding look later
// than it was: with two chains whose clocks agree, a stranger's squat funded after the real job, registered some
// seconds later while the real chain's latest block was still its funding's, took the id (201; the real job then 409
// job_exists), where the timestamps alone had refused it (a review's finding). The real chain's latest block is
// now also bounded by its age on the wall clock (exact for a chain that keeps the wall clock's time), so the clocks
// cannot put it later than it is: the squat is refused.
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startHarness } from '../fixtures/service.ts'
import { squatAfter } from './fixtures/job-id-squat.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const real = h.network
const squat = h.devnet.networks[1] as NetworkConfig
const anvil = createTestClient({ chain: networkChain(real), transport: http(real.rpcUrl), mode: 'anvil' })

t.test('a squat on a chain that keeps the same time, registered while the real chain\'s latest block is its funding\'s, is refused', async (t) => {
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
  const scenario = await squatAfter(h, real, squat, 2_000, { squatRegistersAfterMs: 6_000, beforeReal: resumeMining })
  t.comment(scenario.story)
  t.ok(scenario.squatFundedAt > scenario.realFundedAt, 'the squat\'s timestamp is the later one (the clocks agree)')
  t.equal(scenario.squatReply.status, 409, `the squat does not take the id (got ${scenario.squatReply.status} ${scenario.squatReply.body?.code ?? scenario.squatReply.body?.state})`)
  t.equal(scenario.squatReply.body.code, 'job_id_funded_elsewhere')
  t.equal(scenario.realReply.status, 201, `the real job registers (got ${scenario.realReply.status} ${scenario.realReply.body?.code})`)
  t.equal(scenario.realReply.body.network, real.slug)
})
