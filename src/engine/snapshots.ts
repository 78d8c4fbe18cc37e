// The engine's state as stored snapshots, and back: every record and live actor listed in a fixed order, and a
// restart rebuilt from what the store holds.
import { advanceMachine, jobMachine, leaseMachine, offerMachine, type AdvanceContext, type OfferContext, type SourceRef } from '../../machines/index.ts'
import { countOffer, restoreActor } from './actors.ts'
import { advanceCommitmentAtomic, offerCommitmentAtomic } from './capacity.ts'
import { actorRecord } from './changes.ts'
import { scheduleOffer } from './dispatch.ts'
import { compareCodeUnits, seqOf } from './keys.ts'
import { addLiveLease } from './leases.ts'
import { addLender } from './matching.ts'
import { addHeldPayment } from './chain-facts.ts'
import type { EngineState } from './state.ts'
import type { ActorKind, BorrowerRecord, Change, HeldPaymentRecord, LenderRecord, MetaRecord, ReserveRecord, SourceRecord, SupplierRecord } from './types.ts'

/** A stored snapshot as the store hands it back for a restart. */
export interface StoredSnapshot {
  kind: Change['kind']
  id: string
  record: unknown
  final?: boolean
}

/** Every live actor snapshot and every record, as the store would hold them (final: false). */
export function snapshots(s: EngineState): Change[] {
  // Sorted by kind, then id (sequence order for minted ids), so a fresh and a restored engine list the same.
  const out: Change[] = [{ kind: 'meta', id: 'engine', record: { ...s.meta }, final: false }]
  const byId = (a: Change, b: Change): number => compareCodeUnits(a.id, b.id)
  const bySeq = (a: Change, b: Change): number => seqOf(a.id) - seqOf(b.id)
  const lenders = [...s.lenders.values()].sort((a, b) => a.registrationSeq - b.registrationSeq)
  for (const l of lenders) out.push({ kind: 'lender', id: l.address, record: { ...l }, final: false })
  const sources = [...s.sources.values()].sort((a, b) => a.registrationSeq - b.registrationSeq)
  for (const src of sources) out.push({ kind: 'source', id: src.sourceId, record: { ...src }, final: false })
  const records: Change[] = []
  for (const b of s.borrowers.values()) records.push({ kind: 'borrower', id: b.address, record: { ...b }, final: false })
  out.push(...records.sort(byId))
  records.length = 0
  for (const [id, r] of s.reserves) records.push({ kind: 'reserve', id, record: { ...r }, final: false })
  out.push(...records.sort(byId))
  records.length = 0
  for (const [id, r] of s.suppliers) records.push({ kind: 'supplier', id, record: { ...r }, final: false })
  out.push(...records.sort(byId))
  records.length = 0
  for (const [id, r] of s.heldPayments) records.push({ kind: 'held', id, record: { ...r }, final: false })
  out.push(...records.sort(byId))
  for (const [kind, map] of s.actorMaps()) {
    const actors: Change[] = []
    for (const [id, actor] of map) actors.push({ kind, id, record: actorRecord(actor), final: false })
    out.push(...actors.sort(kind === 'job' ? byId : bySeq))
  }
  return out
}

