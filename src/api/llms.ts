// `/llms.txt`: the service described for an agent, with the typical flow of spec section 4 as exact calls. Written
// from the catalog, so the networks, contracts, limits and endpoints it names are the ones the service serves.
import { scoreHowTo } from '../score/howto.ts'
import type { Catalog } from './catalog.ts'
import { noRetryAfterCodeList, retryAfterCodeList } from './retry-after.ts'
import { devnetReclaimDelaySeconds, type DemoAccount } from '../chain/devnet.ts'

/**
 * `devnetAccounts`: the embedded devnet's demo roles (what the service prints at start), given only when it runs that
 * devnet; their keys come from anvil's public development mnemonic, so publishing them gives nothing away.
 */
export function buildLlmsTxt(c: Catalog, devnetAccounts?: readonly DemoAccount[]): string {
  const net = c.networks[0]
  const slug = net?.slug ?? '<network>'
  const asset = net?.assets[0]?.symbol ?? '<asset>'
  // llmstxt.org: sections of `- [name](url): notes`. An endpoint links to its operation in the OpenAPI document
  // (a JSON pointer: `/` in the path is `~1`).
  const operationUrl = (method: string, path: string) => `${c.openapi}#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}`
  const endpointLines = c.endpoints.map((e) => `- [${e.method} ${e.path}](${operationUrl(e.method, e.path)}): ${e.summary}${e.auth === 'session' ? ' [bearer]' : ''}`)
  const networkLines = c.networks.map(
    (n) =>
      `- ${n.slug} (${n.caip2}): credit contract ${n.creditContract}; assets ${n.assets.map((a) => `${a.symbol} ${a.address} (${a.decimals} decimals)`).join(', ')}; ` +
      `x402 facilitator ${n.facilitator.url}${n.rpcUrl ? `; RPC ${n.rpcUrl}` : ''}`,
  )
  return `# ${c.name}

> ${c.description}

Base URL: ${c.baseUrl}. Interface version ${c.version}.
All bodies are JSON. Amounts (...Atomic) are decimal strings in the asset's smallest unit; ...Bps are integers 0..10000;
times (...At) are ISO-8601 UTC (no leap second). Errors are application/problem+json with a stable "code". Unknown fields
and keys given twice are refused. The credit, lender and supplier mutations accept an Idempotency-Key header (the OpenAPI
document lists it per operation; sign-in (POST /auth/session, /auth/session/refresh), /credit-score, /operator/reconcile and the x402
facilitator take none: a nonce and a payment are spent once, a repeated refresh extends no further): a retry with the same key and body from the same wallet on the same path returns the first response
(header Idempotent-Replayed: true) for ${c.limits.idempotencyRetentionSeconds} s. Lists are paged: ?limit= (an integer) and
?after=; follow the Link header's rel="next". Every answer carries X-Request-Id (send your own to correlate) and, while
the rate limit is on, RateLimit-Policy and RateLimit: ${c.limits.rateLimitTokensPerSecond} tokens/s per signed-in wallet (per client address without a
session), burst ${c.limits.rateLimitBurst}; a list page costs its item count; a 429 says Retry-After.

## Docs
- [OpenAPI document](${c.openapi}): every route, schema, error and header (OpenAPI 3.1.0)
- [Service catalog](${c.baseUrl}/.well-known/service.json): networks, contracts, assets, facilitators, rules and limits
- [Supplier directory](${c.baseUrl}${c.suppliers.directory}): the only domains and payout addresses credit pays (public; operators manage it)
- [Health](${c.baseUrl}/health): ok or degraded (a 200 either way): each network's wallet watcher, chain follower and last reconciliation

## Networks
${networkLines.join('\n')}
${devnetAccounts === undefined ? '' : devnetAccountsSection(devnetAccounts)}
## Contracts and unsigned transactions
The catalog's "contracts" is the one statement of the credit contract's ABI (as compiled: functions, events, errors),
the token's ERC-20 ABI, the jobId-to-bytes32 rule (contracts.keys) and which calls need an approve first
(contracts.approvals). You need none of them for the flow but a reclaim (below, under Job: one call you build from the ABI and
contracts.keys): every other on-chain step is served as unsigned transactions
{"to","data","value","chainId","gas"} (plus "network" and "from") to sign with your own key and send in order (the three
GET .../*-transactions routes answer {"network","asset","key","amountAtomic","transactions":[approve, the call]}):
${c.contracts.unsignedTransactions.map((u) => `- ${u.step} (${u.signer}): ${u.route}`).join('\n')}
A payment the token refuses you (a blacklisted address) is held for you in the contract, not lost and blocking nobody
(contracts.heldPayments): GET /credit/held-payments/<you> lists it per network and token (a lender's GET /lenders/<address>/wallet
too, as heldPayments) with "claim", the unsigned claimHeld(token, you); once the token accepts you, anyone sends it.
The contract takes at most ${c.contracts.advancesPerJobMax} advances that still owe on one job (contracts.advancesPerJobMax).

## Sign in (every credit and lender mutation)
1. GET /auth/nonce -> {"nonce", "domain", "chainIds"}
2. Sign an EIP-4361 (SIWE) message with domain "${c.auth.domain}", your address, a chain id from chainIds, that nonce, a uri,
   version 1 and an issued-at time (without them 400 siwe_message_invalid); viem's createSiweMessage({domain, address, uri, version: "1", chainId, nonce}) from viem/siwe writes one.
3. POST /auth/session {"message": "<the message>", "signature": "0x..."} -> {"token"}
4. Send Authorization: Bearer <token>.
A nonce is good for ${c.auth.nonceTtlSeconds} s and one session; a session for ${c.auth.sessionTtlSeconds} s. A wallet holds at most
${c.auth.sessionsPerWalletMax} sessions: signing in beyond that ends its oldest. ${c.auth.revoke.current} ends this session,
${c.auth.revoke.all} every session of the wallet; a revoked token is refused at once (401). Sessions opened: ${perHour(c.auth.signInsPerClientPerHour)}
per client address (429 sign_ins_client_limited beyond), ${perHour(c.auth.signInsPerHour)} from all clients (503 sign_ins_exhausted beyond): keep a session.
Before it ends, ${c.auth.refresh} (no body) extends it in place: the same token, ${c.auth.sessionTtlSeconds} s from then, at most a week after you
signed; it stores nothing new, so it works while sign-ins are exhausted (the SDK refreshes by itself). Then sign in again. Even
then a wallet with standing (a lender that has paid a lease, a borrower that repaid) signs in, and one holding a live session (its new
session replaces its oldest).

## Waiting and retrying
A 429 or 503 changed nothing and recorded nothing; its code says whether to wait:
- With Retry-After: ${retryAfterCodeList()}. Wait that many seconds, then send the same request again (a POST with the same Idempotency-Key and body: it takes effect at most once); give up after a few tries. The SDK (AgentCredit) does this by itself and then throws CreditApiError with the code and retryAfterSeconds; the MCP server's tool error then carries both (structuredContent.error.code and .retryAfterSeconds, and in its text).
- Without Retry-After the service names no time: ${noRetryAfterCodeList()}.

## Typical flow
1. Read the catalog: GET /.well-known/service.json
2. Lender: POST /lenders/register
   {"availableLiquidityAtomic":"1000000000","asset":"${asset}","networks":["${slug}"],"minFeeBps":250,"maxDurationSeconds":2592000,"acceptedRiskBands":["A","B"]}
   -> 201 with sessionKey.privateKey (shown once), fundingAddresses and setupTransactions.
   Send gas and ${asset} to the funding address; sign and send each setup transaction (approve of the credit contract) with the session key.
   Answer lost (a retry with the same Idempotency-Key replays it with privateKey null, and a new registration is 409 lender_exists):
   POST /lenders/<address>/session-key {} -> 201, the same registration with a new session key (private key once), while the lender has
   done nothing but register (else 409 session_key_not_replaceable). The SDK's registerLender does this by itself.
   Optional "agent":{"network":"${slug}","registry":"<identityRegistry of the network>","agentId":"<token id>"} names your ERC-8004 agent:
   the signed-in wallet must be its agent wallet, owner or approved operator (else 403 agent_not_controlled); the initial reputation
   then comes from feedback of the catalog's reputation.trustedClients. GET /lenders/{address}/agent shows the link; it stops counting
   once the wallet no longer controls the agent (re-checked every ${c.reputation.linkRecheckIntervalSeconds} s, or now: POST /lenders/{address}/agent/recheck).
3. Borrower: a repayment source.
   Job: the client (the job's payer) picks an unpredictable id (job_ + a random UUID: ids are one namespace, and whoever funds an id first
   owns it, on any network: a later funding of the id on another network, or under its other key on the same one, is refused 409 job_id_funded_elsewhere; job_1 below stands for it) and gets its unsigned approve + fundJob
   (under the job's key on that network, the catalog's contracts.keys rule; not under the legacy key it names, which anyone who reads it in the calldata can fund first on another network) from
   GET /credit/jobs/job_1/funding-transactions?network=${slug}&asset=${asset}&receivableAtomic=5000000000&agent=<borrower>&client=<client>,
   signs and sends both in order, then the borrower (or the client with the borrower's consent: "borrowerConsent", the borrower's EIP-712
   signature of the catalog's consent, its domain plus the network's chainId and creditContract as verifyingContract, dueAt in unix seconds)
   registers the job (fundingTxHash: the hash of the second, the fundJob; the approve's is refused 422 proof_wrong_contract):
   POST /credit/jobs {"jobId":"job_1","network":"${slug}","asset":"${asset}","agent":"<borrower>","receivableAtomic":"5000000000","dueAt":"<ISO>","fundingTxHash":"0x..."}
   dueAt: when the client pays, in the future and before the client may take its escrow back on chain (the credit contract's
   reclaimDelay() after the funding, the catalog's networks[].reclaimDelaySeconds${devnetAccounts === undefined ? '' : `, ${Number(devnetReclaimDelaySeconds) / 86_400} days on this devnet`}): a later one is 422 job_reclaimable_before_due, naming the latest time.
   Reclaim: from getJob(jobKey).fundedAt + reclaimDelay() on (both read on the credit contract; jobKey: contracts.keys), on a job still open
   on chain (getJob(jobKey).status 1: not settled, failed nor reclaimed) none of whose advances owes anything (getJob(jobKey).outstanding 0,
   else it reverts AdvancesOwed), the client sends reclaimJob(jobKey) to the credit contract itself, from its own wallet (no route serves
   it): the escrow goes back to the client and the job's collateral to the borrower, whoever sends it. So may the borrower, for its
   collateral, where the catalog's networks[].borrowerMayReclaim is true (false: a contract deployed before 2026-11-28, where the
   borrower's call reverts NotClient: only the client may; null: not read yet, call BORROWER_MAY_RECLAIM(), a revert means false).
   The service then ends the job failed (escrow_reclaimed): nobody is suspended nor penalised.
   Collateral (raises capacity and coverage): until the borrower has repaid principal on the network and asset, its job's receivable does not
   count in the coverage (Rules), so a job alone is risk band C (coverageBps 0), which the lender above (bands A and B) does not take: its
   match answers lease null. A fresh borrower posts collateral (band A at a coverage of ${c.rules.riskBandACoverageBps} bps, B at ${c.rules.riskBandBCoverageBps}: Rules) or finds
   lenders of band C. The borrower sends GET /credit/jobs/job_1/collateral-transactions?amountAtomic=...
   (approve + postCollateral), then POST /credit/jobs/job_1/collateral {"amountAtomic":"...","txHash":"<postCollateral tx>"}.
   Or a backing source with hard liquidation value, signed by an attester (EIP-712 domain "${c.attestation.domain.name}" v${c.attestation.domain.version},
   type BackingSource of the catalog's attestation, its service field "${c.attestation.service}": this deployment only):
   POST /credit/backing-sources {"sourceId":"src-1","productType":"asset-backed","agent":"<borrower>","valueAtomic":"...","liquidationValueAtomic":"...","advanceRateBps":5000,"validUntil":"<ISO, signed as unix seconds>","evidenceId":"0x<signature>"}
4. Borrower: POST /credit/request
   {"agent":"<borrower>","network":"${slug}","asset":"${asset}","productType":"job","amountAtomic":"1000000000","purpose":"inference","supplier":"Supplier","supplierDomain":"<domain from GET /suppliers>","repaymentSource":"job_1","maximumFeeAtomic":"100000000"}
   -> {"decision":"approved","offer":{"offerId":"off_1",...}} or {"decision":"declined","reasons":[...]}
   The principal goes only to the supplier directory's addresses: an unknown supplierDomain is declined (supplier_unknown);
   a supplierAddress not among the domain's addresses on the network is declined (supplier_address_unverified); without one,
   the domain's first address there is paid. A lender, a session key, the credit contract, the service's tokens, registries, keys and operators, the zero address or the borrower is never a supplier.
5. Borrower: POST /credit/match {"offerId":"off_1"} -> {"lease":{"leaseId","lender","expiresAt",...}} (lease null: no eligible lender yet,
   and noLease says why: {"reason":"risk_band_not_accepted","detail",...,"passedOver":{...}}; reasons no_funded_lender,
   fee_above_maximum, risk_band_not_accepted, duration_not_offered, amount_above_liquidity, lenders_excluded, lenders_busy,
   scan_bound_reached, offer_expired. Except offer_expired the offer waits: once a lender takes it, it is leased in the
   background, a lease event, within the offer's ${c.limits.offerTtlSeconds} s).
6. Lender: GET /lenders/<address>/actions -> [{"kind":"pay_supplier","lease":{"offerId","expiresAt",...},"transaction":{"to","data","chainId","gas",...}}, ...]. Sign it with the session key, send it
   before expiresAt, then POST /credit/offers/<lease.offerId>/supplier-payment {"lender":"<address>","supplierPaymentId":"<tx hash>"} -> the advance.
   A payment mined by the deadline counts however late it is reported (the service also sees it on chain); a lease
   never paid expires (a report then has no payment to show: 409 lease_expired).
7. Repay: POST /credit/jobs/job_1/complete {} (the job's client; the escrow pays what each advance still owes, lenders first), or
   send the unsigned approve + repay of GET /credit/advances/<advanceId>/repay-transactions (what is still owed,
   lenderOwedAtomic + reserveOwedAtomic; ?amountAtomic= for part of it, ?from= for another payer than the borrower; the payer must hold
   amountAtomic, which the principal never was: it went to the supplier), then POST /credit/advances/<advanceId>/repay {"txHash":"<the repay's hash, the second>"} -> this payment
   and what is still owed ("repaid":true when nothing is). The lender's part is paid first, then the reserve's share; the contract
   never takes more than is owed (an overpayment stays in your wallet). The service counts every repay from the chain
   on its own, in chain order; the report is optional (the fast path) and a payment already counted answers the same receipt.
   Terms broken: POST /credit/jobs/job_1/fail {"reason":"not_delivered","note":"..."} (reason one of not_delivered, late, defective, cancelled,
   other: a code, never free text, since it is signed into the borrower's public passport; the optional note is kept and signed only as
   the keccak256 of its UTF-8 bytes, noteHash: with viem, keccak256 over stringToBytes(note)) suspends the borrower and gives the
   client its whole escrow back at once (a failed job earned nothing: no source revenue to recover). The borrower's leased offers become "closing" (not rematched): a
   lease on another job or a backing source stays payable until its deadline; one on the failed job does not (paySupplier reverts
   JobNotOpen from the failJob's block on, and GET /lenders/<address>/actions stops listing it: do not send it), though a payment
   mined before the failJob still funds its offer, the advance born defaulted; a closing offer unpaid by its deadline ends
   "declined" with no penalty for the lender. POST /credit/advances/<advanceId>/liquidate {} recovers
   in this order: ${c.rules.recoveryOrder.join(', ')}. The collateral pays the lender's part first, then the reserve's
   share (${c.rules.insuranceShareBps} bps of the fee); what is left of it goes back to the borrower once the job's advances are resolved.
   An advance that still owes after its liquidation (the shortfall, and what the insurance reserve paid for it) stays "shortfall":
   the borrower repays it as above (GET /credit/advances/{advanceId}/repay-transactions; lender first, then the reserve); it ends
   "repaid" when nothing is owed, and the borrower's suspension lifts only when nothing is owed on any defaulted or shortfall advance.
8. Lender capital: repayments and recoveries reach the session wallet, so the capital lends again. Every lender view's availableAtomic is
   what the session wallet can pay within the policy (policyAvailableAtomic). After the pay_supplier actions, GET /lenders/<address>/actions lists
   per network what brings the session wallet to the policy, from the service's last reading of the wallet (none before it first holds
   something: fund a new session wallet yourself, as in 2): {"kind":"top_up","signer":"lender","amountAtomic",...,"transaction"} (send it
   from your own wallet), {"kind":"approve","signer":"session_key",...} (the allowance to the credit contract is short),
   {"kind":"withdraw","signer":"session_key",...} (sends back what neither the policy nor a live lease needs).
   Lend less or stop: POST /lenders/<address>/withdraw {"amountAtomic":"..."} (the lender only; at most policyAvailableAtomic + reserved + deployed + losses
   of GET /lenders/<address>/wallet's activity: its availableAtomic is less while the allowance is short, so withdrawing it leaves the rest lent)
   -> {"lender":{...},"actions":[{"kind":"withdraw",...}]}: the available part leaves at once, what live leases, open advances and losses
   hold leaves as they come back (a live lease can still be paid); sign and send the withdraw transfer with the session key. Nothing
   available: out of matching. A withdrawal is for good: no route raises a registration's liquidity again (only fees earned and
   recoveries add to it); to lend more later, register another wallet. There is no deregistration: the profile stays, out of matching while nothing is available. What an
   advance liquidated with a shortfall repays later goes to the withdrawal too; the fee part of every repayment after a withdrawal
   comes back to lending (policyAvailableAtomic, and the lender is matched again while its session wallet can pay). To stop for
   good, withdraw it too when it arrives, or approve 0 to the credit contract with the session key (nothing spendable: no lease it
   could leave unpaid).
The lender pays gas for setup and payment transactions. POST /credit/dispatch {} expires stale leases and rematches offers.

## Live events instead of polling (WebSocket)
Open ${c.stream.url} with Authorization: Bearer <token>. Every text frame is one JSON message (schema: ${c.stream.messages}):
{"type":"hello","epoch","seq",...} first, then {"type":"event","epoch","seq","at","kind":...} in seq order (your wallet's own count: 1, 2, 3, ...), only once durable:
- lender: kind "lease" (state leased carries "action": the same unsigned paySupplier as GET /lenders/<address>/actions; sign, send, report),
  then the lease paid or expired, and kind "advance" (active, repaid, defaulted, liquidated, shortfall);
- borrower: kind "offer" (created, leased, rematched, funded, expired), "advance", "job", "passport" (reputation, suspension);
- a job's client: kind "job" (each job it funded that is registered);
- anyone a payment was held for (a lender, for its session wallet): kind "held_payment" (amountAtomic grew; 0 once claimed).
Keep the last seq and epoch; after a disconnect reconnect with ${c.stream.resume}: nothing missed, nothing repeated, while the
gap is within ${c.stream.retainedEventsMax} events and ${c.stream.retentionSeconds} s and holds at most ${c.stream.queuedEventsMax} of your own. Otherwise (or after a restart: new epoch) you get
{"type":"resync","seq",...}: re-read state over HTTP; events after that seq follow. Read promptly: ${c.stream.queuedEventsMax} undelivered
events close the connection with code 4008 "slow_consumer: ..."; the session's end (its expiry, unless refreshed first; DELETE /auth/session or /auth/sessions, or a sign-in
beyond the wallet's ${c.auth.sessionsPerWalletMax} sessions) closes it with 4001 "session_ended: ...": sign in again and resume. At most ${c.stream.connectionsPerWalletMax} streams per wallet (429 too_many_streams),
${c.stream.connectionsPerClientMax} per client address of any wallets (429 too_many_client_streams), ${c.stream.connectionsMax} in all: then a stream of an address
takes the place of the oldest of the address holding the most, if that one holds two more (closed 4009 "displaced: ...": reconnect later), else 503 streams_full.
Send nothing on it: a data frame closes it with 1003 "unsupported_data: ..." (pings are answered; pinging while more than ${c.stream.socketBufferedBytesMax} bytes, an event and a few pongs wait unread closes it 4008).

## Credit passport (verify without trusting this service)
Every event that changed an agent's credit standing (${c.passport.kinds.join(', ')}) is EIP-712 typed data signed by the
catalog's passport.issuer (${c.passport.issuer}), numbered per agent and chained by prevHash. GET /passport/<address>?limit=&after=<sequence>
(public, paged; Link rel="next") returns them as signed. Check each with viem's verifyTypedData({ address: passport.issuer,
domain: ${JSON.stringify(c.passport.domain)}, types: passport.types, primaryType: "PassportEvent", message: the event without hash and
signature, signature }) and the chain: sequences 1, 2, ... and each prevHash the previous event's hash (zero for the first); details
is canonical JSON (sorted keys, amounts as decimal strings). A changed, reordered or missing event fails these checks.

## Background dispatch
The service follows the credit contract's events on each network (at its confirmations). A SupplierPaid creates the
advance by itself; a lease expires only when the chain is observed past its deadline with no payment, and its offer is
rematched to the next eligible lender (a new lease event, to that lender). Its ticker expires offers that waited
${c.limits.offerTtlSeconds} s, and lifts suspensions whose time came. POST /credit/dispatch {} runs the same step at once.
A borrower need not match again after a lease expired: the offer is rematched in the background.

## Rules
- Fee: ${c.rules.fee}.
- Matching: the lowest ask wins among eligible lenders; ties: ${c.rules.matchingOrder.slice(1).join(', then ')}.
- A lease lasts ${c.limits.leaseTtlSeconds} s: pay by its expiresAt (the authorization's on-chain deadline, whole seconds). Payment, not the report, counts: the service sees the SupplierPaid on chain and creates the advance whether or not, and whenever, you report it; reporting (POST /credit/offers/{id}/supplier-payment) is optional but the fast path, and a report of a payment already seen answers the same advance. A lender whose wallet cannot pay the asset's least advance gets a lease that expires at once (insufficient_balance, not counted among the offer's leases) and waits out of that network's book until its wallet changes (its other networks' books keep it); one whose wallet pays the least advance but not the amount is passed over for that offer only; matching goes on. A new lender enters the books once its session wallet is seen holding the least advance (the catalog's networks[].assets[].advanceMinAtomic).
- Job advance rate ${c.rules.jobAdvanceRateBps} bps of the receivable plus collateral; risk band A at coverage >= ${c.rules.riskBandACoverageBps} bps, B at >= ${c.rules.riskBandBCoverageBps} bps, else C (coverage: what the source and its collateral hold less what its live offers and open advances hold, over the amount); a job's receivable counts in the coverage only when what the collateral leaves unsecured of the amount is within the principal the borrower has repaid on that network and asset, less what its advances and live offers on jobs owe and ask (else only its collateral: the client may fail the job and have its escrow back).
  A job's client may fail it and have its whole escrow back at once, so the receivable secures an advance against its borrower, not against its
  client: a client and a borrower of one party leave the lender the collateral, a backing's liquidation value and the insurance reserve.
- Insurance reserve: ${c.rules.insuranceShareBps} bps of each fee.
- Lender capital: ${c.rules.lenderCapital}
- Limits: body ${c.limits.bodyLimitBytes} bytes; ${c.limits.leasesPerOfferMax} leases per offer; offers wait ${c.limits.offerTtlSeconds} s for a lender; ${c.limits.liveOffersPerBorrowerMax} live offers per borrower (409 live_offers_limit beyond); ${c.limits.advancesPerJobMax} open advances and live offers on one job (409 job_advances_limit beyond); a lender registers at most ${c.limits.registeredLiquidityAtomicMax} (2^128-1) of liquidity; pages of at most ${c.limits.pageLimitMax} (${c.limits.walletPageLimitMax} for /lenders/wallets); first requests with a new Idempotency-Key to an operation whose x-keyed-requests-charged is true (lender and supplier mutations, not the credit path): ${perHour(c.limits.keyedRequestsPerWalletPerHour)} per wallet, ${perHour(c.limits.keyedRequestsPerClientPerHour)} per client address (429 idempotency_keys_limited beyond), ${perHour(c.limits.keyedRequestsPerHour)} from all callers (503 idempotency_keys_exhausted beyond; the same request without a key is never refused by these, so a withdrawal that must go through then goes without one: first read GET /lenders/{address}/wallet (activity.withdrawnAtomic and withdrawalPendingAtomic) to see whether it went through, as a retry without a key runs again).

## Credit score (paid with x402, answered encrypted)
${creditScoreSection(c)}

## Endpoints
${endpointLines.join('\n')}
`
}

