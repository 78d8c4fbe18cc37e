// Puts /credit-score together from its settings: the compute component (the local one unless another is given),
// the facilitator client (this service's own facilitator in process for a self-facilitated network, the official
// HTTP client of the configured facilitator otherwise) and the paid resource; and the catalog's description of it.
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server'
import { CREDIT_SCORE_PATH } from '../api/routes/score.ts'
import { createNetworkClients } from '../chain/clients.ts'
import type { ChainReadBudget } from '../service/chain-read-budget.ts'
import type { Store } from '../store/index.ts'
import { CONFIRMATION_TIMEOUT_MS_DEFAULT, type NetworkFacilitator } from '../x402/facilitator.ts'
import { FrontRunSettlements } from '../x402/front-run.ts'
import { facilitatorUrl, PUBLIC_FACILITATOR_URL_DEFAULT } from '../x402/facilitator-url.ts'
import { InProcessFacilitatorClient } from '../x402/in-process-client.ts'
import { PaidResource } from '../x402/paid-resource.ts'
import type { CreditScoreOffer } from './catalog.ts'
import type { CreditScoreCompute } from './compute.ts'
import { LocalScoreCompute } from './local-compute.ts'
import type { CreditScoreSettings } from './settings.ts'

export interface CreditScoreAssembly {
  /** What the route needs; null while disabled. */
  paid: {
    resource: PaidResource
    compute: CreditScoreCompute
    /**
     * With the score's network self-facilitated and a chain read budget: a paid call takes one read of its client
     * address's part there, as the facilitator's verify does over HTTP (the in-process verify has no client to charge).
     */
    chainReadParts?: Pick<ChainReadBudget, 'takePart' | 'giveBackPart'> | undefined
  } | null
  /** The catalog entry's facts for a service reachable at `baseUrl`; null while disabled. */
  offer(baseUrl: string): CreditScoreOffer | null
  close(): Promise<void>
}

export function assembleCreditScore(input: {
  settings: CreditScoreSettings | null
  facilitators: readonly NetworkFacilitator[]
  /** Replaces the local component (tests inject one that fails). */
  compute?: CreditScoreCompute
  /** The service's public base URL, known once it listens. */
  baseUrl: () => string
  /** The chain read budget the lookup of a front-run settlement takes one read of, as a settle does. Default: none. */
  chainReads?: Pick<ChainReadBudget, 'take' | 'takeUnproven' | 'takePart' | 'giveBackPart'>
  /** Where a front-run settlement honoured for a score is kept across restarts (src/x402/front-run.ts). Default: memory only. */
  store?: Store
}): CreditScoreAssembly {
  const { settings } = input
  if (settings === null) return { paid: null, offer: () => null, close: async () => {} }
  const own = input.facilitators.find((f) => f.network.slug === settings.network.slug)
  const remoteUrl = settings.facilitatorUrl ?? PUBLIC_FACILITATOR_URL_DEFAULT
  const facilitator: FacilitatorClient = own !== undefined ? new InProcessFacilitatorClient(own) : new HTTPFacilitatorClient({ url: remoteUrl })
  const compute = input.compute ?? new LocalScoreCompute()
  const resource = new PaidResource({
    method: 'POST',
    path: CREDIT_SCORE_PATH,
    url: () => `${input.baseUrl()}${CREDIT_SCORE_PATH}`,
    description: 'Confidential credit score of an agent (compact JWE for the caller\'s key)',
    network: settings.network,
    token: settings.token,
    amountAtomic: settings.priceAtomic,
    payTo: settings.payTo,
    maxTimeoutSeconds: settings.maxTimeoutSeconds,
    facilitator,
    // A payment a stranger settled first, exactly as asked, still buys the score (src/x402/front-run.ts).
    frontRun: new FrontRunSettlements({
      network: settings.network,
      client: createNetworkClients(settings.network).publicClient,
      facilitator,
      chainReads: input.chainReads,
      confirmationTimeoutMs: CONFIRMATION_TIMEOUT_MS_DEFAULT,
      store: input.store,
    }),
  })
  return {
    paid: { resource, compute, chainReadParts: own === undefined ? undefined : input.chainReads },
    offer: (baseUrl) => ({
      network: settings.network.slug,
      caip2: settings.network.caip2,
      asset: settings.token.symbol,
      assetAddress: settings.token.address,
      decimals: settings.token.decimals,
      amountAtomic: settings.priceAtomic,
      payTo: settings.payTo,
      maxTimeoutSeconds: settings.maxTimeoutSeconds,
      facilitatorUrl: own !== undefined ? facilitatorUrl(settings.network, { baseUrl }) : remoteUrl,
      component: compute.component,
      attestation: 'none',
    }),
    close: () => compute.close(),
  }
}
