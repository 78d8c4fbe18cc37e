// Registration of lenders and backing sources: what a registration must satisfy, and the record it creates.
import { RISK_BANDS } from '../../machines/index.ts'
import type { EngineConfig } from './config.ts'
import { fail } from './errors.ts'
import { ID_PATTERNS } from './ids.ts'
import { isBps } from './keys.ts'
import type { EngineError, LenderRecord, RegisterLenderInput, RegisterSourceInput, SourceRecord } from './types.ts'

const JOB_ID = new RegExp(ID_PATTERNS.job)
const SOURCE_ID = new RegExp(ID_PATTERNS.source)

type Refused = { ok: false; error: EngineError }

/** Why a lender's registration input is invalid, or undefined (uniqueness is the engine's to check). */
export function invalidLender(input: RegisterLenderInput, config: EngineConfig): Refused | undefined {
  if (input.availableLiquidityAtomic <= 0n) return fail('invalid', 'invalid_liquidity', 'availableLiquidityAtomic must be positive')
  if (!isBps(input.minFeeBps)) return fail('invalid', 'invalid_bps', 'minFeeBps must be an integer in 0..10000')
  for (const [name, value] of [['reputationBps', input.reputationBps], ['reliabilityBps', input.reliabilityBps]] as const) {
    if (value !== undefined && !isBps(value)) return fail('invalid', 'invalid_bps', `${name} must be an integer in 0..10000`)
  }
  if (!Number.isInteger(input.maxDurationSeconds) || input.maxDurationSeconds < 1) {
    return fail('invalid', 'invalid_duration', 'maxDurationSeconds must be a positive integer')
  }
  const networks = [...new Set(input.networks)]
  if (networks.length === 0 || networks.length > config.networksPerLenderMax) {
    return fail('invalid', 'invalid_networks', `networks must list 1..${config.networksPerLenderMax} networks`)
  }
  const strayNetwork = Object.keys(input.assets ?? {}).find((network) => !networks.includes(network))
  if (strayNetwork !== undefined) return fail('invalid', 'asset_network_not_supported', `assets names ${strayNetwork}, which is not in networks`)
  const bands = [...new Set(input.acceptedRiskBands)]
  if (bands.length === 0 || !bands.every((b) => (RISK_BANDS as readonly string[]).includes(b))) {
    return fail('invalid', 'invalid_risk_band', `acceptedRiskBands must be a non-empty subset of ${RISK_BANDS.join(', ')}`)
  }
  return undefined
}

/** A valid registration's record: nothing reserved or deployed yet, the initial scores unless given. */
export function lenderRecord(input: RegisterLenderInput, config: EngineConfig, registrationSeq: number, nowMs: number): LenderRecord {
  const networks = [...new Set(input.networks)]
  const bands = [...new Set(input.acceptedRiskBands)]
  const assets: Record<string, string> = {}
  for (const network of networks) assets[network] = input.assets?.[network] ?? input.asset
  const reliabilityBps = input.reliabilityBps ?? config.lenderReliabilityInitialBps
  return {
    address: input.address,
    sessionAddress: input.sessionAddress,
    asset: input.asset,
    assets,
    networks,
    askBps: input.minFeeBps,
    maxDurationSeconds: input.maxDurationSeconds,
    acceptedRiskBands: RISK_BANDS.filter((b) => bands.includes(b)),
    registeredAtomic: input.availableLiquidityAtomic,
    availableAtomic: input.availableLiquidityAtomic,
    reservedAtomic: 0n,
    deployedAtomic: 0n,
    feesEarnedAtomic: 0n,
    lossesAtomic: 0n,
    withdrawnAtomic: 0n,
    withdrawalPendingAtomic: 0n,
    reputationBps: input.reputationBps ?? config.lenderReputationInitialBps,
    reliabilityBps,
    registrationSeq,
    registeredAtMs: nowMs,
    leasesGranted: 0,
    leasesPaid: 0,
    leasesExpired: 0,
    advancesRepaid: 0,
    advancesDefaulted: 0,
    recentLeaseOutcomes: '',
    // Last, as the lender snapshots migrated to versions 4 and 5 have them: one key order, one shared structure
    // (value-encoding.ts).
    inactiveSinceMs: reliabilityBps < config.lenderReliabilityMinBps ? nowMs : null,
    probationMisses: 0,
  }
}

/** Why a backing source's id is invalid, or undefined. */
export function invalidSourceId(sourceId: string): Refused | undefined {
  if (!SOURCE_ID.test(sourceId) || JOB_ID.test(sourceId)) {
    return fail('invalid', 'invalid_source_id', 'sourceId must match ^[A-Za-z0-9_.:-]{1,128}$ and not look like a job id')
  }
  return undefined
}

/** Why a backing source's amounts and expiry are invalid, or undefined. */
export function invalidSourceTerms(input: RegisterSourceInput): Refused | undefined {
  if (input.valueAtomic <= 0n || input.liquidationValueAtomic < 0n) {
    return fail('invalid', 'invalid_amount', 'valueAtomic must be > 0 and liquidationValueAtomic >= 0')
  }
  if (!isBps(input.advanceRateBps)) return fail('invalid', 'invalid_bps', 'advanceRateBps must be an integer in 0..10000')
  if (!Number.isSafeInteger(input.validUntilMs)) return fail('invalid', 'invalid_time', 'validUntilMs must be an integer epoch time')
  return undefined
}

/** A valid backing source's record: nothing committed or used yet. */
export function sourceRecord(input: RegisterSourceInput, registrationSeq: number, nowMs: number): SourceRecord {
  return {
    sourceId: input.sourceId,
    productType: input.productType,
    agent: input.agent,
    valueAtomic: input.valueAtomic,
    liquidationValueAtomic: input.liquidationValueAtomic,
    advanceRateBps: input.advanceRateBps,
    evidenceId: input.evidenceId,
    validUntilMs: input.validUntilMs,
    committedAtomic: 0n,
    backingUsedAtomic: 0n,
    registrationSeq,
    registeredAtMs: nowMs,
  }
}

/** Job ids are chosen by the job's client (ids.ts). */
export function isJobId(jobId: string): boolean {
  return JOB_ID.test(jobId)
}
