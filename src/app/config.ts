// Service configuration: environment variables over an optional JSON file over the defaults. The embedded default
// (no NETWORKS_FILE) starts the devnet; real networks come from a networks file and operator keys from the
// environment, never from a committed file.
import { HTTP_TRANSPORTS, type HttpTransport } from '../http/server.ts'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import { getAddress, isAddress, isHex, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { defaultEngineConfig, resolveConfig, type EngineConfig } from '../engine/config.ts'
import { reputationDefaults, type ReputationConfig } from '../reputation/index.ts'
import { parseCorsOrigins } from '../http/cors.ts'
import { FORMAT_PATTERNS } from '../engine/ids.ts'
import type { StreamLimits } from '../stream/hub.ts'

const AddressString = Type.String({ pattern: FORMAT_PATTERNS.address })

/**
 * A supplier the directory starts with (the engine's directory, src/engine/suppliers.ts): `address` pays on every
 * network, `addresses` names them per network (slug -> addresses, the first the default); one of the two.
 */
const SupplierSchema = Type.Object(
  {
    domain: Type.String({ minLength: 1, maxLength: 253 }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    address: Type.Optional(AddressString),
    addresses: Type.Optional(Type.Record(Type.String({ pattern: FORMAT_PATTERNS.network }), Type.Array(AddressString, { minItems: 1, maxItems: 16 }), { additionalProperties: false })),
  },
  { additionalProperties: false },
)

/** The paid /credit-score. Every field optional; on the embedded devnet each has a default (README). */
const CreditScoreSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    network: Type.Optional(Type.String({ minLength: 1 })),
    asset: Type.Optional(Type.String({ minLength: 1 })),
    priceAtomic: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,77}$' })),
    payTo: Type.Optional(AddressString),
    facilitatorUrl: Type.Optional(Type.String({ pattern: '^https?://' })),
    maxTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 3600 })),
  },
  { additionalProperties: false },
)
export type CreditScoreConfig = Type.Static<typeof CreditScoreSchema>

/** `reputation`: whose ERC-8004 feedback counts and how (README, "Initial reputation from ERC-8004"). */
const ReputationSchema = Type.Object(
  {
    trustedClients: Type.Optional(Type.Array(AddressString, { maxItems: 256 })),
    priorWeight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    halfLifeSeconds: Type.Optional(Type.Integer({ minimum: 1 })),
    feedbackFromBlock: Type.Optional(Type.Integer({ minimum: 0 })),
    linkRecheckIntervalSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600 })),
  },
  { additionalProperties: false },
)

/**
 * `stream`: the event stream's bounds (src/stream/hub.ts StreamLimits, the app's `streamLimits` option wins over it;
 * README, "Live event stream"). Each optional: absent, the hub's default.
 */
const StreamLimitsSchema = Type.Object(
  {
    retainedEventsMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    retentionMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 24 * 3600 * 1000 })),
    queuedEventsMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    socketBufferedBytesMax: Type.Optional(Type.Integer({ minimum: 1024, maximum: 1024 * 1024 * 1024 })),
    connectionsPerWalletMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    connectionsPerClientMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    connectionsMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    bufferedBytesTotalMax: Type.Optional(Type.Integer({ minimum: 1024, maximum: 1024 * 1024 * 1024 * 1024 })),
  },
  { additionalProperties: false },
)

