// Small world builders for engine tests: deterministic addresses, hashes and a wallet cache.
import { Engine, type EngineConfig, type RegisterLenderInput, type WalletView } from '../../src/engine/index.ts'
import type { Address, Change } from '../../src/engine/index.ts'

export function addr(n: number): Address {
  return `0x${n.toString(16).padStart(40, '0')}` as Address
}

export function hash(n: number): `0x${string}` {
  return `0x${n.toString(16).padStart(64, '0')}`
}

export const NET = 'net-a'
export const ASSET = 'USDC'
export const BORROWER = addr(0xb0)
export const CLIENT = addr(0xc0)
export const SUPPLIER = addr(0x50)

/** Wallet cache the tests control: spendable per (network, asset, holder); unknown holders hold `defaultAtomic`. */
export class FakeWallets implements WalletView {
  readonly balances = new Map<string, bigint>()
  constructor(public defaultAtomic = 10n ** 30n) {}
  set(holder: Address, amountAtomic: bigint, network = NET, asset = ASSET): void {
    this.balances.set(`${network}|${asset}|${holder}`, amountAtomic)
  }
  spendableAtomic(network: string, asset: string, holder: Address): bigint {
    return this.balances.get(`${network}|${asset}|${holder}`) ?? this.defaultAtomic
  }
}

export function newEngine(config: Partial<EngineConfig> = {}, wallets = new FakeWallets()): { engine: Engine; wallets: FakeWallets } {
  return { engine: new Engine(config, wallets), wallets }
}

/** Lender n: address 0x1000+n, session key 0x2000+n. */
export function lenderInput(n: number, over: Partial<RegisterLenderInput> = {}): RegisterLenderInput {
  return {
    address: addr(0x1000 + n),
    sessionAddress: addr(0x2000 + n),
    availableLiquidityAtomic: 1_000_000n,
    asset: ASSET,
    networks: [NET],
    minFeeBps: 100,
    maxDurationSeconds: 90 * 24 * 3600,
    acceptedRiskBands: ['A', 'B', 'C'],
    ...over,
  }
}

export function unwrap<T>(result: { ok: true; value: T } | { ok: false; error: { code: string; message: string } }): T {
  if (!result.ok) throw new Error(`engine error ${result.error.code}: ${result.error.message}`)
  return result.value
}

/** Canonical text of any value with bigints, for exact comparisons of snapshots. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'bigint') return `${v}n`
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]))
    }
    return v
  })
}

/** The store's view: apply changes in order, keyed by kind and id. */
export function applyChanges(store: Map<string, Change>, changes: Change[]): void {
  for (const c of changes) store.set(`${c.kind}:${c.id}`, c)
}

export const T0 = 1_700_000_000_000

/** A borrower with one backing source worth `valueAtomic` (advance rate 100%, hard value equal to the value). */
export function registerBacking(engine: Engine, sourceId = 'src_1', valueAtomic = 10_000_000n, agent = BORROWER): void {
  unwrap(engine.registerSource({
    sourceId, productType: 'asset-backed', agent, valueAtomic, liquidationValueAtomic: valueAtomic,
    advanceRateBps: 10_000, evidenceId: `ev_${sourceId}`,
  }, T0))
}

export function creditRequest(over: Partial<Parameters<Engine['requestCredit']>[0]> = {}): Parameters<Engine['requestCredit']>[0] {
  return {
    agent: BORROWER, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic: 1000n, purpose: 'inference',
    supplier: 'Supplier', supplierDomain: 'supplier.example', supplierAddress: SUPPLIER, repaymentSource: 'src_1',
    maximumFeeAtomic: 100n, ...over,
  }
}

/** Request credit and return the offer id; throws when declined. */
export function offerFor(engine: Engine, over: Partial<Parameters<Engine['requestCredit']>[0]> = {}, nowMs = T0): string {
  const decision = unwrap(engine.requestCredit(creditRequest(over), nowMs))
  if (!decision.offer) throw new Error(`declined: ${decision.reasons.map((r) => r.code).join(',')}`)
  return decision.offer.offerId
}

/** Match an offer and return the address of the lender granted the lease, or null. */
export function matchedLender(engine: Engine, offerId: string, nowMs = T0): Address | null {
  return unwrap(engine.matchOffer({ offerId }, nowMs)).lease?.lender ?? null
}

/** Request, match and pay: returns the advance id. The lender must be able to win the match. */
export function fundAdvance(engine: Engine, over: Partial<Parameters<Engine['requestCredit']>[0]> = {}, nowMs = T0, n = 1): string {
  const offerId = offerFor(engine, over, nowMs)
  const lease = unwrap(engine.matchOffer({ offerId }, nowMs)).lease
  if (!lease) throw new Error('no lender for the offer')
  const advance = unwrap(engine.recordSupplierPayment({
    network: lease.network, txHash: hash(1000 + n), logIndex: 0, offerId, payer: lease.payer,
    supplier: lease.supplierAddress, asset: lease.asset, amountAtomic: lease.amountAtomic,
  }, nowMs))
  return advance.advanceId
}

export function createJob(engine: Engine, jobId: string, receivableAtomic: bigint, dueAtMs = T0 + 7 * 86_400_000, borrower = BORROWER): void {
  unwrap(engine.createJob({
    jobId, client: CLIENT, borrower, network: NET, asset: ASSET, receivableAtomic, dueAtMs,
    funding: { network: NET, txHash: hash(9000), logIndex: 0 },
  }, T0))
}
