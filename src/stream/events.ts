// From the durable change feed to per-wallet events: each change of a lease, offer, advance, job or borrower record
// becomes one event for the wallets it concerns. An event carries the record's new state whole (the same view the
// HTTP routes answer), so a client that applies events in order holds what a fresh read would give it.
import type { Address } from 'viem'
import { toWire } from '../api/wire.ts'
import { advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot } from '../engine/engine.ts'
import type { BorrowerRecord, Change, LeaseView } from '../engine/types.ts'

/** An event before the hub numbers it: the wallets it goes to and its payload (everything but type, epoch, seq). */
export interface DerivedEvent {
  wallets: readonly Address[]
  body: Record<string, unknown>
}

export interface EventSources {
  /**
   * What a live lease's lender needs to pay it (authorization, signature, unsigned paySupplier), in wire form, built
   * as GET /lenders/{address}/actions builds it; null when it cannot be delivered (no lease signer, offer gone).
   */
  leaseAction(lease: LeaseView): unknown
  nowMs(): number
}

/** The events of one durable commit, in the engine's order of its changes. */
export function deriveEvents(changes: readonly Change[], sources: EventSources): DerivedEvent[] {
  const at = new Date(sources.nowMs()).toISOString()
  const events: DerivedEvent[] = []
  for (const change of changes) {
    switch (change.kind) {
      case 'lease': {
        const lease = leaseViewFromSnapshot(change.record)
        const action = lease.state === 'leased' ? sources.leaseAction(lease) : null
        events.push({ wallets: [lease.lender], body: { at, kind: 'lease', lease: toWire(lease), action } })
        break
      }
      case 'offer': {
        const offer = offerViewFromSnapshot(change.record)
        events.push({ wallets: [offer.borrower], body: { at, kind: 'offer', offer: toWire(offer) } })
        break
      }
      case 'advance': {
        const advance = advanceViewFromSnapshot(change.record)
        events.push({ wallets: distinct(advance.lender, advance.borrower), body: { at, kind: 'advance', advance: toWire(advance) } })
        break
      }
      case 'job': {
        const job = jobViewFromSnapshot(change.record)
        events.push({ wallets: distinct(job.borrower, job.client), body: { at, kind: 'job', job: toWire(job) } })
        break
      }
      case 'borrower': {
        const b = change.record as BorrowerRecord
        const borrower = {
          address: b.address,
          suspended: b.suspended,
          suspendedAt: b.suspendedAtMs === null ? null : new Date(b.suspendedAtMs).toISOString(),
          reputationBps: b.reputationBps,
          advancesRepaid: b.advancesRepaid,
          advancesDefaulted: b.advancesDefaulted,
          shortfallAtomic: b.shortfallAtomic.toString(),
        }
        events.push({ wallets: [b.address], body: { at, kind: 'passport', borrower } })
        break
      }
      // Lender profiles, sources, reserves and the engine's meta are read over HTTP; they change with every lease
      // and would only repeat what the lease and advance events say.
      default:
        break
    }
  }
  return events
}

function distinct(a: Address, b: Address): Address[] {
  return a === b ? [a] : [a, b]
}
