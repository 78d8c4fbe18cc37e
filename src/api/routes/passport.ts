// The credit passport's read route (issue 13): an agent's signed, chained events, paged by sequence. The events are
// exactly as signed (src/passport/passport.ts), so a reader verifies them without trusting this service.
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { Address as AddressSchema, checksum, StrictObject } from '../common.ts'
import { SignedPassportEvent } from '../schemas.ts'
import { asResult, itemCount, nextPageHeaders, pageHeaders, RECORD_PAGE, replyWith } from './shared.ts'

export const PassportQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: RECORD_PAGE.max, default: RECORD_PAGE.default, description: `Events per page, 1..${RECORD_PAGE.max} (default ${RECORD_PAGE.default}).` })),
  after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'The sequence of the last event of the previous page; the next page starts after it.' })),
})

export function passportRoutes(service: CreditService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/passport/{address}',
      operationId: 'getPassport',
      callers: 'public',
      summary: 'An agent\'s credit passport: its signed, chained events, paged by sequence',
      description:
        'Public. Every event that changed the agent\'s credit standing (job failed and credit suspended, advance repaid, advance defaulted (liquidated, recovered in full), liquidated with shortfall, ' +
        'suspension lifted), in sequence order (?limit=, ?after=<sequence>; Link rel="next"). Each verifies with verifyTypedData against the ' +
        'catalog\'s passport domain and issuer; sequences and prevHash chain them, so a changed, reordered or missing event is detected. ' +
        'An agent without events has an empty passport. A page costs the rate limit its item count.',
      tags: ['passport'],
      auth: 'none',
      params: StrictObject({ address: AddressSchema }),
      query: PassportQuery,
      cost: itemCount,
      responses: { 200: { description: 'Events in sequence order; Link rel="next" (and next-after) name the next page', schema: Type.Array(SignedPassportEvent), headers: pageHeaders } },
      handler: (ctx) => {
        const agent = checksum(ctx.params.address)
        const limit = ctx.query.limit ?? RECORD_PAGE.default
        const after = ctx.query.after ?? 0
        const events = service.passport.page(agent, after, limit)
        const last = events.at(-1)?.sequence
        const more = last !== undefined && last < service.passport.head(agent)
        return asResult({
          ...replyWith(200, Type.Array(SignedPassportEvent))(events),
          headers: nextPageHeaders(`/passport/${agent}`, limit, more ? last : undefined),
        })
      },
    }),
  ]
}
