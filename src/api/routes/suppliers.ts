// The supplier directory (issue 9, case 2): public to read (a borrower agent must know where credit can go), managed
// by the service's operators. The engine decides who may change it and what an entry may hold.
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { toWire } from '../wire.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { checksum, StrictObject } from '../common.ts'
import { Supplier, SupplierDomain, SupplierPut } from '../schemas.ts'
import { asResult, errors, mutate, mutationHeaders, replyWith } from './shared.ts'

const DomainParams = StrictObject({ domain: SupplierDomain })
const tags = ['suppliers'] as const
const operatorOnly = { 403: { description: 'The signed-in wallet is not an operator of the service (code forbidden; operators are listed in the catalog).' } }

export function supplierRoutes(service: CreditService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/suppliers',
      operationId: 'listSuppliers',
      callers: 'public',
      summary: 'The supplier directory: the domains credit may pay, with their payout addresses per network',
      description:
        'Public, by domain. A credit request names supplierDomain; it is declined unless the domain is listed here (supplier_unknown) and its ' +
        'supplierAddress, when given, is one of the domain\'s addresses on the request\'s network (supplier_address_unverified); without one, the ' +
        'first address there is paid. The lease authorization the lender receives binds that address, so the contract pays nobody else.',
      tags,
      auth: 'none',
      responses: { 200: { description: 'The live directory entries, by domain', schema: Type.Array(Supplier) } },
      handler: () => asResult(replyWith(200, Type.Array(Supplier))(toWire(service.engine.supplierDirectory()))),
    }),

    defineRoute({
      method: 'put',
      path: '/suppliers/{domain}',
      operationId: 'putSupplier',
      callers: 'an operator',
      summary: 'Add or replace a supplier directory entry',
      description:
        'Operators only. Sets the domain\'s name and payout addresses per network (each network must be one of the catalog\'s). A lender, a session ' +
        'key, the credit contract, the service\'s other contracts (tokens, registries), its operator and lease-signer keys, an operator or the zero address is never a supplier (supplier_not_allowed). Offers already made keep the supplier they were approved with; new ' +
        'requests use this entry. The configuration\'s suppliers seed the directory at start-up, but never override an operator\'s entry or removal.',
      tags,
      auth: 'session',
      params: DomainParams,
      body: SupplierPut,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The entry as stored', schema: Supplier },
        400: { description: 'Not a usable entry: invalid_supplier_domain, invalid_supplier_name, invalid_supplier_addresses, unknown_network, validation_failed. Nothing changed.' },
        ...operatorOnly,
        ...errors.idempotency,
        422: { description: 'An address is a registered lender, a lender\'s session key or the credit contract (supplier_not_allowed), or idempotency_key_reused. Nothing changed.' },
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.putSupplier(
            { ticket, encode: (entry) => replyWith(200, Supplier)(toWire(entry)) },
            ctx.session.address,
            ctx.params.domain,
            {
              name: ctx.body.name,
              addresses: Object.fromEntries(Object.entries(ctx.body.addresses).map(([network, list]) => [network, list.map(checksum)])),
            },
          ),
        ),
    }),

    defineRoute({
      method: 'delete',
      path: '/suppliers/{domain}',
      operationId: 'removeSupplier',
      callers: 'an operator',
      summary: 'Remove a supplier from the directory: no new credit goes there',
      description:
        'Operators only. From the answer on, credit requests naming the domain are declined (supplier_unknown). Live offers and their leases are ' +
        'not touched: each lease authorization already binds its supplier, and the borrower\'s purchase is under way. The removal is kept: the ' +
        'configuration does not bring the domain back at the next start.',
      tags,
      auth: 'session',
      params: DomainParams,
      responses: {
        200: { description: 'The removed entry (removedAt set)', schema: Supplier },
        ...operatorOnly,
        ...errors.notFound('supplier'),
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.removeSupplier({ ticket, encode: (entry) => replyWith(200, Supplier)(toWire(entry)) }, ctx.session.address, ctx.params.domain),
        ),
    }),
  ]
}
