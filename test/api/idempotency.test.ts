// Idempotency-Key over HTTP: a retried POST with the same key and body returns the first response with
// `idempotent-replayed: true` and applies nothing more; the same key with another body is 422 idempotency_key_reused;
// keys are scoped to the caller; a failed first attempt stores nothing.
import t from 'tap'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, fundedAccount, type Harness } from '../fixtures/service.ts'
import { parseResponse, rawUntil, responsesEnded } from '../http/fixtures/raw.ts'
import { backingSourceBody, expectDocumented, expectProblem, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(5000) })
})
t.teardown(async () => {
  await h.stop()
})

t.test('credit request: a retry with the same key replays the decision and creates no second offer', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_idem_1', receivableAtomic: usdc(1000) })
  const body = creditRequest(h, borrower.address, 'job_idem_1', usdc(100), usdc(10))
  const first = await borrowerClient.post('/credit/request', body, { idempotencyKey: 'req-1' })
  t.equal(first.status, 200)
  t.equal(first.headers.get('idempotent-replayed'), null, 'the first answer is not a replay')
  const offersAfterFirst = (await borrowerClient.get('/credit/state')).body.counts.liveOffers

  const retry = await borrowerClient.post('/credit/request', body, { idempotencyKey: 'req-1' })
  t.equal(retry.status, 200)
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.same(retry.body, first.body, 'the same body, the same offer id')
  expectDocumented(t, doc, 'post', '/credit/request', retry)
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveOffers, offersAfterFirst, 'no second offer')

  const reused = await borrowerClient.post('/credit/request', { ...body, amountAtomic: usdc(101).toString() }, { idempotencyKey: 'req-1' })
  expectProblem(t, reused, 422, 'idempotency_key_reused', 'the same key with another body')
  expectDocumented(t, doc, 'post', '/credit/request', reused)
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveOffers, offersAfterFirst, 'nothing applied')

  const fresh = await borrowerClient.post('/credit/request', body, { idempotencyKey: 'req-2' })
  t.not(fresh.body.offer.offerId, first.body.offer.offerId, 'another key is another request')
  expectProblem(t, await borrowerClient.post('/credit/request', body, { idempotencyKey: 'bad key with spaces' }), 400, 'invalid_idempotency_key')
  // An empty header is a key the client sent, not no key: taken for none, each retry would make another offer.
  const liveBefore = (await borrowerClient.get('/credit/state')).body.counts.liveOffers
  expectProblem(t, await borrowerClient.post('/credit/request', body, { idempotencyKey: '' }), 400, 'invalid_idempotency_key')
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveOffers, liveBefore, 'an empty key applies nothing')
})

