// Public surface of the credit engine.
export { Engine, advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot } from './engine.ts'
export type { StoredSnapshot } from './engine.ts'
export { defaultEngineConfig, resolveConfig } from './config.ts'
export type { EngineConfig } from './config.ts'
export type { ExecutedTx, RepaidFact, SupplierPaymentFact, WalletView } from './ports.ts'
export { feeAtomic, insuranceAtomic, planRecovery, riskBand } from './rules.ts'
export type * from './types.ts'
