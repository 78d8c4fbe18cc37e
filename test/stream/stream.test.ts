// The live event stream (GET /events) against the devnet: a lender takes its lease from the stream and pays it
// without ever polling; a client disconnected mid-flow resumes with nothing missed or repeated; a client that does
// not read is cut off with a reason while the server's queue for it stays within its bound.
import t from 'tap'
import WebSocket from 'ws'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { Change } from '../../src/engine/types.ts'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { events, openRawStream, type RawStream } from './fixtures.ts'

const QUEUED_EVENTS_MAX = 64
const SOCKET_BUFFERED_BYTES_MAX = 64 * 1024

let h: Harness
let lender: ReadyLender
let lenderStream: RawStream
t.before(async () => {
  h = await startHarness({ stream: { queuedEventsMax: QUEUED_EVENTS_MAX, socketBufferedBytesMax: SOCKET_BUFFERED_BYTES_MAX } })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(5000) })
  lenderStream = await openRawStream(h.url, lender.client.token as string)
})
t.teardown(async () => {
  await lenderStream?.close()
  await h?.stop()
})

/** The lender's side of a match, from the stream only: the lease event's action, signed and sent, then reported. */
async function payFromStream(offerId: string): Promise<void> {
  const leased = await lenderStream.next((m) => m.kind === 'lease' && m.lease.offerId === offerId && m.lease.state === 'leased', `lease of ${offerId}`)
  const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned(leased.action.transaction)
  const report = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
  if (report.status !== 200) throw new Error(`supplier-payment: ${report.status} ${JSON.stringify(report.body)}`)
}

t.test('the stream is authenticated and a plain GET says how to connect', async (t) => {
  await t.rejects(openRawStream(h.url, 'not-a-token'), { message: 'upgrade refused: 401' }, 'an unknown token is refused at the upgrade')
  await t.rejects(openRawStream(h.url, lender.client.token as string, '?since=x'), { message: 'upgrade refused: 400' }, 'a malformed resume point is refused')
  const plain = await lender.client.get('/events')
  t.equal(plain.status, 200, 'a plain GET says how to connect')
  t.equal(plain.body.url, `${h.url.replace(/^http/, 'ws')}/events`)
  t.equal(plain.body.queuedEventsMax, QUEUED_EVENTS_MAX)
})

t.test('a lender receives its lease over the stream and pays it without ever polling', async (t) => {
  const hello = await lenderStream.next((m) => m.type === 'hello', 'hello')
  t.equal(hello.wallet, lender.account.address, 'the stream is the signed-in wallet\'s')
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_stream_1', receivableAtomic: usdc(1000) })
  const borrowerStream = await openRawStream(h.url, borrowerClient.token as string)
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_stream_1', usdc(300), usdc(30)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address)

  const leased = await lenderStream.next((m) => m.kind === 'lease' && m.lease.offerId === offerId && m.lease.state === 'leased', 'the lease')
  t.equal(leased.action.kind, 'pay_supplier')
  t.equal(leased.action.transaction.to, h.network.creditContract, 'the paySupplier goes to the credit contract')
  t.equal(leased.action.transaction.from, lender.session.address, 'signed by the session key')
  t.equal(leased.action.authorization.deadline, String(Math.floor(Date.parse(match.body.lease.expiresAt) / 1000)), 'its signed deadline is the lease\'s expiry, in unix seconds')
  t.equal(leased.action.authorization.payer, lender.session.address, 'the authorization names the session key as the payer')
  await payFromStream(offerId)

  const advance = await lenderStream.next((m) => m.kind === 'advance' && m.advance.offerId === offerId, 'the advance, to the lender')
  t.equal(advance.advance.state, 'active')
  await lenderStream.next((m) => m.kind === 'lease' && m.lease.offerId === offerId && m.lease.state === 'paid', 'the lease paid')
  await borrowerStream.next((m) => m.kind === 'advance' && m.advance.offerId === offerId, 'the advance, to the borrower')
  const offerStates = events(borrowerStream).filter((m) => m.kind === 'offer' && m.offer.offerId === offerId).map((m) => m.offer.state)
  t.same(offerStates, ['offered', 'leased', 'funded'], 'the borrower saw its offer through every state, in order')
  t.notOk(events(borrowerStream).some((m) => m.kind === 'lease'), 'leases (and their transactions) go to their lender only')
  t.notOk(events(lenderStream).some((m) => m.kind === 'offer' || m.kind === 'job' || m.kind === 'passport'), 'the lender gets none of the borrower\'s events')
  const seqs = events(lenderStream).map((m) => m.seq)
  t.same(seqs, [...seqs].sort((a, b) => a - b), 'events come in sequence order')
  t.same([...lenderStream.invalid, ...borrowerStream.invalid], [], 'every frame matches the published StreamMessage schema')
  await borrowerStream.close()
})