t.test('credit request: two Idempotency-Key fields are refused, not the first used (a single item)', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_idem_twice', receivableAtomic: usdc(1000) })
  const body = JSON.stringify(creditRequest(h, borrower.address, 'job_idem_twice', usdc(100), usdc(10)))
  const liveBefore = (await borrowerClient.get('/credit/state')).body.counts.liveOffers
  const head = `POST /credit/request HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${borrowerClient.token}\r\nContent-Type: application/json\r\n` +
    `Idempotency-Key: twice-1\r\nIdempotency-Key: twice-2\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  const answer = parseResponse((await rawUntil(Number(new URL(h.url).port), [head + body], responsesEnded(1))).text)
  t.equal(answer.status, 400)
  t.equal(JSON.parse(answer.body).code, 'invalid_idempotency_key')
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveOffers, liveBefore, 'nothing applied')
  // Neither key was stored: each alone still runs as a first request.
  t.equal((await borrowerClient.post('/credit/request', JSON.parse(body), { idempotencyKey: 'twice-1' })).headers.get('idempotent-replayed'), null)
})

t.test('match: a retried match replays the stored answer', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_idem_2', receivableAtomic: usdc(1000) })
  const offerId = (await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_idem_2', usdc(100), usdc(10)))).body.offer.offerId
  const first = await borrowerClient.post('/credit/match', { offerId }, { idempotencyKey: 'match-1' })
  t.equal(first.status, 200)
  t.ok(first.body.lease, 'leased', { body: first.body })
  const retry = await borrowerClient.post('/credit/match', { offerId }, { idempotencyKey: 'match-1' })
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.same(retry.body, first.body)
  const reused = await borrowerClient.post('/credit/match', { offerId: 'off_1' }, { idempotencyKey: 'match-1' })
  expectProblem(t, reused, 422, 'idempotency_key_reused', 'the key of this match with another offer')
  const leases = (await borrowerClient.get('/credit/state')).body.counts.liveLeases
  t.equal(leases, 1, 'one lease only')
})

t.test('backing source and lender registration: replays change nothing; the private key is never replayed', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, borrower)
  const source = await backingSourceBody(h, borrower.address, { sourceId: 'src-idem', valueAtomic: usdc(100), liquidationValueAtomic: usdc(60), advanceRateBps: 5000 })
  const first = await client.post('/credit/backing-sources', source, { idempotencyKey: 'src' })
  t.equal(first.status, 201)
  const retry = await client.post('/credit/backing-sources', source, { idempotencyKey: 'src' })
  t.equal(retry.status, 201, 'the stored 201, not a 409 source_exists')
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.same(retry.body, first.body)
  t.equal((await client.get('/credit/backing-sources')).body.length, 1)

  const lender = await fundedAccount(h.devnet, h.network, 0n)
  const lenderClient = await signedIn(h.url, lender)
  const policy = { availableLiquidityAtomic: usdc(100).toString(), asset: 'USDC', networks: [h.network.slug], minFeeBps: 500, maxDurationSeconds: 3600, acceptedRiskBands: ['A'] }
  const registered = await lenderClient.post('/lenders/register', policy, { idempotencyKey: 'reg' })
  t.equal(registered.status, 201)
  t.match(registered.body.sessionKey.privateKey, /^0x[0-9a-f]{64}$/)
  const replayed = await lenderClient.post('/lenders/register', policy, { idempotencyKey: 'reg' })
  t.equal(replayed.status, 201)
  t.equal(replayed.headers.get('idempotent-replayed'), 'true')
  expectDocumented(t, doc, 'post', '/lenders/register', replayed)
  t.equal(replayed.body.sessionKey.privateKey, null, 'the key was never stored, so the replay cannot repeat it')
  t.equal(replayed.body.sessionKey.address, registered.body.sessionKey.address, 'the same session key')
  t.same({ ...replayed.body, sessionKey: null }, { ...registered.body, sessionKey: null }, 'the rest of the answer is the same')
  t.equal((await lenderClient.get('/lenders')).body.filter((l: Json) => l['address'] === lender.address).length, 1, 'registered once')
})

t.test('keys are scoped to the caller, and a failed first attempt stores nothing', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_idem_3', receivableAtomic: usdc(1000) })
  const other = await fundedJob(h, { jobId: 'job_idem_4', receivableAtomic: usdc(1000) })
  const mine = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_idem_3', usdc(50), usdc(5)), { idempotencyKey: 'shared' })
  const theirs = await other.borrowerClient.post('/credit/request', creditRequest(h, other.borrower.address, 'job_idem_4', usdc(60), usdc(6)), { idempotencyKey: 'shared' })
  t.equal(theirs.status, 200)
  t.equal(theirs.headers.get('idempotent-replayed'), null, 'another caller\'s key does not collide')
  t.not(theirs.body.offer.offerId, mine.body.offer.offerId)

  const missing = creditRequest(h, borrower.address, 'job_idem_missing', usdc(50), usdc(5))
  expectProblem(t, await borrowerClient.post('/credit/request', missing, { idempotencyKey: 'fails' }), 404, 'repayment_source_not_found')
  const again = await borrowerClient.post('/credit/request', missing, { idempotencyKey: 'fails' })
  expectProblem(t, again, 404, 'repayment_source_not_found', 'the retry runs again')
  t.equal(again.headers.get('idempotent-replayed'), null)
})
