// The capacity repayment sources commit to offers and advances: a job's through its machine (COMMIT, RELEASE,
// ADVANCE_CLOSED), a backing source's on its record (committed, and what liquidations used of its value). On a job an
// offer holds its amount and its maximum fee, an advance its principal and fee: what it can come to owe its lender and
// the reserve, all of which the job's settlement pays from its escrow and collateral, so a job never lends more than
// its settlement can repay. A backing source holds principal only: a default's fee is recovered in the recovery order
// (its hard liquidation value, then the insurance reserve, then a recorded shortfall).
import type { AdvanceContext, OfferContext, SourceRef } from '../../machines/index.ts'
import { expect } from './actors.ts'
import { touch } from './changes.ts'
import type { EngineState, JobActor } from './state.ts'
import type { SourceRecord } from './types.ts'

/** The capacity an offer holds on its source: its amount, and on a job the most its fee can be. */
export function offerCommitmentAtomic(o: Pick<OfferContext, 'source' | 'amountAtomic' | 'maximumFeeAtomic'>): bigint {
  return o.source.kind === 'job' ? o.amountAtomic + o.maximumFeeAtomic : o.amountAtomic
}

/** The capacity an advance holds on its source: its principal, and on a job its fee (its offer's maximum fee less what was not charged). */
export function advanceCommitmentAtomic(a: Pick<AdvanceContext, 'source' | 'principalAtomic' | 'feeAtomic'>): bigint {
  return a.source.kind === 'job' ? a.principalAtomic + a.feeAtomic : a.principalAtomic
}

/** An approved offer holds its commitment (offerCommitmentAtomic) of the source's capacity. */
export function commitCapacity(s: EngineState, source: SourceRef, amountAtomic: bigint, nowMs: number): void {
  if (source.kind === 'job') {
    expect(s, 'job', s.jobs.get(source.id) as JobActor, { type: 'COMMIT', amountAtomic, nowMs })
  } else {
    // Not a change to write: see releaseBacking.
    const src = s.sources.get(source.id) as SourceRecord
    src.committedAtomic += amountAtomic
  }
}

/** An offer that ends unfunded gives its commitment back; a funded one the part of its maximum fee not charged. */
export function releaseCapacity(s: EngineState, source: SourceRef, amountAtomic: bigint, nowMs: number): void {
  if (source.kind === 'job') {
    const job = s.jobs.get(source.id)
    if (job) expect(s, 'job', job, { type: 'RELEASE', amountAtomic, nowMs })
  } else {
    releaseBacking(s, source.id, amountAtomic, 0n)
  }
}

/** An advance closed (repaid or liquidated): its source releases the principal and counts what a recovery used of it. */
export function closeOnSource(
  s: EngineState,
  a: Pick<AdvanceContext, 'advanceId' | 'principalAtomic' | 'feeAtomic' | 'source'>,
  usedAtomic: { revenueUsedAtomic: bigint; collateralUsedAtomic: bigint; backingUsedAtomic: bigint },
  nowMs: number,
): void {
  if (a.source.kind === 'job') {
    const job = s.jobs.get(a.source.id)
    if (job) {
      expect(s, 'job', job, {
        type: 'ADVANCE_CLOSED', advanceId: a.advanceId, committedAtomic: advanceCommitmentAtomic(a),
        revenueUsedAtomic: usedAtomic.revenueUsedAtomic, collateralUsedAtomic: usedAtomic.collateralUsedAtomic, nowMs,
      })
    }
  } else {
    releaseBacking(s, a.source.id, advanceCommitmentAtomic(a), usedAtomic.backingUsedAtomic)
  }
}

/**
 * A backing source gives back a commitment; a liquidation also records what it took of the source's value, the one
 * change of the source's record written here. Its committed capacity is not written (issue 11: it was two of the
 * sixteen puts of a request + match pair): the restore derives it from the live offers and open advances it holds
 * (snapshots.ts commitmentsOf), which reach the disk in the same commits as every change of it, so the stored
 * `committedAtomic` is the value of the record's last write and nothing reads it.
 */
function releaseBacking(s: EngineState, sourceId: string, committedAtomic: bigint, backingUsedAtomic: bigint): void {
  const src = s.sources.get(sourceId)
  if (!src) return
  src.committedAtomic -= committedAtomic
  if (backingUsedAtomic === 0n) return
  src.backingUsedAtomic += backingUsedAtomic
  touch(s, 'source', sourceId)
}