/** The JSON file named by CONFIG_FILE. Every key is optional; environment variables win over it. */
export const ConfigFileSchema = Type.Object(
  {
    host: Type.Optional(Type.String({ minLength: 1 })),
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    dataDir: Type.Optional(Type.String({ minLength: 1 })),
    networksFile: Type.Optional(Type.String({ minLength: 1 })),
    publicBaseUrl: Type.Optional(Type.String({ minLength: 1 })),
    operators: Type.Optional(Type.Array(AddressString, { maxItems: 64 })),
    attesters: Type.Optional(Type.Array(AddressString, { maxItems: 64 })),
    suppliers: Type.Optional(Type.Array(SupplierSchema, { maxItems: 10_000 })),
    leaseTtlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    // Accepted so that configurations written before chain-time expiry still load; ignored: a lease expires only when
    // its network's chain is observed past its deadline with no payment, whenever the payment is reported.
    leaseReportGraceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, deprecated: true, description: 'ignored (leases expire on observed chain time)' })),
    chainTimeIntervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 60_000 })),
    storeCommitStallMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 3_600_000 })),
    offerTtlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
    dispatchIntervalMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
    operatorRepairIntervalMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
    sessionTtlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600 })),
    sessionsPerWalletMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    signInsPerClientPerHour: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
    signInsPerHour: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
    keyedRequestsPerWalletPerHour: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
    keyedRequestsPerClientPerHour: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
    keyedRequestsPerHour: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000_000 })),
    collateralPostingsPerJobMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000 })),
    followerCatchUpMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
    bodyLimitBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024 })),
    rateLimitPerSecond: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    chainReadsPerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    chainReadsBurst: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    walletsWatchedPerNetworkMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    corsOrigins: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 256 })),
    trustedProxies: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 256 })),
    idempotencyRetentionSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600 })),
    unfundedWalletWindowSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 * 24 * 3600 })),
    lenderUnfundedTtlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 365 * 24 * 3600 })),
    lendersPendingMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    lendersPendingPerClientMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    connectionsPerClientMax: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    engine: Type.Optional(Type.Record(Type.String(), Type.Integer())),
    creditScore: Type.Optional(CreditScoreSchema),
    // Network slug -> payees the x402 facilitator of that network also serves (beyond the paid resources' own).
    x402FacilitatorPayees: Type.Optional(
      Type.Record(Type.String({ pattern: FORMAT_PATTERNS.network }), Type.Array(AddressString, { maxItems: 256 }), { additionalProperties: false }),
    ),
    reputation: Type.Optional(ReputationSchema),
    inspector: Type.Optional(Type.Boolean()),
    stream: Type.Optional(StreamLimitsSchema),
  },
  { additionalProperties: false },
)
export type ConfigFile = Type.Static<typeof ConfigFileSchema>

export interface SupplierEntry {
  domain: string
  name: string
  /** Pays on every network the service runs. */
  address?: Address
  /** network slug -> payout addresses, the first the default. */
  addresses?: Record<string, Address[]>
}

