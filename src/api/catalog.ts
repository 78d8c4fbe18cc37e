// The machine-readable service catalog (`/.well-known/service.json`) and its schema. Built from the same sources as
// the OpenAPI document: the route table, the networks configuration and the engine's rules.
import Type, { type Static } from 'typebox'
import { advanceMinAtomicOf, type NetworkConfig } from '../chain/config.ts'
import type { EngineConfig } from '../engine/config.ts'
import type { AnyRoute } from '../http/route.ts'
import { consentDomain, consentTypes } from '../chain/consent.ts'
import type { ReputationConfig } from '../reputation/index.ts'
import { passportDomain, passportKinds, passportTypes } from '../passport/passport.ts'
import { creditScoreCatalogEntry, CreditScoreCatalogEntry, type CreditScoreOffer } from '../score/catalog.ts'
import { attestationDomain, attestationTypes } from '../chain/attestation.ts'
import { Address, Atomic, atomicDescribed, Bps, StrictObject } from './common.ts'
import { API_VERSION } from './openapi.ts'
import { RECORD_PAGE, WALLET_PAGE } from './routes/shared.ts'
import { EVENTS_PATH } from './routes/events.ts'
import type { StreamLimits } from '../stream/hub.ts'
import { STREAM_CLOSE, StreamInfo } from '../stream/messages.ts'
import { AssetSymbol, LIQUIDITY_ATOMIC_MAX, NetworkSlug } from './schemas.ts'
import { isSelfFacilitated } from '../x402/facilitator.ts'
import { CatalogContracts, contractsCatalogEntry } from './contracts-catalog.ts'

export const SERVICE_NAME = 'agent-credit'

/** The lender-capital rule (issue 9, case 6), as the catalog and llms.txt publish it. */
export const LENDER_CAPITAL_RULE =
  'Repayments and recoveries reach the session wallet (the advance\'s lender on chain is its payer), so capital recycles into the wallet that lends. ' +
  'availableAtomic = min(policyAvailableAtomic, what the session wallet can pay: min(balance, allowance to the credit contract) less its live leases), in every lender view and in matching. ' +
  'Per network the session wallet should hold policyAvailableAtomic + its live leases there: below, GET /lenders/{address}/actions lists top_up (lender\'s wallet -> session wallet) and, if the allowance is short, approve (session key); above, withdraw (session key -> lender\'s wallet). ' +
  'POST /lenders/{address}/withdraw lowers what the service may lend: the available part at once, what live leases and open advances hold as it comes back (a live lease can still be paid); nothing available: out of matching.'

const Asset = StrictObject({
  symbol: AssetSymbol,
  address: Address,
  decimals: Type.Integer({ minimum: 0, maximum: 36 }),
  eip712Name: Type.String(),
  eip712Version: Type.String(),
  advanceMinAtomic: atomicDescribed('The least principal of one advance in this asset: POST /credit/request for less is refused 422 amount_below_minimum (a lease must be worth its lender\'s gas).'),
})

const CatalogNetwork = StrictObject({
  slug: NetworkSlug,
  caip2: Type.String({ pattern: '^eip155:[0-9]+$' }),
  chainId: Type.Integer({ minimum: 1 }),
  rpcUrl: Type.Union([Type.String(), Type.Null()], { description: 'Public RPC URL, or null when the configured one is private.' }),
  confirmations: Type.Integer({ minimum: 0 }),
  creditContract: Address,
  identityRegistry: Address,
  reputationRegistry: Address,
  reclaimDelaySeconds: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
    description:
      'The credit contract\'s reclaimDelay(): a job\'s client (or its borrower: see contracts.reclaimJob) may reclaim its escrow from fundedAt + reclaimDelaySeconds, so a job\'s dueAt must come before then (a later one is 422 job_reclaimable_before_due). ' +
      'Null while the service has not read it (the RPC unreachable since the start, or no code at the contract yet; it is read again once the RPC answers): read reclaimDelay() on the contract.',
  }),
  borrowerMayReclaim: Type.Union([Type.Boolean(), Type.Null()], {
    description:
      'Whether the credit contract takes reclaimJob from a job\'s borrower too (its BORROWER_MAY_RECLAIM(), true), or from its client only (false: a deployment from before 2026-11-28, which has no such function; a borrower\'s reclaimJob reverts NotClient there, so do not send it). ' +
      'Null while the service has not read it (the RPC unreachable since the start, or no bool answered; it is read again, on its own, once the RPC answers): call BORROWER_MAY_RECLAIM() on the contract (a revert means false). ' +
      'The service sends no reclaim: the client (or, where this is true, the borrower) sends reclaimJob(jobKey) itself, as contracts.approvals says.',
  }),
  assets: Type.Array(Asset),
  facilitator: StrictObject({
    url: Type.String(),
    selfHosted: Type.Boolean(),
    payees: Type.Array(StrictObject({ payTo: Address, minAmountAtomic: Atomic }), {
      description:
        'Payees whose payments the self-hosted facilitator verifies and settles, each from its least amount up (any other payee is refused, invalid_payment_payee_not_served; a smaller amount, invalid_payment_below_payee_minimum); empty when not self-hosted.',
    }),
  }),
})

