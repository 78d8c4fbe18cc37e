// The lender's side of the service: registration with a new session key (its record kept beside the engine's), what
// brings each session wallet to its policy (top-up, approval, transfer back), withdrawals, and the live leases'
// authorizations delivered to the lender, and the sweep that removes registrations whose wallet never became able to
// lend. Called through CreditService (credit-service.ts) by src/api/routes/lenders.ts and the app at start-up
// (sessionKeys, to re-watch wallets; the sweep, run periodically).
import { erc20Abi, zeroHash, type Address, type Hex } from 'viem'
import { advanceMinAtomicOf, type TokenConfig } from '../chain/config.ts'
import type { LeaseView, LenderView, RegisterLenderInput } from '../engine/types.ts'
import { EngineRefusedError, fail } from '../engine/errors.ts'
import type { RecordCollection, RecordWrite, StoredResponse } from '../store/index.ts'
import type { ServiceCore } from './core.ts'
import type { DeliveredLease } from './lease-delivery.ts'
import type { Mutation } from './mutation.ts'
import { newSessionKey, type SessionKeyRecord } from './session-keys.ts'
import { walletActions as walletActionsFor, type WalletAction } from './wallet-actions.ts'

/** Registrations one pass of the unfunded-lender sweep looks at, at most: one multicall per network reads them. */
export const UNFUNDED_SWEEP_BATCH = 500

/** How often the unfunded-lender sweep runs (again at once while registrations past their time remain). */
export const UNFUNDED_SWEEP_INTERVAL_MS = 60_000

/** Registrations refused while this many lenders are parked (lendersPendingMax): no one is evicted to make room. */
export class LenderRegistrationsFullError extends Error {
  /** The sweep's interval: when room may come back. */
  readonly retryAfterSeconds = UNFUNDED_SWEEP_INTERVAL_MS / 1000
}

/** A client's registration refused while lendersPendingPerClientMax of its registrations wait for funds. */
export class ClientRegistrationsFullError extends Error {
  constructor(
    message: string,
    /** When the sweep may remove the client's oldest waiting registration, unless the client funds one first. */
    readonly retryAfterSeconds: number,
  ) {
    super(message)
  }
}

/**
 * Per client (clientKeyOf), the lender registrations made from it in this process that still wait for their session
 * wallet's first funds: at most lendersPendingPerClientMax at once, so one script cannot fill lendersPendingMax and
 * hold every new lender off for the TTL. A registration stops waiting when the engine first takes its lender into the
 * books (its wallet was seen holding the least advance: `released` from the wallet watcher's update, src/app/app.ts) or
 * when the sweep removes it. Memory: one entry per waiting registration, and a client's map only while it has one; every
 * entry is a parked lender, so lendersPendingMax bounds them. Not stored: after a restart the registrations made
 * before it count against lendersPendingMax only.
 */
export class WaitingRegistrations {
  /** Per client, its waiting registrations' session addresses with when each was made, oldest first. */
  readonly #byClient = new Map<string, Map<Address, number>>()
  readonly #clientOf = new Map<Address, string>()

  constructor(
    private readonly perClientMax: number,
    /** lenderUnfundedTtlSeconds in ms: when the sweep may remove a registration, for Retry-After. */
    private readonly ttlMs: number,
  ) {}

  /**
   * Refuses (ClientRegistrationsFullError) a registration from `client` that has perClientMax waiting, not counting
   * `freed` (a session wallet whose registration the new one replaces).
   */
  admit(client: string, nowMs: number, freed?: Address): void {
    const waiting = this.#byClient.get(client)
    if (waiting === undefined || waiting.size - (freed !== undefined && waiting.has(freed) ? 1 : 0) < this.perClientMax) return
    const oldestMs = waiting.values().next().value as number
    const retryAfterSeconds = Math.max(1, Math.ceil((oldestMs + this.ttlMs + UNFUNDED_SWEEP_INTERVAL_MS - nowMs) / 1000))
    throw new ClientRegistrationsFullError(
      `${waiting.size} lender registrations from this client wait for their session wallet to be funded, the most one client may have; fund one, or retry when the oldest is removed`,
      retryAfterSeconds,
    )
  }

