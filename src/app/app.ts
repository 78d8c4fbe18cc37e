// Assembly of the whole service: networks (a networks file, or the embedded devnet), the LMDB store, the engine
// restored from its snapshots, the chain clients and wallet watcher, the HTTP routes and the expiry ticker.
import { join } from 'node:path'
import { createPublicClient, http, type Address, type PublicClient } from 'viem'
import { buildCatalog, Catalog } from '../api/catalog.ts'
import { ValidationIssue } from '../api/common.ts'
import { wireComponents } from '../api/schemas.ts'
import { payAction } from '../api/wire.ts'
import { buildLlmsTxt } from '../api/llms.ts'
import { API_VERSION, buildOpenApi, openApiRoute, type OpenApiDocument } from '../api/openapi.ts'
import { creditRoutes } from '../api/routes/credit.ts'
import { transactionRoutes } from '../api/routes/transactions.ts'
import { supplierRoutes } from '../api/routes/suppliers.ts'
import { discoveryRoutes } from '../api/routes/discovery.ts'
import { heldPaymentRoutes, heldPaymentWire } from '../api/routes/held-payments.ts'
import { lenderRoutes } from '../api/routes/lenders.ts'
import { reputationRoutes } from '../api/routes/reputation.ts'
import { passportRoutes } from '../api/routes/passport.ts'
import { ReputationReader } from '../reputation/index.ts'
import { AgentLinks } from '../reputation/links.ts'
import { creditScoreRoute } from '../api/routes/score.ts'
import { stoppedNetworkRefusal } from '../api/routes/shared.ts'
import { inspectRoutes } from '../api/routes/inspect.ts'
import { Inspector } from '../inspect/inspector.ts'
import { INSPECT_LIVE_PATH, InspectorLive } from '../inspect/live.ts'
import { authRoutes, NonceResponse, SessionRequest, SessionResponse } from '../auth/routes.ts'
import { DEFAULT_NONCE_TTL_MS, SiweAuth, type AuthService } from '../auth/siwe.ts'
import { createNetworkClients, networkChain, type NetworkClients } from '../chain/clients.ts'
import { absentContractMessage, clientOnlyReclaimMessage, olderContractMessage, probeCreditContract, ReclaimDelays, readBorrowerMayReclaim, readReclaimDelay } from '../chain/reclaim-window.ts'
import { advanceCapMismatches, contractRoleMismatches, tokenMismatches } from '../chain/deployment-checks.ts'
import { advanceMinAtomicOf, loadNetworksConfig, NetworksConfigError, serviceAddressesOf, type NetworkConfig } from '../chain/config.ts'
import { startDevnet, type DemoAccounts, type Devnet } from '../chain/devnet.ts'
import { offerKey } from '../chain/ids.ts'
import { ensureKeySalt } from '../chain/key-salt.ts'
import { ensurePassportKey, PassportBook } from '../passport/book.ts'
import { WalletWatcher, watcherRpcTimeoutMsDefault } from '../chain/watcher.ts'
import { sharedHeads } from '../chain/poll-transport.ts'
import { ChainFollower } from '../chain/follower.ts'
import { FollowerCursors } from '../chain/follower-cursor.ts'
import { chainEventsPerBatchMax, chainEventWeight } from '../engine/chain-facts.ts'
import { defaultEngineConfig, resolveConfig, type EngineConfig } from '../engine/config.ts'
import { advanceViewFromSnapshot, Engine } from '../engine/engine.ts'
import { SNAPSHOT_VERSIONS, snapshotMigrations } from '../engine/migrations.ts'
import type { StoredSnapshot } from '../engine/engine.ts'
import type { LeaseView, SupplierInput } from '../engine/types.ts'
import { silentLogger, stdoutLogger, type Logger } from '../http/log.ts'
import type { AnyRoute } from '../http/route.ts'
import { StoreBudget } from '../http/rate-limit.ts'
import { startServer, type RunningServer } from '../http/server.ts'
import { ACTOR_KINDS, ENGINE_RECORD_KINDS, Store, StoreOverloadedError, StoreStalledError } from '../store/index.ts'
import { CHANGES_PER_COMMIT_MAX_DEFAULT, RECORD_WRITES_PER_COMMIT_MAX } from '../store/store.ts'
import { assembleCreditScore } from '../score/assembly.ts'
import type { CreditScoreCompute } from '../score/compute.ts'
import { lenderReputationFullStepOf, repaymentMinimumsOf, resolveCreditScore } from '../score/settings.ts'
import { createNetworkFacilitators, servedPayees, wirePayee } from '../x402/facilitator.ts'
import { facilitatorUrl } from '../x402/facilitator-url.ts'
import { facilitatorRoutes, x402Routes } from '../x402/routes.ts'
import { FacilitatorRequest, PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '../x402/schemas.ts'
import { StoreAuthRecords } from '../auth/store-records.ts'
import type { ServiceConfig, SupplierEntry } from './config.ts'
import { CreditService } from '../service/credit-service.ts'
import { periodic } from '../service/periodic.ts'
import { UNFUNDED_SWEEP_INTERVAL_MS, UnfundedLenderSweep } from '../service/lenders.ts'
import { Reconciliation } from '../service/reconciliation.ts'
import { sweepEndedFailureIntents } from '../service/operator-commands.ts'
import { operatorRoutes } from '../api/routes/operator.ts'
import { EVENTS_PATH, eventRoutes } from '../api/routes/events.ts'
import { EventHub, type StreamLimits } from '../stream/hub.ts'
import { streamComponents } from '../stream/messages.ts'

export interface App {
  readonly url: string
  readonly config: ServiceConfig
  readonly networks: readonly NetworkConfig[]
  readonly service: CreditService
  /** The live event stream (GET /events). */
  readonly stream: EventHub
  readonly server: RunningServer
  /** The demo accounts of the embedded devnet (absent with a networks file). */
  readonly demo: DemoAccounts | undefined
  readonly devnet: Devnet | undefined
  /** The ledger against the chain: run at start-up (in the background) and by POST /operator/reconcile. */
  readonly reconciliation: Reconciliation
  /** The sweep of lender registrations that never became able to lend (runs every UNFUNDED_SWEEP_INTERVAL_MS). */
  readonly lenderSweep: UnfundedLenderSweep
  /** The start-up reconciliation (never rejects; an unreachable chain is status unavailable). */
  readonly startupReconciliation: Promise<unknown>
  openApi(): OpenApiDocument
  catalog(): Catalog
  /** Stops accepting, drains in-flight requests, stops the ticker, followers and watcher, closes the store and the devnet. */
  stop(): Promise<void>
}

export interface AppOptions {
  log?: Logger
  clock?: () => number
  /** A devnet started by the caller (tests share one across service restarts); not stopped by `stop()`. */
  devnet?: Devnet
  /** Called when a commit fails: memory is ahead of the disk. Default: log and exit the process. */
  onFatal?: (error: unknown) => void
  /** Check every response against its documented schema (tests). */
  validateResponses?: boolean
  /** Test hook of the store: while it returns true, no group commit starts. */
  holdCommitsWhile?: () => boolean
  /** The /credit-score compute component, instead of the local child process (tests inject one that fails). */
  creditScoreCompute?: CreditScoreCompute
  /** Bounds of the event stream (tests make them small), over the config's `stream`; defaults in src/stream/hub.ts. */
  streamLimits?: Partial<StreamLimits>
}

/**
 * A configured network whose credit contract predates reclaimJob (deployed before the contract changed in place) would
 * answer 503 to every registration and could not decode its jobs: the start is refused, a new deployment is needed
 * (README "Upgrading to reclaimJob"). A network the probe cannot reach, or whose node has no code at the contract (not
 * yet at its deployment block: probeCreditContract's 'absent'), is said in the log and served: its follower and
 * requests retry, as for any outage, and its follower probes again before it applies anything (refuseOlderContract:
 * an older contract stops it, the network's /health says why). A contract whose advancesPerJobMax() is below the
 * service's `advancesPerJobMax` is refused too: the service would lease advances on a job that paySupplier refuses
 * (advanceCapMismatches; at the follower's probe, it stops it: advance_cap_below_service).
 * Returns the slugs of the networks not probed.
 */
async function refuseOlderCreditContracts(source: string, networks: readonly NetworkConfig[], log: Logger, advancesPerJobMax: number): Promise<Set<string>> {
  const older: { path: string; message: string }[] = []
  const unreached = new Set<string>()
  await Promise.all(networks.map(async (network, index) => {
    const publicClient = startupClient(network)
    try {
      const { verdict, head, advancesPerJobMax: contractMax } = await probeCreditContract(publicClient, network.creditContract)
      if (verdict === 'older') older.push({ path: `/networks/${index}/creditContract`, message: olderContractMessage(network.slug, network.creditContract) })
      older.push(...advanceCapMismatches(network, contractMax, advancesPerJobMax).map(({ field, message }) => ({ path: `/networks/${index}/${field}`, message })))
      if (verdict === 'current') {
        const mismatches = [...(await contractRoleMismatches(publicClient, network, head)), ...(await tokenMismatches(publicClient, network, head))]
        older.push(...mismatches.map(({ field, message }) => ({ path: `/networks/${index}/${field}`, message })))
      }
      if (verdict === 'absent') {
        unreached.add(network.slug)
        log({ level: 'warn', msg: 'credit_contract_not_found', network: network.slug, error: absentContractMessage(network.slug, network.creditContract, head) })
      }
    } catch (error) {
      unreached.add(network.slug)
      log({ level: 'warn', msg: 'credit_contract_probe_failed', network: network.slug, error: String(error) })
    }
  }))
  if (older.length > 0) throw new NetworksConfigError(source, older)
  return unreached
}

/** A client for the start-up's reads, bounded: an RPC that hangs delays the start by seconds, not by the client's default retries. */
function startupClient(network: NetworkConfig) {
  return createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl, { retryCount: 1, timeout: 5_000 }) })
}

