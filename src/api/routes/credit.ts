// The credit routes of spec section 4. Each handler converts the wire form to the engine's units, names the
// caller, and hands over to one service operation; no business rule lives here.
import Type from 'typebox'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { HttpProblem } from '../../http/problem.ts'
import { toWire } from '../wire.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { checksum, JobId, StrictObject, msFromIso } from '../common.ts'
import {
  AdvanceId,
  BackingSource,
  BackingSourceRegistration,
  CollateralPost,
  CollateralPosition,
  CreditRequest,
  CreditState,
  DispatchOutcome,
  EmptyBody,
  Job,
  JobCreation,
  JobFailure,
  JobSettlementReceipt,
  LiquidationReceipt,
  MatchOutcome,
  MatchRequest,
  Offer,
  OfferId,
  PassportEvent,
  RepaymentProof,
  RepaymentReceipt,
  Advance,
  SupplierPaymentReport,
  UnderwritingDecision,
} from '../schemas.ts'
import { asResult, errors, mutate, mutationHeaders, page, PageQuery, replyWith } from './shared.ts'

const JobParams = StrictObject({ jobId: JobId })
const OfferParams = StrictObject({ offerId: OfferId })
const AdvanceParams = StrictObject({ advanceId: AdvanceId })
const tags = ['credit'] as const

function found<V>(view: V | undefined, kind: string, id: string): V {
  if (view === undefined) throw new HttpProblem(404, `${kind}_not_found`, `no ${kind} ${id}`, { title: 'Not found' })
  return view
}

