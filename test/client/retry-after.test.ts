// The SDK waits out a 429 or 503 that carries Retry-After and sends the same request again (a POST under the same
// Idempotency-Key and body), a bounded number of times; when it stops, its CreditApiError names the code and the wait.
// Against the service with a chain read budget of one read per wallet at a time (chainReadsBurst 4, a quarter each):
// of two job registrations a wallet sends at once with unknown funding transactions, one is read on chain (422
// proof_not_found) and the other answered 503 chain_reads_exhausted with Retry-After until the wallet's share refills.
import { createServer } from 'node:http'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { AgentCredit, CreditApiError, type AgentCreditOptions, type JobCreationBody } from '../../src/client/index.ts'
import { startHarness, USDC, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { chainReadsPerSecond: 4, chainReadsBurst: 4 } })
})
t.teardown(async () => {
  await h.stop()
})

interface Attempt {
  method: string
  path: string
  status: number
  idempotencyKey: string | undefined
  body: string
  retryAfter: string | null
}

/** A fresh wallet's SDK whose every HTTP call (attempt) is recorded as the service answered it. */
function recordedAgent(options: Partial<AgentCreditOptions> = {}, baseUrl = h.url): { agent: AgentCredit; attempts: Attempt[] } {
  const agent = new AgentCredit({ baseUrl, account: privateKeyToAccount(generatePrivateKey()), ...options })
  const attempts: Attempt[] = []
  const call = agent.http.call.bind(agent.http)
  agent.http.call = async (method, path, body, callOptions) => {
    const reply = await call(method, path, body, callOptions)
    attempts.push({ method, path, status: reply.status, idempotencyKey: callOptions?.idempotencyKey, body: JSON.stringify(body), retryAfter: reply.headers.get('retry-after') })
    return reply
  }
  return { agent, attempts }
}

/** A job registration naming a funding transaction nobody sent: the service reads the chain for it and refuses. */
function unfundedJob(agent: AgentCredit): JobCreationBody {
  return {
    jobId: `job_${toHex(randomBytes(8)).slice(2)}`,
    network: h.network.slug,
    asset: USDC,
    agent: agent.address,
    receivableAtomic: '1000000',
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(),
    fundingTxHash: toHex(randomBytes(32)),
  }
}

const registrations = (attempts: Attempt[]) => attempts.filter((a) => a.method === 'POST' && a.path === '/credit/jobs')

t.test('a 503 with Retry-After is waited out and sent again under the same Idempotency-Key and body', async (t) => {
  const { agent, attempts } = recordedAgent()
  const refusals = await Promise.all([agent.createJob(unfundedJob(agent)), agent.createJob(unfundedJob(agent))].map((call) => call.catch((error: unknown) => error)))
  for (const refusal of refusals) {
    t.ok(refusal instanceof CreditApiError, 'a typed error')
    t.match(refusal, { status: 422, code: 'proof_not_found', retryAfterSeconds: undefined }, 'both read on chain in the end (a 422 has no Retry-After)')
  }
  const sent = registrations(attempts)
  t.same(sent.map((a) => a.status).sort(), [422, 422, 503], 'three attempts: the wallet\'s share refused one of the two until it refilled')
  const refused = sent.find((a) => a.status === 503) as Attempt
  t.match(refused.retryAfter, /^[1-9][0-9]*$/, 'the 503 said when to come back')
  const again = sent.filter((a) => a.idempotencyKey === refused.idempotencyKey)
  t.same(again.map((a) => a.status), [503, 422], 'the refused registration was sent again, after the refusal')
  t.equal(again[1]?.body, refused.body, 'with the same body')
  t.not(refused.idempotencyKey, undefined, 'under an Idempotency-Key')
  t.equal(new Set(sent.map((a) => a.idempotencyKey)).size, 2, 'one key per call, kept by its retry')
})

t.test('a Retry-After longer than retryAfterMaxSeconds, or past the last attempt, is thrown with its code and wait', async (t) => {
  for (const options of [{ retryAfterMaxSeconds: 0 }, { attempts: 1 }]) {
    const { agent, attempts } = recordedAgent(options)
    const bodies = [unfundedJob(agent), unfundedJob(agent)]
    const answers = await Promise.all(bodies.map((body) => agent.createJob(body).catch((error: unknown) => error)))
    const refused = answers.find((a) => a instanceof CreditApiError && a.status === 503)
    t.ok(refused instanceof CreditApiError, `${JSON.stringify(options)}: the refusal is thrown`)
    t.match(refused, { code: 'chain_reads_exhausted', retryAfterSeconds: Number }, 'naming its code and the wait the service asked for')
    t.ok((refused as CreditApiError).retryAfterSeconds! >= 1, 'a wait of whole seconds, at least one')
    t.match((refused as CreditApiError).message, /chain_reads_exhausted.*Retry-After [1-9]/, 'the message says both')
    t.equal(registrations(attempts).length, 2, 'each registration sent once: the refused one not again')
    const job = bodies[answers.indexOf(refused)] as JobCreationBody
    t.equal((await agent.http.get(`/credit/jobs/${job.jobId}`)).status, 404, 'nothing was recorded')
  }
})

t.test('a 503 without Retry-After is not cured by waiting: thrown at once', async (t) => {
  // network_stopped answers so (the chain follower stopped for good); a stand-in service answering only that.
  let requests = 0
  const stopped = createServer((_, response) => {
    requests += 1
    response.writeHead(503, { 'content-type': 'application/problem+json' })
    response.end(JSON.stringify({ type: 'urn:agent-credit:problem:network_stopped', title: 'Network stopped', status: 503, detail: 'stopped', code: 'network_stopped' }))
  })
  await new Promise<void>((resolve) => stopped.listen(0, '127.0.0.1', resolve))
  t.teardown(() => stopped.close())
  const { port } = stopped.address() as { port: number }
  const { agent } = recordedAgent({ attempts: 3 }, `http://127.0.0.1:${port}`)
  const refused = await agent.catalog().catch((error: unknown) => error)
  t.match(refused, { status: 503, code: 'network_stopped', retryAfterSeconds: undefined })
  t.equal(requests, 1, 'asked once')
})
