// GET /events: the live event stream. The WebSocket upgrade itself is the hub's (src/stream/hub.ts, registered on the
// same path); this route documents it in the route table (OpenAPI, catalog) and answers a plain GET with how to connect.
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { StrictObject } from '../common.ts'
import { StreamInfo, StreamMessage } from '../../stream/messages.ts'
import type { Static } from 'typebox'
import { asResult, replyWith } from './shared.ts'
import type { StreamLimits } from '../../stream/hub.ts'

export const EVENTS_PATH = '/events'

export function eventRoutes(limits: StreamLimits, info: () => Static<typeof StreamInfo>): AnyRoute[] {
  const retention = `${limits.retainedEventsMax} events or ${Math.ceil(limits.retentionMs / 1000)} s, whichever is shorter`
  return [
    defineRoute({
      method: 'get',
      path: EVENTS_PATH,
      operationId: 'openEventStream',
      callers: "any session (its own wallet's events)",
      summary: 'Live event stream (WebSocket): leases with their unsigned paySupplier, offers, advances, jobs, passport events and held payments of the signed-in wallet',
      description:
        'Any session: the events of the signed-in wallet only. Open a WebSocket (RFC 6455) on this path with Authorization: Bearer <token>. ' +
        'Every text frame is one StreamMessage (components): hello first (epoch, the wallet\'s latest seq, retention), then events in seq order (each wallet\'s own numbering: 1 for its first event of the epoch, other wallets\' events not counted), each the whole new state of a lease ' +
        '(to its lender; a leased one carries the paySupplier action of GET /lenders/{address}/actions), an offer (to its borrower), an advance (lender and borrower), ' +
        'a job (borrower and client), a borrower passport, or a held payment (held_payment: to the account the token refused and, for a session wallet, its lender; as GET /credit/held-payments/{address} shows it, amountAtomic 0 once claimed). Events are sent only once their commit is durable. ' +
        `Resume after a disconnect with ?since=<last seq seen>&epoch=<epoch>: nothing missed, nothing repeated, within the retention (${retention}); ` +
        'beyond it, after a restart (new epoch) or with too large a backlog, a resync message says to re-read state over HTTP, and events after its seq follow. ' +
        `A client that does not read is cut off: close code 4008 with reason "slow_consumer: ..." once ${limits.queuedEventsMax} of its events are undelivered ` +
        `(the socket buffers at most ${limits.socketBufferedBytesMax} bytes before the queue grows), or, while the sockets of all streams buffer more than ${limits.bufferedBytesTotalMax} bytes together, when it is the largest stream of the client address whose streams hold the most unread bytes together. At most ${limits.connectionsPerWalletMax} streams per wallet (429 too_many_streams), ` +
        `${limits.connectionsPerClientMax} per client address, an IPv6 /64, whatever their wallets (429 too_many_client_streams), ${limits.connectionsMax} in all (503 streams_full). ` +
        'Close code 4001 with reason "session_ended: ..." when the session ends (its expiry, unless POST /auth/session/refresh extended it first; DELETE /auth/session or /auth/sessions, or a sign-in beyond the wallet\'s session bound): sign in again and resume. Close code 1001 when the service stops. The stream takes no messages: a data frame from the client closes it with code 1003 (unsupported_data); pings are answered, and a client that pings while its socket holds more than the buffer bound above, the event sent past it and 16 pongs is closed 4008. A plain GET without the upgrade answers how to connect (the catalog\'s stream entry).',
      tags: ['events'],
      auth: 'session',
      query: StrictObject({
        since: Type.Optional(Type.Integer({ minimum: 0, description: 'The seq of the last event received on an earlier connection.' })),
        epoch: Type.Optional(Type.String({ pattern: '^[0-9a-f]{16}$', description: 'The epoch of that connection (hello).' })),
      }),
      responses: {
        101: { description: 'Switching Protocols: the WebSocket. Each text frame is one StreamMessage.', schema: StreamMessage },
        200: { description: 'A plain GET (no upgrade): where and how to open the stream, its retention and bounds.', schema: StreamInfo },
        429: { description: 'The wallet already holds the most streams allowed (code too_many_streams), or the client address does (too_many_client_streams).' },
        503: { description: 'The service holds the most streams it serves (code streams_full), or the session could not be checked (auth_unavailable).' },
      },
      handler: () => asResult(replyWith(200, StreamInfo)(info())),
    }),
  ]
}