/**
 * Each network's credit contract's reclaimDelay() in seconds, for the catalog (a job's dueAt must come before its
 * client may reclaim the escrow), and its BORROWER_MAY_RECLAIM(): read at the start, both immutable. A network not probed
 * (`unprobed`: its RPC unreachable, no code at the contract yet) is not read yet, one whose read fails is said in the
 * log (either value: each one read is kept): those are null in the catalog until read again (ReclaimDelays.readMissing:
 * when the catalog is asked for, when the follower recovers).
 */
async function readReclaimDelays(networks: readonly NetworkConfig[], unprobed: ReadonlySet<string>, log: Logger, warned: Set<string>): Promise<ReclaimDelays> {
  const delays = new ReclaimDelays(networks, {
    readDelay: (network) => readReclaimDelay(startupClient(network), network.slug, network.creditContract),
    readBorrowerMayReclaim: (network) => readBorrowerMayReclaim(startupClient(network), network.creditContract),
  })
  await Promise.all(networks.filter((n) => !unprobed.has(n.slug)).map(async (network) => {
    try {
      await delays.read(network.slug)
    } catch (error) {
      log({ level: 'warn', msg: 'reclaim_delay_not_read', network: network.slug, error: String(error) })
    }
    warnClientOnlyReclaim(delays, network, log, warned)
  }))
  return delays
}

