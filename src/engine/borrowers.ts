// Borrower records: created at a borrower's first appearance, suspended by a failed job, lifted by dispatch.
import { touch } from './changes.ts'
import { roomForLift } from './dispatch.ts'
import type { EngineState } from './state.ts'
import type { Address, AmountsByAsset, BorrowerRecord, SuspensionLiftedEvent } from './types.ts'

/** The borrower's record, created (neutral reputation, nothing owed) and recorded as changed at its first use. */
export function borrowerOf(s: EngineState, address: Address): BorrowerRecord {
  let borrower = s.borrowers.get(address)
  if (!borrower) {
    borrower = {
      address, suspended: false, suspendedAtMs: null, reputationBps: s.config.borrowerReputationInitialBps,
      advancesRepaid: 0, advancesDefaulted: 0, shortfallAtomic: 0n, repaidPrincipalAtomic: {}, receivableOwedAtomic: {},
    }
    s.borrowers.set(address, borrower)
    touch(s, 'borrower', address)
  }
  return borrower
}

/** The amount on the network's asset (0 when none is recorded). */
function amountOn(amounts: AmountsByAsset, network: string, asset: string): bigint {
  const amount = amounts[network]?.[asset]
  return typeof amount === 'bigint' ? amount : 0n
}

/** A copy of `amounts` with `deltaAtomic` added on the network's asset, never below 0. */
function withAdded(amounts: AmountsByAsset, network: string, asset: string, deltaAtomic: bigint): AmountsByAsset {
  const sum = amountOn(amounts, network, asset) + deltaAtomic
  return { ...amounts, [network]: { ...amounts[network], [asset]: sum < 0n ? 0n : sum } }
}

/**
 * What the borrower has proven it repays on the network's asset: the principal it has repaid, less the principal its
 * advances on jobs still owe (each drew on a receivable its client may take back). Below 0 after a loss.
 */
export function provenRepaidAtomic(borrower: BorrowerRecord, network: string, asset: string): bigint {
  return amountOn(borrower.repaidPrincipalAtomic, network, asset) - amountOn(borrower.receivableOwedAtomic, network, asset)
}

/** An advance on a job was funded: its principal is owed on a receivable until repaid or recovered. */
export function receivableDrawn(borrower: BorrowerRecord, a: { network: string; asset: string }, principalAtomic: bigint): void {
  borrower.receivableOwedAtomic = withAdded(borrower.receivableOwedAtomic, a.network, a.asset, principalAtomic)
}

/**
 * Principal came back on one of the borrower's advances: repaid (by a repayment or its job's settlement) it counts as
 * proven; on a job it is no longer owed on the receivable (also when a liquidation recovered it, which proves nothing).
 */
export function principalBack(borrower: BorrowerRecord, a: { network: string; asset: string; source: { kind: string } }, principalAtomic: bigint, repaid: boolean): void {
  if (principalAtomic <= 0n) return
  if (repaid) borrower.repaidPrincipalAtomic = withAdded(borrower.repaidPrincipalAtomic, a.network, a.asset, principalAtomic)
  if (a.source.kind === 'job') borrower.receivableOwedAtomic = withAdded(borrower.receivableOwedAtomic, a.network, a.asset, -principalAtomic)
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
