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
