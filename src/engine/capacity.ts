// The capacity repayment sources commit to offers and advances: a job's through its machine (COMMIT, RELEASE,
// ADVANCE_CLOSED), a backing source's on its record (committed, and what liquidations used of its value).
import type { SourceRef } from '../../machines/index.ts'
import { expect } from './actors.ts'
import { touch } from './changes.ts'
import type { EngineState, JobActor } from './state.ts'
import type { SourceRecord } from './types.ts'

/** An approved offer holds its amount of the source's capacity. */
export function commitCapacity(s: EngineState, source: SourceRef, amountAtomic: bigint, nowMs: number): void {
  if (source.kind === 'job') {
    expect(s, 'job', s.jobs.get(source.id) as JobActor, { type: 'COMMIT', amountAtomic, nowMs })
  } else {
    const src = s.sources.get(source.id) as SourceRecord
    src.committedAtomic += amountAtomic
    touch(s, 'source', src.sourceId)
  }
}

/** An offer that ends unfunded gives its amount back. */
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
  a: { advanceId: string; principalAtomic: bigint; source: SourceRef },
  usedAtomic: { revenueUsedAtomic: bigint; collateralUsedAtomic: bigint; backingUsedAtomic: bigint },
  nowMs: number,
): void {
  if (a.source.kind === 'job') {
    const job = s.jobs.get(a.source.id)
    if (job) {
      expect(s, 'job', job, {
        type: 'ADVANCE_CLOSED', advanceId: a.advanceId, principalAtomic: a.principalAtomic,
        revenueUsedAtomic: usedAtomic.revenueUsedAtomic, collateralUsedAtomic: usedAtomic.collateralUsedAtomic, nowMs,
      })
    }
  } else {
    releaseBacking(s, a.source.id, a.principalAtomic, usedAtomic.backingUsedAtomic)
  }
}

/** A backing source gives back a principal; a liquidation also records what it took of the source's value. */
function releaseBacking(s: EngineState, sourceId: string, principalAtomic: bigint, backingUsedAtomic: bigint): void {
  const src = s.sources.get(sourceId)
  if (!src) return
  src.committedAtomic -= principalAtomic
  src.backingUsedAtomic += backingUsedAtomic
  touch(s, 'source', sourceId)
}
