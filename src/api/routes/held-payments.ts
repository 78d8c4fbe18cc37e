// What the credit contract holds for a recipient its token refused (README "Where every token goes"), as a party's own
// views show it: GET /credit/held-payments/{address} for any account (a borrower, a job's client, a lender's session
// wallet), and GET /lenders/{address}/wallet's heldPayments. Read from the engine's held-payment records, which the
// chain follower keeps (src/engine/chain-facts.ts applyHeldFact): no chain read per request.
import Type, { type Static } from 'typebox'
import type { Address } from 'viem'
import { buildClaimHeldTransaction } from '../../chain/transactions-v2.ts'
import type { HeldPaymentRecord } from '../../engine/types.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { Address as AddressSchema, checksum, StrictObject } from '../common.ts'
import { HeldPayment } from '../schemas.ts'
import { toWire } from '../wire.ts'
import { asResult, replyWith } from './shared.ts'

/** What the credit contracts hold for any of `accounts`, each with its unsigned claimHeld, in wire form. */
export function heldPaymentsWire(service: CreditService, accounts: readonly Address[]): Static<typeof HeldPayment>[] {
  return service.engine.heldPayments(accounts).map((record) => heldPaymentWire(service, record))
}

/** One held payment in wire form (amount 0 once claimed), with its unsigned claimHeld: also the stream's held_payment event. */
export function heldPaymentWire(service: CreditService, record: HeldPaymentRecord): Static<typeof HeldPayment> {
  const network = service.network(record.network)
  const claim = buildClaimHeldTransaction({ network, contract: network.creditContract }, { token: record.token, account: record.account })
  return toWire({ ...record, claim }) as Static<typeof HeldPayment>
}

export function heldPaymentRoutes(service: CreditService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/credit/held-payments/{address}',
      operationId: 'getHeldPayments',
      callers: 'public',
      summary: 'What the credit contract holds for an account its token refused, and the claimHeld that delivers it',
      description:
        'Public, for any account: a borrower (its settlement remainder), a job\'s client (its refunded escrow), a lender\'s session wallet (its repayments and settlement shares; GET /lenders/{address}/wallet shows the same as heldPayments). ' +
        'When a token refuses a transfer (USDC\'s blacklist, a paused token), the contract holds the amount for its recipient instead of reverting everyone\'s settlement: the advance counts as settled or repaid, and the money waits. ' +
        'Per network and token, the amount (the contract\'s heldFor(token, account), as the chain follower last saw it, at the network\'s confirmations) and the unsigned claimHeld(token, account): anyone may send it, it pays the account all of it once the token accepts the account again, and the entry leaves this list once the follower sees the claim. ' +
        'Empty when nothing waits (an account the service never saw is not an error).',
      tags: ['credit'],
      auth: 'none',
      params: StrictObject({ address: AddressSchema }),
      responses: { 200: { description: 'Held payments per network and token (empty when none)', schema: Type.Array(HeldPayment) } },
      handler: (ctx) => asResult(replyWith(200, Type.Array(HeldPayment))(heldPaymentsWire(service, [checksum(ctx.params.address) as Address]))),
    }),
  ]
}