/** Rebuild from stored snapshots: records first, then each live actor from its persisted snapshot, in id order. */
export function restore(s: EngineState, stored: Iterable<StoredSnapshot>): void {
  const byKind = new Map<Change['kind'], StoredSnapshot[]>()
  for (const snapshot of stored) {
    if (snapshot.final) continue
    const list = byKind.get(snapshot.kind) ?? []
    list.push(snapshot)
    byKind.set(snapshot.kind, list)
  }
  const list = (kind: Change['kind']): StoredSnapshot[] => byKind.get(kind) ?? []
  restoreRecords(s, list)
  const byId = (kind: ActorKind) => (kind === 'job'
    ? list(kind).sort((a, b) => compareCodeUnits(a.id, b.id))
    : list(kind).sort((a, b) => seqOf(a.id) - seqOf(b.id)))
  const committed = commitmentsOf(list('offer'), list('advance'))
  for (const src of s.sources.values()) src.committedAtomic = committed.get(`backing:${src.sourceId}`) ?? 0n
  for (const x of byId('job')) s.jobs.set(x.id, restoreActor(jobMachine, withCommitted(x.record, committed.get(`job:${x.id}`) ?? 0n), s.actorRoot))
  for (const x of byId('offer')) {
    const offer = restoreActor(offerMachine, x.record, s.actorRoot)
    s.offers.set(x.id, offer)
    countOffer(s, offer.getSnapshot().context, 1)
    s.offerIdByKey.set(offer.getSnapshot().context.offerKey, x.id)
    scheduleOffer(s, offer.getSnapshot())
  }
  for (const x of byId('lease')) {
    const lease = restoreActor(leaseMachine, x.record, s.actorRoot)
    if (lease.getSnapshot().status !== 'active') continue
    s.leases.set(x.id, lease)
    addLiveLease(s, lease.getSnapshot().context)
  }
  for (const x of byId('advance')) {
    const advance = restoreActor(advanceMachine, x.record, s.actorRoot)
    s.advances.set(x.id, advance)
    s.advanceIdByKey.set(advance.getSnapshot().context.advanceKey, x.id)
    s.backingAdvanceOpened(advance.getSnapshot().context.source, x.id)
  }
}

/**
 * The capacity each source (`kind:id`) holds, derived from the live offers' and open advances' snapshots as the rules
 * count it now (capacity.ts: principal and fee). A store written before fees counted holds principal only; its
 * sources get what the rules say, so that releasing a commitment never takes more than was committed. A backing
 * source's stored `committedAtomic` is not read: offers and advances change it without writing the source (issue 11,
 * capacity.ts releaseBacking), so this is the only account of it a restart has.
 */
function commitmentsOf(offers: StoredSnapshot[], advances: StoredSnapshot[]): Map<string, bigint> {
  const committed = new Map<string, bigint>()
  const add = (src: SourceRef, amountAtomic: bigint): void => {
    const key = `${src.kind}:${src.id}`
    committed.set(key, (committed.get(key) ?? 0n) + amountAtomic)
  }
  for (const x of offers) {
    const o = (x.record as { context: Pick<OfferContext, 'source' | 'amountAtomic' | 'maximumFeeAtomic'> }).context
    add(o.source, offerCommitmentAtomic(o))
  }
  for (const x of advances) {
    const a = (x.record as { context: Pick<AdvanceContext, 'source' | 'principalAtomic' | 'feeAtomic' | 'recovery'> }).context
    // A liquidated advance (in shortfall) gave its commitment back at its liquidation.
    if (a.recovery === null) add(a.source, advanceCommitmentAtomic(a))
  }
  return committed
}

function withCommitted(record: unknown, committedAtomic: bigint): unknown {
  const persisted = record as { context: object }
  return { ...persisted, context: { ...persisted.context, committedAtomic } }
}

function restoreRecords(s: EngineState, list: (kind: Change['kind']) => StoredSnapshot[]): void {
  const meta = list('meta')[0]
  if (meta) s.meta = { ...(meta.record as MetaRecord) }
  for (const l of list('lender').map((x) => ({ ...(x.record as LenderRecord) })).sort((a, b) => a.registrationSeq - b.registrationSeq)) addLender(s, l)
  for (const src of list('source').map((x) => ({ ...(x.record as SourceRecord) })).sort((a, b) => a.registrationSeq - b.registrationSeq)) {
    s.sources.set(src.sourceId, src)
    s.sourceOrder.push(src.sourceId)
  }
  for (const b of list('borrower').map((x) => ({ ...(x.record as BorrowerRecord) })).sort((a, b) => compareCodeUnits(a.address, b.address))) {
    s.borrowers.set(b.address, b)
    if (b.suspended) s.suspended.add(b.address)
  }
  for (const r of list('reserve').sort((a, b) => compareCodeUnits(a.id, b.id))) s.reserves.set(r.id, { ...(r.record as ReserveRecord) })
  for (const r of list('supplier').sort((a, b) => compareCodeUnits(a.id, b.id))) s.suppliers.set(r.id, { ...(r.record as SupplierRecord) })
  for (const r of list('held').sort((a, b) => compareCodeUnits(a.id, b.id))) addHeldPayment(s, r.id, { ...(r.record as HeldPaymentRecord) })
}
