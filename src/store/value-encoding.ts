// How the snapshots and records databases encode their values. Format 3 (issue 11): msgpackr records over shared
// structures, the key lists of the objects the store writes most (its entries, the engine's actor snapshots and
// records). A value names a shared structure by one byte instead of writing its keys: a match's four snapshots take
// 233 bytes each on average instead of 524 as plain maps (format 2), so LMDB copies, pages and syncs less than half
// the bytes. An object of another shape is written as a map, or, when its first two keys start a shared structure but
// the rest differ, as a record defining its own keys inside the value (as lmdb-js's default encoder does). The store
// writes through structures-encoder.ts, which writes the same records and any other object as a map; both read the same.
//
// The list a directory's values were written with is stored in it (meta record `structures`, written with the format
// record when the directory is created or upgraded) and is the one every later open reads and writes with: nothing
// about it is inferred per process, and a release whose VALUE_STRUCTURES differ still reads the directory as written.
import type { RootDatabase } from 'lmdb'
import { StoreOpenError } from './errors.ts'

/** The meta record holding the directory's shared structures. */
export const STRUCTURES_RECORD = 'structures'

/**
 * Shared structures beyond 32 would take two-byte record ids (msgpackr: 32 shared plus 32 of a value's own fit the
 * one-byte range 0x40-0x7f).
 */
export const SHARED_STRUCTURES_MAX = 32

/**
 * The structures a new or upgraded directory gets: key lists in the order their objects are built (an object whose
 * keys come in another order, or differ, is written with its own keys). Changing the list changes only what later
 * directories record; a directory keeps the list it has.
 */
export const VALUE_STRUCTURES: readonly (readonly string[])[] = [
  // the store's entries (types.ts SnapshotEntry, RecordEntry)
  ['version', 'snapshot', 'updatedAtMs', 'final'],
  ['version', 'value', 'updatedAtMs', 'expiresAtMs'],
  // an empty object (an XState snapshot's historyValue and children)
  [],
  // an actor's persisted XState snapshot and its history entries (src/engine/history.ts)
  ['status', 'value', 'historyValue', 'context', 'children', 'history'],
  ['from', 'to', 'event', 'atMs'],
  // the engine's records: lender, sequences, backing source, borrower, insurance reserve, supplier directory entry
  [
    'address', 'sessionAddress', 'asset', 'assets', 'networks', 'askBps', 'maxDurationSeconds', 'acceptedRiskBands',
    'registeredAtomic', 'availableAtomic', 'reservedAtomic', 'deployedAtomic', 'feesEarnedAtomic', 'lossesAtomic',
    'withdrawnAtomic', 'withdrawalPendingAtomic', 'reputationBps', 'reliabilityBps', 'registrationSeq', 'registeredAtMs',
    'leasesGranted', 'leasesPaid', 'leasesExpired', 'advancesRepaid', 'advancesDefaulted', 'recentLeaseOutcomes',
    'inactiveSinceMs', 'probationMisses',
  ],
  ['offerSeq', 'leaseSeq', 'advanceSeq', 'lenderSeq', 'sourceSeq'],
  [
    'sourceId', 'productType', 'agent', 'valueAtomic', 'liquidationValueAtomic', 'advanceRateBps', 'evidenceId',
    'validUntilMs', 'committedAtomic', 'backingUsedAtomic', 'registrationSeq', 'registeredAtMs',
  ],
  [
    'address', 'suspended', 'suspendedAtMs', 'reputationBps', 'advancesRepaid', 'advancesDefaulted', 'shortfallAtomic',
    'repaidPrincipalAtomic', 'receivableOwedAtomic',
  ],
  ['network', 'asset', 'balanceAtomic', 'fundedAtomic', 'paidOutAtomic'],
  ['domain', 'name', 'addresses', 'origin', 'updatedAtMs', 'removedAtMs'],
  // actor contexts: offer, lease, advance, and what they hold (a repayment source, a chain fact, a repayment)
  [
    'offerId', 'offerKey', 'borrower', 'network', 'asset', 'productType', 'amountAtomic', 'maximumFeeAtomic', 'purpose',
    'supplier', 'supplierDomain', 'supplierAddress', 'source', 'riskBand', 'durationSeconds', 'dueAtMs', 'createdAtMs',
    'expiresAtMs', 'leaseIds', 'excludedLenders', 'currentLeaseId', 'advanceId', 'endReason', 'endedAtMs',
  ],
  [
    'leaseId', 'offerId', 'lender', 'payer', 'network', 'asset', 'amountAtomic', 'feeAtomic', 'supplierAddress',
    'createdAtMs', 'expiresAtMs', 'endReason', 'endedAtMs', 'payment',
  ],
  [
    'advanceId', 'advanceKey', 'offerId', 'leaseId', 'lender', 'payer', 'borrower', 'source', 'network', 'asset',
    'principalAtomic', 'feeAtomic', 'insuranceAtomic', 'supplierAddress', 'lenderOwedAtomic', 'reserveOwedAtomic',
    'payment', 'fundedAtMs', 'dueAtMs', 'defaultReason', 'defaultedAtMs', 'repayments', 'recovery', 'endedAtMs',
  ],
  ['kind', 'id'],
  ['network', 'txHash', 'logIndex'],
  [
    'kind', 'network', 'txHash', 'logIndex', 'payer', 'lenderAmountAtomic', 'reserveAmountAtomic',
    'lenderOwedAfterAtomic', 'reserveOwedAfterAtomic',
  ],
  // records beside the changes: a used proof, an idempotency record, its scope and its response
  ['usedBy', 'usedAtMs'],
  ['scope', 'requestHash', 'response', 'createdAtMs', 'expiresAtMs'],
  ['identity', 'method', 'path', 'key'],
  ['status', 'body'],
]

