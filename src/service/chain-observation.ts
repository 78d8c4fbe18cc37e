// The chain follower's side of the service: its consumer (observeChain: a batch's facts as one engine command, committed
// with their used proofs and the follower's cursor) and its health. Called through CreditService (credit-service.ts) by
// the followers src/app/app.ts starts, and by the health route (src/api/routes/discovery.ts).
import { getAddress } from 'viem'
import { leaseViewFromSnapshot, type ChainEventFact, type ChainObservationOutcome, type PastLeaseOf } from '../engine/engine.ts'
import type { AdvanceView } from '../engine/types.ts'
import { facilityFact, type FacilityFact } from '../chain/events-v2.ts'
import { readFacilityReceipt, supplierPaymentHeldAt, type FacilityFactOf } from '../chain/proofs-v2.ts'
import { FollowerFatalError, type ChainBatch } from '../chain/follower.ts'
import type { RecordWrite } from '../store/index.ts'
import type { ServiceCore } from './core.ts'
import { failureIntentEndedOps, type OperatorRepairs } from './operator-commands.ts'
import { repaidPassport } from './reports.ts'

/**
 * The chain follower's consumer for one network (src/chain/follower.ts): the batch's facts go to the engine as one
 * command, and its changes, the used-proof records of the facts it applied and the follower's cursor (`cursor`)
 * are ONE commit; the follower advances only once it is durable. A fact whose proof is already used (its report
 * came first) is skipped: the same fact is applied once, however it arrives.
 */
export async function observeChain(service: ServiceCore, repairs: OperatorRepairs, batch: ChainBatch, cursor: RecordWrite): Promise<ChainObservationOutcome | null> {
  const network = service.network(batch.network)
  const symbolOf = new Map(network.tokens.map((t) => [t.address.toLowerCase(), t.symbol]))
  const facilityFacts = batch.events.map((event) => facilityFact(network.slug, event))
  await refuseVanishedReports(service, batch, facilityFacts)
  service.observedFacts.record(facilityFacts)
  const facts: ChainEventFact[] = facilityFacts.map((fact, index) => {
    if (fact.name === 'Repaid') {
      const { offerKey, payer, lender, toLender, toReserve, lenderOwed, reserveOwed } = fact.args
      return {
        kind: 'repaid', proofKey: fact.proofKey, advanceKey: offerKey, network: network.slug, txHash: fact.txHash, logIndex: fact.logIndex,
        payer: getAddress(payer), lender: getAddress(lender), amountAtomic: toLender, reserveAmountAtomic: toReserve, lenderOwedAtomic: lenderOwed, reserveOwedAtomic: reserveOwed,
      }
    }
    if (fact.name === 'CollateralPosted') return collateralFact(fact, symbolOf)
    if (fact.name === 'JobReclaimed') {
      const { jobKey, escrowRefunded, collateralReleased } = fact.args
      return { kind: 'job_reclaimed', proofKey: fact.proofKey, jobKey, escrowRefundedAtomic: escrowRefunded, collateralReleasedAtomic: collateralReleased }
    }
    if (fact.name === 'PaymentHeld' || fact.name === 'HeldPaymentClaimed') {
      const { asset, to, amount } = fact.args
      const symbol = symbolOf.get(asset.toLowerCase())
      // Only the network's own tokens: a held payment in any other (a stranger's own token its job escrowed, its
      // reclaim refused by that token) is nobody's business of the service, and following it would let anyone add a
      // record to the store per token and recipient at the price of a funding and a reclaim (outsider15).
      if (symbol === undefined) return { kind: 'other', name: fact.name, proofKey: fact.proofKey }
      const kind = fact.name === 'PaymentHeld' ? 'payment_held' : 'held_payment_claimed'
      return { kind, proofKey: fact.proofKey, account: getAddress(to), asset: symbol, token: getAddress(asset), amountAtomic: amount, blockTimeMs: fact.blockTimeMs }
    }
    if (fact.name !== 'SupplierPaid') return { kind: 'other', name: fact.name, proofKey: fact.proofKey }
    const { offerKey, payer, supplier, asset, amount } = fact.args
    return {
      kind: 'supplier_paid', proofKey: fact.proofKey, offerKey, network: network.slug, txHash: fact.txHash, logIndex: fact.logIndex,
      payer: getAddress(payer), supplier: getAddress(supplier), asset: symbolOf.get(asset.toLowerCase()) ?? asset, amountAtomic: amount,
      supplierPaymentHeld: supplierPaymentHeldAt(facilityFacts, index),
    }
  })
  const pastLease: PastLeaseOf = (leaseId) => service.stored('lease', leaseId, leaseViewFromSnapshot)
  let outcome: ChainObservationOutcome | null = null
  // The advances the batch's repayments name, read before the command (one that ends repaid leaves memory in it).
  const repaidAdvances = new Map<string, AdvanceView>()
  let changedEngine = false
  let unrecorded: RecordWrite[] = []
  let heldWrites: RecordWrite[] = []
  await service.run<ChainObservationOutcome>(
    null,
    () => {
      for (const fact of facts) {
        const advance = fact.kind === 'repaid' ? service.engine.advanceByKey(fact.advanceKey) : undefined
        if (advance !== undefined) repaidAdvances.set(advance.advanceId, advance)
      }
      // Repayments mined after a liquidation not recorded yet wait for it (OperatorRepairs.hold), held in this commit.
      const held = repairs.hold(facilityFacts)
      heldWrites = held.writes
      // In the command's synchronous section: a report queued its proof before, or it will find this one.
      const fresh = facts.filter((fact) => !service.store.proofs.has(fact.proofKey) && !held.proofKeys.has(fact.proofKey))
      const observed = { network: network.slug, toBlock: batch.toBlock, toBlockHash: batch.toBlockHash, toBlockTimeMs: batch.toBlockTimeMs, events: fresh }
      const result = service.engine.observeChain(observed, service.now(), pastLease)
      service.appliedChainBlocks.set(network.slug, batch.toBlock)
      changedEngine = result.ok && result.changes.length > 0
      return result
    },
    (value) => {
      outcome = value
      const usedAtMs = service.now()
      const proofs = value.advances.map((advance, i) => service.store.proofs.addOp(value.appliedProofKeys[i] as string, { usedBy: `offer:${advance.offerId}`, usedAtMs }))
      const repaid = value.repayments.flatMap(({ proofKey, receipt }) => [
        service.store.proofs.addOp(proofKey, { usedBy: `advance:${receipt.advanceId}`, usedAtMs }),
        ...repaidPassport(service, receipt, repaidAdvances.get(receipt.advanceId)),
      ])
      const collateral = value.collateral.map(({ proofKey, position }) => service.store.proofs.addOp(proofKey, { usedBy: collateralProofUse(position.jobId), usedAtMs }))
      // The JobReclaimed is the proof of the job's end: the escrow and the collateral left the contract in it. A /fail's
      // intent written before it (its failJob refused JobNotOpen, the job reclaimed first) goes with the job's end.
      const reclaimed = value.reclaimed.flatMap(({ proofKey, jobId }) => [
        service.store.proofs.addOp(proofKey, { usedBy: reclaimProofUse(jobId), usedAtMs }),
        ...failureIntentEndedOps(service, jobId),
      ])
      // A settleJob, failJob or liquidate of a job or advance still open here was never recorded by its request: a
      // repair is stored with the cursor that passes it, and run once this commit is durable (OperatorRepairs).
      unrecorded = repairs.found(facilityFacts)
      // A batch that changed nothing (no event applied, chain time and leases as they were) is not written: the
      // follower moves on in memory, and after a restart it reads those empty blocks again, which changes nothing.
      const writes = [...proofs, ...repaid, ...collateral, ...reclaimed, ...unrecorded, ...heldWrites]
      if (!changedEngine && writes.length === 0) return []
      return [...writes, cursor]
    },
  )
  if (unrecorded.length > 0 || heldWrites.length > 0) repairs.wake()
  return outcome
}

