// Operator repairs that keep failing (src/service/operator-commands.ts OperatorRepairs): before, a repair the service
// could not record was tried and logged every interval for ever, and nothing outside the log showed it. Now each
// failure in a row doubles its wait (from the run interval, bounded), and /health shows the pending repairs
// (operatorRepairs) and is degraded once one has waited longer than OPERATOR_REPAIR_AGE_DEGRADED_MS. The service's
// clock is held still here, so that "not tried before its time" is certain rather than a race: the run still comes
// every interval of real time. Fails on fac6b96 (no operatorRepairs in /health, no back-off).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients, type NetworkClients } from '../../src/chain/clients.ts'
import { sendSettleJob } from '../../src/chain/operator.ts'
import { OPERATOR_REPAIR_AGE_DEGRADED_MS, OPERATOR_REPAIR_BACKOFF_MAX_MS, repairRetryDelayMs } from '../../src/service/operator-repair-bounds.ts'
import { fundedJob, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

const INTERVAL_MS = 200

t.test('the wait after each failure in a row doubles from the interval, up to its bound', async (t) => {
  t.same([1, 2, 3, 4].map((n) => repairRetryDelayMs(n, 1000)), [1000, 2000, 4000, 8000])
  t.equal(repairRetryDelayMs(40, 1000), OPERATOR_REPAIR_BACKOFF_MAX_MS, 'bounded')
  t.equal(repairRetryDelayMs(1_000_000, 5000), OPERATOR_REPAIR_BACKOFF_MAX_MS, 'however many failures')
})

t.test('a repair that keeps failing backs off, and /health shows it, degraded once it is old', async (t) => {
  // The service's clock: real time until held still at `heldAtMs`.
  let heldAtMs: number | undefined
  const h: Harness = await startHarness({ config: { operatorRepairIntervalMs: INTERVAL_MS }, clock: () => heldAtMs ?? Date.now() })
  t.teardown(() => h.stop())
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const health = async () => (await operator.get('/health')).body
  t.match((await health()).operatorRepairs, { pending: 0, oldestAgeSeconds: null, failuresMax: 0, nextAttemptAt: null, heldRepayments: 0 }, 'none at first')

  const jobId = 'job_repair_failing'
  await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  // The service cannot send operator transactions any more (as if its key were gone): every attempt fails.
  const clients = h.app.service.clientsOf(h.network.slug) as NetworkClients
  const operatorWallet = clients.operator
  clients.operator = undefined
  t.teardown(() => {
    clients.operator = operatorWallet
  })
  heldAtMs = Date.now()
  await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [] })
  const repairs = h.app.service.operatorRepairs
  await until(() => repairs.status().failuresMax === 1, 20_000, 'the first attempt failed')
  t.equal(repairs.status().nextAttemptAtMs, heldAtMs + INTERVAL_MS, 'the next attempt an interval later')

  // Many intervals of real time pass; on the service's clock it is not yet time: no attempt.
  await new Promise((resolve) => setTimeout(resolve, 10 * INTERVAL_MS))
  t.equal(repairs.status().failuresMax, 1, 'not tried before its time')
  for (const failures of [2, 3, 4]) {
    heldAtMs = repairs.status().nextAttemptAtMs as number
    await until(() => repairs.status().failuresMax === failures, 20_000, `attempt ${failures}`)
    t.equal(repairs.status().nextAttemptAtMs, heldAtMs + repairRetryDelayMs(failures, INTERVAL_MS), `after ${failures} failures, twice the wait before`)
  }

  const young = await health()
  t.match(young.operatorRepairs, { pending: 1, failuresMax: 4, nextAttemptAt: new Date(repairs.status().nextAttemptAtMs as number).toISOString(), heldRepayments: 0 })
  t.equal(young.status, 'ok', 'a young repair does not degrade the service')

  heldAtMs += OPERATOR_REPAIR_AGE_DEGRADED_MS
  const old = await health()
  t.ok(old.operatorRepairs.oldestAgeSeconds > OPERATOR_REPAIR_AGE_DEGRADED_MS / 1000, 'its age')
  t.equal(old.status, 'degraded', 'one pending too long degrades the service')

  // The operator back: the next attempt records it, and /health is ok again.
  clients.operator = operatorWallet
  await until(async () => (await health()).operatorRepairs.pending === 0, 20_000, 'the repair recorded')
  t.equal(h.app.service.view('job', jobId)?.state, 'completed')
  const after = await health()
  t.match(after, { status: 'ok', operatorRepairs: { pending: 0, failuresMax: 0, nextAttemptAt: null } })
})

t.test('a restart keeps each repair\'s failures and wait: it is not tried at once', async (t) => {
  let heldAtMs: number | undefined
  const h: Harness = await startHarness({ config: { operatorRepairIntervalMs: INTERVAL_MS }, clock: () => heldAtMs ?? Date.now() })
  t.teardown(() => h.stop())
  const jobId = 'job_repair_restarted'
  await fundedJob(h, { jobId, receivableAtomic: usdc(100) })
  const take = () => {
    const clients = h.app.service.clientsOf(h.network.slug) as NetworkClients
    const operatorWallet = clients.operator
    clients.operator = undefined
    return () => {
      clients.operator = operatorWallet
    }
  }
  take()
  heldAtMs = Date.now()
  await sendSettleJob(createNetworkClients(h.network), { jobKey: jobKey(h.network, jobId), offerKeys: [] })
  await until(() => h.app.service.operatorRepairs.status().failuresMax === 1, 20_000, 'the first attempt failed')
  heldAtMs = h.app.service.operatorRepairs.status().nextAttemptAtMs as number
  await until(() => h.app.service.operatorRepairs.status().failuresMax === 2, 20_000, 'the second attempt failed')
  const waiting = h.app.service.operatorRepairs.status()

  // Restarted with its operator key: a repair tried at once would be recorded (before, the failures lived in memory,
  // and a crash-looping service tried every repair at every start, each attempt possibly an operator transaction).
  await h.restart()
  await new Promise((resolve) => setTimeout(resolve, 10 * INTERVAL_MS))
  t.match(h.app.service.operatorRepairs.status(), { pending: 1, failuresMax: 2, nextAttemptAtMs: waiting.nextAttemptAtMs }, 'the same failures and wait: not tried before its time')

  heldAtMs = waiting.nextAttemptAtMs as number
  await until(() => h.app.service.operatorRepairs.status().pending === 0, 20_000, 'recorded at its time')
  t.equal(h.app.service.view('job', jobId)?.state, 'completed')
  t.match(h.app.service.operatorRepairs.status(), { failuresMax: 0, nextAttemptAtMs: null }, 'its failures deleted with it')
})
