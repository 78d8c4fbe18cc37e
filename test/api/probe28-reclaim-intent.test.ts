// probe28 (after money26, review28): a /fail stores its intent (reason, note hash, caller) before its failJob. A job
// whose client reclaimed its escrow on chain (reclaimJob) before that failJob was mined has the failJob refused
// JobNotOpen, no earlier failJob found, and the intent kept (it may be the request's own failJob, mined from an attempt
// whose answer was lost). Before, the chain follower's JobReclaimed ended the job and left that intent for ever, one
// orphan record per such job; now the batch that applies the reclaim deletes it in the same commit.
import t from 'tap'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { fundedJob, startHarness, usdc } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim } from './fixtures/reclaim.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(() => devnet.stop())

t.test('a /fail\'s intent goes with its job when the follower applies the client\'s reclaim', async (t) => {
  const h = await startHarness({ devnet })
  t.teardown(() => h.stop())
  const jobId = 'job_p28_reclaimed_intent'
  const { jobClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(100), dueInSeconds: 3600 })
  const store = h.app.service.store
  const intents = store.collection<{ reason: string; noteHash: string | null; caller: string }>('failure-intents', { version: 1 })
  const follower = h.app.service.followers.get(h.network.slug)
  if (follower === undefined) throw new Error('no follower')

  // The client reclaims its escrow on chain while the follower has not seen it yet, then asks /fail: the service still
  // holds the job open, stores the intent, and the contract refuses the failJob (the job is no longer open there).
  await follower.stop()
  await pastReclaimDelay(h.network)
  const reclaim = await sendReclaim(h.network, jobClient, jobId)
  t.equal(reclaim.status, 'success', 'the client reclaimed the escrow')
  const refused = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late', note: 'too slow' })
  t.not(refused.status, 200, JSON.stringify(refused.body))
  t.equal(intents.get(jobId)?.reason, 'late', 'the intent is kept: no earlier failJob was found')

  follower.start()
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower applied the reclaim')
  t.equal((await jobClientApi.get(`/credit/jobs/${jobId}`)).body.state, 'failed', 'the job ended')
  t.equal(intents.get(jobId), undefined, 'its intent went with it')
  t.equal([...intents.iterate()].length, 0, 'no intent is left in the store')
})
