// From the durable change feed to per-wallet events: each change of a lease, offer, advance, job or borrower record
// becomes one event for the wallets it concerns. An event carries the record's new state whole (the same view the
// HTTP routes answer), so a client that applies events in order holds what a fresh read would give it.
//
// Two steps, so the commit path pays only the first: the wallets an event goes to, read from the change's record
// (what the hub numbers and retains, with the part of the record the event shows), and its payload, built from that
// only once a connection needs the event (src/stream/hub.ts).
import type { Address } from 'viem'
import { toWire } from '../api/wire.ts'
import { advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot } from '../engine/engine.ts'
import type { BorrowerRecord, Change, HeldPaymentRecord, LeaseView } from '../engine/types.ts'

export interface EventSources {
  /**
   * What a live lease's lender needs to pay it (authorization, signature, unsigned paySupplier), in wire form, built
   * as GET /lenders/{address}/actions builds it; null when it cannot be delivered (no lease signer, offer gone).
   */
  leaseAction(lease: LeaseView): unknown
  /**
   * A held payment in wire form with its unsigned claimHeld, as GET /credit/held-payments/{address} answers it (the
   * service's; a hub without one, in tests of the hub alone, sends the record's wire form).
   */
  heldPayment?(record: HeldPaymentRecord): unknown
}

/** The context of an actor's record (a job, offer, lease or advance snapshot): where its parties are. */
type ActorContext = { lender: Address; borrower: Address; client: Address }

/**
 * The wallets the event of `change` goes to, in the order the event's view names them; undefined for a change the
 * stream does not carry. Read from the record's context, without building the view (the view copies it whole).
 */
export function eventWallets(change: Change): readonly Address[] | undefined {
  switch (change.kind) {
    case 'lease': return [contextOf(change).lender]
    case 'offer': return [contextOf(change).borrower]
    case 'advance': return distinct(contextOf(change).lender, contextOf(change).borrower)
    case 'job': return distinct(contextOf(change).borrower, contextOf(change).client)
    case 'borrower': return [(change.record as BorrowerRecord).address]
    case 'held': {
      const { account, lender } = change.record as HeldPaymentRecord
      return lender === null ? [account] : distinct(lender, account)
    }
    // Lender profiles, sources, reserves and the engine's meta are read over HTTP; they change with every lease
    // and would only repeat what the lease and advance events say.
    default: return undefined
  }
}

/**
 * What an event is derived from, for the ring to keep until it is: an actor's state and context (its view's parts;
 * the record's transition history and XState's bookkeeping are in no event, and a fifth of a slot), a borrower's
 * record or a held payment's as they are. Immutable, like the change it comes from.
 */
export function eventRecord(change: Change): unknown {
  if (change.kind === 'borrower' || change.kind === 'held') return change.record
  const { value, context } = change.record as { value: unknown; context: unknown }
  return { value, context }
}

/**
 * The payload (everything but type, epoch, seq) of the event of a change of `kind` that eventWallets carries, from
 * its eventRecord; `at` is its commit's time. A leased lease's action is built now, from the lease as the commit
 * left it.
 */
export function eventBody(kind: Change['kind'], record: unknown, at: string, sources: EventSources): Record<string, unknown> {
  switch (kind) {
    case 'lease': {
      const lease = leaseViewFromSnapshot(record)
      return { at, kind: 'lease', lease: toWire(lease), action: lease.state === 'leased' ? leaseActionOrNull(lease, sources) : null }
    }
    case 'offer': return { at, kind: 'offer', offer: toWire(offerViewFromSnapshot(record)) }
    case 'advance': return { at, kind: 'advance', advance: toWire(advanceViewFromSnapshot(record)) }
    case 'job': return { at, kind: 'job', job: toWire(jobViewFromSnapshot(record)) }
    case 'borrower': {
      const b = record as BorrowerRecord
      const borrower = {
        address: b.address,
        suspended: b.suspended,
        suspendedAt: b.suspendedAtMs === null ? null : new Date(b.suspendedAtMs).toISOString(),
        reputationBps: b.reputationBps,
        advancesRepaid: b.advancesRepaid,
        advancesDefaulted: b.advancesDefaulted,
        shortfallAtomic: b.shortfallAtomic.toString(),
      }
      return { at, kind: 'passport', borrower }
    }
    case 'held': return { at, kind: 'held_payment', heldPayment: sources.heldPayment?.(record as HeldPaymentRecord) ?? toWire(record) }
    default:
      throw new Error(`stream: a ${kind} change has no event`)
  }
}

function contextOf(change: Change): ActorContext {
  return (change.record as { context: ActorContext }).context
}

function distinct(a: Address, b: Address): Address[] {
  return a === b ? [a] : [a, b]
}

/**
 * The lease's pay action, or null when the source fails: the event is built inside a socket's open or drain callback,
 * long after its commit, and one lease that cannot be delivered must not stop the stream (the lender still reads
 * GET /lenders/{address}/actions).
 */
function leaseActionOrNull(lease: LeaseView, sources: EventSources): unknown {
  try {
    return sources.leaseAction(lease)
  } catch (error) {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error)
    process.emitWarning(`the pay action of lease ${lease.leaseId} could not be built`, { code: 'STREAM_LEASE_ACTION_FAILED', detail })
    return null
  }
}
