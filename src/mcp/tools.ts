// The MCP tools: each one is a route of the API, called through the typed SDK (AgentCredit), with the input schema
// built from the TypeBox schemas the route itself validates against (path parameters and body merged into one
// object, since a tool takes one argument object); a paged route's tool takes its `limit` and `after` and answers
// one page, `{items, nextAfter}`. Every tool that POSTs takes an optional `idempotencyKey` and its answer names the
// key it used (./server.ts): a model that retries a call whose answer it never saw, with that key, runs it once. Who may call each route is the catalog's `callers` (get_catalog),
// declared once in the route table. Read tools need no key; the borrower's and the lender's actions
// sign in with the configured wallet. No answer carries a secret that moves money: register_lender keeps the session
// key in a file (./session-keys.ts) and answers its path.
import Type, { type TObject, type TProperties } from 'typebox'
import type { Hash } from 'viem'
import { AdvanceId, BackingSourceRegistration, CollateralPost, CreditRequest, JobCreation, JobFailure, LenderRegistration, LiquidityWithdrawal, MatchRequest, OfferId, RepaymentProof } from '../api/schemas.ts'
import { Address, JobId, StrictObject } from '../api/common.ts'
import type { AgentCredit } from '../client/sdk.ts'
import type { SessionKeyStore } from './session-keys.ts'
import { CollateralQuery, FundingQuery, RepayQuery } from '../api/routes/transactions.ts'
import { pageQuery, RECORD_PAGE } from '../api/routes/shared.ts'
import { PassportQuery } from '../api/routes/passport.ts'
import { KEY_PATTERN } from '../api/idempotency.ts'

export interface McpTool {
  name: string
  description: string
  inputSchema: TObject
  /** Signs in with the configured wallet key: without one the tool is not offered. */
  needsWallet: boolean
  /** POSTs: takes the optional `idempotencyKey` input, sent as every POST's Idempotency-Key, and answers the key used. */
  keyed: boolean
  run: (sdk: AgentCredit, args: any, sessionKeys: SessionKeyStore) => Promise<unknown>
}

const NoInput = StrictObject({})
const merged = (...parts: TObject[]): TObject => StrictObject(Object.assign({}, ...parts.map((part) => part.properties)) as TProperties)
const JobRef = StrictObject({ jobId: JobId })
const OfferRef = StrictObject({ offerId: OfferId })
const AdvanceRef = StrictObject({ advanceId: AdvanceId })
const AddressRef = StrictObject({ address: Address })
const RecordPage = pageQuery(RECORD_PAGE)
/** A paged route's tool answers one page: the route's items, and the `after` that reads the next one. */
const ONE_PAGE = 'One page (`limit`, `after`): `items` as the route answers them, and `nextAfter`, null on the last page, to pass as `after` for the next; a page may hold fewer than `limit` items, even none, and still have a next.'

/** An action's optional key: the same key on a retry replays the first run's answer instead of acting twice. */
const KeyInput = StrictObject({
  idempotencyKey: Type.Optional(Type.String({
    pattern: KEY_PATTERN.source,
    description: 'Optional Idempotency-Key (1 to 255 visible ASCII characters). When retrying a call whose outcome you did not see (a timeout, a lost answer), pass the key the first call used: the service then answers that call\'s result instead of acting twice. Every answer of this tool names the key it used (idempotencyKey), one it made when none was given; a call without a key always acts anew.',
  })),
})

const read = (name: string, description: string, inputSchema: TObject, run: McpTool['run']): McpTool => ({ name, description, inputSchema, needsWallet: false, keyed: false, run })
/** A signed-in read (GET): no key. */
const signedRead = (name: string, description: string, inputSchema: TObject, run: McpTool['run']): McpTool => ({ name, description, inputSchema, needsWallet: true, keyed: false, run })
const KEY_NOTE = ' Pass the answer\'s idempotencyKey again when retrying a call whose outcome you did not see.'
const act = (name: string, description: string, inputSchema: TObject, run: McpTool['run']): McpTool =>
  ({ name, description: description + KEY_NOTE, inputSchema: merged(inputSchema, KeyInput), needsWallet: true, keyed: true, run })