export const Catalog = StrictObject({
  name: Type.String(),
  description: Type.String(),
  version: Type.String(),
  baseUrl: Type.String(),
  openapi: Type.String(),
  llms: Type.String(),
  networks: Type.Array(CatalogNetwork),
  contracts: CatalogContracts,
  endpoints: Type.Array(
    StrictObject({
      method: Type.String(),
      path: Type.String(),
      operationId: Type.String(),
      summary: Type.String(),
      auth: Type.Enum(['none', 'session']),
      callers: Type.String({ description: 'Who may call it: the operation\'s x-callers in OpenAPI.' }),
    }),
  ),
  auth: StrictObject({
    scheme: Type.Literal('siwe-bearer'),
    nonce: Type.String(),
    session: Type.String(),
    domain: Type.String(),
    chainIds: Type.Array(Type.Integer()),
    refresh: Type.String({ description: 'Extends the live session of the request in place (same token; at most a week after its signature): no new stored session, so no sign-in budget is charged. Refresh before the session ends instead of signing in again.' }),
    revoke: StrictObject({ current: Type.String(), all: Type.String() }),
    nonceTtlSeconds: Type.Integer({ minimum: 1 }),
    sessionTtlSeconds: Type.Integer({ minimum: 1 }),
    sessionsPerWalletMax: Type.Integer({ minimum: 1, description: 'A sign-in beyond it ends the wallet\'s oldest session.' }),
    signInsPerClientPerHour: Type.Integer({ minimum: 0, description: 'Sessions one client address (an IPv6 client\'s /64) may open per hour, an hour\'s worth at once; one more is 429 sign_ins_client_limited with Retry-After (the nonce stays unused). 0: unbounded.' }),
    signInsPerHour: Type.Integer({ minimum: 0, description: 'Sessions all clients together may open per hour, a minute\'s worth at once; one more is 503 sign_ins_exhausted with Retry-After, except for a wallet with standing (a lender that has paid a lease, a borrower that repaid), held to its own bounds, or one that holds a live session, whose new session replaces its oldest. 0: unbounded.' }),
  }),
  attestation: StrictObject({
    domain: StrictObject({ name: Type.String(), version: Type.String() }),
    primaryType: Type.Literal('BackingSource'),
    service: Type.String({ description: 'What an attestation for this deployment signs as its service field: the host (and port) it is reached at, auth.domain. One signed for another service is refused (attestation_invalid), so one asset cannot back credit at two deployments that trust the same attester.' }),
    types: Type.Record(Type.String(), Type.Array(StrictObject({ name: Type.String(), type: Type.String() })), { additionalProperties: false }),
    attesters: Type.Array(Address),
  }),
  consent: StrictObject({
    domain: StrictObject({ name: Type.String(), version: Type.String() }, { description: 'The fixed part of the domain; a consent adds chainId and verifyingContract: the job\'s network\'s chainId and creditContract (networks[]), so it is valid on that contract only.' }),
    primaryType: Type.Literal('BorrowerConsent'),
    types: Type.Record(Type.String(), Type.Array(StrictObject({ name: Type.String(), type: Type.String() })), { additionalProperties: false }),
  }),
  passport: StrictObject(
    {
      domain: StrictObject({ name: Type.String(), version: Type.String() }),
      primaryType: Type.Literal('PassportEvent'),
      types: Type.Record(Type.String(), Type.Array(StrictObject({ name: Type.String(), type: Type.String() })), { additionalProperties: false }),
      issuer: Address,
      kinds: Type.Array(Type.String()),
      events: Type.String({ description: 'The route of an agent\'s events, paged by sequence.' }),
      verification: Type.String(),
    },
    { description: 'The credit passport: events that change an agent\'s credit standing, EIP-712 signed by issuer, chained per agent.' },
  ),
  reputation: StrictObject(
    {
      trustedClients: Type.Array(Address, { description: 'Clients whose ERC-8004 feedback counts for a lender\'s initial reputation.' }),
      priorWeight: Type.Integer({ minimum: 1 }),
      halfLifeSeconds: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
      formula: Type.String(),
      agentRoles: Type.Array(Type.String(), { description: 'Who may name an agent at registration, as read on chain.' }),
      linkRecheckIntervalSeconds: Type.Integer({ minimum: 0 }),
    },
    { description: 'Reputation from ERC-8004 evidence (POST /lenders/register `agent`).' },
  ),
  suppliers: StrictObject(
    {
      directory: Type.String({ description: 'The route of the live supplier directory (public; operators manage it with PUT and DELETE /suppliers/{domain}).' }),
      rule: Type.String(),
    },
    { description: 'Where credit can go: the directory changes while the service runs, so the catalog names its route instead of copying it.' },
  ),
  operators: Type.Array(Address),
  rules: StrictObject({
    fee: Type.String(),
    insuranceShareBps: Bps,
    insuranceShare: Type.String({ description: 'How the insurance share is taken, on every path where a fee reaches a lender.' }),
    repayment: Type.String({ description: 'What a repay of any amount does (the call: contracts.creditFacility.abi).' }),
    jobAdvanceRateBps: Bps,
    riskBandACoverageBps: Type.Integer({ minimum: 0 }),
    riskBandBCoverageBps: Type.Integer({ minimum: 0 }),
    backingDurationSecondsDefault: Type.Integer({ minimum: 0 }),
    matchingOrder: Type.Array(Type.String()),
    recoveryOrder: Type.Array(Type.String()),
    lenderCapital: Type.String({ description: 'Where a lender\'s capital goes and how available liquidity, top-ups and withdrawals are computed.' }),
  }),
  limits: StrictObject({
    leaseTtlSeconds: Type.Integer({ minimum: 1 }),
    offerTtlSeconds: Type.Integer({ minimum: 1 }),
    bodyLimitBytes: Type.Integer({ minimum: 1 }),
    lendersScannedPerMatchMax: Type.Integer({ minimum: 1 }),
    leasesPerOfferMax: Type.Integer({ minimum: 1 }),
    offersDispatchedPerCallMax: Type.Integer({ minimum: 1 }),
    networksPerLenderMax: Type.Integer({ minimum: 1 }),
    registeredLiquidityAtomicMax: Type.String({ pattern: '^[0-9]+$', description: 'The most liquidity one lender may register (2^128-1).' }),
    idempotencyRetentionSeconds: Type.Integer({ minimum: 1, description: 'How long an Idempotency-Key\'s answer is replayed.' }),
    keyedRequestsPerWalletPerHour: Type.Integer({ minimum: 0, description: 'First requests with a new Idempotency-Key (a replay is free) one signed-in wallet may send per hour to the operations whose x-keyed-requests-charged is true (not the credit path), an hour\'s worth at once; one more is 429 idempotency_keys_limited with Retry-After, and nothing ran. 0: unbounded.' }),
    keyedRequestsPerClientPerHour: Type.Integer({ minimum: 0, description: 'The same per client address (an IPv6 client\'s /64), whatever its wallets: 429 idempotency_keys_limited. 0: unbounded.' }),
    keyedRequestsPerHour: Type.Integer({ minimum: 0, description: 'The same for all callers together, a minute\'s worth at once: 503 idempotency_keys_exhausted with Retry-After, except for a wallet with standing (a lender that has paid a lease, a borrower that repaid), held to its own bounds only. 0: unbounded.' }),
    rateLimitTokensPerSecond: Type.Integer({ minimum: 0, description: 'Refill of each rate-limit bucket (per signed-in wallet, else per client address); 0: no limit. A list page costs its item count.' }),
    rateLimitBurst: Type.Integer({ minimum: 0, description: 'Size of each bucket.' }),
    pageLimitMax: Type.Integer({ minimum: 1, description: 'Largest ?limit= of /lenders and /credit/backing-sources.' }),
    walletPageLimitMax: Type.Integer({ minimum: 1, description: 'Largest ?limit= of /lenders/wallets.' }),
    liveOffersPerBorrowerMax: Type.Integer({ minimum: 1 }),
    advancesPerJobMax: Type.Integer({ minimum: 1, description: 'A job\'s open advances plus its borrower\'s live offers, at most: one settleJob pays every advance of the job that still owes, and must fit in a transaction (409 job_advances_limit).' }),
    borrowerSuspensionMinSeconds: Type.Integer({ minimum: 1 }),
  }),
  creditScore: CreditScoreCatalogEntry,
  stream: StreamInfo,
})
export type Catalog = Static<typeof Catalog>

