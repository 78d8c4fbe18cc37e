// A chain that stops answering: proofs on it are 503 chain_unavailable (a retry may succeed, nothing is decided or
// changed), /health reports the network degraded, and the other network keeps working.
import t from 'tap'
import { startDevnet } from '../../src/chain/devnet.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ devnet: await startDevnet() })
})
t.teardown(async () => {
  await h.stop()
  await h.devnet.stop()
})

t.test('proofs on a network whose RPC is down are 503 chain_unavailable and change nothing', async (t) => {
  const [, second] = h.devnet.networks
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, borrower)
  await (h.devnet.anvils[1] as { stop(): Promise<void> }).stop()

  const before = (await client.get('/credit/state')).body
  const reply = await client.post('/credit/jobs', {
    jobId: 'job_outage',
    network: second!.slug,
    asset: USDC,
    agent: borrower.address,
    receivableAtomic: usdc(10).toString(),
    dueAt: new Date(Date.now() + 86_400_000).toISOString(),
    fundingTxHash: `0x${'ab'.repeat(32)}`,
  })
  t.equal(reply.status, 503)
  t.equal(reply.body.code, 'chain_unavailable')
  t.equal(reply.headers.get('retry-after'), '1')
  t.same((await client.get('/credit/state')).body, before, 'nothing changed')

  await h.app.service.watcher.waitFor(() => h.app.service.watcher.isDegraded(second!.slug), 10_000)
  const health = (await client.get('/health')).body
  t.equal(health.status, 'degraded')
  t.same(health.networks.map((n: { network: string; watcher: string }) => [n.network, n.watcher]), [[h.network.slug, 'ok'], [second!.slug, 'degraded']])

  const elsewhere = await client.post('/credit/jobs', {
    jobId: 'job_outage_a',
    network: h.network.slug,
    asset: USDC,
    agent: borrower.address,
    receivableAtomic: usdc(10).toString(),
    dueAt: new Date(Date.now() + 86_400_000).toISOString(),
    fundingTxHash: `0x${'cd'.repeat(32)}`,
  })
  t.equal(elsewhere.status, 422, 'the other network still answers: an unknown transaction is a verdict there')
  t.equal(elsewhere.body.code, 'proof_not_found')
})
