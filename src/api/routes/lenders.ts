// The lender routes of spec section 4: registration (the session key returned once), profiles, wallets, the pending
// actions (unsigned paySupplier transactions, and the top-up, approve and withdraw transfers of the session wallet)
// and the withdrawal of liquidity.
import Type, { type Static } from 'typebox'
import { requireSame } from '../../auth/guard.ts'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { HttpProblem } from '../../http/problem.ts'
import { findToken } from '../../chain/config.ts'
import { isActiveLender } from '../../engine/rules.ts'
import type { LenderView } from '../../engine/types.ts'
import { payAction, toWire, walletAction } from '../wire.ts'
import { heldPaymentsWire } from './held-payments.ts'
import type { CreditService } from '../../service/credit-service.ts'
import type { AgentLinks } from '../../reputation/links.ts'
import type { SessionKeyRecord } from '../../service/session-keys.ts'
import type { StoredResponse } from '../../store/index.ts'
import type { Hex } from 'viem'
import { Address as AddressSchema, checksum, StrictObject } from '../common.ts'
import { LenderAction, LenderProfile, LenderRegistration, LenderRegistrationResult, LenderWallet, LiquidityWithdrawal, LiquidityWithdrawalResult } from '../schemas.ts'
import { asResult, CHAIN_READS_EXHAUSTED, errors, itemCount, mutate, mutationHeaders, NETWORK_STOPPED, nextPageHeaders, PAGE_SCAN_FACTOR, pageHeaders, pageQuery, RECORD_PAGE, replyWith, WALLET_PAGE } from './shared.ts'

const AddressParams = StrictObject({ address: AddressSchema })
const tags = ['lenders'] as const

const SESSION_KEY_NOTE =
  'The private key is shown once and never stored by the service. Fund the address with gas and the asset, submit the setupTransactions signed by this key, and sign each paySupplier transaction from /lenders/{address}/actions with it.'
const SESSION_KEY_REPLAY_NOTE = 'A replay of an idempotent registration does not repeat the private key: the service never stored it.'

/** A registration's answer as stored for idempotent replays: everything but the private key. */
const registrationResult = (status: 201) => ({ sessionKey, lender }: { sessionKey: SessionKeyRecord; lender: LenderView }) =>
  replyWith(status, LenderRegistrationResult)({
    lender: toWire(lender),
    sessionKey: { address: sessionKey.address, privateKey: null, note: SESSION_KEY_REPLAY_NOTE },
    spendPolicy: toWire(sessionKey.policy),
    fundingAddresses: sessionKey.setupTransactions.map((tx) => ({
      network: tx.network,
      asset: sessionKey.policy.assets[tx.network] as string,
      token: tx.to,
      address: sessionKey.address,
    })),
    setupTransactions: toWire(sessionKey.setupTransactions),
  })

/** The first answer, and only it, carries the private key. */
function withPrivateKey(response: StoredResponse, privateKey: Hex): StoredResponse {
  const body = response.body as Static<typeof LenderRegistrationResult>
  return { ...response, body: { ...body, sessionKey: { address: body.sessionKey.address, privateKey, note: SESSION_KEY_NOTE } } }
}