/**
 * Said once per network, when its rule is read (at the start, or once its RPC answers): a credit contract deployed
 * before 2026-11-28 takes the client's reclaimJob only, though the service's texts describe the borrower's too (the
 * catalog's networks[].borrowerMayReclaim says which).
 */
function warnClientOnlyReclaim(delays: ReclaimDelays, network: NetworkConfig, log: Logger, warned: Set<string>): void {
  if (delays.borrowerMayReclaim(network.slug) !== false || warned.has(network.slug)) return
  warned.add(network.slug)
  log({ level: 'warn', msg: 'credit_contract_client_only_reclaim', network: network.slug, creditContract: network.creditContract, error: clientOnlyReclaimMessage(network.slug, network.creditContract) })
}

/** The devnet's demo roles become the configuration a real deployment writes in its config file. */
function devnetDefaults(config: ServiceConfig, accounts: DemoAccounts): ServiceConfig {
  const supplier: SupplierEntry = { domain: 'supplier.devnet', name: 'Devnet demo supplier', address: accounts.supplier.address }
  return {
    ...config,
    operators: config.operators.length > 0 ? config.operators : [accounts.operator.address],
    attesters: config.attesters.length > 0 ? config.attesters : [accounts.attester.address],
    suppliers: config.suppliers.length > 0 ? config.suppliers : [supplier],
  }
}

/** A configured supplier as a directory entry: a single `address` pays on every network the service runs. */
function supplierInput(entry: SupplierEntry, networks: readonly NetworkConfig[]): SupplierInput {
  const addresses = entry.addresses ?? Object.fromEntries(networks.map((n) => [n.slug, [entry.address as Address]]))
  return { domain: entry.domain, name: entry.name, addresses }
}

/** Everything the store holds that the engine needs back: every record, and the live (non-final) actors only. */
export function* storedSnapshots(store: Store): Generator<StoredSnapshot> {
  for (const kind of ENGINE_RECORD_KINDS) {
    for (const { id, entry } of store.iterateKind(kind)) yield { kind, id, record: entry.snapshot }
  }
  for (const kind of ACTOR_KINDS) {
    for (const { id, entry } of store.iterateLive(kind)) yield { kind, id, record: entry.snapshot }
  }
}