/** A CollateralPosted as the engine takes it: the job by its key, the token by its symbol. */
export function collateralFact(fact: FacilityFactOf<'CollateralPosted'>, symbolOf: ReadonlyMap<string, string>): ChainEventFact {
  const { jobKey, borrower, asset, amount } = fact.args
  return {
    kind: 'collateral_posted', proofKey: fact.proofKey, jobKey, borrower: getAddress(borrower), asset: symbolOf.get(asset.toLowerCase()) ?? asset,
    amountAtomic: amount, proof: { network: fact.network, txHash: fact.txHash, logIndex: fact.logIndex },
  }
}

/** Who used a CollateralPosted proof: its job, whichever path applied it first (report, follower, registration). */
export function collateralProofUse(jobId: string): string {
  return `collateral:${jobId}`
}

/** Who used a JobReclaimed proof: the job it ended. */
export function reclaimProofUse(jobId: string): string {
  return `reclaim:${jobId}`
}

/**
 * Health of the network's chain follower: its state as health shows it (held: ChainFollower.health), last applied
 * block and time, and lag behind the head.
 */
export function followerHealth(service: ServiceCore, slug: string): { state: 'starting' | 'ok' | 'degraded' | 'stopped'; block: string | null; chainTime: string | null; lagBlocks: number | null; error?: string } {
  const follower = service.followers.get(slug)
  if (follower === undefined) return { state: 'stopped', block: null, chainTime: null, lagBlocks: null, error: 'no chain follower runs for this network' }
  const { cursor, head } = follower.status()
  const status = follower.health()
  return {
    state: status.state,
    block: cursor === undefined ? null : cursor.blockNumber.toString(),
    chainTime: cursor === undefined ? null : new Date(cursor.blockTimeMs).toISOString(),
    lagBlocks: head === undefined ? null : Number(head - (cursor?.blockNumber ?? -1n)),
    ...(status.error === undefined ? {} : { error: status.error }),
  }
}

