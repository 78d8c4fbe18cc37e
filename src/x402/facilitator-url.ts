// The facilitator URL the catalog advertises per network: this service's own endpoints where it facilitates,
// a public facilitator elsewhere. The official HTTPFacilitatorClient appends /supported, /verify and /settle.
import type { NetworkConfig } from '../chain/config.ts'
import { isSelfFacilitated } from './facilitator.ts'

/** x402's public facilitator, the default for networks this service does not facilitate. Documentation only. */
export const PUBLIC_FACILITATOR_URL_DEFAULT = 'https://x402.org/facilitator'

export type FacilitatorUrlOptions = {
  /** Public base URL of this service, e.g. `https://credit.example.com` (a trailing slash is ignored). */
  baseUrl: string
  /** Facilitator for the networks not self-facilitated; default PUBLIC_FACILITATOR_URL_DEFAULT. */
  publicFacilitatorUrl?: string
}

/** The path prefix of a self-facilitated network's endpoints: `/x402/<slug>-facilitator`. */
export function facilitatorPath(network: Pick<NetworkConfig, 'slug'>): string {
  return `/x402/${network.slug}-facilitator`
}

/** The URL to advertise for `network`. Agrees with the routes of `x402Routes` by construction (`isSelfFacilitated`). */
export function facilitatorUrl(network: NetworkConfig, options: FacilitatorUrlOptions): string {
  if (isSelfFacilitated(network)) return `${options.baseUrl.replace(/\/+$/, '')}${facilitatorPath(network)}`
  return options.publicFacilitatorUrl ?? PUBLIC_FACILITATOR_URL_DEFAULT
}

/** `facilitatorUrl` with its options bound: the shape the catalog takes (`facilitatorUrl: (network) => string`). */
export function facilitatorUrlResolver(options: FacilitatorUrlOptions): (network: NetworkConfig) => string {
  return (network) => facilitatorUrl(network, options)
}