/** The store budgets of the configuration (src/app/config.ts), per hour; 0: unbounded. */
export interface StoreBudgets {
  signInsPerClientPerHour: number
  signInsPerHour: number
  keyedRequestsPerWalletPerHour: number
  keyedRequestsPerClientPerHour: number
  keyedRequestsPerHour: number
}

export interface CatalogSources {
  baseUrl: string
  authDomain: string
  auth: { nonceTtlSeconds: number; sessionTtlSeconds: number; sessionsPerWalletMax: number }
  /** What strangers may make the store keep (configuration, per hour; 0: unbounded): sessions, and answers of keyed requests. */
  storeBudgets: StoreBudgets
  routes: readonly AnyRoute[]
  networks: readonly NetworkConfig[]
  /** The network's credit contract's reclaimDelay() in seconds, or null while not read (src/chain/reclaim-window.ts ReclaimDelays). */
  reclaimDelaySeconds: (network: NetworkConfig) => number | null
  /** Whether the network's credit contract takes its borrowers' reclaimJob, or null while not read (ReclaimDelays). */
  borrowerMayReclaim: (network: NetworkConfig) => boolean | null
  /** Whether the configured RPC URLs may be published (the embedded devnet: yes). */
  publishRpcUrls: boolean
  facilitatorUrl: (network: NetworkConfig) => string
  /** The payees the network's self-hosted facilitator serves; none when it has none here. */
  facilitatorPayees: (network: NetworkConfig) => ReadonlyArray<{ payTo: `0x${string}`; minAmountAtomic: string }>
  engine: EngineConfig
  attesters: readonly `0x${string}`[]
  operators: readonly `0x${string}`[]
  bodyLimitBytes: number
  /** What /credit-score costs and what computes it; null while disabled. */
  creditScore: CreditScoreOffer | null
  reputation: ReputationConfig
  /** The passport's issuer (src/passport/book.ts). */
  passportIssuer: `0x${string}`
  idempotencyRetentionSeconds: number
  rateLimitPerSecond: number
  stream: StreamLimits
}

