// The credit routes of spec section 4. Each handler converts the wire form to the engine's units, names the
// caller, and hands over to one service operation; no business rule lives here.
//
// Each mutation here declares `keyedRequestsCharged: false`: an agent calls the credit path at high frequency, the SDK
// keying each of its POSTs, and a stranger cannot multiply the answers it makes the store keep for free: each run
// needs what costs money or is bounded elsewhere (a job funded on chain, an attested backing source, an offer within
// liveOffersPerBorrowerMax, a transaction proof used once, a job's or an advance's one end; a dispatch is stored only
// when it changed something that was due). What a free wallet can repeat without end (a lender's registration,
// withdrawal and recheck, the supplier directory) is charged, the default.
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
import { asResult, errors, itemCount, mutate, mutationHeaders, NETWORK_STOPPED, nextPageHeaders, pageHeaders, pageQuery, RECORD_PAGE, replyWith, wireReply } from './shared.ts'

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
      callers: 'public',
      summary: 'Inspect credit state: counts of live actors, lender liquidity totals, insurance reserves',
      description:
        'Public. Counts of lenders, sources, borrowers and live actors, the lenders\' liquidity totals (registered, available, reserved, deployed, fees earned, losses; each lender registers at most 2^128-1, so every total fits the Atomic schema) and the insurance reserve of each network and asset.',
      tags,
      auth: 'none',
      responses: { 200: { description: 'Credit state', schema: CreditState } },
      handler: () => asResult(wireReply(200, CreditState)(service.engine.creditState())),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs',
      operationId: 'createJob',
      callers: "the job's client or borrower",
      summary: 'Create a funded job (a receivable escrowed on chain by its client)',
      description:
        'The client first escrows the receivable on chain: the unsigned approve + fundJob of GET /credit/jobs/{jobId}/funding-transactions (ABIs and the jobId-to-key rule: the catalog\'s contracts), then the fundJob transaction hash is posted here. ' +
        'The signed-in wallet must be the job\'s borrower (agent), or its client (the funder) carrying the borrower\'s consent: borrowerConsent, ' +
        'an EIP-712 BorrowerConsent signature of the borrower over (jobId, network, asset, receivableAtomic, client, dueAt), domain in the catalog (consent). ' +
        'A contract-wallet borrower signs as its wallet verifies (ERC-1271 isValidSignature, ERC-6492 before deployment), checked on the job\'s network. ' +
        'The client, or the borrower, may end the job on chain (reclaimJob: the escrow back to the client, the collateral to the borrower) from reclaimDelay (the contract\'s public getter) after funding while none of the job\'s advances owes anything: ' +
        'dueAt plus how far the chain\'s clock is ahead of the service\'s plus a lease (leaseTtlSeconds) must be no later than that reclaim time, so no lease on the job outlives its escrow. ' +
        'A job reclaimed after its registration ends failed (failureReason escrow_reclaimed) as the chain follower learns it; its borrower is not suspended.',
      tags,
      auth: 'session',
      body: JobCreation,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        201: { description: 'The funded job', schema: Job },
        ...errors.proof,
        403: { description: 'Neither the job\'s client nor its borrower (forbidden), or the client without the borrower\'s consent (borrower_consent_required) or with a signature that is not it (borrower_consent_invalid).' },
        409: { description: `${errors.proof[409].description} Or job_not_open_on_chain: the job was settled, failed or reclaimed on chain, its escrow is no longer held. Or job_id_funded_elsewhere: the same jobId was funded earlier on another network, or under its other key (its key on the network, or its legacy key) on the same one, and a job id belongs to its earliest funding (fund under an id of your own).` },
        503: { description: `${errors.proof[503].description} Also chain_unavailable (retry, nothing changed) when the same jobId was funded on another network too and the order of the two fundings rests on a network's latest block that is older by the wall clock than its block time (a lagging RPC node, or a chain behind the wall clock).` },
        422: {
          description: `${errors.proof[422].description} Or too_many_collateral_postings: the borrower posted collateral on chain in more postings than collateralPostingsPerJobMax (${service.config.collateralPostingsPerJobMax}) before the job was registered (each is a proof the registration records). ` +
            `Or job_reclaimable_before_due: the client may reclaim the escrow on chain before dueAt plus a lease (${service.config.leaseTtlSeconds} s), each counted on the chain's clock (when it is ahead of the service's, dueAt is that much later there): register it with an earlier dueAt.`,
        },
      },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known (its chain reads' part).
        const { clientKey } = ctx
        return mutate(service, ctx, (ticket) =>
          service.createJob(
            { ticket, encode: wireReply(201, Job, ticket) },
            ctx.session.address,
            clientKey,
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
        )
      },
    }),

    defineRoute({
      method: 'get',
      path: '/credit/jobs/{jobId}',
      operationId: 'getJob',
      callers: 'public',
      summary: 'Read a job (live or final)',
      description:
        'Public. A job funded on chain: its receivable, collateral, what is committed to advances, and how it ended (settlement transaction or failure reason). Final jobs are read from the store.',
      tags,
      auth: 'none',
      params: JobParams,
      responses: { 200: { description: 'The job', schema: Job }, ...errors.notFound('job') },
      handler: (ctx) => asResult(wireReply(200, Job)(found(service.view('job', ctx.params.jobId), 'job', ctx.params.jobId))),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/offers/{offerId}',
      operationId: 'getOffer',
      callers: 'public',
      summary: 'Read an offer (live or final): its state, current lease and advance',
      description:
        'Public. An offer from an approved credit request: its terms, the leases granted on it (current and expired), its advance once paid, and why it ended if it did.',
      tags,
      auth: 'none',
      params: OfferParams,
      responses: { 200: { description: 'The offer', schema: Offer }, ...errors.notFound('offer') },
      handler: (ctx) => asResult(wireReply(200, Offer)(found(service.view('offer', ctx.params.offerId), 'offer', ctx.params.offerId))),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/advances/{advanceId}',
      operationId: 'getAdvance',
      callers: 'public',
      summary: 'Read an advance (live or final): what is owed, its repayments or recovery',
      description:
        'Public. An advance (a supplier paid by a lender): principal, fee, insurance share, due time, what is still owed to the lender and to the reserve, every repayment counted, and its recovery with every step.',
      tags,
      auth: 'none',
      params: AdvanceParams,
      responses: { 200: { description: 'The advance', schema: Advance }, ...errors.notFound('advance') },
      handler: (ctx) => asResult(wireReply(200, Advance)(found(service.view('advance', ctx.params.advanceId), 'advance', ctx.params.advanceId))),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/collateral',
      operationId: 'postCollateral',
      callers: "the job's borrower",
      summary: 'Post collateral for a receivable (proven by a postCollateral transaction of the borrower)',
      description:
        'The job\'s borrower first sends the unsigned approve + postCollateral of GET /credit/jobs/{jobId}/collateral-transactions, then reports the postCollateral transaction here; the collateral adds to the job\'s capacity and is the second recovery step. The report is the fast path: the service follows the credit contract and counts every posting, reported or not (one posted before the job was registered comes with the registration), and a report of a posting already counted answers it again (201), with the job\'s collateral as it is now. A posting on a failed job that still has advances to recover counts too (the contract took it while the job was open).',
      tags,
      auth: 'session',
      params: JobParams,
      body: CollateralPost,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: { 201: { description: 'The collateral position', schema: CollateralPosition }, ...errors.forbidden, ...errors.notFound('job'), ...errors.proof },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known (its chain reads' part).
        const { clientKey } = ctx
        return mutate(service, ctx, (ticket) =>
          service.postCollateral(
            { ticket, encode: wireReply(201, CollateralPosition, ticket) },
            ctx.session.address,
            clientKey,
            ctx.params.jobId,
            { amountAtomic: BigInt(ctx.body.amountAtomic), txHash: ctx.body.txHash },
          ),
        )
      },
    }),

    defineRoute({
      method: 'post',
      path: '/credit/backing-sources',
      operationId: 'registerBackingSource',
      callers: "the source's agent",
      summary: 'Register a verified asset, subscription or earnings backing source',
      description: 'evidenceId is the EIP-712 signature of a configured attester over the source and this deployment (its service field: /.well-known/service.json attestation.service, the host it is reached at; see attestation there).',
      tags,
      auth: 'session',
      body: BackingSourceRegistration,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        201: { description: 'The backing source', schema: BackingSource },
        ...errors.forbidden,
        409: { description: 'A source with this sourceId exists (code source_exists).' },
        422: { description: 'evidenceId is not a valid attestation (code attestation_invalid), its validUntil has passed (attestation_expired), or idempotency_key_reused.' },
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.registerSource(
            { ticket, encode: wireReply(201, BackingSource, ticket) },
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
      callers: 'public',
      summary: 'List verified non-job backing sources',
      description:
        'Public, paged in registration order (?limit=, ?after=; Link rel="next"). A page costs the rate limit its item count.',
      tags,
      auth: 'none',
      query: pageQuery(RECORD_PAGE),
      cost: itemCount,
      responses: { 200: { description: 'Backing sources in registration order; Link rel="next" (and next-after) name the next page', schema: Type.Array(BackingSource), headers: pageHeaders } },
      handler: (ctx) => {
        const limit = ctx.query.limit ?? RECORD_PAGE.default
        const { items, nextAfterSeq } = service.engine.sourcesPage(ctx.query.after ?? 0, limit)
        return asResult({ ...replyWith(200, Type.Array(BackingSource))(toWire(items)), headers: nextPageHeaders('/credit/backing-sources', limit, nextAfterSeq) })
      },
    }),

    defineRoute({
      method: 'post',
      path: '/credit/request',
      operationId: 'requestCredit',
      callers: 'the borrower (agent)',
      summary: 'Request credit: an underwriting decision and, when approved, an offer',
      description:
        'The signed-in wallet must be the borrower (agent). Underwrites the request against the repayment source (a job or a backing source of the agent): an approved decision creates an offer with its risk band and duration; a declined one lists stable reason codes and creates nothing (for a borrower at liveOffersPerBorrowerMax, or at its job\'s advancesPerJobMax, an approved or declined answer also ends its own offers past their TTL, as the ticker would; a refusal (4xx) changes nothing). No self-dealing: a job whose client (the JobFunded sender) is the borrower itself is declined, client_is_borrower.',
      tags,
      auth: 'session',
      body: CreditRequest,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The underwriting decision (declined decisions list their reasons and create no offer)', schema: UnderwritingDecision },
        ...errors.forbidden,
        ...errors.notFound('repayment_source'),
        ...errors.idempotency,
        ...errors.networkStopped,
        422: { description: 'amountAtomic is below the least advance in the asset (code amount_below_minimum; the catalog\'s networks[].assets[].advanceMinAtomic, one whole unit unless the networks file sets it): a lease must be worth its lender\'s gas. Or the supplier is the borrower (supplier_is_borrower) or not allowed (supplier_not_allowed), or idempotency_key_reused.' },
        409: { description: 'The borrower already holds liveOffersPerBorrowerMax live offers (code live_offers_limit; see the catalog limits; its offers past their TTL do not count, the request ends them, at most timeOutsPerCommandMax (engine config, 8) per request; one past its TTL under a lease whose deadline the chain has not passed still counts: its lender may still pay it), or the job\'s open advances and the borrower\'s live offers reach advancesPerJobMax (job_advances_limit: one settleJob must pay them all; its offers past their TTL do not count there either), or a request with the same Idempotency-Key is still running (idempotency_in_flight).' },
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.requestCredit(
            { ticket, encode: wireReply(200, UnderwritingDecision, ticket) },
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
      callers: "the offer's borrower",
      summary: 'Match an offer to the cheapest eligible lender: a short-lived lease',
      description:
        'lease is null when no eligible lender can take the offer now; it keeps waiting and dispatch retries it. ' +
        'noLease then says why (reason, a stable code; the lenders looked at counted by what passed each over); it is absent on a leased answer. ' +
        'A lender whose wallet or session key is the borrower, or on a job the job\'s client, is never eligible (no self-dealing). ' +
        'refusedLeases lists lenders whose wallet could not pay the asset\'s least advance (expired at once, reason insufficient_balance); ' +
        'a wallet that pays it but not the amount is passed over for this offer, not listed.',
      tags,
      auth: 'session',
      body: MatchRequest,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The selected lender match', schema: MatchOutcome }, ...errors.forbidden, ...errors.notFound('offer'), ...errors.idempotency,
        409: { description: 'The offer is not waiting for a lender (offer_not_offered), or a lease granted now would end after the offer\'s credit end (offer_credit_ending: a lease always gets its whole leaseTtlSeconds; the chain\'s observed time lags the service clock, so the offer\'s expiresAt has not come on chain time; nothing changed, the offer expires stale at its expiresAt), or a request with the same Idempotency-Key is still running (idempotency_in_flight).' },
        503: { description: `The offer's network's chain is not observed: its chain follower has failed for the health hold, /health says it degraded (code chain_unavailable, with Retry-After; nothing changed, the offer keeps waiting and its expiry is unchanged). No lease is made there, by dispatch either, until the follower reads the chain again. Or: ${NETWORK_STOPPED}` },
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.match({ ticket, encode: wireReply(200, MatchOutcome, ticket) }, ctx.session.address, ctx.body.offerId),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/dispatch',
      operationId: 'dispatch',
      callers: 'any session',
      summary: 'Expire stale matches, expire stale offers, and dispatch pending offers to lenders',
      description:
        'Any signed-in wallet. Runs what the internal ticker runs: expires leases past their deadline and grace (the lender loses reliability), expires offers nobody took, and matches waiting offers. The body is optional.',
      tags,
      auth: 'session',
      body: EmptyBody,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: { 200: { description: 'What expired and what matched', schema: DispatchOutcome }, ...errors.idempotency },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) => service.dispatch({ ticket, encode: wireReply(200, DispatchOutcome, ticket) })),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/offers/{offerId}/supplier-payment',
      operationId: 'recordSupplierPayment',
      callers: 'the leased lender',
      summary: 'Record the lender-to-supplier payment (the paySupplier transaction hash); creates the advance',
      description:
        'The leased lender reports the hash of its paySupplier transaction (signed by its session key). The transaction must have paid this offer\'s supplier the offer\'s amount before the lease deadline (to a supplier the token refuses, into the contract, held for it: PaymentHeld); the answer is the advance.',
      tags,
      auth: 'session',
      params: OfferParams,
      body: SupplierPaymentReport,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The supplier advance', schema: Advance },
        ...errors.forbidden,
        ...errors.notFound('offer'),
        ...errors.proof,
        409: { description: 'The lease expired (code lease_expired; the report is rejected), the offer has no lease to this lender (no_lease), or the proof was already used.' },
      },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known (its chain reads' part).
        const { clientKey } = ctx
        return mutate(service, ctx, (ticket) =>
          service.recordSupplierPayment(
            { ticket, encode: wireReply(200, Advance, ticket) },
            ctx.session.address,
            clientKey,
            ctx.params.offerId,
            { lender: checksum(ctx.body.lender), supplierPaymentId: ctx.body.supplierPaymentId },
          ),
        )
      },
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/complete',
      operationId: 'completeJob',
      callers: "the job's client or an operator",
      summary: 'Complete and repay a job: the operator settles the escrow on chain, lenders first',
      description:
        'The job\'s client or an operator. The operator calls settleJob on chain: the escrowed receivable and collateral pay each open advance (lenders first), then the insurance share, then the remainder to the borrower. The body is optional.',
      tags,
      auth: 'session',
      params: JobParams,
      body: EmptyBody,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The repayment receipt', schema: JobSettlementReceipt },
        ...errors.forbidden,
        ...errors.notFound('job'),
        ...errors.idempotency,
        409: { description: 'The job is no longer open (code job_closed), an offer on it is leased (job_has_leased_offer: the lease\'s authorization stays payable on chain until its deadline; complete once the lease is paid or over), or a request with the same Idempotency-Key is still running (idempotency_in_flight). A waiting offer on the job does not block: the completion declines it.' },
        ...errors.operator,
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.completeJob({ ticket, encode: wireReply(200, JobSettlementReceipt, ticket) }, ctx.session.address, ctx.params.jobId),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/advances/{advanceId}/repay',
      operationId: 'repayAdvance',
      callers: 'any session',
      summary: 'Report a repayment of any amount of an advance (proven by a repay transaction)',
      description:
        "Anyone who repaid the advance on chain, any amount (the unsigned approve + repay of GET /credit/advances/{advanceId}/repay-transactions), reports the repay transaction here. The contract pays the lender's part first (lenderOwedAtomic), then the insurance reserve's share (reserveOwedAtomic), and never takes more than is owed (an overpayment stays in the payer's wallet). " +
        'The answer is this payment and what is still owed after it; the advance is repaid when nothing is. An advance in state shortfall (liquidated with something still owed) takes repayments the same way. Report repayments in the order they were mined (an earlier one not yet counted: 409 repayment_mismatch); the same transaction again, or one the service already counted from the chain, answers the same receipt.',
      tags,
      auth: 'session',
      params: AdvanceParams,
      body: RepaymentProof,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'This payment and what the advance still owes after it', schema: RepaymentReceipt },
        ...errors.notFound('advance'),
        ...errors.proof,
        409: { description: 'The advance is no longer open (advance_not_open), an earlier repayment of it is not counted yet (repayment_mismatch), or the proof was already used (proof_already_used).' },
      },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known (its chain reads' part).
        const { clientKey } = ctx
        return mutate(service, ctx, (ticket) =>
          service.repay({ ticket, encode: wireReply(200, RepaymentReceipt, ticket) }, ctx.session.address, clientKey, ctx.params.advanceId, { txHash: ctx.body.txHash }),
        )
      },
    }),

    defineRoute({
      method: 'post',
      path: '/credit/jobs/{jobId}/fail',
      operationId: 'failJob',
      callers: "the job's client or an operator",
      summary: 'Fail a job and suspend the borrower\'s credit; answers the passport event',
      description:
        'Only the job\'s client or an operator may fail a job (a borrower was named only with its consent), with a reason from a fixed list and an optional note ' +
        'whose keccak256 alone is kept and signed (noteHash): no caller\'s text enters the borrower\'s signed passport. The borrower is suspended, its live offers declined, ' +
        'the job\'s advances defaulted. The suspension lifts in dispatch (passport event suspension_lifted) once the borrower owes nothing on a defaulted advance ' +
        'and borrowerSuspensionMinSeconds (catalog limits) have passed.',
      tags,
      auth: 'session',
      params: JobParams,
      body: JobFailure,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The passport event', schema: PassportEvent },
        400: {
          description: 'A reason not in the published list (code validation_failed, its errors naming /reason; the reason is signed into the borrower\'s ' +
            'public passport, so it is a code, never free text: a note\'s text goes in note, of which only the hash is kept and signed). ' +
            'Reason escrow_reclaimed or failed_on_chain (code failure_reason_reserved): only a job its client or its borrower reclaimed on chain ends with the first, ' +
            'and only a job whose failJob was mined and never recorded and whose /fail left no durable intent (no request of this service sent it) the second, both as the chain follower learns it; ' +
            'a /fail whose failJob was mined and never recorded is recorded with its own reason by the operator repair, and the same /fail sent again answers that failure (200).',
        },
        ...errors.forbidden,
        ...errors.notFound('job'),
        ...errors.idempotency,
        ...errors.operator,
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.failJob({ ticket, encode: ({ signed, ...event }) => replyWith(200, PassportEvent)({ ...toWire(event), signed }) }, ctx.session.address, ctx.params.jobId, {
            reason: ctx.body.reason,
            note: ctx.body.note,
          }),
        ),
    }),

    defineRoute({
      method: 'post',
      path: '/credit/advances/{advanceId}/liquidate',
      operationId: 'liquidateAdvance',
      callers: "the advance's lender or an operator",
      summary: 'Liquidate a defaulted advance in the recovery order; answers the receipt with every step',
      description:
        'The advance\'s lender or an operator, once the advance defaulted or is past due. Recovers what is owed in order: source revenue, collateral, backing liquidation value, insurance reserve, then a recorded shortfall; the operator\'s liquidate transaction moves the tokens. On a job holding collateral (a backing source with liquidation value left), the older advances on it (by their offers\' order) that may be liquidated are liquidated first, as their lenders\' own requests, unless it covers them and this one in full: a liquidation takes the collateral (the value) for whichever advance it is sent for first, and their risk bands counted on it first. Past due means past the due time\'s second, as the contract judges it (block.timestamp > dueAt): until the chain has a block past that second, 503 chain_unavailable with Retry-After; nothing recorded, send the same request again. The body is optional.',
      tags,
      auth: 'session',
      params: AdvanceParams,
      body: EmptyBody,
      headers: mutationHeaders,
      keyedRequestsCharged: false,
      responses: {
        200: { description: 'The liquidation receipt', schema: LiquidationReceipt },
        ...errors.forbidden,
        ...errors.notFound('advance'),
        ...errors.idempotency,
        ...errors.operator,
      },
      handler: (ctx) =>
        mutate(service, ctx, (ticket) =>
          service.liquidate({ ticket, encode: wireReply(200, LiquidationReceipt, ticket) }, ctx.session.address, ctx.params.advanceId),
        ),
    }),
  ]
}
