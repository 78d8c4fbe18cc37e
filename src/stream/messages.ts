// The messages of the live event stream (GET /events, WebSocket): one JSON text frame each, server to client only.
// The payloads are the same wire schemas the HTTP routes answer with, so a client decodes a lease from the stream and
// from GET /lenders/{address}/actions with one type.
import Type, { type Static } from 'typebox'
import { Address, IsoTime, StrictObject } from '../api/common.ts'
import { Advance, HeldPayment, Job, Lease, Offer, PendingAction } from '../api/schemas.ts'

export const StreamSeq = Type.Integer({
  minimum: 0,
  description: 'Position in the signed-in wallet\'s own event sequence of this epoch: its first event is 1, each next one 1 more, never repeated within an epoch; other wallets\' events are not counted.',
})
export const StreamEpoch = Type.String({ pattern: '^[0-9a-f]{16}$', description: 'Names one run of the service\'s event sequence; a restart starts a new epoch.' })

export const StreamHello = StrictObject(
  {
    type: Type.Literal('hello'),
    epoch: StreamEpoch,
    wallet: Address,
    seq: Type.Integer({ minimum: 0, description: 'The wallet\'s latest sequence number in the epoch when the connection opened (0: no event yet).' }),
    oldestSeq: Type.Integer({ minimum: 1, description: 'The wallet\'s oldest sequence number still retained: resuming after oldestSeq - 1 loses nothing.' }),
    retention: StrictObject({ events: Type.Integer({ minimum: 1 }), seconds: Type.Integer({ minimum: 1 }) }, { description: 'What the service keeps for resuming: at most this many events of all wallets, none older than this.' }),
  },
  { description: 'First message of every connection.' },
)

export const StreamResync = StrictObject(
  {
    type: Type.Literal('resync'),
    epoch: StreamEpoch,
    seq: Type.Integer({ minimum: 0, description: 'The wallet\'s latest sequence number: its events after it follow on this connection.' }),
    reason: Type.Enum(['unknown_epoch', 'beyond_retention', 'ahead_of_stream', 'backlog_too_large']),
    detail: Type.String(),
  },
  {
    description:
      'The requested resume point cannot be served without a gap: re-read the state you follow over HTTP (GET /lenders/{address}/actions, ' +
      '/credit/offers/{offerId}, /credit/advances/{advanceId}, /credit/jobs/{jobId}), then keep reading this connection.',
  },
)

const eventBase = { type: Type.Literal('event'), epoch: StreamEpoch, seq: StreamSeq, at: IsoTime }

export const LeaseEvent = StrictObject(
  {
    ...eventBase,
    kind: Type.Literal('lease'),
    lease: Lease,
    action: Type.Union([PendingAction, Type.Null()], { description: 'While the lease is leased: the unsigned paySupplier transaction, as GET /lenders/{address}/actions delivers it.' }),
  },
  { description: 'To the lender: a new lease (state leased, with its action), its payment (paid) or its expiry (expired).' },
)
export const OfferEvent = StrictObject({ ...eventBase, kind: Type.Literal('offer'), offer: Offer }, { description: 'To the borrower: an offer created, leased, rematched, closing (withdrawn while leased), funded, expired or declined.' })
export const AdvanceEvent = StrictObject(
  { ...eventBase, kind: Type.Literal('advance'), advance: Advance },
  { description: 'To the lender and the borrower: an advance opened (active), repaid, defaulted or liquidated.' },
)
export const JobEvent = StrictObject({ ...eventBase, kind: Type.Literal('job'), job: Job }, { description: 'To the borrower and the job\'s client: the job funded, collateral posted, completed or failed.' })
export const PassportUpdate = StrictObject(
  {
    ...eventBase,
    kind: Type.Literal('passport'),
    borrower: StrictObject({
      address: Address,
      suspended: Type.Boolean(),
      suspendedAt: Type.Union([IsoTime, Type.Null()]),
      reputationBps: Type.Integer({ minimum: 0, maximum: 10000 }),
      advancesRepaid: Type.Integer({ minimum: 0 }),
      advancesDefaulted: Type.Integer({ minimum: 0 }),
      shortfallAtomic: Type.String({ pattern: '^[0-9]+$' }),
    }),
  },
  { description: 'To the borrower: its passport changed (a repayment, a failed job and suspension, a suspension lifted, a shortfall).' },
)