export interface ServiceConfig {
  host: string
  port: number
  dataDir: string
  /** Absent: the embedded devnet is started and configured. */
  networksFile: string | undefined
  /** Base URL printed and used in the catalog; derived from host and port when absent. */
  publicBaseUrl: string | undefined
  operators: Address[]
  attesters: Address[]
  suppliers: SupplierEntry[]
  leaseTtlSeconds: number
  /**
   * How often an idle chain follower commits the chain time it observed (blocks without events): the granularity of
   * lease expiry (src/chain/follower.ts chainTimeIntervalMs).
   */
  chainTimeIntervalMs: number
  /**
   * How long a group write transaction of the store may go unsettled before the service treats it as a failed commit
   * and exits 70 (Store.watchStalls; README Persistence, "When the disk refuses a write").
   */
  storeCommitStallMs: number
  offerTtlSeconds: number
  /** Period of the internal expiry ticker; 0 disables it (dispatch then runs only on POST /credit/dispatch). */
  dispatchIntervalMs: number
  /**
   * Period of the repairs of operator transactions mined and never recorded (src/service/operator-commands.ts
   * OperatorRepairs), which also run as soon as the chain follower stores one; 0 disables them (only a retry of the
   * route records such a transaction, tests of that path).
   */
  operatorRepairIntervalMs: number
  sessionTtlSeconds: number
  /** Live sessions per wallet; a sign-in beyond it ends the wallet's oldest session. */
  sessionsPerWalletMax: number
  /**
   * Sessions one client address (src/http/client-key.ts) may open per hour (a bucket of an hour's worth), past which a
   * sign-in answers 429 sign_ins_client_limited; 0: unbounded. Each is kept sessionTtlSeconds.
   */
  signInsPerClientPerHour: number
  /** Sessions all clients together may open per hour (a bucket of a minute's worth), past which 503 sign_ins_exhausted; 0: unbounded. */
  signInsPerHour: number
  /**
   * First requests with an Idempotency-Key (each may store its answer for idempotencyRetentionSeconds) on the routes
   * that do not declare `keyedRequestsCharged: false` (the credit path does), per signed-in wallet, per client address
   * (an hour's worth in a bucket: 429 idempotency_keys_limited) and for all callers together (a minute's worth: 503
   * idempotency_keys_exhausted); 0: unbounded.
   */
  keyedRequestsPerWalletPerHour: number
  keyedRequestsPerClientPerHour: number
  keyedRequestsPerHour: number
  /** Collateral postings mined before a job's registration that it brings (each a proof in its commit): more is refused. */
  collateralPostingsPerJobMax: number
  /**
   * How long an operator command whose transaction is mined waits for the chain follower to count what was mined
   * before it (src/service/operator-commands.ts followerPast) before it answers 503 chain_unavailable, to be retried.
   */
  followerCatchUpMs: number
  bodyLimitBytes: number
  /** Funded lender session wallets the chain watcher follows per network; a funded wallet beyond it waits for a slot, out of matching. */
  walletsWatchedPerNetworkMax: number
  /** How long a registered lender's unfunded session wallet waits for its first transfer or approval (no polling). */
  unfundedWalletWindowSeconds: number
  /**
   * How long a lender registration whose session wallet cannot lend is kept: older, untouched and still unable to pay
   * the least advance, it is removed (src/service/lenders.ts UnfundedLenderSweep).
   */
  lenderUnfundedTtlSeconds: number
  /** Lenders parked at once (mostly registrations never seen funded) past which a registration is refused (503). */
  lendersPendingMax: number
  /**
   * Registrations one client (its address, an IPv6 client's /64; src/http/client-key.ts) may have waiting
   * for their session wallet's first funds at once, past which its registration is refused (429).
   */
  lendersPendingPerClientMax: number
  /**
   * Connections one client (src/http/client-key.ts) may hold open at once through the node:net front, past which the
   * front answers 429 too_many_connections and closes; trusted proxies are exempt. Not applied without the front.
   */
  connectionsPerClientMax: number
  /** Tokens per second per signed-in wallet and per client address (burst twice that); 0 disables the limiter. */
  rateLimitPerSecond: number
  /**
   * The chain reads requests may make per network (transaction proofs, ERC-8004 re-checks; src/service/chain-read-budget.ts):
   * per second and at once, all callers together; one wallet gets a quarter of each.
   */
  chainReadsPerSecond: number
  chainReadsBurst: number
  /** Origins browsers may call from (CORS): ['*'] any, [] none. */
  corsOrigins: string[]
  /** Reverse proxies whose X-Forwarded-For names the client (rate limit key); none by default. */
  trustedProxies: string[]
  /** How long an Idempotency-Key's stored answer is replayed; afterwards the key may run again. */
  idempotencyRetentionSeconds: number
  /** 'none' exists for benchmarks only: acknowledged changes may be lost on a crash. */
  durability: 'sync' | 'none'
  engine: Partial<EngineConfig>
  /**
   * The paid /credit-score (config file key `creditScore`, env CREDIT_SCORE=on|off). Undefined: the mode's default,
   * on for the embedded devnet and off with a networks file.
   */
  creditScore: CreditScoreConfig | undefined
  /**
   * Network slug -> payees the network's x402 facilitator settles for besides the payees of the service's own paid
   * resources (src/x402/facilitator.ts `servedPayees`); config file key `x402FacilitatorPayees`.
   */
  x402FacilitatorPayees: Record<string, Address[]>
  /** ERC-8004 evidence: trusted clients, the formula's prior weight and half-life, the agent-link re-check period. */
  reputation: ReputationConfig
  /** Writes no request log lines when false (tests). */
  requestLog: boolean
  /** The node:net front that answers HTTP/1.0 and Host-less requests (env HTTP_LEGACY_CLIENTS=0 turns it off). */
  legacyClients: boolean
  /** env HTTP_TRANSPORT: `uws` (default; with the front unless HTTP_LEGACY_CLIENTS=0) or `node` (node:http, no WebSocket). */
  httpTransport: HttpTransport
  /**
   * The live inspector (GET /inspect and its JSON routes; config file key `inspector`, env INSPECTOR=on|off).
   * Undefined: the mode's default, on for the embedded devnet and off with a networks file.
   */
  inspector: boolean | undefined
  /** The event stream's bounds (config file key `stream`); the app's `streamLimits` option wins, the hub's defaults fill in. */
  stream: Partial<StreamLimits>
  /**
   * The passport's issuer key (env PASSPORT_ISSUER_KEY); absent, the data directory's own key, made on its first
   * start (src/passport/book.ts). Its address is the catalog's passport.issuer.
   */
  passportIssuerKey: Hex | undefined
}