export function buildCatalog(s: CatalogSources): Catalog {
  return {
    name: SERVICE_NAME,
    description:
      'Receivable-backed credit for software agents: a borrower agent requests credit against a job receivable or a verified backing source; ' +
      'the service matches it to the cheapest eligible lender agent, whose session-key wallet pays the supplier directly on chain.',
    version: API_VERSION,
    baseUrl: s.baseUrl,
    openapi: `${s.baseUrl}/openapi.json`,
    llms: `${s.baseUrl}/llms.txt`,
    networks: s.networks.map((n) => ({
      slug: n.slug,
      caip2: n.caip2,
      chainId: n.chainId,
      rpcUrl: s.publishRpcUrls ? n.rpcUrl : null,
      confirmations: n.confirmations,
      creditContract: n.creditContract,
      identityRegistry: n.identityRegistry,
      reputationRegistry: n.reputationRegistry,
      reclaimDelaySeconds: s.reclaimDelaySeconds(n),
      borrowerMayReclaim: s.borrowerMayReclaim(n),
      assets: n.tokens.map((t) => ({ symbol: t.symbol, address: t.address, decimals: t.decimals, eip712Name: t.eip712Name, eip712Version: t.eip712Version, advanceMinAtomic: advanceMinAtomicOf(t).toString() })),
      facilitator: { url: s.facilitatorUrl(n), selfHosted: isSelfFacilitated(n), payees: [...s.facilitatorPayees(n)] },
    })),
    contracts: contractsCatalogEntry(s.engine.advancesPerJobMax, s.networks[0] as NetworkConfig),
    endpoints: s.routes.map((r) => ({ method: r.method.toUpperCase(), path: r.path, operationId: r.operationId, summary: r.summary, auth: r.auth, callers: r.callers })),
    auth: {
      scheme: 'siwe-bearer',
      nonce: '/auth/nonce',
      session: '/auth/session',
      domain: s.authDomain,
      chainIds: s.networks.map((n) => n.chainId),
      refresh: 'POST /auth/session/refresh',
      revoke: { current: 'DELETE /auth/session', all: 'DELETE /auth/sessions' },
      ...s.auth,
      signInsPerClientPerHour: s.storeBudgets.signInsPerClientPerHour,
      signInsPerHour: s.storeBudgets.signInsPerHour,
    },
    attestation: {
      domain: { ...attestationDomain },
      primaryType: 'BackingSource',
      service: s.authDomain,
      types: { BackingSource: attestationTypes.BackingSource.map((f) => ({ ...f })) },
      attesters: [...s.attesters],
    },
    consent: {
      domain: { ...consentDomain },
      primaryType: 'BorrowerConsent',
      types: { BorrowerConsent: consentTypes.BorrowerConsent.map((f) => ({ ...f })) },
    },
    passport: {
      domain: { ...passportDomain },
      primaryType: 'PassportEvent',
      types: { PassportEvent: passportTypes.PassportEvent.map((f) => ({ ...f })) },
      issuer: s.passportIssuer,
      kinds: [...passportKinds],
      events: '/passport/{address}',
      verification:
        'verifyTypedData({ address: issuer, domain, types, primaryType, message: event without hash and signature, signature }); hash = hashTypedData of the same; ' +
        'sequence n+1 follows n and its prevHash is event n\'s hash (zero for sequence 1); details is canonical JSON (sorted keys, amounts as decimal strings)',
    },
    reputation: {
      trustedClients: [...s.reputation.trustedClients],
      priorWeight: s.reputation.priorWeight,
      halfLifeSeconds: s.reputation.halfLifeSeconds ?? null,
      formula:
        'valueBps = clamp(trunc(value * 100 / 10^valueDecimals), 0, 10000); weight = 1000000 >> min(20, trunc(age / halfLifeSeconds)) (1000000 without half-life); reputationBps = trunc((priorWeight * 1000000 * 5000 + sum weight * valueBps) / (priorWeight * 1000000 + sum weight)) over unrevoked feedback of trustedClients (readAllFeedback); 5000 without agent',
      agentRoles: ['getAgentWallet', 'ownerOf', 'isAuthorizedOrOwner'],
      linkRecheckIntervalSeconds: Math.round(s.reputation.linkRecheckIntervalMs / 1000),
    },
    suppliers: {
      directory: '/suppliers',
      rule:
        'a credit request is declined unless supplierDomain is in the directory (supplier_unknown) and supplierAddress, when given, is one of its addresses on the request\'s network ' +
        '(supplier_address_unverified; absent: the first there is paid); a borrower, a lender, a session key, the credit contract, the service\'s other contracts (tokens, registries), its operator and lease-signer keys, an operator or the zero address is never a supplier (supplier_not_allowed). ' +
        'The lease authorization binds the supplier: the contract pays nobody else.',
    },
    operators: [...s.operators],
    rules: {
      fee: 'feeAtomic = ceil(amountAtomic * lender.minFeeBps / 10000), flat per advance; a lender is eligible only if feeAtomic <= maximumFeeAtomic',
      insuranceShareBps: s.engine.insuranceShareBps,
      insuranceShare:
        "reserveShare = floor(feeAtomic * insuranceShareBps / 10000), signed in the lease authorization; an advance owes the lender principalAtomic + feeAtomic - reserveShare and the reserve reserveShare. Every payment towards it (repay, job settlement, collateral in a liquidation) pays the lender's part first, then the reserve's share; backing and the insurance reserve cover only the lender's part",
      repayment:
        "a repay of the advance's key by anyone, any amount: the contract takes at most what is owed (an overpayment never leaves the payer's wallet), the lender's part first (to its session wallet), then the reserve's share; each Repaid reduces lenderOwedAtomic and reserveOwedAtomic, and the advance is repaid when both are 0",
      jobAdvanceRateBps: s.engine.jobAdvanceRateBps,
      riskBandACoverageBps: s.engine.riskBandACoverageBps,
      riskBandBCoverageBps: s.engine.riskBandBCoverageBps,
      backingDurationSecondsDefault: s.engine.backingDurationSecondsDefault,
      // The policy's liquidity, not the wallet-capped figure the views show: the book is kept in the engine's ledger
      // order, and a wallet too small for the amount gets an insufficient-balance lease and leaves the book.
      matchingOrder: ['minFeeBps ascending', 'reputationBps descending', 'policy liquidity not lent descending (registered less reserved and deployed, before the wallet cap that views show as availableAtomic)', 'registration order'],
      recoveryOrder: ['source_revenue', 'collateral', 'backing_liquidation', 'insurance_reserve', 'shortfall'],
      lenderCapital: LENDER_CAPITAL_RULE,
    },
    limits: {
      leaseTtlSeconds: Math.round(s.engine.leaseTtlMs / 1000),
      offerTtlSeconds: Math.round(s.engine.offerTtlMs / 1000),
      bodyLimitBytes: s.bodyLimitBytes,
      lendersScannedPerMatchMax: s.engine.lendersScannedPerMatchMax,
      leasesPerOfferMax: s.engine.leasesPerOfferMax,
      offersDispatchedPerCallMax: s.engine.offersDispatchedPerCallMax,
      networksPerLenderMax: s.engine.networksPerLenderMax,
      registeredLiquidityAtomicMax: LIQUIDITY_ATOMIC_MAX.toString(),
      idempotencyRetentionSeconds: s.idempotencyRetentionSeconds,
      keyedRequestsPerWalletPerHour: s.storeBudgets.keyedRequestsPerWalletPerHour,
      keyedRequestsPerClientPerHour: s.storeBudgets.keyedRequestsPerClientPerHour,
      keyedRequestsPerHour: s.storeBudgets.keyedRequestsPerHour,
      rateLimitTokensPerSecond: s.rateLimitPerSecond,
      rateLimitBurst: s.rateLimitPerSecond * 2,
      pageLimitMax: RECORD_PAGE.max,
      walletPageLimitMax: WALLET_PAGE.max,
      liveOffersPerBorrowerMax: s.engine.liveOffersPerBorrowerMax,
      advancesPerJobMax: s.engine.advancesPerJobMax,
      borrowerSuspensionMinSeconds: s.engine.borrowerSuspensionMinSeconds,
    },
    creditScore: creditScoreCatalogEntry('/credit-score', s.creditScore),
    stream: {
      url: `${s.baseUrl.replace(/^http/, 'ws')}${EVENTS_PATH}`,
      auth: 'Authorization: Bearer <token> on the upgrade request',
      resume: `${EVENTS_PATH}?since=<seq of the last event received>&epoch=<epoch of hello>`,
      messages: `${s.baseUrl}/openapi.json#/components/schemas/StreamMessage`,
      retainedEventsMax: s.stream.retainedEventsMax,
      retentionSeconds: Math.ceil(s.stream.retentionMs / 1000),
      queuedEventsMax: s.stream.queuedEventsMax,
      socketBufferedBytesMax: s.stream.socketBufferedBytesMax,
      connectionsPerWalletMax: s.stream.connectionsPerWalletMax,
      connectionsPerClientMax: s.stream.connectionsPerClientMax,
      connectionsMax: s.stream.connectionsMax,
      bufferedBytesTotalMax: s.stream.bufferedBytesTotalMax,
      closeCodes: Object.fromEntries(Object.values(STREAM_CLOSE).map((close) => [String(close.code), close.name])),
    },
  }
}
