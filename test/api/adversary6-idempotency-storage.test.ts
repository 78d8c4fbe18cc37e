// An adversary's finding: any signed-in wallet may POST /credit/dispatch, and with nothing due it changes nothing and
// answers 200. Sent with a fresh Idempotency-Key each time, every answer was stored for IDEMPOTENCY_RETENTION_SECONDS
// (a day): 5,000 such requests from one fresh wallet grew the data directory by 8.4 MB (about 1.7 KB each, 200-byte
// keys), so one wallet within its rate limit could fill the disk (and the store, failing, stops the service). A
// request that changed nothing now stores no answer: a retry runs again, which can apply nothing twice. A request
// that changed something is replayed as before (test/api/idempotency.test.ts). Real service, real devnet.
import t from 'tap'
import { creditRequest, fundedAccount, fundedJob, signedIn, startHarness, usdc } from '../fixtures/service.ts'
import { expectDocumented, openApiDocument } from './fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())

t.test('a stranger\'s dispatch with nothing due, under an Idempotency-Key, stores no answer', async (t) => {
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const first = await stranger.post('/credit/dispatch', {}, { idempotencyKey: 'flood-1' })
  t.equal(first.status, 200, JSON.stringify(first.body))
  expectDocumented(t, await openApiDocument(h.url), 'post', '/credit/dispatch', first)
  t.same([first.body.expiredLeases, first.body.matches], [[], []], 'nothing was due')
  const retry = await stranger.post('/credit/dispatch', {}, { idempotencyKey: 'flood-1' })
  t.equal(retry.status, 200)
  t.equal(retry.headers.get('idempotent-replayed'), null, 'the retry ran again: no answer was stored to replay')
})

// Review of the rule above: the key of a request that changed nothing is not held, so the published document must not
// promise a replay or a 422 for it. Before, the OpenAPI document said every keyed answer was stored and a key reused
// with another body refused, while the service ran such a request again.
t.test('the key of a declined credit request is free: another body runs, and the OpenAPI document says so', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_noop_key', receivableAtomic: usdc(100) })
  const key = 'declined-then-other-body'
  const first = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_noop_key', usdc(10_000), usdc(1)), { idempotencyKey: key })
  t.equal(first.body.decision, 'declined', JSON.stringify(first.body))
  const other = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_noop_key', usdc(20_000), usdc(1)), { idempotencyKey: key })
  t.equal(other.status, 200, 'not refused as a reused key (422): nothing was stored under it')
  t.equal(other.body.decision, 'declined', JSON.stringify(other.body))
  const description = (await openApiDocument(h.url)).components.parameters.IdempotencyKey.description as string
  t.match(description, /changed nothing[^.]*stores no answer/, 'the Idempotency-Key parameter names the exception')
})
