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
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startHarness } from '../fixtures/service.ts'
import { moveClockAhead, squatAfter as squatAfterOn } from './fixtures/job-id-squat.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const leading = h.network
const lagging = h.devnet.networks[1] as NetworkConfig
/** How long the squatter takes after the real funding was mined: past the devnet's 4 s and the reads' span. */
const SQUAT_AFTER_MS = 10_000

// devnet-a's chain 10 minutes ahead of devnet-b's, as the outsider's script moved it.
t.before(() => moveClockAhead(leading, 600))

async function squatAfter(t: Test, real: NetworkConfig, squat: NetworkConfig, squatAfterMs = SQUAT_AFTER_MS) {
  const scenario = await squatAfterOn(h, real, squat, squatAfterMs)
  t.comment(scenario.story)
  return scenario
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
