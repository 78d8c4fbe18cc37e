// Operators' routes: reconciliation of the service's ledger with the chain on demand (issue 9).
import { requireOneOf } from '../../auth/guard.ts'
import { HttpProblem } from '../../http/problem.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import type { CreditService } from '../../service/credit-service.ts'
import type { Reconciliation } from '../../service/reconciliation.ts'
import { problemOf } from '../problems.ts'
import { ReconcileRequest, ReconciliationReport, reconciliationToWire } from '../reconciliation.ts'
import { asResult, errors, replyWith } from './shared.ts'

const tags = ['operator'] as const

export function operatorRoutes(service: CreditService, reconciliation: Reconciliation): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/operator/reconcile',
      operationId: 'reconcile',
      callers: 'an operator',
      summary: 'Reconcile the service\'s ledger with the credit contract now; answers every difference',
      description:
        'An operator (the catalog\'s operators). Per network and asset, compares what the service recorded (every job\'s escrow, collateral and status, what every advance still owes, the insurance reserve, and the sums of supplier payments, repayments, settlements, refunds, releases and liquidation steps) with the credit contract\'s state, events and token balance at the confirmed head, and lists each difference. The same check runs at start-up; /health shows the last run of each network and is degraded while one found a difference. Changes nothing.',
      tags,
      auth: 'session',
      body: ReconcileRequest,
      responses: {
        200: { description: 'The reconciliation of each network (status differences: see each network\'s list)', schema: ReconciliationReport },
        400: { description: 'Unknown network (code unknown_network).' },
        ...errors.forbidden,
        503: { description: 'A network\'s chain could not be read (code chain_unavailable); retry.' },
      },
      handler: async (ctx) => {
        requireOneOf(ctx.session.address, service.config.operators, 'the reconciliation (operators only)')
        const slug = ctx.body.network
        try {
          if (slug !== undefined) service.network(slug)
        } catch (error) {
          throw problemOf(error)
        }
        const runs = await reconciliation.run(slug)
        const unavailable = runs.find((r) => r.status === 'unavailable')
        if (unavailable !== undefined) {
          throw new HttpProblem(503, 'chain_unavailable', `network ${unavailable.network} could not be read: ${unavailable.error ?? 'unknown'}`, {
            title: 'Chain unavailable',
            headers: { 'retry-after': '1' },
          })
        }
        return asResult(replyWith(200, ReconciliationReport)({
          status: runs.some((r) => r.status === 'differences') ? 'differences' : 'ok',
          networks: runs.map((r) => reconciliationToWire(r)),
        }))
      },
    }),
  ]
}