  /** A registration from `client`, with session wallet `sessionAddress`, now waits for funds. */
  add(client: string, sessionAddress: Address, nowMs: number): void {
    let waiting = this.#byClient.get(client)
    if (waiting === undefined) this.#byClient.set(client, (waiting = new Map()))
    waiting.set(sessionAddress, nowMs)
    this.#clientOf.set(sessionAddress, client)
  }

  /** The registration of `sessionAddress` no longer waits (funded or removed): its client's slot is free. */
  released(sessionAddress: Address): void {
    const client = this.#clientOf.get(sessionAddress)
    if (client === undefined) return
    this.#clientOf.delete(sessionAddress)
    const waiting = this.#byClient.get(client) as Map<Address, number>
    waiting.delete(sessionAddress)
    if (waiting.size === 0) this.#byClient.delete(client)
  }

  /** Registrations from `client` that wait. */
  waitingFrom(client: string): number {
    return this.#byClient.get(client)?.size ?? 0
  }

  /** Clients with a registration that waits (what the memory holds). */
  get clients(): number {
    return this.#byClient.size
  }
}

export async function registerLender(
  service: ServiceCore,
  mutation: Mutation<{ sessionKey: SessionKeyRecord; lender: LenderView }>,
  lender: Address,
  /** The client the request came from (RouteContext.clientKey): its waiting registrations are bounded. */
  client: string,
  body: Omit<RegisterLenderInput, 'address' | 'sessionAddress' | 'reputationBps' | 'reliabilityBps'>,
  /** ERC-8004 evidence already verified (src/reputation/links.ts): the initial reputation and the link's writes. */
  evidence?: { reputationBps: number; records: () => RecordWrite[] },
): Promise<{ response: StoredResponse; privateKey: Hex }> {
  const nowMs = service.now()
  // Checked first: a client over its own bound is told so (429), whether or not the service is full.
  service.waitingRegistrations.admit(client, nowMs)
  // Parked lenders are mostly registrations whose wallet was never seen holding anything: each costs memory until the
  // sweep removes it (UnfundedLenderSweep), so at most lendersPendingMax wait at once.
  const parked = service.engine.parkedLenderCount()
  if (parked >= service.config.lendersPendingMax) {
    throw new LenderRegistrationsFullError(`${parked} lender registrations wait for their session wallet to be funded, the most the service keeps; retry later`)
  }
  const networks = [...new Set(body.networks)].map((slug) => service.network(slug))
  const assets: Record<string, string> = {}
  for (const network of networks) {
    const symbol = body.assets?.[network.slug] ?? body.asset
    service.token(network, symbol)
    // The session key's setup transactions and watched wallet are on each network: one that is stopped serves none.
    service.refuseStoppedNetwork(network.slug)
    assets[network.slug] = symbol
  }
  const { privateKey, sessionKey } = newSessionKey(lender, networks, assets, body.availableLiquidityAtomic, nowMs)
  const sessionAddress = sessionKey.address
  const response = await service.apply(
    mutation,
    () => {
      const registered = service.engine.registerLender(
        {
          address: lender,
          sessionAddress,
          availableLiquidityAtomic: body.availableLiquidityAtomic,
          asset: body.asset,
          // The body's own map: the engine refuses one that names a network the lender does not list.
          assets: { ...assets, ...body.assets },
          networks: networks.map((n) => n.slug),
          minFeeBps: body.minFeeBps,
          maxDurationSeconds: body.maxDurationSeconds,
          acceptedRiskBands: body.acceptedRiskBands,
          ...(evidence === undefined ? {} : { reputationBps: evidence.reputationBps }),
        },
        nowMs,
      )
      // Counted in the command's synchronous section, with the checks above: nothing awaits between them, so
      // concurrent registrations from one client cannot all pass the bound. Only a parked lender waits for funds.
      if (registered.ok && service.engine.isParked(lender)) service.waitingRegistrations.add(client, sessionAddress, nowMs)
      // The stored response (idempotent replays) never holds the private key; only this caller gets it.
      return registered.ok ? { ...registered, value: { sessionKey, lender: registered.value } } : registered
    },
    () => [service.sessionKeyRecords.putOp(lender, sessionKey), ...(evidence?.records() ?? [])],
  )
  // Unfunded, the session wallet costs a membership entry only; its first transfer or approval makes it watched.
  for (const network of networks) service.watcher.watchWhenFunded(network.slug, sessionAddress)
  return { response, privateKey }
}

