// Public surface of the store (DESIGN section 9). See store.ts for the commit path and its durability contract.
export * from './errors.ts'
export * from './types.ts'
export { hashRequestBody, Idempotency, IdempotencyTicket, type IdempotencyBegin, type IdempotencyCompletion } from './idempotency.ts'
export {
  Store,
  RecordCollection,
  UsedProofs,
  STORE_FORMAT_VERSION,
  LEGACY_VALUE_ENCODING,
  STRUCTURES_RECORD,
  VALUE_STRUCTURES,
  valueEncoding,
  storedValueEncoding,
  DB_NAMES,
  USED_PROOF_COLLECTION,
  IDEMPOTENCY_RETENTION_MS_DEFAULT,
  type StoreOptions,
  type CommitInput,
  type StoreStats,
  type PutOptions,
  type UsedProofInfo,
} from './store.ts'
export { checkDataFile, type DataFileCheck } from './data-file.ts'
export type { SnapshotMigration } from './migrate.ts'