export function lenderRoutes(service: CreditService, links: AgentLinks): AnyRoute[] {
  const lenderOr404 = (address: string): LenderView => {
    const lender = service.engine.getLender(checksum(address))
    if (lender === undefined || lender.address !== checksum(address)) {
      throw new HttpProblem(404, 'lender_not_found', `no lender ${address}`, { title: 'Not found' })
    }
    return lender
  }

  const wallet = (lender: LenderView) => ({
    lender: lender.address,
    sessionAddress: lender.sessionAddress,
    holdings: lender.networks.map((slug) => {
      const network = service.network(slug)
      const asset = lender.assets[slug] ?? lender.asset
      const holding = service.watcher.holding(slug, asset, lender.sessionAddress)
      return {
        network: slug,
        asset,
        token: findToken(network, asset).address,
        balanceAtomic: holding === undefined ? null : holding.balanceAtomic.toString(),
        allowanceAtomic: holding === undefined ? null : holding.allowanceAtomic.toString(),
        spendableAtomic: service.watcher.spendableAtomic(slug, asset, lender.sessionAddress).toString(),
        blockNumber: holding === undefined ? null : holding.blockNumber.toString(),
      }
    }),
    activity: {
      ...toWire({
        availableAtomic: lender.availableAtomic,
        policyAvailableAtomic: lender.policyAvailableAtomic,
        reservedAtomic: lender.reservedAtomic,
        deployedAtomic: lender.deployedAtomic,
        feesEarnedAtomic: lender.feesEarnedAtomic,
        lossesAtomic: lender.lossesAtomic,
        withdrawnAtomic: lender.withdrawnAtomic,
        withdrawalPendingAtomic: lender.withdrawalPendingAtomic,
      }),
      leasesGranted: lender.leasesGranted,
      leasesPaid: lender.leasesPaid,
      leasesExpired: lender.leasesExpired,
      advancesRepaid: lender.advancesRepaid,
      advancesDefaulted: lender.advancesDefaulted,
      liveLeases: service.engine.liveLeasesOf(lender.address).length,
    },
    heldPayments: heldPaymentsWire(service, [lender.sessionAddress, lender.address]),
  })

  return [
    defineRoute({
      method: 'get',
      path: '/lenders',
      operationId: 'listLenders',
      callers: 'public',
      summary: 'List active lender agents (reliability at or above the matching floor), in registration order',
      description:
        'Public, paged in registration order (?limit=, ?after=; Link rel="next"): lenders whose reliability is at or above the matching floor. A page costs the rate limit its item count.',
      tags,
      auth: 'none',
      query: pageQuery(RECORD_PAGE),
      cost: itemCount,
      responses: { 200: { description: `Lender profiles; Link rel="next" (and next-after) name the next page, which may start before ${PAGE_SCAN_FACTOR} x limit lenders were all active`, schema: Type.Array(LenderProfile), headers: pageHeaders } },
      handler: (ctx) => {
        const limit = ctx.query.limit ?? RECORD_PAGE.default
        const { items, nextAfterSeq } = service.engine.lendersPage(ctx.query.after ?? 0, limit, limit * PAGE_SCAN_FACTOR, (l) => isActiveLender(l, service.engine.config))
        return asResult({ ...replyWith(200, Type.Array(LenderProfile))(toWire(items)), headers: nextPageHeaders('/lenders', limit, nextAfterSeq) })
      },
    }),

    defineRoute({
      method: 'post',
      path: '/lenders/register',
      operationId: 'registerLender',
      callers: 'the signed-in wallet becomes the lender',
      summary: 'Register a lender agent profile; returns a session key (once), the spend policy, funding addresses and setup transactions',
      description:
        'The signed-in wallet becomes the lender. availableLiquidityAtomic caps what the session key may spend (the approve of the setup transaction). ' +
        'minFeeBps is the lender\'s ask rate: the fee of an advance is ceil(amount x minFeeBps / 10000).',
      tags,
      auth: 'session',
      body: LenderRegistration,
      headers: mutationHeaders,
      responses: {
        201: { description: 'The lender profile with its session key and funding instructions', schema: LenderRegistrationResult },
        403: { description: 'agent_not_controlled: the signed-in wallet is not the agent\'s wallet, owner or approved operator on chain (nothing recorded).' },
        409: { description: 'This wallet is already registered as a lender (code lender_exists), or the agent already backs another lender (agent_already_linked).' },
        422: { description: 'idempotency_key_reused; agent_registry_unknown (not the network\'s identity registry), agent_not_found (no such token).' },
        429: {
          description:
            'lender_registrations_client_full (with Retry-After: when the service may remove this client\'s oldest waiting registration): lendersPendingPerClientMax registrations from this client address (an IPv6 client\'s /64) wait for their session wallet\'s first funds; funding one frees its place at once; nothing recorded. ' +
            'Or, when the rate limit is on, rate_limited (with Retry-After; RateLimit says what is left).',
        },
        503: { description: `With agent: the agent's network cannot be read (code chain_unavailable; nothing recorded); retry. Or: ${CHAIN_READS_EXHAUSTED} Or, the agent's network or one of networks: ${NETWORK_STOPPED} Or lender_registrations_full (with Retry-After): as many registrations as the service keeps wait for their session wallet to be funded (lendersPendingMax); nothing recorded.` },
      },
      handler: (ctx) => {
        // Read before any await: the address of a client gone meanwhile is no longer known.
        const { clientKey } = ctx
        return mutate(service, ctx, async (ticket) => {
          // The agent is verified on chain first (the only await); its claim is checked synchronously just before the command.
          const agent = ctx.body.agent === undefined ? undefined
            : await links.prepare(ctx.session.address, clientKey, { network: ctx.body.agent.network, registry: checksum(ctx.body.agent.registry), agentId: BigInt(ctx.body.agent.agentId) })
          const evidence = agent === undefined ? undefined : { reputationBps: agent.reputationBps, records: agent.claim() }
          const { response, privateKey } = await service.registerLender(
            { ticket, encode: registrationResult(201) },
            ctx.session.address,
            clientKey,
            {
              availableLiquidityAtomic: BigInt(ctx.body.availableLiquidityAtomic),
              asset: ctx.body.asset,
              ...(ctx.body.assets === undefined ? {} : { assets: ctx.body.assets }),
              networks: ctx.body.networks,
              minFeeBps: ctx.body.minFeeBps,
              maxDurationSeconds: ctx.body.maxDurationSeconds,
              acceptedRiskBands: ctx.body.acceptedRiskBands,
            },
            evidence,
          )
          return withPrivateKey(response, privateKey)
        })
      },
    }),

    defineRoute({
      method: 'post',
      path: '/lenders/{address}/session-key',
      operationId: 'rotateLenderSessionKey',
      callers: 'that lender',
      summary: 'Replace the session key of a registration that did nothing yet: the way back when the registration\'s answer, the only one with the private key, was lost',
      description:
        'The lender only, with an empty body. A registration whose answer was lost cannot be answered again with its private key (an idempotent replay carries privateKey null: the service never stored it), and the wallet cannot register again (409 lender_exists) until the unfunded-lender sweep removes the registration, lenderUnfundedTtlSeconds (24 h by default) after it was made. ' +
        'This gives the registration a new session key: answered as a registration is (201, the private key once; a replay with the same Idempotency-Key carries privateKey null, and a new key may be asked for again), with the same spend policy, networks and assets, and new setupTransactions and funding address. ' +
        'Only while the lender did nothing but register (never leased, lent or earned; no withdrawal pending) and for lenderUnfundedTtlSeconds after its registration; the registration keeps its place and time, so the sweep removes it, unfunded, when it would have removed the first. The old session wallet is no longer followed: what it holds stays with the old key.',
      tags,
      auth: 'session',
      params: AddressParams,
      body: StrictObject({}),
      headers: mutationHeaders,
      responses: {
        201: { description: 'The lender profile with its new session key and funding instructions', schema: LenderRegistrationResult },
        ...errors.forbidden,
        ...errors.notFound('lender'),
        409: { description: 'session_key_not_replaceable: the lender has leased, lent or earned, or a withdrawal is pending, or it registered lenderUnfundedTtlSeconds ago or more (nothing recorded); or a request with the same Idempotency-Key is still running (idempotency_in_flight).' },
        422: { description: 'The Idempotency-Key was used with another body (code idempotency_key_reused).' },
        429: { description: 'lender_registrations_client_full (with Retry-After), as for a registration: the new session wallet waits for funds from this client address, which has lendersPendingPerClientMax waiting besides the old one; nothing recorded. Or rate_limited (with Retry-After).' },
        503: { description: `One of the lender's networks: ${NETWORK_STOPPED} Or lender_registrations_full (with Retry-After; only for a lender whose old wallet was funded): lendersPendingMax registrations wait for funds; nothing recorded.` },
      },
      handler: (ctx) => {
        requireSame(ctx.session.address, ctx.params.address, `the session key of lender ${ctx.params.address}`)
        const lender = lenderOr404(ctx.params.address)
        const { clientKey } = ctx
        return mutate(service, ctx, async (ticket) => {
          const { response, privateKey } = await service.rotateSessionKey({ ticket, encode: registrationResult(201) }, ctx.session.address, lender.address, clientKey)
          return withPrivateKey(response, privateKey)
        })
      },
    }),

    defineRoute({
      method: 'get',
      path: '/lenders/wallets',
      operationId: 'listLenderWallets',
      callers: 'public',
      summary: 'List registered lender wallets: session-key balances and allowances per network, and lending activity',
      description:
        'Public, paged in registration order with small pages (?limit= up to 200, default 20; Link rel="next"): each lender\'s session-key balance and allowance per network as the chain watcher last read them, and its lending activity. A page costs the rate limit its item count.',
      tags,
      auth: 'none',
      query: pageQuery(WALLET_PAGE),
      cost: itemCount,
      responses: { 200: { description: 'Wallet balances and activity; Link rel="next" (and next-after) name the next page', schema: Type.Array(LenderWallet), headers: pageHeaders } },
      handler: (ctx) => {
        const limit = ctx.query.limit ?? WALLET_PAGE.default
        const { items, nextAfterSeq } = service.engine.lendersPage(ctx.query.after ?? 0, limit, limit)
        return asResult({ ...replyWith(200, Type.Array(LenderWallet))(items.map(wallet)), headers: nextPageHeaders('/lenders/wallets', limit, nextAfterSeq) })
      },
    }),

    defineRoute({
      method: 'get',
      path: '/lenders/{address}/wallet',
      operationId: 'getLenderWallet',
      callers: 'public',
      summary: 'Inspect one lender wallet',
      description:
        'Public. One lender\'s session-key balance and allowance to the credit contract per network, from the chain watcher, and its lending activity. ' +
        'heldPayments: what the credit contract holds for the session wallet (or the lender\'s own) because the token refused it (a blacklisted wallet), with the unsigned claimHeld that delivers it once the token accepts the wallet (as GET /credit/held-payments/{address}).',
      tags,
      auth: 'none',
      params: AddressParams,
      responses: { 200: { description: 'Wallet balance and activity', schema: LenderWallet }, ...errors.notFound('lender') },
      handler: (ctx) => asResult(replyWith(200, LenderWallet)(wallet(lenderOr404(ctx.params.address)))),
    }),

    defineRoute({
      method: 'get',
      path: '/lenders/{address}/actions',
      operationId: 'listLenderActions',
      callers: 'that lender',
      summary: 'List pending wallet funding actions: each live lease with its signed lease authorization and unsigned paySupplier transaction, then the session wallet\'s top-up, approve or withdraw',
      description:
        'pay_supplier (first, oldest lease first): sign each transaction with the session key and send it before the lease expires (the authorization\'s deadline); then report its hash to POST /credit/offers/{offerId}/supplier-payment. The contract pays only what the authorization says, from its payer to its supplier. ' +
        'Then, per network, what brings the session wallet to the lender\'s policy (its available liquidity plus its live leases there), from the chain watcher\'s last reading of the wallet: top_up (signer lender: transfer of the shortfall from the lender\'s wallet), approve (signer session_key: the credit contract\'s allowance is short), withdraw (signer session_key: transfer back of what neither the policy nor a live lease needs). ' +
        'Repayments reach the session wallet (the advance\'s lender on chain is its payer), so capital recycles without a top-up; available liquidity never exceeds what the wallet can pay. ' +
        'Just after a payment or repayment of the wallet the answer waits (up to 5 s) for the watcher to read the wallet again; a network it has not read by then has no wallet action in the answer.',
      tags,
      auth: 'session',
      params: AddressParams,
      responses: { 200: { description: 'Pending actions with transaction data', schema: Type.Array(LenderAction) }, ...errors.forbidden, ...errors.notFound('lender') },
      handler: async (ctx) => {
        requireSame(ctx.session.address, ctx.params.address, `the actions of lender ${ctx.params.address}`)
        const lender = lenderOr404(ctx.params.address)
        // Wallet actions from a reading made after the last movement of the wallet (a few ms; at most 5 s, then a
        // network still being re-read is left out).
        await service.walletReadingsSettled(lender.address)
        const actions = [...service.pendingActions(lender.address).map(payAction), ...service.walletActions(lender.address).map(walletAction)]
        return asResult(replyWith(200, Type.Array(LenderAction))(actions))
      },
    }),

    defineRoute({
      method: 'post',
      path: '/lenders/{address}/withdraw',
      operationId: 'withdrawLiquidity',
      callers: 'that lender',
      summary: 'Lower what the service may lend; the answer carries the session key\'s transfer back of what no live lease needs',
      description:
        'The lender only. amountAtomic leaves the lender\'s available liquidity at once; what live leases, open advances and losses hold (up to policyAvailableAtomic + reserved + deployed + losses, not the wallet-bound availableAtomic) is pending and leaves as they come back: a live lease keeps its reservation and can still be paid, a repayment, a recovery or a shortfall advance\'s repayment after its liquidation goes to the withdrawal, never back to lending. The fee part of a repayment comes back to lending: withdraw it too once it arrives. The withdrawal is for good (nothing raises a registration\'s liquidity again); there is no deregistration. ' +
        'No new lease beyond the lowered liquidity; a lender left with nothing available is out of matching. The tokens stay in the session wallet until its key sends them: actions lists the unsigned transfer to the lender\'s wallet (signer session_key), as GET /lenders/{address}/actions does from then on.',
      tags,
      auth: 'session',
      params: AddressParams,
      body: LiquidityWithdrawal,
      headers: mutationHeaders,
      responses: {
        200: { description: 'The lender profile after the withdrawal and the transfers back to send', schema: LiquidityWithdrawalResult },
        400: { description: 'amountAtomic is not > 0 (code invalid_amount).' },
        ...errors.forbidden,
        ...errors.notFound('lender'),
        409: { description: 'More than the lender can withdraw: policyAvailableAtomic + reservedAtomic + deployedAtomic + lossesAtomic - withdrawalPendingAtomic (code withdrawal_exceeds_liquidity; the detail names the figure), or a request with the same Idempotency-Key is still running (idempotency_in_flight).' },
        422: { description: 'The Idempotency-Key was used with another body (code idempotency_key_reused).' },
      },
      handler: (ctx) => {
        requireSame(ctx.session.address, ctx.params.address, `the liquidity of lender ${ctx.params.address}`)
        const lender = lenderOr404(ctx.params.address)
        return mutate(service, ctx, async (ticket) =>
          service.withdrawLiquidity(
            { ticket, encode: (value) => replyWith(200, LiquidityWithdrawalResult)({ lender: toWire(value.lender), actions: value.actions.map(walletAction) }) },
            ctx.session.address,
            lender.address,
            BigInt(ctx.body.amountAtomic),
          ))
      },
    }),
  ]
}