/**
 * A new session key for a registration that did nothing but register (Engine.replaceLenderSession), made less than
 * lenderUnfundedTtlSeconds ago: the way back of a lender whose registration's answer, the only one with the private
 * key, was lost (a replay with the same Idempotency-Key cannot repeat it: it was never stored). Only the signed-in
 * lender; the registration keeps its place and time, so the unfunded-lender sweep removes it when it would have
 * removed the first, and its waiting place moves to the new session wallet: a rotation never adds a registration
 * that waits for funds. The old session wallet is no longer followed; what it holds stays with its key.
 */
export async function rotateSessionKey(
  service: ServiceCore,
  mutation: Mutation<{ sessionKey: SessionKeyRecord; lender: LenderView }>,
  caller: Address,
  lender: Address,
  /** The client the request came from (RouteContext.clientKey). */
  client: string,
): Promise<{ response: StoredResponse; privateKey: Hex }> {
  const nowMs = service.now()
  const registered = service.engine.getLender(lender)
  const old = service.sessionKeyRecords.get(lender)
  if (registered === undefined || old === undefined) throw new EngineRefusedError(fail('not_found', 'lender_not_found', `lender ${lender} is not registered`).error)
  // The client's place is the old wallet's when it waits from this client; a parked lender stays one.
  service.waitingRegistrations.admit(client, nowMs, old.address)
  const parked = service.engine.parkedLenderCount()
  if (!service.engine.isParked(lender) && parked >= service.config.lendersPendingMax) {
    throw new LenderRegistrationsFullError(`${parked} lender registrations wait for their session wallet to be funded, the most the service keeps; retry later`)
  }
  const networks = registered.networks.map((slug) => service.network(slug))
  for (const network of networks) service.refuseStoppedNetwork(network.slug)
  const { privateKey, sessionKey } = newSessionKey(lender, networks, old.policy.assets, old.policy.totalCapAtomic, nowMs)
  const response = await service.apply(
    mutation,
    () => {
      const replaced = service.engine.replaceLenderSession({ lender, caller, sessionAddress: sessionKey.address, registeredAfterMs: nowMs - service.config.lenderUnfundedTtlSeconds * 1000 })
      if (!replaced.ok) return replaced
      service.waitingRegistrations.released(old.address)
      if (service.engine.isParked(lender)) service.waitingRegistrations.add(client, sessionKey.address, registered.registeredAtMs)
      return { ...replaced, value: { sessionKey, lender: replaced.value } }
    },
    () => [service.sessionKeyRecords.putOp(lender, sessionKey)],
  )
  for (const network of networks) {
    service.watcher.forget(network.slug, old.address)
    service.watcher.watchWhenFunded(network.slug, sessionKey.address)
  }
  return { response, privateKey }
}

/** Every session key, to re-watch wallets after a restart. */
export function* sessionKeys(service: ServiceCore): Generator<SessionKeyRecord> {
  for (const { value } of service.sessionKeyRecords.iterate('')) yield value
}

/**
 * Each live lease of `lender` with its authorization (the service's EIP-712 signature over the lease's terms, which
 * the contract checks) and the unsigned paySupplier transaction that carries it, for the session key to send.
 */