export const serviceDefaults = {
  host: '127.0.0.1',
  port: 8402,
  dataDir: './snapshots',
  leaseTtlSeconds: 30,
  chainTimeIntervalMs: 1000,
  storeCommitStallMs: 30_000,
  offerTtlSeconds: 600,
  dispatchIntervalMs: 1000,
  operatorRepairIntervalMs: 5000,
  sessionTtlSeconds: 24 * 3600,
  sessionsPerWalletMax: 10,
  // An agent signs in about once a day per wallet: an hour's 600 serve 600 agents behind one address (a fleet on one
  // host or NAT) starting at once, and one address keeps at most ~15,000 sessions (31 MB) a day. All clients: 20 a second, 1.7 million sessions a day
  // (about 3.6 GB at 2.1 KB each), the store's ceiling for sessions whatever the number of addresses.
  signInsPerClientPerHour: 600,
  signInsPerHour: 72_000,
  // An agent sends a few keyed requests a minute; 30 a minute per wallet, 120 per client address. All callers: 100 a
  // second, 8.6 million stored answers a day (about 19 GB at 2.2 KB), the store's ceiling for answers.
  keyedRequestsPerWalletPerHour: 1800,
  keyedRequestsPerClientPerHour: 7200,
  keyedRequestsPerHour: 360_000,
  collateralPostingsPerJobMax: 1000,
  followerCatchUpMs: 10_000,
  bodyLimitBytes: 64 * 1024,
  rateLimitPerSecond: 2000,
  // Well inside a paid RPC plan's quota, which the chain follower and the wallet watcher need too.
  chainReadsPerSecond: 400,
  chainReadsBurst: 800,
  walletsWatchedPerNetworkMax: 10_000,
  // No cookies, only bearer tokens: any origin is safe (src/http/cors.ts).
  corsOrigins: ['*'],
  // Stripe's choice: long enough for any sane retry loop, short enough to bound the store.
  idempotencyRetentionSeconds: 24 * 3600,
  unfundedWalletWindowSeconds: 3600,
  // A day: a lender funds its session wallet in minutes; a stranger's free registration costs memory for a day only.
  lenderUnfundedTtlSeconds: 24 * 3600,
  // About 0.3 GB of heap at 6.2 KB a registration (bench/registration-cost.ts).
  lendersPendingMax: 50_000,
  // A lender funds its session wallet in minutes, so one client rarely has more than a few waiting; filling
  // lendersPendingMax then takes 500 client addresses, not one script.
  lendersPendingPerClientMax: 100,
  // Far above what an agent needs (keep-alive connections, a few streams), far below the process's 20,000 descriptors.
  connectionsPerClientMax: 1024,
} as const

/**
 * The bounds on what strangers make the store keep (sign-ins and keyed requests per client address, per wallet, for
 * all callers), lifted: for the test harness and the benches, which sign in many wallets from 127.0.0.1 as the rate
 * limit's 0 lets them; the tests of the bounds keep them (test/auth/signin-bounds.test.ts,
 * test/api/keyed-request-bounds.test.ts).
 */
export const STORE_BUDGETS_OFF = { signInsPerClientPerHour: 0, signInsPerHour: 0, keyedRequestsPerWalletPerHour: 0, keyedRequestsPerClientPerHour: 0, keyedRequestsPerHour: 0 } as const

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

const checkFile = Compile(ConfigFileSchema)

function readConfigFile(path: string): ConfigFile {
  let value: unknown
  try {
    value = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new ConfigError(`cannot read CONFIG_FILE ${path}: ${(error as Error).message}`)
  }
  if (!checkFile.Check(value)) {
    // An unknown key is named (it read "schema is false" and "must not have additional properties", naming none).
    const problems = [...checkFile.Errors(value)]
      .filter((e) => e.keyword !== 'boolean')
      .map((e) => `  ${e.instancePath || '/'}: ${e.keyword === 'additionalProperties' ? `unknown key(s) ${JSON.stringify((e.params as { additionalProperties: string[] }).additionalProperties)}` : e.message}`)
    throw new ConfigError(`invalid CONFIG_FILE ${path}:\n${problems.join('\n')}`)
  }
  return value
}