/**
 * How formats 1 and 2 encoded values (format 2 plain maps; format 1 msgpackr records defining their keys in each
 * value), both read by this decoder: used only to read a directory of an older format while upgrading it. A
 * records decoder with shared structures cannot read format 2, whose integers 64..127 take the bytes that name them.
 */
export const LEGACY_VALUE_ENCODING = { useBigIntExtension: true, useRecords: false } as const

/**
 * lmdb-js's options for a snapshots or records database holding values of `structures` (a directory's stored list):
 * lmdb-js makes the msgpackr encoder from them. No new shared structure is ever added (maxSharedStructures is the
 * list's length). Each database gets its own copy: msgpackr keeps its lookup state on the list. Objects whose first two
 * keys start no shared structure are written as maps.
 */
export function valueEncoding(structures: readonly (readonly string[])[]): object {
  const starts = structureStarts(structures)
  return {
    useBigIntExtension: true,
    encoder: {
      structures: structures.map((keys) => [...keys]),
      maxSharedStructures: structures.length,
      // A record only where a shared structure may fit (its first two keys start one): an object of another shape,
      // such as one keyed by data (a lender's assets by network) or a stored response body, costs half again as much
      // to encode as a record defining its own keys than as a map. The integers 64..127 stay escaped either way.
      useRecords: (object: object) => {
        let first: string | undefined
        for (const key in object) {
          if (first !== undefined) return starts.get(first)?.has(key) === true
          first = key
        }
        return starts.get(first ?? '')?.has('') === true
      },
      // those maps read as plain objects (lmdb-js's default would make Map objects of them)
      mapsAsObjects: true,
      // Not msgpackr's progressiveRecords (one pass over a known object's keys): in msgpackr 1.12.1 it writes an
      // object of a new shape nested in another of the same new shape unreadably (test/store/commit.test.ts).
    },
  }
}

/** Each structure's first key and the second keys that follow it; '' stands for a key that is absent. */
function structureStarts(structures: readonly (readonly string[])[]): ReadonlyMap<string, ReadonlySet<string>> {
  const starts = new Map<string, Set<string>>()
  for (const [first = '', second = ''] of structures) {
    let seconds = starts.get(first)
    if (seconds === undefined) starts.set(first, (seconds = new Set()))
    seconds.add(second)
  }
  return starts
}

/** The stored structures record, checked: a list of key lists, at most SHARED_STRUCTURES_MAX. */
export function checkStructures(dataDir: string, stored: unknown): string[][] {
  const valid =
    Array.isArray(stored) &&
    stored.length <= SHARED_STRUCTURES_MAX &&
    stored.every((keys) => Array.isArray(keys) && keys.every((key) => typeof key === 'string'))
  if (!valid) {
    throw new StoreOpenError('store_corrupt', dataDir, `data directory ${dataDir} has an unreadable value structures record`)
  }
  return stored as string[][]
}

/** lmdb-js's options for reading or writing a format 3 directory's snapshots or records outside the store (tools, tests). */
export function storedValueEncoding(root: RootDatabase): object {
  const meta = root.openDB<unknown, string>({ name: 'meta', useBigIntExtension: true } as never)
  // lmdb-js keeps the directory's path on the root (its typings omit it)
  return valueEncoding(checkStructures((root as unknown as { path: string }).path, meta.get(STRUCTURES_RECORD)))
}