export function pendingActions(service: ServiceCore, lender: Address) {
  // The lender polling its own actions re-arms the funding window of a session wallet not yet seen funded.
  const key = service.sessionKeyRecords.get(lender)
  if (key !== undefined) for (const slug of Object.keys(key.policy.assets)) if (service.clients.has(slug)) service.watcher.watchWhenFunded(slug, key.address)
  return service.engine.liveLeasesOf(lender).flatMap((lease) => {
    const delivered = leaseAuthorization(service, lease)
    return delivered === undefined ? [] : [{ lease, ...delivered }]
  })
}

/**
 * What brings each of the lender's session wallets to its policy (wallet-actions.ts): top-up and approve when the
 * wallet is short, the session key's transfer back when it holds more than the policy and its live leases need.
 */
export function walletActions(service: ServiceCore, lender: Address): WalletAction[] {
  const record = service.engine.getLender(lender)
  if (record === undefined) return []
  return record.networks.flatMap((slug) => {
    const asset = record.assets[slug] ?? record.asset
    return walletActionsFor({
      lender: record.address,
      sessionAddress: record.sessionAddress,
      network: service.network(slug),
      asset,
      policyAvailableAtomic: record.policyAvailableAtomic,
      reservedAtomic: service.engine.walletReservedAtomic(record.address, slug, asset),
      // A reading older than a payment or repayment the engine applied would show its amount as surplus or shortfall.
      holding: service.watcher.isCurrent(slug, record.sessionAddress) ? service.watcher.holding(slug, asset, record.sessionAddress) : undefined,
    })
  })
}

/** How long GET /lenders/{address}/actions waits for a current reading of the lender's session wallets. */
export const WALLET_READING_WAIT_MS = 5_000

/**
 * Resolves once the watcher's readings of the lender's session wallets are current (no payment or repayment applied
 * since they were read, watcher.isCurrent), or after `timeoutMs`; never rejects. A wallet action computed from an older
 * reading would be wrong, so walletActions leaves out a network whose reading is not current: without this wait, a
 * lender asking just after a movement (its own repayment, the follower confirming it) would be told there is nothing
 * to do while the wallet is re-read, which takes one chain read.
 */
export async function walletReadingsSettled(service: ServiceCore, lender: Address, timeoutMs = WALLET_READING_WAIT_MS): Promise<void> {
  const record = service.engine.getLender(lender)
  if (record === undefined) return
  // A watcher that is stopped, or cut off from a network's chain (degraded), reads nothing new: no waiting for it.
  const { watcher } = service
  const settled = () => !watcher.running || record.networks.every((slug) => watcher.isCurrent(slug, record.sessionAddress) || watcher.isDegraded(slug))
  await watcher.waitFor(settled, timeoutMs).catch(() => {})
}

/**
 * The lender lowers what the service may lend (the engine's withdrawLiquidity); the answer carries the transfers
 * back that its session key can send now.
 */
export async function withdrawLiquidity(service: ServiceCore, mutation: Mutation<{ lender: LenderView; actions: WalletAction[] }>, caller: Address, lender: Address, amountAtomic: bigint): Promise<StoredResponse> {
  return service.apply(mutation, () => {
    const withdrawn = service.engine.withdrawLiquidity({ lender, amountAtomic, caller }, service.now())
    if (!withdrawn.ok) return withdrawn
    const actions = walletActions(service, lender).filter((action) => action.kind === 'withdraw')
    return { ...withdrawn, value: { lender: withdrawn.value, actions } }
  })
}

/** The authorization of a live lease and its paySupplier transaction; undefined when the offer left memory or the network has no lease signer. */
export function leaseAuthorization(service: ServiceCore, lease: LeaseView): DeliveredLease | undefined {
  const offer = service.engine.getOffer(lease.offerId)
  // A closing offer on a job was withdrawn by the job's failure: the contract refuses payments for a failed job
  // (JobNotOpen), so the lease is not offered as an action a lender would spend gas on. The lease still ends on chain
  // time, without a penalty (leases.ts).
  if (offer === undefined || (offer.state === 'closing' && offer.source.kind === 'job')) return undefined
  // The key the offer's job was funded under (live while an offer on it is), which the contract finds the job by.
  const jobKey = offer.source.kind === 'job' ? service.engine.getJob(offer.source.id)?.jobKey : zeroHash
  if (jobKey === undefined) return undefined
  const network = service.network(lease.network)
  return service.leaseDelivery.deliver(lease, offer, jobKey, network, service.token(network, lease.asset).address, service.engine.config.insuranceShareBps)
}

