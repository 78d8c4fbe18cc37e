// Reconciliation of the service's ledger with the credit contract (issue 9): at start-up and on demand through the
// operator route, over HTTP against the devnet. A clean history (a settled job, a failed and liquidated one) reports no
// difference; a planted one (a record changed in the store) is found by the next start-up and the route, and makes
// /health degraded with the difference listed. A job funded on chain that nobody registered is not a difference
// (anyone may fund one), nor are tokens sent straight to the contract (test/api/adversary6-token-surplus.test.ts). An
// unreadable chain never blocks a start: the run is status unavailable.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { Reconciliation } from '../../src/service/reconciliation.ts'
import { SNAPSHOT_VERSIONS } from '../../src/engine/migrations.ts'
import { Store } from '../../src/store/index.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { documentedHealth, expectDocumented, expectProblem, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let operator: CreditClient
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
})
t.teardown(async () => {
  await h.stop()
})

const health = (): Promise<Json> => documentedHealth(t, h.url, doc)

t.test('the start-up run finds nothing on a fresh service; /health says so per network', async (t) => {
  await h.app.startupReconciliation
  const body = await health()
  t.equal(body.status, 'ok')
  t.same(body.networks.map((n: Json) => [n.network, n.reconciliation.status, n.reconciliation.differenceCount]), h.devnet.networks.map((n) => [n.slug, 'ok', 0]))
  t.ok(body.networks.every((n: Json) => typeof n.reconciliation.checkedAt === 'string' && n.reconciliation.toBlock !== null))
})

t.test('a settled job, a failed and liquidated one, and an unregistered escrow: no difference', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
  // Settled: 40 drawn on 200, the job completed by its client (settleJob pays the lender and the reserve's share).
  const settled = await fundedJob(h, { jobId: 'job_rec_settled', receivableAtomic: usdc(200) })
  await fundAdvance(h, { borrower: settled.borrower.address, borrowerClient: settled.borrowerClient, lender, source: 'job_rec_settled', amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  t.equal((await settled.jobClientApi.post('/credit/jobs/job_rec_settled/complete', {})).status, 200)
  // Failed with collateral, the advance liquidated by the operator (issue 9, case 3).
  const borrower = await fundedAccount(h.devnet, h.network, usdc(10))
  const failed = await fundedJob(h, { jobId: 'job_rec_failed', receivableAtomic: usdc(200), borrower })
  const posted = await new ChainAgent(h.network, borrower).postCollateral('job_rec_failed', USDC, usdc(10))
  t.equal((await failed.borrowerClient.post('/credit/jobs/job_rec_failed/collateral', { amountAtomic: usdc(10).toString(), txHash: posted })).status, 201)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient: failed.borrowerClient, lender, source: 'job_rec_failed', amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  t.equal((await failed.jobClientApi.post('/credit/jobs/job_rec_failed/fail', { reason: 'not_delivered' })).status, 200)
  t.equal((await operator.post(`/credit/advances/${advance.advanceId}/liquidate`, {})).status, 200)
  // An escrow someone funded and never registered: the service promised nothing about it.
  const stranger = await fundedAccount(h.devnet, h.network, usdc(5))
  await new ChainAgent(h.network, stranger).fundJob('job_rec_unregistered', USDC, usdc(5), stranger.address)

  const reply = await operator.post('/operator/reconcile', {})
  t.equal(reply.status, 200, JSON.stringify(reply.body))
  expectDocumented(t, doc, 'post', '/operator/reconcile', reply)
  t.equal(reply.body.status, 'ok', JSON.stringify(reply.body))
  const mine = reply.body.networks.find((n: Json) => n.network === h.network.slug)
  t.same(mine.differences, [])
  t.equal(mine.unregisteredJobs, 1, 'the unregistered escrow is counted apart')
  t.equal((await health()).status, 'ok')
})

t.test('the route is an operator\'s, and names only known networks', async (t) => {
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const refused = await stranger.post('/operator/reconcile', {})
  expectProblem(t, refused, 403, 'forbidden')
  expectDocumented(t, doc, 'post', '/operator/reconcile', refused)
  expectProblem(t, await new CreditClient(h.url).post('/operator/reconcile', {}), 401)
  const unknown = await operator.post('/operator/reconcile', { network: 'no-such-net' })
  expectProblem(t, unknown, 400, 'unknown_network')
  expectDocumented(t, doc, 'post', '/operator/reconcile', unknown)
  const one = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.equal(one.status, 200)
  t.same(one.body.networks.map((n: Json) => n.network), [h.network.slug], 'one network when one is named')
})

t.test('a planted difference in the store: a settled job\'s record changed while the service was stopped', async (t) => {
  // The sum the contract saw funded differs from the one the changed record claims; the restart's run names both.
  const jobId = 'job_rec_settled'
  await h.app.stop()
  const store = await Store.open({ dataDir: h.dataDir, snapshotVersions: SNAPSHOT_VERSIONS })
  const entry = store.getSnapshot('job', jobId)
  t.equal(entry?.final, true, 'the settled job is final in the store')
  const record = entry?.snapshot as { context: { receivableAtomic: bigint } }
  const changed = { ...record, context: { ...record.context, receivableAtomic: record.context.receivableAtomic + 7n } }
  await store.commit({ changes: [{ kind: 'job', id: jobId, record: changed, final: true }] })
  await store.close()
  await h.restart()
  await h.app.startupReconciliation
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
  const totals = reply.body.networks[0].differences.filter((d: Json) => d.kind === 'total')
  t.same(
    totals.map((d: Json) => [d.key, BigInt(d.expected) - BigInt(d.actual)]),
    [['escrowFundedAtomic', 7n], ['settledToBorrowersAtomic', 7n]],
    'the escrow the record claims was funded, and what its settlement must then have paid the borrower',
  )
  const body = await health()
  t.equal(body.status, 'degraded')
  t.ok(body.networks.find((n: Json) => n.network === h.network.slug).reconciliation.differences.some((d: Json) => d.key === 'escrowFundedAtomic'), '/health lists it')
})

t.test('an unreadable chain never blocks: the run is unavailable, not a difference', async (t) => {
  const { service } = h.app
  const down = new Reconciliation(service, {
    clients: () => {
      throw new Error('connection refused')
    },
  })
  const runs = await down.run()
  t.same(runs.map((r) => r.status), h.devnet.networks.map(() => 'unavailable'))
  t.match(runs[0]?.error, /connection refused/)
  t.equal(down.hasDifferences(), false, 'an unreadable chain is not a difference')
})
