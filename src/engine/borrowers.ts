// Borrower records: created at a borrower's first appearance, suspended by a failed job, lifted by dispatch.
import { touch } from './changes.ts'
import { roomForLift } from './dispatch.ts'
import type { EngineState } from './state.ts'
import type { Address, BorrowerRecord, SuspensionLiftedEvent } from './types.ts'

/** The borrower's record, created (neutral reputation, nothing owed) and recorded as changed at its first use. */
export function borrowerOf(s: EngineState, address: Address): BorrowerRecord {
  let borrower = s.borrowers.get(address)
  if (!borrower) {
    borrower = {
      address, suspended: false, suspendedAtMs: null, reputationBps: s.config.borrowerReputationInitialBps,
      advancesRepaid: 0, advancesDefaulted: 0, shortfallAtomic: 0n,
    }
    s.borrowers.set(address, borrower)
    touch(s, 'borrower', address)
  }
  return borrower
}

export function suspend(s: EngineState, borrower: BorrowerRecord, nowMs: number): void {
  borrower.suspended = true
  borrower.suspendedAtMs = nowMs
  s.suspended.add(borrower.address)
}

/**
 * Suspensions whose time has come: at least borrowerSuspensionMinSeconds since the suspension, and nothing owed on a
 * defaulted advance (none of the borrower's advances is still defaulted). Each lift is a passport event, added to
 * `lifted` while the command has room for it (changesPerCommandMax); false when it stopped with lifts left.
 */
export function liftDueSuspensions(s: EngineState, nowMs: number, lifted: SuspensionLiftedEvent[]): boolean {
  const minMs = s.config.borrowerSuspensionMinSeconds * 1000
  for (const address of s.suspended) {
    const borrower = s.borrowers.get(address)
    if (borrower === undefined || !borrower.suspended) {
      s.suspended.delete(address)
      continue
    }
    const since = borrower.suspendedAtMs ?? 0
    if (nowMs < since + minMs) continue
    if (owesOnDefault(s, address)) continue
    if (!roomForLift(s, lifted.length)) return false
    borrower.suspended = false
    borrower.suspendedAtMs = null
    s.suspended.delete(address)
    touch(s, 'borrower', address)
    lifted.push({ type: 'suspension_lifted', borrower: address, suspendedAtMs: since, atMs: nowMs, borrowerReputationBps: borrower.reputationBps })
  }
  return true
}

/** Whether one of the borrower's live advances is defaulted (or in shortfall): money is still owed on a default. */
function owesOnDefault(s: EngineState, borrower: Address): boolean {
  for (const advance of s.advances.values()) {
    const snap = advance.getSnapshot()
    if (snap.context.borrower === borrower && (snap.matches('defaulted') || String(snap.value) === 'shortfall')) return true
  }
  return false
}