function envInteger(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(raw)}`)
  }
  return value
}

function envList(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const raw = env[name]
  if (raw === undefined) return undefined
  return raw.split(',').map((item) => item.trim()).filter((item) => item !== '')
}

function corsOrigins(list: readonly string[]): string[] {
  try {
    return parseCorsOrigins(list.join(','))
  } catch (error) {
    throw new ConfigError(`CORS_ORIGINS / corsOrigins: ${(error as Error).message}`)
  }
}

function addresses(list: readonly string[] | undefined): Address[] {
  return (list ?? []).map((a) => {
    if (!isAddress(a, { strict: false })) throw new ConfigError(`not an address: ${a}`)
    return getAddress(a)
  })
}

/** A 32-byte 0x-hex private key from the environment (never from a file); undefined when unset. */
function privateKeyOf(env: NodeJS.ProcessEnv, name: string): Hex | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!isHex(raw) || raw.length !== 66) throw new ConfigError(`${name} must be a 32-byte 0x-hex private key`)
  try {
    privateKeyToAccount(raw)
  } catch {
    throw new ConfigError(`${name} is not a valid secp256k1 private key`)
  }
  return raw
}

/** An on|off environment switch; undefined when unset. */
function onOff(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (raw !== 'on' && raw !== 'off') throw new ConfigError(`${name} must be on or off, got ${JSON.stringify(raw)}`)
  return raw === 'on'
}

/**
 * PUBLIC_BASE_URL / publicBaseUrl: an http(s) URL, without a trailing slash (every published link appends a path to
 * it: `https://credit.example/` published `https://credit.example//llms.txt`). One that does not parse stopped the start
 * only after the chains and the store were up, as a bare "Invalid URL".
 */
function publicBaseUrlOf(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL / publicBaseUrl must be an absolute http(s) URL, got ${JSON.stringify(raw)}`)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ConfigError(`PUBLIC_BASE_URL / publicBaseUrl must be an http(s) URL without query, fragment or credentials, got ${JSON.stringify(raw)}`)
  }
  return raw.replace(/\/+$/, '')
}

/** TRUSTED_PROXIES / trustedProxies: addresses, compared with a peer's; a range or a name (10.0.0.0/8, proxy.internal) never matched one. */
function trustedProxiesOf(list: readonly string[]): string[] {
  for (const proxy of list) {
    if (isIP(proxy) === 0) throw new ConfigError(`TRUSTED_PROXIES / trustedProxies: ${JSON.stringify(proxy)} is not an IP address (list each proxy's address; ranges and names are not read)`)
  }
  return [...list]
}

/** A 0|1 environment switch; undefined when unset. Another value (`false`, `off`) was taken for 1, unseen. */
function zeroOne(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (raw !== '0' && raw !== '1') throw new ConfigError(`${name} must be 0 or 1, got ${JSON.stringify(raw)}`)
  return raw === '1'
}

/** The file's `creditScore`, switched on or off by CREDIT_SCORE; undefined when neither says anything. */
function creditScoreOf(env: NodeJS.ProcessEnv, file: ConfigFile): CreditScoreConfig | undefined {
  const raw = env['CREDIT_SCORE']
  if (raw === undefined || raw === '') return file.creditScore
  if (raw !== 'on' && raw !== 'off') throw new ConfigError(`CREDIT_SCORE must be on or off, got ${JSON.stringify(raw)}`)
  return { ...file.creditScore, enabled: raw === 'on' }
}

function reputationOf(file: ConfigFile): ReputationConfig {
  const r = file.reputation ?? {}
  return {
    trustedClients: addresses(r.trustedClients),
    priorWeight: r.priorWeight ?? reputationDefaults.priorWeight,
    halfLifeSeconds: r.halfLifeSeconds ?? reputationDefaults.halfLifeSeconds,
    feedbackFromBlock: BigInt(r.feedbackFromBlock ?? 0),
    linkRecheckIntervalMs: r.linkRecheckIntervalSeconds === undefined ? reputationDefaults.linkRecheckIntervalMs : r.linkRecheckIntervalSeconds * 1000,
  }
}