export async function startApp(baseConfig: ServiceConfig, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? (baseConfig.requestLog ? stdoutLogger : silentLogger)
  const clock = options.clock ?? Date.now
  const cleanups: Array<() => Promise<void> | void> = []
  const cleanup = async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn()
  }

  try {
    let devnet = options.devnet
    let networks: NetworkConfig[]
    /** Networks whose credit contract the start-up probe could not read, or found no code at: their followers probe it again. */
    let unprobed = new Set<string>()
    let config = baseConfig
    // What the credit contracts must take: the advances per job the engine is configured to lease.
    const advancesPerJobMax = config.engine.advancesPerJobMax ?? defaultEngineConfig.advancesPerJobMax
    if (config.networksFile !== undefined) {
      networks = loadNetworksConfig(config.networksFile)
      // A served network must be able to sign lease authorizations: without the credit contract's leaseSigner key
      // the engine would still lease offers that no lender can pay, and each lease would only expire.
      const unsigned = networks.flatMap((n, i) => (n.leaseSignerPrivateKey === undefined ? [{ path: `/networks/${i}/leaseSignerKeyEnv`, message: `required: ${n.slug} has no key to sign lease authorizations, so no lease there could be paid` }] : []))
      if (unsigned.length > 0) throw new NetworksConfigError(config.networksFile, unsigned)
      unprobed = await refuseOlderCreditContracts(config.networksFile, networks, log, advancesPerJobMax)
    } else {
      if (devnet === undefined) {
        // The chains keep their state beside the store: a restart finds the escrows and balances its records name.
        // What they say about that state (loaded, set aside, fresh) joins the service's own structured log.
        devnet = await startDevnet({ stateDir: join(config.dataDir, 'devnet'), log, advancesPerJobMax: BigInt(advancesPerJobMax) })
        const started = devnet
        cleanups.push(() => started.stop())
      }
      networks = devnet.networks
      config = devnetDefaults(config, devnet.accounts)
    }
    /** The networks whose client-only reclaim rule was said (credit_contract_client_only_reclaim: once per network). */
    const clientOnlyWarned = new Set<string>()
    const reclaimDelays = await readReclaimDelays(networks, unprobed, log, clientOnlyWarned)
    const publishRpcUrls = config.networksFile === undefined
    const creditScoreSettings = resolveCreditScore(config.creditScore, networks, { devnetPayee: devnet?.accounts.scorePayee.address })
    // Each x402 facilitator settles only for the payees this service serves: the credit score's and the configured ones.
    const paidResources = creditScoreSettings === null ? [] : [{ network: creditScoreSettings.network.slug, payTo: creditScoreSettings.payTo, amountAtomic: creditScoreSettings.priceAtomic }]
    const facilitatorPayees = servedPayees(networks, config.x402FacilitatorPayees, paidResources)
    // The paid resources' own payees, which only those resources settle (src/x402/routes.ts facilitatorRoutes); a payee
    // the operator also configured for the facilitator stays settleable through its public route.
    const resourceOnlyPayees = (slug: string): Set<string> => {
      const configured = new Set((config.x402FacilitatorPayees[slug] ?? []).map((payee) => payee.toLowerCase()))
      return new Set(paidResources.filter((p) => p.network === slug && !configured.has(p.payTo.toLowerCase())).map((p) => p.payTo.toLowerCase()))
    }

    const engineConfig = resolveConfig({
      ...config.engine,
      leaseTtlMs: config.leaseTtlSeconds * 1000,
      offerTtlMs: config.offerTtlSeconds * 1000,
      operators: config.operators,
      advanceMinAtomic: Object.fromEntries(networks.map((n) => [n.slug, Object.fromEntries(n.tokens.map((t) => [t.symbol, advanceMinAtomicOf(t)]))])),
      // A lender's reputation moves by a whole step at the principal the credit score counts a repayment at: one constant.
      lenderReputationFullStepAtomic: lenderReputationFullStepOf(networks),
      // The credit contract and the service's other addresses are never suppliers (src/engine/suppliers.ts).
      serviceAddresses: Object.fromEntries(networks.map((n) => [n.slug, serviceAddressesOf(n)])),
    })
    checkChangeBudget(engineConfig)
    const store = await Store.open({
      dataDir: config.dataDir,
      durability: config.durability,
      snapshotVersions: SNAPSHOT_VERSIONS,
      migrations: snapshotMigrations(),
      clock,
      idempotencyRetentionMs: config.idempotencyRetentionSeconds * 1000,
      ...(options.holdCommitsWhile ? { holdCommitsWhile: options.holdCommitsWhile } : {}),
      // After a crash the deep check runs beside the engine's restore: both are seconds (issue 11).
      deepCheckBesideReads: true,
    })
    cleanups.push(() => store.close())

    // Each network's head is read once for its two pollers, the watcher and the chain follower (issue 11: idle CPU), at
    // the watcher's deadline: a head read is the cheapest call, and a slow one delays the wallets' readings too.
    const heads = sharedHeads(networks, { timeoutMs: watcherRpcTimeoutMsDefault })
    // A session wallet with a live lease keeps its watch slot: its lender must be able to pay what it was leased. The
    // watcher asks only once it runs (after start-up), when the engine below exists.
    const keepsSlot = (network: string, holder: Address): boolean => engine.liveLeasesOf(holder).some((lease) => lease.network === network)
    const watcher = new WalletWatcher(networks, { holdersMax: config.walletsWatchedPerNetworkMax, unfundedWindowMs: config.unfundedWalletWindowSeconds * 1000, nowMs: clock, heads, keepsSlot })
    // Until the deep check has passed (store.checked()) this start only reads: nothing written, nothing served. The
    // engine reads the salt below only for offers made once the service runs, after it is made (a write, if new).
    let engine: Engine
    try {
      engine = new Engine(engineConfig, watcher, storedSnapshots(store), (offerId) => offerKey(keySalt, offerId))
      engine.checkInvariants()
    } catch (error) {
      // Damage can make the restore fail: then the check's refusal is the error to report.
      await store.checked()
      throw error
    }
    await store.checked()
    // Offer keys on chain are salted per data directory (not guessable from ids, issue 10 hole 1).
    const keySalt = await ensureKeySalt(store)
    if (!store.cleanStart) {
      // The previous process died: ids it minted in memory may have been lost with it. None is minted again.
      const jumped = engine.advanceSequences()
      if (jumped.ok) await store.commit({ changes: jumped.changes })
      log({ level: 'warn', msg: 'unclean_start_ids_advanced', ...(jumped.ok ? jumped.value : {}) })
    }

    const clients = new Map<string, NetworkClients>(networks.map((n) => [n.slug, createNetworkClients(n)]))
    // The passport's issuer key: the configured one (PASSPORT_ISSUER_KEY), else the data directory's own, made on its
    // first start (the devnet's default). Its address is in the catalog.
    const passport = new PassportBook(store, config.passportIssuerKey ?? (await ensurePassportKey(store)))
    const service = new CreditService({ config, engine, store, networks, clients, watcher, clock, passport })
    // A commit that fails, or the store's failure (a write transaction the disk refused or that never settled, even
    // one that carried no request), stops the process: memory is ahead of the disk, a restart recovers from the store
    // (README Persistence, "When the disk refuses a write"). One line with the native error, exit 70.
    const fatal = options.onFatal ??
      ((error: unknown) => {
        stdoutLogger({ level: 'error', msg: 'commit_failed_exiting', error: String(error) })
        // A write that never returns holds a thread of libuv's pool, which process.exit joins (uv__threadpool_cleanup):
        // the exit would wait for it for ever. The store is crash-safe, so the process is killed instead.
        if (error instanceof StoreStalledError) process.kill(process.pid, 'SIGKILL')
        process.exit(70)
      })
    service.onFatal(fatal)
    store.onFailure(fatal)
    cleanups.push(store.watchStalls(config.storeCommitStallMs))
    // Failure intents of jobs that ended before a reclaim took them with it (probe28): deleted once, before anything runs.
    const swept = await sweepEndedFailureIntents(service)
    if (swept.length > 0) log({ level: 'warn', msg: 'failure_intents_swept', count: swept.length, jobIds: JSON.stringify(swept.slice(0, 20)) })
    await service.seedSuppliers(config.suppliers.map((s) => supplierInput(s, networks)))
    // Every session wallet waits as unfunded; the watcher's first read promotes those holding anything, and each read
    // that finds a wallet changed brings its parked lender back into the books.
    for (const key of service.sessionKeys()) {
      for (const slug of Object.keys(key.policy.assets)) if (clients.has(slug)) watcher.watchWhenFunded(slug, key.address)
    }
    // The operator's check reads a network whose chain follower stopped too (clientsOf refuses requests on it): a
    // replaced chain's stop asks for a reconciliation before resuming.
    const reconciliation = new Reconciliation(service, { clients: (slug) => clients.get(slug) as NetworkClients })
    const links = new AgentLinks(service, new ReputationReader(config.reputation, (slug) => service.clientsOf(slug)))
    // A lender taken into the books no longer waits for funds: its client's place is free (lenders.ts WaitingRegistrations).
    // /health shows the watcher degraded (serving its last known balances and allowances) as it shows the follower: say
    // it in the log too, once per change (operator26: only the follower's warning was logged when the RPC stopped).
    watcher.on('degraded', ({ network, error }) => log({ level: 'warn', msg: 'wallet_watcher_degraded', network, error: String(error) }))
    watcher.on('recovered', ({ network }) => log({ level: 'info', msg: 'wallet_watcher_recovered', network }))
    watcher.on('update', ({ holder }) => {
      if (engine.walletChanged(holder)) service.waitingRegistrations.released(holder)
    })
    // A payment or repayment applied moves the payer's tokens: until the watcher has read the wallet again, its last
    // reading would show the amount as surplus (a withdraw action) or shortfall (a top-up) against the engine's state.
    cleanups.push(service.onDurable((changes) => {
      for (const change of changes) {
        if (change.kind !== 'advance') continue
        const advance = advanceViewFromSnapshot(change.record)
        watcher.invalidate(advance.network, advance.payer)
      }
    }))
    // The event stream follows only durable commits: what it shows a client could never be lost by a crash.
    const stream = new EventHub({ leaseAction: (lease) => deliverable(service, lease), heldPayment: (record) => heldPaymentWire(service, record) }, { ...config.stream, ...options.streamLimits }, clock, undefined, log)
    cleanups.push(service.onDurable((changes) => stream.publish(changes)))
    watcher.start()
    cleanups.push(() => watcher.stop())

    // One chain follower per network: the credit contract's events at the network's confirmations, each batch applied
    // as one engine command committed with the follower's cursor (a SupplierPaid creates its advance whether or not
    // the lender reports it; the observed chain time expires leases). Stopped before the store closes (cleanups run
    // in reverse).
    const cursors = new FollowerCursors(store)
    // A batch is one command: its events are capped so that their changes fit in the engine's change budget.
    const eventsPerBatchMax = chainEventsPerBatchMax(engineConfig)
    // The dispatch ticker's wake, once it runs (below, after the server listens).
    let wakeTicker = () => {}
    for (const network of networks) {
      const follower = new ChainFollower({
        network,
        contract: network.creditContract,
        refuseOlderContract: unprobed.has(network.slug),
        advancesPerJobMax,
        cursor: cursors.get(network.slug, network.creditContract),
        head: heads.get(network.slug),
        chainTimeIntervalMs: config.chainTimeIntervalMs,
        eventsPerBatchMax,
        eventWeight: (event) => chainEventWeight(engineConfig, event.name),
        consume: async (batch) => {
          const outcome = await service.observeChain(batch, cursors.putOp(network.creditContract, batch))
          // A batch that passed more deadlines than its command had room for left leases due: dispatch goes on now.
          wakeTicker()
          // A payment the contract accepted and the engine could not apply is a gap the reconciliation check reports;
          // say it now too. (Events another part applies, payments whose report came first, and collateral of jobs the
          // service does not hold, or not yet, are expected.)
          for (const { proofKey, reason } of outcome?.ignored ?? []) {
            if (!reason.startsWith('not_applied:') && reason !== 'offer_not_live' && reason !== 'job_not_live') log({ level: 'warn', msg: 'chain_fact_not_applied', network: network.slug, proofKey, reason })
          }
        },
      })
      follower.on('degraded', ({ error }) => log({ level: 'warn', msg: 'chain_follower_degraded', network: network.slug, error: String(error) }))
      follower.on('recovered', () => {
        log({ level: 'info', msg: 'chain_follower_recovered', network: network.slug })
        // The RPC answers again: a reclaimDelay() the start could not read is read now, not at the catalog's next ask.
        reclaimDelays.readMissing()
      })
      follower.on('fatal', (error) => log({ level: 'error', msg: 'chain_follower_stopped', network: network.slug, code: error.code, error: error.message }))
      service.followers.set(network.slug, follower)
      follower.start()
      cleanups.push(() => follower.stop())
    }

    // The SIWE domain is the host:port clients reach; with PORT=0 the port is known only after listening.
    let auth: SiweAuth | undefined
    const lateAuth: AuthService = {
      issueNonce: () => (auth as SiweAuth).issueNonce(),
      createSession: (input) => (auth as SiweAuth).createSession(input),
      refresh: (session) => (auth as SiweAuth).refresh(session),
      revoke: (session, all) => (auth as SiweAuth).revoke(session, all),
    }

    let openApi: OpenApiDocument | undefined
    let catalog: Catalog | undefined
    let baseUrl = ''
    const facilitators = createNetworkFacilitators(networks, { payees: facilitatorPayees, chainReads: service.chainReads })
    const creditScore = assembleCreditScore({
      settings: creditScoreSettings,
      facilitators,
      chainReads: service.chainReads,
      store,
      ...(options.creditScoreCompute === undefined ? {} : { compute: options.creditScoreCompute }),
      baseUrl: () => baseUrl,
    })
    cleanups.push(() => creditScore.close())
    const routes: AnyRoute[] = []
    // The x402 facilitator and /credit-score pay on a network's chain through their own clients, not clientsOf.
    const refuseStoppedNetwork = stoppedNetworkRefusal(service)
    const catalogOf = (): Catalog =>
      (catalog ??= buildCatalog({
        baseUrl,
        authDomain: auth?.domain ?? '',
        auth: { nonceTtlSeconds: DEFAULT_NONCE_TTL_MS / 1000, sessionTtlSeconds: config.sessionTtlSeconds, sessionsPerWalletMax: config.sessionsPerWalletMax },
        storeBudgets: config,
        routes,
        networks,
        reclaimDelaySeconds: (n) => reclaimDelays.get(n.slug),
        borrowerMayReclaim: (n) => reclaimDelays.borrowerMayReclaim(n.slug),
        publishRpcUrls,
        facilitatorUrl: (n) => facilitatorUrl(n, { baseUrl }),
        facilitatorPayees: (n) => (facilitators.find((f) => f.network.slug === n.slug)?.payees ?? []).map(wirePayee),
        engine: engine.config,
        attesters: config.attesters,
        passportIssuer: service.passport.issuer,
        operators: config.operators,
        bodyLimitBytes: config.bodyLimitBytes,
        creditScore: creditScore.offer(baseUrl),
        reputation: config.reputation,
        idempotencyRetentionSeconds: config.idempotencyRetentionSeconds,
        rateLimitPerSecond: config.rateLimitPerSecond,
        stream: stream.limits,
      }))
    let llms: string | undefined
    /** Counts the values read after the start: the HTTP layer serves the catalog and llms.txt built again (a new ETag). */
    let documentsRevision = 0
    const documentsRevisionNow = (): number => {
      // Asked at each request of either document: a network's reclaimDelay() not read yet is tried again (at most every
      // reclaimDelayRetryMs, in the background); once read, the documents are built again with it (below).
      reclaimDelays.readMissing()
      return documentsRevision
    }
    reclaimDelays.onRead((slug, read) => {
      catalog = undefined
      llms = undefined
      documentsRevision++
      log({ level: 'info', msg: 'reclaim_delay_read', network: slug, ...read })
      const network = networks.find((n) => n.slug === slug)
      if (network !== undefined) warnClientOnlyReclaim(reclaimDelays, network, log, clientOnlyWarned)
    })
    routes.push(
      ...discoveryRoutes(service, { catalog: catalogOf, llmsTxt: () => (llms ??= buildLlmsTxt(catalogOf(), devnet === undefined ? undefined : Object.values(devnet.accounts))), revision: documentsRevisionNow, provisional: () => networks.some((n) => reclaimDelays.get(n.slug) === null || reclaimDelays.borrowerMayReclaim(n.slug) === null), version: API_VERSION, reconciliation, store }),
      openApiRoute(() => (openApi ??= documentOf(routes, baseUrl, config))),
      ...authRoutes(lateAuth),
      ...creditRoutes(service),
      ...transactionRoutes(service),
      ...supplierRoutes(service),
      ...lenderRoutes(service, links),
      ...heldPaymentRoutes(service),
      ...reputationRoutes(service, links),
      ...passportRoutes(service),
      ...operatorRoutes(service, reconciliation),
      ...eventRoutes(stream.limits, () => catalogOf().stream),
      ...facilitators.flatMap((facilitator) => facilitatorRoutes(facilitator, refuseStoppedNetwork, resourceOnlyPayees(facilitator.network.slug))),
      creditScoreRoute({ paid: creditScore.paid, engine, passport: service.passport, repaymentMinimums: repaymentMinimumsOf(networks), clock, refuseStoppedNetwork }),
    )
    // The inspector follows durable changes from here on; its counts start from what the store holds now.
    let inspectorLive: InspectorLive | undefined
    if (config.inspector ?? config.networksFile === undefined) {
      const inspector = new Inspector(store)
      cleanups.push(service.onDurable(inspector.onDurable))
      inspectorLive = new InspectorLive(inspector)
      routes.push(...inspectRoutes(inspector, () => baseUrl, inspectorLive))
    }

    // From here on the store counts as in use until stop() closes it: a start that finds it so after a crash
    // advances the id sequences (above).
    await store.markRunning()
    const server = await startServer({
      routes,
      host: config.host,
      port: config.port,
      bodyLimitBytes: config.bodyLimitBytes,
      authenticate: (token) => (auth as SiweAuth).session(token),
      log,
      readBarrier: () => store.durable(),
      rateLimit: config.rateLimitPerSecond === 0 ? false : { burst: config.rateLimitPerSecond * 2, refillPerSecond: config.rateLimitPerSecond },
      corsOrigins: config.corsOrigins,
      trustedProxies: config.trustedProxies,
      legacyClients: config.legacyClients,
      connectionsPerClientMax: config.connectionsPerClientMax,
      transport: config.httpTransport,
      ...(options.validateResponses ? { validateResponses: true } : {}),
      websockets: [
        { path: EVENTS_PATH, behavior: stream.behavior((token) => (auth as SiweAuth).authenticate(token), (tokenHash) => (auth as SiweAuth).sessionExpiresAt(tokenHash)) },
        ...(inspectorLive === undefined ? [] : [{ path: INSPECT_LIVE_PATH, behavior: inspectorLive.behavior() }]),
      ],
    })
    cleanups.push(async () => {
      await server.close()
    })
    cleanups.push(() => stream.close())
    if (inspectorLive !== undefined) cleanups.push(() => inspectorLive.close())
    baseUrl = config.publicBaseUrl ?? server.url
    const domain = new URL(baseUrl).host
    service.domain = domain
    auth = new SiweAuth({
      records: new StoreAuthRecords(store),
      domain,
      clients: Object.fromEntries(networks.map((n) => [n.chainId, (clients.get(n.slug) as NetworkClients).publicClient as PublicClient])),
      chargeChainRead: (chainId, client) => service.chainReads.takeUnproven((networks.find((n) => n.chainId === chainId) as NetworkConfig).slug, 'sign-in', client),
      sessionTtlMs: config.sessionTtlSeconds * 1000,
      sessionsPerWalletMax: config.sessionsPerWalletMax,
      signIns: new StoreBudget({ client: config.signInsPerClientPerHour, all: config.signInsPerHour }, clock),
      standing: service.hasStanding,
      nowMs: clock,
    })
    // A session that ends early ends its event streams too.
    cleanups.push(auth.onSessionsEnded((tokenHashes) => stream.endSessions(tokenHashes)))

    // The expiry ticker: the same engine command as POST /credit/dispatch, through the same run-and-commit path, again
    // at once while work is due (CreditService.startTicker). A tick the store has no room for changed nothing: it is
    // skipped, like any refused request.
    if (config.dispatchIntervalMs > 0) {
      const ticker = service.startTicker(config.dispatchIntervalMs, (error) => {
        if (!(error instanceof StoreOverloadedError)) log({ level: 'error', msg: 'dispatch_tick_failed', error: String(error) })
      })
      wakeTicker = ticker.wake
      cleanups.push(ticker.stop)
    }
    // Operator transactions the chain followers saw mined and no request recorded: recorded by the service itself,
    // those a crash left stored first. Stopped before the followers (cleanups run in reverse), after its current run.
    if (config.operatorRepairIntervalMs > 0) {
      const repairs = service.operatorRepairs.start(config.operatorRepairIntervalMs, (error, repair) => {
        log({ level: 'warn', msg: 'operator_repair_failed', ...(repair === undefined ? {} : { repair: JSON.stringify(repair) }), error: String(error) })
      })
      cleanups.push(repairs.stop)
    }
    // Lender registrations whose session wallet never became able to lend are removed after lenderUnfundedTtlSeconds.
    // One with an ERC-8004 link is kept: the link is evidence the wallet controls an agent, which costs a mint.
    const lenderSweep = new UnfundedLenderSweep(service, config.lenderUnfundedTtlSeconds * 1000, (lender) => links.get(lender) !== undefined)
    cleanups.push(periodic(UNFUNDED_SWEEP_INTERVAL_MS, () => lenderSweep.run(), (error) => log({ level: 'warn', msg: 'lender_sweep_failed', error: String(error) }), { dueAgain: () => lenderSweep.due }).stop)
    // ERC-8004 links re-checked on chain (src/reputation/links.ts says why periodically and not on each read).
    if (config.reputation.linkRecheckIntervalMs > 0) {
      cleanups.push(periodic(config.reputation.linkRecheckIntervalMs, () => links.recheckAll(), (error) => log({ level: 'warn', msg: 'agent_recheck_failed', error: String(error) })).stop)
    }
    // The ledger against the chain, once the store is open and the engine restored: in the background, so that an
    // unreachable chain never blocks a start (its run is then status unavailable; POST /operator/reconcile retries).
    // A difference is logged and makes /health degraded with the differences listed.
    const startupReconciliation = reconciliation.run().then((runs) => {
      for (const run of runs) {
        if (run.status === 'differences') log({ level: 'error', msg: 'reconciliation_differences', network: run.network, count: run.differences.length, differences: JSON.stringify(run.differences.slice(0, 20)) })
        else if (run.status === 'unavailable') log({ level: 'warn', msg: 'reconciliation_unavailable', network: run.network, error: run.error })
        else log({ level: 'info', msg: 'reconciliation_ok', network: run.network, toBlock: String(run.toBlock) })
      }
    })
    cleanups.push(() => startupReconciliation)
    const stopSweeper = store.startSweeper(60_000, (error) => log({ level: 'error', msg: 'sweep_failed', error: String(error) }))
    cleanups.push(stopSweeper)

    const ownDevnet = options.devnet === undefined ? devnet : undefined
    return {
      url: baseUrl,
      config,
      networks,
      service,
      stream,
      server,
      demo: devnet?.accounts,
      devnet: ownDevnet,
      reconciliation,
      lenderSweep,
      startupReconciliation,
      openApi: () => (openApi ??= documentOf(routes, baseUrl, config)),
      catalog: catalogOf,
      stop: cleanup,
    }
  } catch (error) {
    await cleanup()
    throw error
  }
}