export const HeldPaymentEvent = StrictObject(
  { ...eventBase, kind: Type.Literal('held_payment'), heldPayment: HeldPayment },
  {
    description:
      'To the account the token refused (and, for a lender\'s session wallet, to the lender): the credit contract held a payment for it (amountAtomic grew), ' +
      'or a claimHeld delivered it (amountAtomic 0), as GET /credit/held-payments/{address} shows it.',
  },
)

export const StreamEvent = Type.Union([LeaseEvent, OfferEvent, AdvanceEvent, JobEvent, PassportUpdate, HeldPaymentEvent])
export const StreamMessage = Type.Union([StreamHello, StreamResync, LeaseEvent, OfferEvent, AdvanceEvent, JobEvent, PassportUpdate, HeldPaymentEvent], {
  description: 'A message of GET /events: hello first, then events in sequence order, a resync where a resume point cannot be served.',
})

export type StreamHello = Static<typeof StreamHello>
export type StreamResync = Static<typeof StreamResync>
export type StreamEvent = Static<typeof StreamEvent>
export type StreamMessage = Static<typeof StreamMessage>

export const StreamInfo = StrictObject(
  {
    url: Type.String({ description: 'ws:// or wss:// URL of GET /events.' }),
    auth: Type.Literal('Authorization: Bearer <token> on the upgrade request'),
    resume: Type.String(),
    messages: Type.String({ description: 'JSON pointer to the message schema in the OpenAPI document.' }),
    retainedEventsMax: Type.Integer({ minimum: 1 }),
    retentionSeconds: Type.Integer({ minimum: 1 }),
    queuedEventsMax: Type.Integer({ minimum: 1, description: 'Undelivered events of one connection; one more and it is closed 4008 slow_consumer.' }),
    socketBufferedBytesMax: Type.Integer({ minimum: 1 }),
    connectionsPerWalletMax: Type.Integer({ minimum: 1 }),
    connectionsPerClientMax: Type.Integer({ minimum: 1, description: 'Open streams of one client address (an IPv6 /64), whatever their wallets; one more is refused 429 too_many_client_streams.' }),
    connectionsMax: Type.Integer({ minimum: 1, description: 'Open streams over every client. When all are open, a stream of a client address takes the place of the oldest of the address holding the most, if that one holds at least two more (closed 4009 displaced); else it is refused 503 streams_full.' }),
    bufferedBytesTotalMax: Type.Integer({ minimum: 1, description: 'Bytes the sockets of all open streams may buffer together; past it the largest stream of the client address (an IPv6 /64) whose streams hold the most unread bytes together is closed 4008 slow_consumer, then the next while still past it.' }),
    closeCodes: Type.Record(Type.String(), Type.String(), { additionalProperties: false }),
  },
  { description: 'The live event stream (WebSocket): the signed-in wallet\'s leases, offers, advances, jobs, passport events and held payments, resumable by sequence number.' },
)

/** Close codes of the stream (4000-4999 are the application's, RFC 6455 7.4.2); the reason text starts with the name. */
export const STREAM_CLOSE = {
  /** The client did not read fast enough: its undelivered events or its socket buffer reached the bound. */
  slowConsumer: { code: 4008, name: 'slow_consumer' },
  /** The session the stream was opened with ended (revoked, or dropped by a newer sign-in beyond the bound): sign in again. */
  sessionEnded: { code: 4001, name: 'session_ended' },
  /**
   * The service held its most streams (connectionsMax) and this client address the most of them: the oldest gave its
   * place to a stream of an address holding fewer. Reconnect later (the next attempt may be refused 503 streams_full).
   */
  displaced: { code: 4009, name: 'displaced' },
  /** The service is stopping. */
  shuttingDown: { code: 1001, name: 'shutting_down' },
  /** The client sent a data frame: the stream takes none (server to client only; RFC 6455 7.4.1, data it cannot accept). */
  unsupportedData: { code: 1003, name: 'unsupported_data' },
} as const

/** The components the OpenAPI document publishes for the stream. */
export const streamComponents = { StreamInfo, StreamMessage, StreamHello, StreamResync, LeaseEvent, OfferEvent, AdvanceEvent, JobEvent, PassportUpdate, HeldPaymentEvent }