/**
 * A fact a report counted before the follower read its block must be in the follower's batch over that block: a block
 * reorganised away after the report (deeper than the confirmations) holds it no more, and the follower would go on
 * over a history without it, never noticing (its cursor's hash is of an older block). So the follower stops, as for
 * a block it read itself (chain_replaced: reconcile before resuming). Before, the service kept the repayment no
 * transaction proved, the new history's repayments of that advance were refused (409 repayment_mismatch) and its
 * job's completion mined a settlement the service did not record (outsider31,
 * test/api/outsider31-reorg-before-follower.test.ts). A fact read but not used (its report refused, or not committed
 * yet) stops nothing: it is noted vanished, so that a report still on its way to its commit is refused (useProof, reorg39).
 *
 * An operator transaction's fact may have moved instead: its receipt is the first one seen, kept while its
 * confirmations were waited for, so a block taken back meanwhile (shallower than the confirmations) and the
 * transaction mined again in a later block left it naming the old block. That is no reorganisation deeper than the
 * confirmations: when the transaction is now mined past the batch with the same fact, it is checked at its new block
 * (before review38 the follower stopped on a one-block reorganisation during a completion).
 */
export async function refuseVanishedReports(service: ServiceCore, batch: ChainBatch, facts: readonly FacilityFact[]): Promise<void> {
  const ahead = service.reportedAhead.get(batch.network)
  if (ahead === undefined || ahead.size === 0) return
  let seen: Set<string> | undefined
  const vanished: FacilityFact[] = []
  for (const [proofKey, { blockNumber, sent, fact }] of ahead) {
    if (blockNumber > batch.toBlock) continue
    if (blockNumber >= batch.fromBlock) {
      seen ??= new Set(facts.map((f) => f.proofKey))
      if (!seen.has(proofKey)) {
        if (sent) {
          vanished.push(fact)
          continue
        }
        if (service.store.proofs.has(proofKey)) throw chainReplaced(batch.network, blockNumber, proofKey)
        // Not used yet: a report still in flight would commit it unchecked; its useProof refuses it (reorg39).
        service.noteVanishedFact(proofKey, blockNumber)
      }
    }
    ahead.delete(proofKey)
  }
  for (const fact of vanished) {
    const moved = await movedTo(service, batch.network, fact)
    const past = moved !== undefined && moved.blockNumber > batch.toBlock
    // Mined again in this batch's blocks (its facts hold it) or past them (checked there); else it is gone.
    if (!past && !(moved !== undefined && moved.blockNumber >= batch.fromBlock && seen?.has(moved.fact.proofKey) === true)) {
      throw chainReplaced(batch.network, ahead.get(fact.proofKey)?.blockNumber ?? batch.toBlock, fact.proofKey)
    }
    ahead.delete(fact.proofKey)
    if (past) service.noteReportedAhead(batch.network, moved.blockNumber, [moved.fact], true)
  }
}

/** The operator transaction's `fact` as its receipt now has it: the same event with the same arguments; else undefined. */
async function movedTo(service: ServiceCore, slug: string, fact: FacilityFact): Promise<{ blockNumber: bigint; fact: FacilityFact } | undefined> {
  // Any failure of the RPC is thrown: the batch comes again after the follower's back-off.
  const read = await readFacilityReceipt(service.clientsOf(slug), service.network(slug).creditContract, { txHash: fact.txHash, confirmations: 1 })
  // A receipt of a side branch or of a node behind (the canonical block at its height is another): read again later.
  if (!read.ok && read.reason === 'too_few_confirmations') throw new Error(`the receipt of ${fact.txHash} is not on the chain yet: ${read.detail}`)
  if (!read.ok) return undefined
  const same = read.value.facts.find((f) => f.name === fact.name && sameArgs(f.args, fact.args))
  return same === undefined ? undefined : { blockNumber: read.value.blockNumber, fact: same }
}

function sameArgs(a: object, b: object): boolean {
  const text = (args: object) => JSON.stringify(args, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))
  return text(a) === text(b)
}

function chainReplaced(network: string, blockNumber: bigint, proofKey: string): FollowerFatalError {
  return new FollowerFatalError(
    network,
    'chain_replaced',
    `block ${blockNumber} no longer holds the event ${proofKey} the service counted: the chain was reorganised deeper than its ` +
      'confirmations before the follower read that block; the events counted may no longer exist. Reconcile the ledger with the chain before resuming.',
  )
}