/**
 * One command's changes are one commit (and a dispatch's passport writes ride in it): the engine's change budget must
 * fit in what the store takes, or a large dispatch would be refused by the store and stop the service.
 */
export function checkChangeBudget(engineConfig: Pick<EngineConfig, 'changesPerCommandMax'>): void {
  const commitChangesMax = Math.min(CHANGES_PER_COMMIT_MAX_DEFAULT, RECORD_WRITES_PER_COMMIT_MAX)
  if (engineConfig.changesPerCommandMax > commitChangesMax) {
    throw new RangeError(`engine config changesPerCommandMax must be at most ${commitChangesMax}, the store's changes per commit`)
  }
}

/** The tags of the route table, in the order an agent meets them. */
export const OPENAPI_TAGS = [
  { name: 'discovery', description: 'What the service is and how to use it: health, the service catalog, this document and llms.txt.' },
  { name: 'auth', description: 'Sign-In with Ethereum (EIP-4361): a nonce, a signed message, a bearer token for every mutation.' },
  { name: 'credit', description: 'Jobs and backing sources, credit requests, matching to lenders, supplier payments, repayment and recovery.' },
  { name: 'suppliers', description: 'The supplier directory: the only domains and addresses credit pays. Public to read, managed by operators.' },
  { name: 'lenders', description: 'Lender agents: registration with a session key, profiles, session-wallet balances and pending payments.' },
  { name: 'passport', description: 'The credit passport: an agent\'s events that changed its credit standing, EIP-712 signed by the service and chained, verifiable without trusting it.' },
  { name: 'events', description: 'The live event stream (WebSocket): leases, offers, advances, jobs and passport events of the signed-in wallet, resumable by sequence number.' },
  { name: 'x402', description: 'The x402 payment facilitator the service runs for each self-facilitated network (verify and settle).' },
  { name: 'operator', description: 'Operators only: the reconciliation of the service\'s ledger with the credit contracts, on demand.' },
  { name: 'inspect', description: 'The live inspector (when enabled): the machines with live counts, recent transitions, one actor and its history. Read-only.' },
] as const