/**
 * POST /lenders/register, with the session key's private key moved into the key store: the answer names the file.
 * The store is checked first, so the one answer that carries the key never arrives with nowhere to keep it.
 */
async function registerLender(sdk: AgentCredit, body: any, sessionKeys: SessionKeyStore): Promise<unknown> {
  await sessionKeys.prepare()
  const registration = await sdk.registerLender(body, async (sessionAddress) => (await sessionKeys.saved(sessionAddress)) !== undefined)
  const { address, privateKey, note } = registration.sessionKey
  // null: an idempotent replay (the same idempotencyKey), the service never stored the key: the first call wrote it.
  const keyFile = privateKey === null ? (await sessionKeys.saved(address)) ?? null : await sessionKeys.save({ address, privateKey }, sdk.address)
  const where = keyFile === null ? note : `The private key is in ${keyFile} (mode 0600), readable only by the user; sign the setupTransactions and each paySupplier with it outside this conversation.`
  return { ...registration, sessionKey: { address, keyFile, note: where } }
}

export const MCP_TOOLS: readonly McpTool[] = [
  read('get_catalog', 'The service catalog (GET /.well-known/service.json): networks, assets, contracts and their ABIs, products, fees.', NoInput, (sdk) => sdk.catalog()),
  read('list_suppliers', 'The supplier directory (GET /suppliers): the only domains and payout addresses per network credit pays; request_credit names one of them.', NoInput, (sdk) => sdk.suppliers()),
  read('get_credit_state', 'Credit state (GET /credit/state): counts of live actors, lender liquidity totals, insurance reserves.', NoInput, (sdk) => sdk.state()),
  read('list_lenders', `The active lenders and their policies (GET /lenders), in registration order. ${ONE_PAGE}`, RecordPage, (sdk, a) => sdk.lendersPage(a)),
  read('get_lender_wallet', "A lender's session wallet (GET /lenders/{address}/wallet): its balance and allowance per network as the service last read them, and its lending activity (available, reserved, deployed, fees earned, losses, withdrawals, leases, advances), and heldPayments: what the credit contract holds for the session wallet because the token refused it, with the claimHeld to send.", AddressRef, (sdk, a) => sdk.wallet(a.address)),
  read('get_held_payments', 'What the credit contract holds for an account because its token refused it (GET /credit/held-payments/{address}; a blacklisted lender session wallet, borrower or job client): per network and token the amount and `claim`, the unsigned claimHeld(token, account). Nobody here signs it: any wallet of the user may send it once the token accepts the account again (it reverts until then), and it pays the account all of it.', AddressRef, (sdk, a) => sdk.heldPayments(a.address)),
  read('list_backing_sources', `The verified backing sources (GET /credit/backing-sources), in registration order. ${ONE_PAGE}`, RecordPage, (sdk, a) => sdk.backingSourcesPage(a)),
  read('get_passport', `A wallet's credit passport (GET /passport/{address}): the events that changed its credit standing, signed by the catalog's passport issuer and chained by sequence and prevHash. ${ONE_PAGE}`, merged(AddressRef, PassportQuery), (sdk, { address, ...query }) => sdk.passportPage(address, query)),
  read('get_offer', 'One offer (GET /credit/offers/{offerId}): terms, state, lease.', OfferRef, (sdk, a) => sdk.offer(a.offerId)),
  read('get_advance', 'One advance (GET /credit/advances/{advanceId}): amounts owed, state, advanceKey for repay.', AdvanceRef, (sdk, a) => sdk.advance(a.advanceId)),
  read('get_job', 'One job (GET /credit/jobs/{jobId}): receivable, borrower, state.', JobRef, (sdk, a) => sdk.job(a.jobId)),

  read('funding_transactions', "The job's client's unsigned approve + fundJob (GET /credit/jobs/{jobId}/funding-transactions): sign and send both, then create_job.", merged(JobRef, FundingQuery), (sdk, { jobId, ...query }) => sdk.fundingTransactions(jobId, query)),
  read('collateral_transactions', "The borrower's unsigned approve + postCollateral (GET /credit/jobs/{jobId}/collateral-transactions): sign and send both, then post_collateral.", merged(JobRef, CollateralQuery), (sdk, a) => sdk.collateralTransactions(a.jobId, a.amountAtomic)),
  read('repay_transactions', 'Unsigned approve + repay of what an advance owes (GET /credit/advances/{advanceId}/repay-transactions): sign and send both, then report_repayment.', merged(AdvanceRef, RepayQuery), (sdk, { advanceId, ...query }) => sdk.repayTransactions(advanceId, query)),

  // The borrower (or the job's client where the route says so).
  act('create_job', 'Register a job whose receivable the client already escrowed on chain (funding_transactions; POST /credit/jobs).', JobCreation, (sdk, a) => sdk.createJob(a)),
  act('register_backing_source', 'Register a backing source as repayment source (POST /credit/backing-sources).', BackingSourceRegistration, (sdk, a) => sdk.registerBackingSource(a)),
  act('post_collateral', 'Report collateral posted on chain for a job (POST /credit/jobs/{jobId}/collateral).', merged(JobRef, CollateralPost), (sdk, { jobId, ...body }) => sdk.postCollateral(jobId, body)),
  act('request_credit', 'Ask for credit (POST /credit/request): the underwriting decision and, when approved, the offer.', CreditRequest, (sdk, a) => sdk.requestCredit(a)),
  act('match_offer', 'Match an approved offer with the cheapest ready lender (POST /credit/match): the lease, or lease null with noLease.reason saying why (no_funded_lender, fee_above_maximum, risk_band_not_accepted, duration_not_offered, amount_above_liquidity, lenders_excluded, lenders_busy, scan_bound_reached, offer_expired); except offer_expired the offer waits and is leased in the background once a lender takes it: get_offer).', MatchRequest, (sdk, a) => sdk.match(a.offerId)),
  act('request_and_match', 'request_credit, then match_offer on the approved offer: the decision and the match (null when refused).', CreditRequest, (sdk, a) => sdk.requestAndMatch(a)),
  act('complete_job', 'Settle a completed job (POST /credit/jobs/{jobId}/complete): the escrow repays its advances.', JobRef, (sdk, a) => sdk.completeJob(a.jobId)),
  act('fail_job', 'Report a job as failed (POST /credit/jobs/{jobId}/fail).', merged(JobRef, JobFailure), (sdk, { jobId, ...body }) => sdk.failJob(jobId, body)),
  act('report_repayment', 'Report an on-chain repay transaction of any amount (POST /credit/advances/{advanceId}/repay): answers what is still owed.', merged(AdvanceRef, RepaymentProof), (sdk, a) => sdk.reportRepayment(a.advanceId, a.txHash as Hash)),
  act('liquidate_advance', 'Liquidate an advance that defaulted (its job failed) or is past due (POST /credit/advances/{advanceId}/liquidate).', AdvanceRef, (sdk, a) => sdk.liquidate(a.advanceId)),

  // The lender.
  act('register_lender', 'Register the wallet as a lender (POST /lenders/register): the session key\'s address and the file the MCP server wrote its private key to (for the user\'s signer; the key never appears here), the spend policy, funding addresses and the unsigned setup transactions the session key signs.', LenderRegistration, registerLender),
  signedRead('lender_actions', 'The lender\'s pending actions (GET /lenders/{address}/actions): leases to pay, each with its unsigned paySupplier, then the session wallet\'s top-up, approve or withdraw transfers.', NoInput, (sdk) => sdk.actions()),
  act('withdraw_liquidity', 'Lower what the service may lend (POST /lenders/{address}/withdraw): the available part at once, what live leases and open advances hold as it comes back; answers the lender profile and the session key\'s unsigned transfer back to the lender\'s wallet, for the user\'s signer.', LiquidityWithdrawal, (sdk, a) => sdk.withdraw(a.amountAtomic)),
  act('report_supplier_payment', 'Report the paySupplier transaction of a leased offer (POST /credit/offers/{offerId}/supplier-payment).', merged(OfferRef, StrictObject({ txHash: RepaymentProof.properties.txHash })), (sdk, a) => sdk.reportSupplierPayment(a.offerId, a.txHash as Hash)),
]
