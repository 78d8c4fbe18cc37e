// What /credit-score charges and where the money goes, resolved against the configured networks at start-up. On
// the embedded devnet it is on by default: 0.01 USDC on the self-facilitated network, paid to the demo score payee.
// With a networks file it is off unless configured, and then network, price and payee must be named.
import type { Address } from 'viem'
import { getAddress } from 'viem'
import type { NetworkConfig, TokenConfig } from '../chain/config.ts'
import { ConfigError, type CreditScoreConfig } from '../app/config.ts'
import { SCORE_TERMS, type RepaymentMinimum } from './formula.ts'

/** The devnet's price: 0.01 of a 6-decimal token. */
export const DEVNET_PRICE_ATOMIC = 10_000n
/** How long a signed payment stays valid: the client signs validBefore = now + this. */
export const MAX_TIMEOUT_SECONDS_DEFAULT = 60

export interface CreditScoreSettings {
  network: NetworkConfig
  token: TokenConfig
  priceAtomic: bigint
  payTo: Address
  maxTimeoutSeconds: number
  /** The facilitator of a network this service does not facilitate itself; undefined: the default public one. */
  facilitatorUrl: string | undefined
}

export interface CreditScoreDefaults {
  /** The embedded devnet's score payee; absent with a networks file, where nothing is defaulted. */
  devnetPayee?: Address
}

/** The settings, or null when /credit-score is disabled. Throws ConfigError naming what is missing or unknown. */
export function resolveCreditScore(config: CreditScoreConfig | undefined, networks: readonly NetworkConfig[], defaults: CreditScoreDefaults): CreditScoreSettings | null {
  const devnet = defaults.devnetPayee !== undefined
  // On by default only on a devnet that can take the payment itself (a self-facilitated network).
  const enabled = config?.enabled ?? (config !== undefined || (devnet && networks.some((n) => n.x402SelfFacilitate)))
  if (!enabled) return null
  const required = <T>(value: T | undefined, key: string): T => {
    if (value === undefined) throw new ConfigError(`creditScore.${key} is required to enable /credit-score with a networks file`)
    return value
  }
  const slug = config?.network ?? (devnet ? networks.find((n) => n.x402SelfFacilitate)?.slug : undefined)
  const network = networks.find((n) => n.slug === required(slug, 'network'))
  if (network === undefined) throw new ConfigError(`creditScore.network ${JSON.stringify(slug)} is not a configured network (${networks.map((n) => n.slug).join(', ')})`)
  const token = config?.asset === undefined ? network.tokens[0] : network.tokens.find((t) => t.symbol === config.asset)
  if (token === undefined) throw new ConfigError(`creditScore.asset ${JSON.stringify(config?.asset)} is not a token of ${network.slug}`)
  const price = config?.priceAtomic === undefined ? (devnet ? DEVNET_PRICE_ATOMIC : undefined) : BigInt(config.priceAtomic)
  const payTo = config?.payTo ?? defaults.devnetPayee
  return {
    network,
    token,
    priceAtomic: required(price, 'priceAtomic'),
    payTo: getAddress(required(payTo, 'payTo')),
    maxTimeoutSeconds: config?.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS_DEFAULT,
    facilitatorUrl: config?.facilitatorUrl,
  }
}

/**
 * The least principal of a repaid advance the score counts, per network and asset: repaymentMinPrincipalUnits whole
 * units of the token (10^decimals atomic each), so that assets of different decimals ask the same amount.
 */
export function repaymentMinimumsOf(networks: readonly NetworkConfig[]): RepaymentMinimum[] {
  return networks.flatMap((network) => network.tokens.map((token) => ({
    network: network.slug,
    asset: token.symbol,
    minPrincipalAtomic: BigInt(SCORE_TERMS.repaymentMinPrincipalUnits) * 10n ** BigInt(token.decimals),
  })))
}

/**
 * The same minimums as the engine's lenderReputationFullStepAtomic (network slug -> asset symbol -> atomic): a lender's
 * reputation moves by a whole step at the principal a repayment counts at in the score, the two read one constant.
 */
export function lenderReputationFullStepOf(networks: readonly NetworkConfig[]): Record<string, Record<string, bigint>> {
  const steps: Record<string, Record<string, bigint>> = {}
  for (const m of repaymentMinimumsOf(networks)) (steps[m.network] ??= {})[m.asset] = m.minPrincipalAtomic
  return steps
}
