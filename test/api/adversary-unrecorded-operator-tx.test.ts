// An operator transaction mined and never recorded (a crash between it and its commit, or a lost receipt, and nobody
// retries the route): the chain follower stores a repair with the cursor that passes its event, and the service
// records it by the route's own find-and-record path (src/service/operator-commands.ts OperatorRepairs), once. Before,
// the follower ignored JobSettled, JobFailed and Liquidated: the lender's principal stayed deployed in the service for
// ever while the chain had paid it back (an adversary's finding; both tests fail on 6754042).
import t from 'tap'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { sendLiquidate, sendSettleJob } from '../../src/chain/operator.ts'
import { fundedJob, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { operatorRepairIntervalMs: 1000 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a settlement mined and never recorded by its route is recorded once the chain follower passes it', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_adv_unrecorded'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const settled = await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [advance.advanceKey] })
  await until(async () => (await jobClientApi.get(`/credit/jobs/${jobId}`)).body.state === 'completed', 20_000, 'the settlement recorded')
  const job = (await jobClientApi.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.settlement?.txHash, settled.txHash, 'the settlement on chain is what the job records')
  const repaid = (await lender.client.get(`/credit/advances/${advance.advanceId}`)).body
  t.equal(repaid.state, 'repaid', 'the advance is repaid, as on chain')
  t.equal(h.app.service.engine.getLender(lender.account.address)!.deployedAtomic, 0n, 'the lender\'s capital is no longer deployed')
  // The client's retry finds it recorded: one record, not two.
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/complete`, {})).status, 409, 'a retry after the repair records nothing')
  await until(() => h.app.service.operatorRepairs.pending().length === 0, 20_000, 'the repair done')
})

t.test('a liquidation mined and never recorded by its route is recorded once the chain follower passes it', async (t) => {
  // Cheaper than the first test's lender, which is still there: this one takes the offer.
  const lender = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(1000) })
  const jobId = 'job_adv_unrecorded_liq'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 200)
  const liquidated = await sendLiquidate(createNetworkClients(h.network), { offerKey: advance.advanceKey, backingCoveredAtomic: 0n })
  await until(async () => (await lender.client.get(`/credit/advances/${advance.advanceId}`)).body.state !== 'defaulted', 20_000, 'the liquidation recorded')
  const recorded = (await lender.client.get(`/credit/advances/${advance.advanceId}`)).body
  t.ok(recorded.state === 'liquidated' || recorded.state === 'shortfall', `liquidated, as on chain (${recorded.state})`)
  const onChain = liquidated.facts.find((f) => f.name === 'Liquidated')!
  t.equal(recorded.recovery?.fromReserveAtomic, (onChain.args as { fromReserve: bigint }).fromReserve.toString(), 'the recovery is the contract\'s')
  t.equal(recorded.recovery?.txHash, liquidated.txHash, 'the liquidation on chain is what the advance records')
  t.equal((await lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})).status, 409, 'a retry after the repair records nothing')
})

t.test('a repair stored by the follower survives a restart and is recorded after it', async (t) => {
  const jobId = 'job_adv_unrecorded_restart'
  await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  // The service after each restart (a client would sign in again at its new address).
  const job = () => h.app.service.view('job', jobId)
  // No repair runs: the follower stores it with its cursor past the settlement, and the process stops.
  await h.restart({ operatorRepairIntervalMs: 0 })
  const settled = await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [] })
  const follower = h.app.service.followers.get(h.network.slug)!
  await until(() => (follower.cursor?.blockNumber ?? -1n) >= settled.blockNumber, 20_000, 'the follower past the settlement')
  await h.app.service.store.durable()
  t.equal(job()?.state, 'funded', 'not recorded while repairs are off')
  await h.restart({ operatorRepairIntervalMs: 1000 })
  await until(() => job()?.state === 'completed', 20_000, 'the stored repair recorded after the restart')
  t.equal(job()?.settlement?.txHash, settled.txHash)
})

t.test('a repair whose transaction a retry of the route recorded first records nothing, and is done', async (t) => {
  const jobId = 'job_adv_retry_first'
  const { jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  await h.restart({ operatorRepairIntervalMs: 0 })
  const settled = await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [] })
  const follower = h.app.service.followers.get(h.network.slug)!
  await until(() => (follower.cursor?.blockNumber ?? -1n) >= settled.blockNumber, 20_000, 'the follower past the settlement')
  await h.app.service.store.durable()
  t.same(h.app.service.operatorRepairs.pending(), [{ kind: 'settled', jobId }], 'the follower stored the repair')
  const retry = await (await signedIn(h.url, jobClient)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(retry.status, 200, 'the retry records it')
  t.equal(retry.body.txHash, settled.txHash)
  await h.restart({ operatorRepairIntervalMs: 1000 })
  await until(() => h.app.service.operatorRepairs.pending().length === 0, 20_000, 'the repair done')
  t.equal(h.app.service.view('job', jobId)?.settlement?.txHash, settled.txHash, 'recorded once, by the retry')
})