t.test('a client disconnected mid-flow resumes with nothing missed and nothing repeated', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_stream_2', receivableAtomic: usdc(1000) })
  const token = borrowerClient.token as string
  // Stays connected throughout: what the resumed client must end up with.
  const witness = await openRawStream(h.url, token)
  const first = await openRawStream(h.url, token)
  const hello = await first.next((m) => m.type === 'hello', 'hello')

  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_stream_2', usdc(200), usdc(20)))
  const offerId = decision.body.offer.offerId as string
  await first.next((m) => m.kind === 'offer' && m.offer.offerId === offerId, 'the offer')
  await first.close()
  const lastSeen = events(first).at(-1).seq as number

  // While it is away: the match, the payment, the advance.
  await borrowerClient.post('/credit/match', { offerId })
  await payFromStream(offerId)
  const witnessed = await witness.next((m) => m.kind === 'advance' && m.advance.offerId === offerId, 'the advance (witness)')

  const resumed = await openRawStream(h.url, token, `?since=${lastSeen}&epoch=${hello.epoch}`)
  await resumed.next((m) => m.kind === 'advance' && m.advance.offerId === offerId, 'the advance (resumed)')
  t.notOk(resumed.messages.some((m) => m.type === 'resync'), 'within retention: no resync')
  const upTo = (s: RawStream) => events(s).filter((m) => m.seq <= witnessed.seq)
  const together = [...upTo(first), ...upTo(resumed)]
  t.same(together, upTo(witness), 'before + after the disconnect = what a connection that stayed open received, event for event')
  t.equal(new Set(together.map((m) => m.seq)).size, together.length, 'no event twice')
  t.ok(events(resumed).length > 0 && events(resumed).every((m) => m.seq > lastSeen), 'the resumed connection starts after the last event seen')

  const otherEpoch = await openRawStream(h.url, token, `?since=${lastSeen}&epoch=0000000000000000`)
  t.match(await otherEpoch.next((m) => m.type === 'resync', 'resync'), { reason: 'unknown_epoch', seq: resumed.messages[0].seq }, 'sequence numbers of another run: re-read state')
  const ahead = await openRawStream(h.url, token, `?since=${witnessed.seq + 1_000_000}&epoch=${hello.epoch}`)
  t.match(await ahead.next((m) => m.type === 'resync', 'resync'), { reason: 'ahead_of_stream' })
  t.same([...first.invalid, ...resumed.invalid, ...witness.invalid], [])
  for (const s of [witness, resumed, otherEpoch, ahead]) await s.close()
})

t.test('a consumer that does not read is cut off with a reason; the server\'s queue for it stays bounded', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  const token = client.token as string
  const slow = await openRawStream(h.url, token)
  slow.ws.pause()
  const fast = await openRawStream(h.url, token)
  // A realistic event (about 1 KB): a change of an offer record, addressed to this wallet.
  const offer = h.app.service.view('offer', 'off_1')
  t.ok(offer, 'an offer to copy')
  const change: Change = { kind: 'offer', id: 'off_1', record: { value: offer?.state, context: { ...offer, borrower: account.address } }, final: false }

  const hub = h.app.stream
  let published = 0
  let largestQueue = 0
  const slowOpen = () => hub.stats().connections.filter((c) => c.wallet === account.address).length === 2
  const batch = 50
  // Enough to fill any loopback socket buffer many times over; the cut-off comes long before.
  while (slowOpen() && published < 200_000) {
    hub.publish(Array.from({ length: batch }, () => change))
    published += batch
    for (const c of hub.stats().connections) largestQueue = Math.max(largestQueue, c.queuedEvents)
    // The reading client keeps up: it has every event before the next batch.
    await fast.until(() => fast.messages.length === published + 1, `${published} events (and hello) on the reading connection`)
  }
  t.notOk(slowOpen(), `the slow connection was cut off (after ${published} events)`)
  t.ok(largestQueue <= QUEUED_EVENTS_MAX, `every queue seen between batches (largest ${largestQueue}) was within the bound`)
  const stats = hub.stats()
  t.ok(stats.peakQueuedEvents <= QUEUED_EVENTS_MAX, `the largest queue (${stats.peakQueuedEvents}) stayed within ${QUEUED_EVENTS_MAX}`)
  const eventBytes = Buffer.byteLength(JSON.stringify(events(fast).at(-1)))
  t.ok(stats.peakBufferedBytes <= SOCKET_BUFFERED_BYTES_MAX + eventBytes, `the socket buffer (${stats.peakBufferedBytes}) stayed within its bound plus one event`)
  slow.ws.resume()
  const closed = await slow.closed
  t.equal(closed.code, 4008, 'close code 4008')
  t.match(closed.reason, /^slow_consumer: \d+ events undelivered/, 'with the reason')
  t.equal(fast.ws.readyState, WebSocket.OPEN, 'the connection that reads stays open')
  const seqs = events(fast).map((m) => m.seq)
  t.ok(seqs.every((seq, i) => i === 0 || seq === seqs[i - 1] + 1), 'and got every event, in order')
  await fast.close()
})

t.test('a revoked session\'s streams are closed at once (4001 session_ended); the wallet\'s other sessions keep theirs until revoked too', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const [a, b] = [await signedIn(h.url, account), await signedIn(h.url, account)]
  const streamA = await openRawStream(h.url, a.token as string)
  const streamB = await openRawStream(h.url, b.token as string)
  await streamA.next((m) => m.type === 'hello', 'hello on A')

  t.equal((await a.call('DELETE', '/auth/session')).status, 200)
  const closedA = await closedWithin(streamA, 10_000)
  t.equal(closedA.code, 4001, 'the revoked session\'s stream is closed with 4001')
  t.match(closedA.reason, /^session_ended: /, 'naming why')
  t.equal(streamB.ws.readyState, WebSocket.OPEN, 'the other session\'s stream stays open')
  await t.rejects(openRawStream(h.url, a.token as string), { message: 'upgrade refused: 401' }, 'and the revoked token opens no new one')

  t.equal((await b.call('DELETE', '/auth/sessions')).status, 200)
  t.equal((await closedWithin(streamB, 10_000)).code, 4001, 'revoking every session closes the last stream too')
  t.equal(h.app.stream.stats().connections.filter((c) => c.wallet === account.address).length, 0, 'the hub holds nothing of the wallet')
})

/** The close of `stream`, or a clear failure when the service never closes it. */
function closedWithin(stream: RawStream, timeoutMs: number): Promise<{ code: number; reason: string }> {
  return Promise.race([
    stream.closed,
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`the stream was not closed within ${timeoutMs} ms`)), timeoutMs).unref()),
  ])
}