export function creditRoutes(service: CreditService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/credit/state',
      operationId: 'getCreditState',
      summary: 'Inspect credit state: counts of live actors, lender liquidity totals, insurance reserves',
      tags,
      auth: 'none',
      responses: { 200: { description: 'Credit state', schema: CreditState } },
      handler: () => asResult(replyWith(200, CreditState)(toWire(service.engine.creditState()))),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs',
      operationId: 'createJob',
      summary: 'Create a funded job (a receivable escrowed on chain by its client)',
      description:
        'The client first calls fundJob(keccak256(jobId), asset, receivableAtomic, agent) on the credit contract, then posts the transaction hash here. ' +
        'The signed-in wallet must be the job\'s borrower (agent), or its client (the funder) carrying the borrower\'s consent: borrowerConsent, ' +
        'an EIP-712 BorrowerConsent signature of the borrower over (jobId, network, asset, receivableAtomic, client, dueAt), domain in the catalog (consent).',
      tags,
      auth: 'session',
      body: JobCreation,
      headers: mutationHeaders,
      responses: {
        201: { description: 'The funded job', schema: Job },
        ...errors.proof,
        403: { description: 'Neither the job\'s client nor its borrower (forbidden), or the client without the borrower\'s consent (borrower_consent_required) or with a signature that is not it (borrower_consent_invalid).' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/jobs', ctx, (ticket) =>
          service.createJob(
            { ticket, encode: (job) => replyWith(201, Job)(toWire(job)) },
            ctx.session.address,
            {
              jobId: ctx.body.jobId,
              network: ctx.body.network,
              asset: ctx.body.asset,
              agent: checksum(ctx.body.agent),
              receivableAtomic: BigInt(ctx.body.receivableAtomic),
              dueAtMs: msFromIso(ctx.body.dueAt),
              fundingTxHash: ctx.body.fundingTxHash,
              borrowerConsent: ctx.body.borrowerConsent,
            },
          ),
        ),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/jobs/{jobId}',
      operationId: 'getJob',
      summary: 'Read a job (live or final)',
      tags,
      auth: 'none',
      params: JobParams,
      responses: { 200: { description: 'The job', schema: Job }, ...errors.notFound('job') },
      handler: (ctx) => asResult(replyWith(200, Job)(toWire(found(service.view('job', ctx.params.jobId), 'job', ctx.params.jobId)))),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/offers/{offerId}',
      operationId: 'getOffer',
      summary: 'Read an offer (live or final): its state, current lease and advance',
      tags,
      auth: 'none',
      params: OfferParams,
      responses: { 200: { description: 'The offer', schema: Offer }, ...errors.notFound('offer') },
      handler: (ctx) => asResult(replyWith(200, Offer)(toWire(found(service.view('offer', ctx.params.offerId), 'offer', ctx.params.offerId)))),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/advances/{advanceId}',
      operationId: 'getAdvance',
      summary: 'Read an advance (live or final): what is owed, its repayment or recovery',
      tags,
      auth: 'none',
      params: AdvanceParams,
      responses: { 200: { description: 'The advance', schema: Advance }, ...errors.notFound('advance') },
      handler: (ctx) => asResult(replyWith(200, Advance)(toWire(found(service.view('advance', ctx.params.advanceId), 'advance', ctx.params.advanceId)))),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/collateral',
      operationId: 'postCollateral',
      summary: 'Post collateral for a receivable (proven by a postCollateral transaction of the borrower)',
      tags,
      auth: 'session',
      params: JobParams,
      body: CollateralPost,
      headers: mutationHeaders,
      responses: { 201: { description: 'The collateral position', schema: CollateralPosition }, ...errors.forbidden, ...errors.notFound('job'), ...errors.proof },
      handler: (ctx) =>
        mutate(service, '/credit/jobs/{jobId}/collateral', ctx, (ticket) =>
          service.postCollateral(
            { ticket, encode: (position) => replyWith(201, CollateralPosition)(toWire(position)) },
            ctx.session.address,
            ctx.params.jobId,
            { amountAtomic: BigInt(ctx.body.amountAtomic), txHash: ctx.body.txHash },
          ),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/backing-sources',
      operationId: 'registerBackingSource',
      summary: 'Register a verified asset, subscription or earnings backing source',
      description: 'evidenceId is the EIP-712 signature of a configured attester over the source (see /.well-known/service.json, attestation).',
      tags,
      auth: 'session',
      body: BackingSourceRegistration,
      headers: mutationHeaders,
      responses: {
        201: { description: 'The backing source', schema: BackingSource },
        ...errors.forbidden,
        409: { description: 'A source with this sourceId exists (code source_exists).' },
        422: { description: 'evidenceId is not a valid attestation (code attestation_invalid), its validUntil has passed (attestation_expired), or idempotency_key_reused.' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/backing-sources', ctx, (ticket) =>
          service.registerSource(
            { ticket, encode: (source) => replyWith(201, BackingSource)(toWire(source)) },
            ctx.session.address,
            {
              sourceId: ctx.body.sourceId,
              productType: ctx.body.productType,
              agent: checksum(ctx.body.agent),
              valueAtomic: BigInt(ctx.body.valueAtomic),
              liquidationValueAtomic: BigInt(ctx.body.liquidationValueAtomic),
              advanceRateBps: ctx.body.advanceRateBps,
              evidenceId: ctx.body.evidenceId,
              // Signed as whole seconds: the same rounding as the attester's signature.
              validUntilMs: Math.floor(msFromIso(ctx.body.validUntil) / 1000) * 1000,
            },
          ),
        ),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/backing-sources',
      operationId: 'listBackingSources',
      summary: 'List verified non-job backing sources',
      tags,
      auth: 'none',
      query: PageQuery,
      responses: { 200: { description: 'Backing sources in registration order; header next-after names the next page', schema: Type.Array(BackingSource) } },
      handler: (ctx) => {
        const { items, headers } = page(service.engine.listSources(), ctx.query)
        return asResult({ ...replyWith(200, Type.Array(BackingSource))(toWire(items)), headers })
      },
    }),

    defineRoute({
      method: 'post',
      path: '/credit/request',
      operationId: 'requestCredit',
      summary: 'Request credit: an underwriting decision and, when approved, an offer',
      tags,
      auth: 'session',
      body: CreditRequest,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The underwriting decision (declined decisions list their reasons and create no offer)', schema: UnderwritingDecision },
        ...errors.forbidden,
        ...errors.notFound('repayment_source'),
        ...errors.idempotency,
        409: { description: 'The borrower already holds liveOffersPerBorrowerMax live offers (code live_offers_limit; see the catalog limits), or a request with the same Idempotency-Key is still running (idempotency_in_flight).' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/request', ctx, (ticket) =>
          service.requestCredit(
            { ticket, encode: (decision) => replyWith(200, UnderwritingDecision)(toWire(decision)) },
            ctx.session.address,
            {
              agent: checksum(ctx.body.agent),
              network: ctx.body.network,
              asset: ctx.body.asset,
              productType: ctx.body.productType,
              amountAtomic: BigInt(ctx.body.amountAtomic),
              purpose: ctx.body.purpose,
              supplier: ctx.body.supplier,
              supplierDomain: ctx.body.supplierDomain,
              ...(ctx.body.supplierAddress === undefined ? {} : { supplierAddress: checksum(ctx.body.supplierAddress) }),
              repaymentSource: ctx.body.repaymentSource,
              maximumFeeAtomic: BigInt(ctx.body.maximumFeeAtomic),
            },
          ),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/match',
      operationId: 'matchOffer',
      summary: 'Match an offer to the cheapest eligible lender: a short-lived lease',
      description:
        'lease is null when no eligible lender can take the offer now; it keeps waiting and dispatch retries it. ' +
        'refusedLeases lists lenders whose wallet could not pay (expired at once, reason insufficient_balance).',
      tags,
      auth: 'session',
      body: MatchRequest,
      headers: mutationHeaders,
      responses: { 200: { description: 'The selected lender match', schema: MatchOutcome }, ...errors.forbidden, ...errors.notFound('offer'), ...errors.idempotency },
      handler: (ctx) =>
        mutate(service, '/credit/match', ctx, (ticket) =>
          service.match({ ticket, encode: (outcome) => replyWith(200, MatchOutcome)(toWire(outcome)) }, ctx.session.address, ctx.body.offerId),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/dispatch',
      operationId: 'dispatch',
      summary: 'Expire stale matches, expire stale offers, and dispatch pending offers to lenders',
      tags,
      auth: 'session',
      body: EmptyBody,
      headers: mutationHeaders,
      responses: { 200: { description: 'What expired and what matched', schema: DispatchOutcome }, ...errors.idempotency },
      handler: (ctx) =>
        mutate(service, '/credit/dispatch', ctx, (ticket) => service.dispatch({ ticket, encode: (outcome) => replyWith(200, DispatchOutcome)(toWire(outcome)) })),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/offers/{offerId}/supplier-payment',
      operationId: 'recordSupplierPayment',
      summary: 'Record the lender-to-supplier payment (the paySupplier transaction hash); creates the advance',
      tags,
      auth: 'session',
      params: OfferParams,
      body: SupplierPaymentReport,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The supplier advance', schema: Advance },
        ...errors.forbidden,
        ...errors.notFound('offer'),
        ...errors.proof,
        409: { description: 'The lease expired (code lease_expired; the report is rejected), the offer has no lease to this lender (no_lease), or the proof was already used.' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/offers/{offerId}/supplier-payment', ctx, (ticket) =>
          service.recordSupplierPayment(
            { ticket, encode: (advance) => replyWith(200, Advance)(toWire(advance)) },
            ctx.session.address,
            ctx.params.offerId,
            { lender: checksum(ctx.body.lender), supplierPaymentId: ctx.body.supplierPaymentId },
          ),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/complete',
      operationId: 'completeJob',
      summary: 'Complete and repay a job: the operator settles the escrow on chain, lenders first',
      tags,
      auth: 'session',
      params: JobParams,
      body: EmptyBody,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The repayment receipt', schema: JobSettlementReceipt },
        ...errors.forbidden,
        ...errors.notFound('job'),
        ...errors.idempotency,
        503: { description: 'The chain or the operator key is unavailable.' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/jobs/{jobId}/complete', ctx, (ticket) =>
          service.completeJob({ ticket, encode: (receipt) => replyWith(200, JobSettlementReceipt)(toWire(receipt)) }, ctx.session.address, ctx.params.jobId),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/advances/{advanceId}/repay',
      operationId: 'repayAdvance',
      summary: 'Repay a non-job or generic advance (proven by a repay transaction)',
      tags,
      auth: 'session',
      params: AdvanceParams,
      body: RepaymentProof,
      headers: mutationHeaders,
      responses: { 200: { description: 'The repayment receipt', schema: RepaymentReceipt }, ...errors.notFound('advance'), ...errors.proof },
      handler: (ctx) =>
        mutate(service, '/credit/advances/{advanceId}/repay', ctx, (ticket) =>
          service.repay({ ticket, encode: (receipt) => replyWith(200, RepaymentReceipt)(toWire(receipt)) }, ctx.params.advanceId, { txHash: ctx.body.txHash }),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/fail',
      operationId: 'failJob',
      summary: 'Fail a job and suspend the borrower\'s credit; answers the passport event',
      description:
        'Only the job\'s client or an operator may fail a job (a borrower was named only with its consent). The borrower is suspended, its live offers declined, ' +
        'the job\'s advances defaulted. The suspension lifts in dispatch (passport event suspension_lifted) once the borrower owes nothing on a defaulted advance ' +
        'and borrowerSuspensionMinSeconds (catalog limits) have passed.',
      tags,
      auth: 'session',
      params: JobParams,
      body: JobFailure,
      headers: mutationHeaders,
      responses: { 200: { description: 'The passport event', schema: PassportEvent }, ...errors.forbidden, ...errors.notFound('job'), ...errors.idempotency },
      handler: (ctx) =>
        mutate(service, '/credit/jobs/{jobId}/fail', ctx, (ticket) =>
          service.failJob({ ticket, encode: (event) => replyWith(200, PassportEvent)(toWire(event)) }, ctx.session.address, ctx.params.jobId, {
            reason: ctx.body.reason,
          }),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/advances/{advanceId}/liquidate',
      operationId: 'liquidateAdvance',
      summary: 'Liquidate a defaulted advance in the recovery order; answers the receipt with every step',
      tags,
      auth: 'session',
      params: AdvanceParams,
      body: EmptyBody,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The liquidation receipt', schema: LiquidationReceipt },
        ...errors.forbidden,
        ...errors.notFound('advance'),
        ...errors.idempotency,
        503: { description: 'The chain or the operator key is unavailable.' },
      },
      handler: (ctx) =>
        mutate(service, '/credit/advances/{advanceId}/liquidate', ctx, (ticket) =>
          service.liquidate({ ticket, encode: (receipt) => replyWith(200, LiquidationReceipt)(toWire(receipt)) }, ctx.session.address, ctx.params.advanceId),
        ),
    }),
  ]
}