/** Where the unfunded-lender sweep stopped: the registrationSeq of the last lender it looked at. */
interface SweepCursor {
  afterSeq: number
}

const SWEEP_CURSOR_COLLECTION = 'unfunded-lender-sweep'
const SWEEP_CURSOR_KEY = 'cursor'

function isSweepCursor(value: unknown): value is SweepCursor {
  const afterSeq = (value as Partial<SweepCursor> | null)?.afterSeq
  return typeof value === 'object' && value !== null && Number.isSafeInteger(afterSeq) && (afterSeq as number) >= 0
}

/**
 * Whether `address` is no stranger to the service: money left it for someone else on the service's terms. A
 * registered lender that has paid a lease (an advance funded from its session wallet to a verified supplier), by its
 * lender or session address, or a borrower that repaid an advance. Such a wallet is admitted on its own bounds when
 * strangers hold all callers' store budgets empty (sign-in, keyed requests). Reads memory only. Not standing: a balance
 * (one least advance passed from session wallet to session wallet gave each standing in turn), nor a lease granted
 * and never paid (a party's own lender, leased on the party's own job, kept standing for good): outsider13's findings,
 * test/api/outsider13-standing-rotation.test.ts.
 */
export function walletHasStanding(service: ServiceCore, address: Address): boolean {
  if ((service.engine.getLender(address)?.leasesPaid ?? 0) > 0) return true
  return (service.engine.getBorrower(address)?.advancesRepaid ?? 0) > 0
}

/**
 * The sweep of lender registrations whose session wallet never became able to lend (README, "Lender registrations
 * that never fund"). A pass walks the lenders in registration order from where the last one stopped, up to the first
 * registered less than `ttlMs` ago, at most UNFUNDED_SWEEP_BATCH. A lender that did anything but register (leased,
 * lent or earned: Engine.isUntouchedLender) or that `keep` names is kept. The others' session wallets are read
 * on chain now; one that can pay at least the least advance of its asset (min(balance, allowance to the credit
 * contract) >= advanceMinAtomic) on one of its networks is kept, and the rest are removed, with their session keys,
 * in one commit: GET /lenders/{address} answers 404 and the address may register again. Each registration is looked
 * at once: the cursor is stored, in the pass's one commit, so a restart does not read the kept lenders' wallets
 * again. A network that cannot be read ends the pass without moving the cursor.
 */
export class UnfundedLenderSweep {
  /** The registrationSeq of the last lender looked at (stored: SWEEP_CURSOR_COLLECTION). */
  #afterSeq: number
  #due = false
  readonly #cursor: RecordCollection<SweepCursor>

  constructor(
    private readonly service: ServiceCore,
    private readonly ttlMs: number,
    private readonly keep: (lender: Address) => boolean,
  ) {
    this.#cursor = service.store.collection<SweepCursor>(SWEEP_CURSOR_COLLECTION, { version: 1, validate: isSweepCursor })
    this.#afterSeq = this.#cursor.get(SWEEP_CURSOR_KEY)?.afterSeq ?? 0
  }

  /** Whether the last pass stopped with registrations past their time still to look at. */
  get due(): boolean {
    return this.#due
  }