/** A budget of the catalog as llms.txt says it: 0 is no bound. */
const perHour = (count: number): string => (count === 0 ? 'unbounded' : `${count} an hour`)

function creditScoreSection(c: Catalog): string {
  const { payment, score } = c.creditScore
  if (payment === null) return `POST ${c.creditScore.path} answers 503 compute_disabled in this deployment (no compute component configured).`
  const howTo = scoreHowTo({
    baseUrl: c.baseUrl,
    caip2: payment.caip2,
    network: payment.network,
    asset: payment.asset,
    assetAddress: payment.assetAddress,
    amountAtomic: payment.amountAtomic,
    payTo: payment.payTo,
  })
  return `${howTo}

Score ${score.min}..${score.max} (formula version ${score.formulaVersion}): ${score.formula}`
}

function devnetAccountsSection(accounts: readonly DemoAccount[]): string {
  return `
## Devnet accounts (TEST ONLY)
The embedded devnet's demo roles: keys from anvil's public development mnemonic, funded on these devnets only. Never
send anything of value to them, on any chain.
${accounts.map((a) => `- ${a.role}: ${a.address} (private key ${a.privateKey})`).join('\n')}
A fresh wallet starts empty: send it gas (ETH) from the deployer and USDC (a token transfer) from the lender, borrower or
jobClient account, on the network it will use (each devnet is its own chain: fund the wallet on each it uses).
`
}
