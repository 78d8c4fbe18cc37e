// An outsider reading the OpenAPI document: every status a route answers is one the document lists for it. Two routes
// that go to the chain answered 503 chain_unavailable while their operations listed no 503: failing a job (the
// operator's failJob) and registering a lender that names its ERC-8004 agent (the agent's control is read on chain).
// A client generated from the document has no case for that answer, although it is the one to retry.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let document: Json
t.before(async () => {
  h = await startHarness({ devnet: await startDevnet() })
  document = await openApiDocument(h.url)
})
t.teardown(async () => {
  await h.stop()
  await h.devnet.stop()
})

t.test('with a network\'s RPC down, failing a job and registering with an agent there: 503, documented, nothing changed', async (t) => {
  const second = h.devnet.networks[1] as NetworkConfig
  const borrower = await fundedAccount(h.devnet, second, 0n)
  const client = await fundedAccount(h.devnet, second, usdc(100))
  const fundingTxHash = await new ChainAgent(second, client).fundJob('job_outsider_outage', USDC, usdc(100), borrower.address)
  const borrowerApi = await signedIn(h.url, borrower)
  const clientApi = await signedIn(h.url, client)
  const dueAt = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const job = await borrowerApi.post('/credit/jobs', { jobId: 'job_outsider_outage', network: second.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(), dueAt, fundingTxHash })
  t.equal(job.status, 201)
  const lender = await fundedAccount(h.devnet, h.network, 0n)
  const lenderApi = await signedIn(h.url, lender)

  await (h.devnet.anvils[1] as { stop(): Promise<void> }).stop()

  const failed = await clientApi.post('/credit/jobs/job_outsider_outage/fail', { reason: 'not_delivered' })
  expectProblem(t, failed, 503, 'chain_unavailable', 'fail')
  expectDocumented(t, document, 'post', '/credit/jobs/{jobId}/fail', failed)
  t.equal((await borrowerApi.get('/credit/jobs/job_outsider_outage')).body.state, job.body.state, 'the job is unchanged')

  const registration = {
    availableLiquidityAtomic: usdc(10).toString(),
    asset: USDC,
    networks: [second.slug],
    minFeeBps: 100,
    maxDurationSeconds: 86_400,
    acceptedRiskBands: ['A'],
    agent: { network: second.slug, registry: second.identityRegistry, agentId: '1' },
  }
  const registered = await lenderApi.post('/lenders/register', registration)
  expectProblem(t, registered, 503, 'chain_unavailable', 'register')
  expectDocumented(t, document, 'post', '/lenders/register', registered)
  t.equal((await lenderApi.get(`/lenders/${lender.address}/wallet`)).status, 404, 'no lender was registered')
})
