// An outsider with a fresh wallet (a signature only) against what the event stream and the credit path show it of
// other agents' credit (README "Live event stream": each wallet gets its own events; "The API at a glance": an
// Idempotency-Key is scoped to the wallet). A lender leases to a borrower while a stranger watches: its live stream,
// and a resume from the epoch's first seq (the cheapest way to ask for everything retained), carry none of their
// events; the borrower's Idempotency-Key sent by the stranger on the same path with the same body replays nothing; the
// lender's actions (its lease's signed authorization) are refused without echoing them. What each probe cost: one
// sign-in of a free wallet.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { openRawStream } from './fixtures.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(() => h?.stop())

t.test('a stranger sees none of a lease between two other wallets', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(5000) })
  const stranger = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const live = await openRawStream(h.url, stranger.token as string)
  const hello = await live.next((m) => m.type === 'hello', 'hello')

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_o20_1', receivableAtomic: usdc(1000) })
  const borrowerStream = await openRawStream(h.url, borrowerClient.token as string)
  const lenderStream = await openRawStream(h.url, lender.client.token as string)
  const key = 'outsider20-shared-key'
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_o20_1', usdc(300), usdc(30)), { idempotencyKey: key })
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId }, { idempotencyKey: key })
  const leaseId = match.body.lease?.leaseId as string
  t.equal(match.body.lease?.lender, lender.account.address, 'leased to the lender')
  await lenderStream.next((m) => m.kind === 'lease' && m.lease.leaseId === leaseId, 'the lender\'s lease event')
  await borrowerStream.next((m) => m.kind === 'offer' && m.offer.offerId === offerId && m.offer.state === 'leased', 'the borrower\'s offer event')

  // A resume from before every retained event of this epoch: the stranger's own events only (none).
  const resumed = await openRawStream(h.url, stranger.token as string, `?since=0&epoch=${hello.epoch}`)
  const resumedHello = await resumed.next((m) => m.type === 'hello', 'hello of the resume')
  t.ok(h.app.stream.stats().lastPosition >= 2, 'events were published meanwhile')
  t.equal(resumedHello.seq, 0, 'the hello counts the stranger\'s own events only (none)')
  // A marker the stranger's streams do receive, so that what came before it is all they were sent.
  const replay = await stranger.post('/credit/match', { offerId }, { idempotencyKey: key })
  t.equal(replay.status, 403, 'the borrower\'s key and body, sent by a stranger, is the stranger\'s own request (refused)')
  t.equal(replay.headers.get('idempotent-replayed'), null, 'nothing of the borrower\'s answer is replayed')
  t.notMatch(JSON.stringify(replay.body), leaseId, 'the refusal does not name the lease')
  const actions = await stranger.get(`/lenders/${lender.account.address}/actions`)
  t.equal(actions.status, 403, 'the lender\'s actions are the lender\'s')
  t.notMatch(JSON.stringify(actions.body), leaseId, 'the refusal does not name its lease')
  const otherRequest = await stranger.post('/credit/request', creditRequest(h, borrower.address, 'job_o20_1', usdc(300), usdc(30)), { idempotencyKey: key })
  t.equal(otherRequest.status, 403, 'the borrower\'s request under its key, sent by a stranger, is refused, not replayed')
  t.equal(otherRequest.headers.get('idempotent-replayed'), null)

  // The lender's and the borrower's streams got their events before the resume opened and before these requests (a
  // stream's frames come in order on one connection), and all of them are retained: the stranger's streams, live and
  // resumed from seq 0, got no event at all.
  t.same(live.messages.filter((m) => m.type !== 'hello'), [], 'the stranger\'s live stream carried nothing of theirs')
  t.same(resumed.messages.filter((m) => m.type !== 'hello'), [], 'a resume from seq 0 carried nothing of theirs')
  t.same([...live.invalid, ...resumed.invalid], [], 'every frame is a published StreamMessage')
  await Promise.all([live.close(), resumed.close(), borrowerStream.close(), lenderStream.close()])
})