/**
 * The file's `engine`: thresholds of EngineConfig, each a number there. A misspelt key was kept and ignored, and a value
 * out of range stopped the start only later, as a RangeError of the engine; both are refused here, naming the key.
 * `leaseTtlMs` and `offerTtlMs` are set by leaseTtlSeconds and offerTtlSeconds, which would override them unseen.
 */
function engineOf(engine: Record<string, number> | undefined): Partial<EngineConfig> {
  if (engine === undefined) return {}
  const thresholds = Object.keys(defaultEngineConfig).filter((key) => typeof defaultEngineConfig[key as keyof EngineConfig] === 'number' && key !== 'leaseTtlMs' && key !== 'offerTtlMs')
  for (const key of Object.keys(engine)) {
    if (key === 'leaseTtlMs' || key === 'offerTtlMs') throw new ConfigError(`engine.${key}: set ${key === 'leaseTtlMs' ? 'leaseTtlSeconds' : 'offerTtlSeconds'} instead`)
    if (!thresholds.includes(key)) throw new ConfigError(`engine.${key}: not an engine threshold (one of ${thresholds.join(', ')})`)
  }
  try {
    resolveConfig(engine)
  } catch (error) {
    throw new ConfigError((error as Error).message)
  }
  return engine as Partial<EngineConfig>
}

function supplierOf(s: NonNullable<ConfigFile['suppliers']>[number]): SupplierEntry {
  if ((s.address === undefined) === (s.addresses === undefined)) throw new ConfigError(`supplier ${s.domain}: give either address or addresses`)
  return {
    domain: s.domain.toLowerCase(),
    name: s.name,
    ...(s.address === undefined ? {} : { address: getAddress(s.address) }),
    ...(s.addresses === undefined ? {} : { addresses: Object.fromEntries(Object.entries(s.addresses).map(([slug, list]) => [slug, list.map((a) => getAddress(a))])) }),
  }
}