function documentOf(routes: readonly AnyRoute[], baseUrl: string, config: ServiceConfig): OpenApiDocument {
  return buildOpenApi(routes, {
    info: {
      title: 'agent-credit: receivable-backed credit for software agents',
      description:
        'Borrower agents request credit against a funded job or a verified backing source; the service matches each offer to the cheapest eligible lender agent, ' +
        'whose session-key wallet pays the supplier directly on chain. Sign in with Ethereum (GET /auth/nonce, POST /auth/session) for every mutation. ' +
        'Errors are application/problem+json with a stable code. Every answer carries X-Request-Id and, when the rate limit is on, RateLimit-Policy and RateLimit.',
      contact: { name: 'agent-credit operators', url: `${baseUrl}/llms.txt` },
      license: { name: 'UNLICENSED (proprietary)', url: `${baseUrl}/llms.txt` },
    },
    servers: [{ url: baseUrl, description: 'This deployment' }],
    bodyLimitBytes: config.bodyLimitBytes,
    rateLimited: config.rateLimitPerSecond > 0,
    tags: OPENAPI_TAGS,
    components: {
      ValidationIssue,
      ...wireComponents,
      Catalog,
      NonceResponse,
      SessionRequest,
      SessionResponse,
      FacilitatorRequest,
      PaymentPayload,
      PaymentRequirements,
      SupportedResponse,
      VerifyResponse,
      SettleResponse,
      ...streamComponents,
    },
  })
}

/**
 * A live lease as its lender receives it on the stream: what GET /lenders/{address}/actions lists for it, built when
 * the event is first sent (the lease as its commit left it, its offer as the engine holds it then).
 */
function deliverable(service: CreditService, lease: LeaseView) {
  const delivered = service.leaseAuthorization(lease)
  return delivered === undefined ? null : payAction({ lease, ...delivered })
}
