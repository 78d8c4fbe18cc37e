// An adversary's finding: any signed-in wallet may POST /credit/dispatch, and with nothing due it changes nothing and
// answers 200. Sent with a fresh Idempotency-Key each time, every answer was stored for IDEMPOTENCY_RETENTION_SECONDS
// (a day): 5,000 such requests from one fresh wallet grew the data directory by 8.4 MB (about 1.7 KB each, 200-byte
// keys), so one wallet within its rate limit could fill the disk (and the store, failing, stops the service). A
// request that changed nothing now stores no answer: a retry runs again, which can apply nothing twice. A request
// that changed something is replayed as before (test/api/idempotency.test.ts). Real service, real devnet.
import t from 'tap'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
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