  /** One pass; resolves with the lenders it removed, once their removal is durable. */
  async run(): Promise<Address[]> {
    const { service } = this
    const cutoffMs = service.now() - this.ttlMs
    const page = service.engine.lendersPage(this.#afterSeq, UNFUNDED_SWEEP_BATCH, UNFUNDED_SWEEP_BATCH)
    const looked: LenderView[] = []
    for (const lender of page.items) {
      if (lender.registeredAtMs > cutoffMs) break
      looked.push(lender)
    }
    const candidates = looked.filter((lender) => !this.keep(lender.address) && service.engine.isUntouchedLender(lender.address))
    const able = await this.#ableToLend(candidates)
    const unable = candidates.filter((lender) => !able.has(lender.sessionAddress))
    let removed: Address[] = []
    // Checked again when the removal is planned, against the watcher's latest reading: a wallet funded after the read
    // above (the watcher saw it able to lend meanwhile) is kept.
    const stillUnable = (): Address[] => unable.filter((lender) => !this.#ableByWatcher(lender)).map((lender) => lender.address)
    const last = looked.at(-1)
    // The cursor moves in the removals' commit (one record a pass that looked at anything, none per request).
    const cursorWrite = last === undefined ? [] : [this.#cursor.putOp(SWEEP_CURSOR_KEY, { afterSeq: last.registrationSeq })]
    await service.run(null, () => service.engine.removeLenders(stillUnable()), (value) => {
      removed = value
      return [...value.map((address) => service.sessionKeyRecords.deleteOp(address)), ...cursorWrite]
    })
    // Its session wallet is no longer followed: a dust wallet would otherwise keep a watch slot until displaced. Its
    // client may register another.
    const gone = new Set(removed)
    for (const lender of candidates) {
      if (!gone.has(lender.address)) continue
      for (const slug of lender.networks) service.watcher.forget(slug, lender.sessionAddress)
      service.waitingRegistrations.released(lender.sessionAddress)
    }
    if (last !== undefined) this.#afterSeq = last.registrationSeq
    this.#due = last !== undefined && looked.length === page.items.length && page.nextAfterSeq !== undefined
    return removed
  }

  /** Whether the wallet watcher's latest reading of `lender`'s session wallet can pay the least advance on one of its networks. */
  #ableByWatcher(lender: LenderView): boolean {
    return lender.networks.some((slug) => {
      const token = this.#tokenOf(lender, slug)
      return this.service.watcher.spendableAtomic(slug, token.symbol, lender.sessionAddress) >= advanceMinAtomicOf(token)
    })
  }

  /** The token `lender` lends on network `slug`. */
  #tokenOf(lender: LenderView, slug: string): TokenConfig {
    return this.service.token(this.service.network(slug), lender.assets[slug] ?? lender.asset)
  }

  /** The session wallets among `lenders`' that can pay the least advance on one of their networks, read now. */
  async #ableToLend(lenders: readonly LenderView[]): Promise<Set<Address>> {
    const able = new Set<Address>()
    const byNetwork = new Map<string, LenderView[]>()
    for (const lender of lenders) {
      for (const slug of lender.networks) {
        const list = byNetwork.get(slug)
        if (list === undefined) byNetwork.set(slug, [lender])
        else list.push(lender)
      }
    }
    for (const [slug, list] of byNetwork) {
      const network = this.service.network(slug)
      const clients = this.service.clientsOf(slug)
      const tokens = list.map((lender) => this.#tokenOf(lender, slug))
      const results = await clients.publicClient.multicall({
        allowFailure: false,
        contracts: list.flatMap((lender, i) => {
          const token = (tokens[i] as TokenConfig).address
          return [
            { address: token, abi: erc20Abi, functionName: 'balanceOf', args: [lender.sessionAddress] } as const,
            { address: token, abi: erc20Abi, functionName: 'allowance', args: [lender.sessionAddress, network.creditContract] } as const,
          ]
        }),
      })
      list.forEach((lender, i) => {
        const balance = results[2 * i] as bigint
        const allowance = results[2 * i + 1] as bigint
        if ((balance < allowance ? balance : allowance) >= advanceMinAtomicOf(tokens[i] as TokenConfig)) able.add(lender.sessionAddress)
      })
    }
    return able
  }
}