/** Resolves the configuration from the environment (HOST, PORT, DATA_DIR, NETWORKS_FILE, CONFIG_FILE, ...). */
export function loadServiceConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ServiceConfig> = {}): ServiceConfig {
  const file: ConfigFile = env.CONFIG_FILE ? readConfigFile(env.CONFIG_FILE) : {}
  const durability = env.DURABILITY ?? 'sync'
  if (durability !== 'sync' && durability !== 'none') throw new ConfigError(`DURABILITY must be sync or none, got ${durability}`)
  const config: ServiceConfig = {
    host: env.HOST || file.host || serviceDefaults.host,
    port: envInteger(env, 'PORT', 0, 65535) ?? file.port ?? serviceDefaults.port,
    dataDir: env.DATA_DIR || file.dataDir || serviceDefaults.dataDir,
    networksFile: env.NETWORKS_FILE || file.networksFile,
    publicBaseUrl: publicBaseUrlOf(env.PUBLIC_BASE_URL || file.publicBaseUrl),
    operators: addresses(file.operators),
    attesters: addresses(file.attesters),
    suppliers: (file.suppliers ?? []).map(supplierOf),
    leaseTtlSeconds: envInteger(env, 'LEASE_TTL_SECONDS', 1, 3600) ?? file.leaseTtlSeconds ?? serviceDefaults.leaseTtlSeconds,
    chainTimeIntervalMs: file.chainTimeIntervalMs ?? serviceDefaults.chainTimeIntervalMs,
    storeCommitStallMs: file.storeCommitStallMs ?? serviceDefaults.storeCommitStallMs,
    offerTtlSeconds: file.offerTtlSeconds ?? serviceDefaults.offerTtlSeconds,
    dispatchIntervalMs: envInteger(env, 'DISPATCH_INTERVAL_MS', 0, 3_600_000) ?? file.dispatchIntervalMs ?? serviceDefaults.dispatchIntervalMs,
    operatorRepairIntervalMs: file.operatorRepairIntervalMs ?? serviceDefaults.operatorRepairIntervalMs,
    sessionTtlSeconds: file.sessionTtlSeconds ?? serviceDefaults.sessionTtlSeconds,
    sessionsPerWalletMax: file.sessionsPerWalletMax ?? serviceDefaults.sessionsPerWalletMax,
    signInsPerClientPerHour: file.signInsPerClientPerHour ?? serviceDefaults.signInsPerClientPerHour,
    signInsPerHour: file.signInsPerHour ?? serviceDefaults.signInsPerHour,
    keyedRequestsPerWalletPerHour: file.keyedRequestsPerWalletPerHour ?? serviceDefaults.keyedRequestsPerWalletPerHour,
    keyedRequestsPerClientPerHour: file.keyedRequestsPerClientPerHour ?? serviceDefaults.keyedRequestsPerClientPerHour,
    keyedRequestsPerHour: file.keyedRequestsPerHour ?? serviceDefaults.keyedRequestsPerHour,
    collateralPostingsPerJobMax: file.collateralPostingsPerJobMax ?? serviceDefaults.collateralPostingsPerJobMax,
    followerCatchUpMs: file.followerCatchUpMs ?? serviceDefaults.followerCatchUpMs,
    bodyLimitBytes: file.bodyLimitBytes ?? serviceDefaults.bodyLimitBytes,
    walletsWatchedPerNetworkMax: file.walletsWatchedPerNetworkMax ?? serviceDefaults.walletsWatchedPerNetworkMax,
    unfundedWalletWindowSeconds: file.unfundedWalletWindowSeconds ?? serviceDefaults.unfundedWalletWindowSeconds,
    lenderUnfundedTtlSeconds: file.lenderUnfundedTtlSeconds ?? serviceDefaults.lenderUnfundedTtlSeconds,
    lendersPendingMax: file.lendersPendingMax ?? serviceDefaults.lendersPendingMax,
    lendersPendingPerClientMax: file.lendersPendingPerClientMax ?? serviceDefaults.lendersPendingPerClientMax,
    connectionsPerClientMax: file.connectionsPerClientMax ?? serviceDefaults.connectionsPerClientMax,
    rateLimitPerSecond: envInteger(env, 'RATE_LIMIT_PER_SECOND', 0, 1_000_000) ?? file.rateLimitPerSecond ?? serviceDefaults.rateLimitPerSecond,
    chainReadsPerSecond: envInteger(env, 'CHAIN_READS_PER_SECOND', 1, 1_000_000) ?? file.chainReadsPerSecond ?? serviceDefaults.chainReadsPerSecond,
    chainReadsBurst: envInteger(env, 'CHAIN_READS_BURST', 1, 1_000_000) ?? file.chainReadsBurst ?? serviceDefaults.chainReadsBurst,
    corsOrigins: corsOrigins(envList(env, 'CORS_ORIGINS') ?? file.corsOrigins ?? serviceDefaults.corsOrigins),
    trustedProxies: trustedProxiesOf(envList(env, 'TRUSTED_PROXIES') ?? file.trustedProxies ?? []),
    idempotencyRetentionSeconds: envInteger(env, 'IDEMPOTENCY_RETENTION_SECONDS', 60, 30 * 24 * 3600) ?? file.idempotencyRetentionSeconds ?? serviceDefaults.idempotencyRetentionSeconds,
    durability,
    engine: engineOf(file.engine),
    creditScore: creditScoreOf(env, file),
    x402FacilitatorPayees: Object.fromEntries(Object.entries(file.x402FacilitatorPayees ?? {}).map(([slug, list]) => [slug, addresses(list)])),
    reputation: reputationOf(file),
    requestLog: zeroOne(env, 'REQUEST_LOG') ?? true,
    legacyClients: zeroOne(env, 'HTTP_LEGACY_CLIENTS') ?? true,
    httpTransport: httpTransportOf(env),
    inspector: onOff(env, 'INSPECTOR') ?? file.inspector,
    stream: file.stream ?? {},
    passportIssuerKey: privateKeyOf(env, 'PASSPORT_ISSUER_KEY'),
    ...overrides,
  }
  return config
}

function httpTransportOf(env: NodeJS.ProcessEnv): HttpTransport {
  const value = env.HTTP_TRANSPORT || 'uws'
  if (!(HTTP_TRANSPORTS as readonly string[]).includes(value)) throw new ConfigError(`HTTP_TRANSPORT must be ${HTTP_TRANSPORTS.join(' or ')}, got ${value}`)
  return value as HttpTransport
}
