// Reports of payments made on chain, and their receipts: a lender's supplier payment (SupplierPaid) that funds an
// advance, anyone's repayment (Repaid). A report is the fast path beside the chain follower: whichever comes first
// applies the fact, and the other gets the same answer once the commit that applied it is durable. Also the passport
// event of an advance repaid (shared with the follower's consumer, chain-observation.ts). Called through CreditService
// (credit-service.ts) by src/api/routes/credit.ts.
import type { Address } from 'viem'
import { supplierPaymentHeldAt } from '../chain/proofs-v2.ts'
import { leaseViewFromSnapshot, offerViewFromSnapshot, repaymentReceiptOf, supplierPaymentOnClosedOffer } from '../engine/engine.ts'
import { EngineRefusedError } from '../engine/errors.ts'
import type { AdvanceView, OfferView, RepaymentReceipt } from '../engine/types.ts'
import type { RecordWrite, StoredResponse } from '../store/index.ts'
import { valueOf, type ServiceCore } from './core.ts'
import type { Mutation } from './mutation.ts'
import type { OperatorRepairs } from './operator-commands.ts'

/**
 * The advance of the offer when it is funded by the payment `txHash` of `lender`: a report of a payment already
 * applied (the chain follower saw it first) answers the same advance.
 */
function paidAdvance(service: ServiceCore, offerId: string, lender: Address, txHash: string): AdvanceView | undefined {
  const offer = service.view('offer', offerId)
  if (offer?.advanceId == null) return undefined
  const advance = service.view('advance', offer.advanceId)
  if (advance === undefined || advance.lender !== lender || advance.payment.txHash.toLowerCase() !== txHash.toLowerCase()) return undefined
  return advance
}

export async function recordSupplierPayment(
  service: ServiceCore,
  mutation: Mutation<AdvanceView>,
  caller: Address,
  /** The request's clientKeyOf: its chain read takes from that client's part of the budget (chain-read-budget.ts). */
  client: string,
  offerId: string,
  body: { lender: Address; supplierPaymentId: string },
): Promise<StoredResponse> {
  // The report is the fast path; when the chain follower applied the payment first, the answer is its advance,
  // once the commit that created it is durable (an empty commit queues behind it).
  const answered = async (): Promise<StoredResponse | undefined> => {
    const advance = caller === body.lender ? paidAdvance(service, offerId, body.lender, body.supplierPaymentId) : undefined
    if (advance === undefined) return undefined
    await service.store.commit({})
    return mutation.encode(advance)
  }
  const early = await answered()
  if (early !== undefined) return early
  const plan = service.engine.planSupplierPayment({ offerId, lender: body.lender, caller })
  if (!plan.ok && plan.error.code === 'offer_not_found') {
    // An offer that reached a final state left memory: the late report of a lender whose lease expired, after the
    // offer was rematched and funded, must learn that its own lease expired (spec section 3).
    const closed = service.stored('offer', offerId, offerViewFromSnapshot)
    if (closed !== undefined) {
      const leaseOf = (id: string) => service.engine.getLease(id) ?? service.stored('lease', id, leaseViewFromSnapshot)
      throw new EngineRefusedError(supplierPaymentOnClosedOffer(closed, leaseOf, body.lender))
    }
  }
  const lease = valueOf(plan)
  const offer = service.engine.getOffer(offerId) as OfferView
  const token = service.token(service.network(lease.network), lease.asset)
  // The contract checked the lease's authorization (payer, supplier, amount, deadline); the report must show the
  // SupplierPaid of this offer's key by the leased session key to the offer's supplier, for the offer's amount.
  const { fact, facts } = await service.proveIn(lease.network, caller, client, 'SupplierPaid', body.supplierPaymentId, {
    offerKey: offer.offerKey, payer: lease.payer, supplier: lease.supplierAddress, asset: token.address, amount: lease.amountAtomic,
  })
  if (service.store.proofs.has(fact.proofKey)) {
    const late = await answered()
    if (late !== undefined) return late
  }
  const proof = service.useProof(fact, `offer:${offerId}`)
  return service.apply(
    mutation,
    () =>
      service.engine.recordSupplierPayment(
        {
          network: lease.network, txHash: fact.txHash, logIndex: fact.logIndex, offerId, payer: fact.args.payer,
          supplier: fact.args.supplier, asset: lease.asset, amountAtomic: fact.args.amount, caller,
          supplierPaymentHeld: supplierPaymentHeldAt(facts, facts.indexOf(fact)),
        },
        service.now(),
      ),
    () => [proof],
  )
}

export async function repay(service: ServiceCore, repairs: OperatorRepairs, mutation: Mutation<RepaymentReceipt>, caller: Address, client: string, advanceId: string, body: { txHash: string }): Promise<StoredResponse> {
  const known = service.view('advance', advanceId)
  if (known === undefined) throw service.missing('advance', advanceId)
  // On chain the advance's lender is the session wallet that paid (repayments recycle into the wallet that lends).
  const fact = await service.prove(known.network, caller, client, 'Repaid', body.txHash, { offerKey: known.advanceKey, lender: known.payer })
  // Never counted before a liquidation mined ahead of it and not recorded yet (its figures follow on from that).
  const live = service.engine.getAdvance(advanceId)
  if (live !== undefined) await repairs.awaitCountable(live, fact)
  // The report is the fast path: when the chain follower counted this payment first (the advance may even be
  // repaid and closed by it), the answer is the same receipt, once the commit that counted it is durable.
  const counted = countedRepayment(service, advanceId, fact)
  if (counted !== undefined) {
    await service.store.commit({})
    return mutation.encode(counted)
  }
  const plan = service.live(service.engine.planRepayment(advanceId), 'advance', advanceId)
  const advance = service.engine.getAdvance(advanceId) as AdvanceView
  const proof = service.useProof(fact, `advance:${advanceId}`)
  return service.apply(
    mutation,
    () =>
      service.engine.repayAdvance(
        {
          network: plan.network,
          txHash: fact.txHash,
          logIndex: fact.logIndex,
          advanceId,
          lender: fact.args.lender,
          payer: fact.args.payer,
          amountAtomic: fact.args.toLender,
          reserveAmountAtomic: fact.args.toReserve,
          lenderOwedAtomic: fact.args.lenderOwed,
          reserveOwedAtomic: fact.args.reserveOwed,
        },
        service.now(),
      ),
    (receipt) => [proof, ...repaidPassport(service, receipt, advance)],
  )
}

/** The receipt of a repayment the advance has already counted (by its proof), or undefined. */
function countedRepayment(service: ServiceCore, advanceId: string, fact: { txHash: string; logIndex: number }): RepaymentReceipt | undefined {
  const advance = service.view('advance', advanceId)
  const record = advance?.repayments.find((r) => r.kind === 'repaid' && r.txHash.toLowerCase() === fact.txHash.toLowerCase() && r.logIndex === fact.logIndex)
  return advance === undefined || record === undefined ? undefined : repaymentReceiptOf(advance, record)
}

/** The passport records an advance repaid once, by the payment after which nothing is owed (reported or observed). */
export function repaidPassport(service: ServiceCore, receipt: RepaymentReceipt, advance: Pick<AdvanceView, 'borrower' | 'source' | 'recovery'> | undefined): RecordWrite[] {
  if (!receipt.repaid || advance === undefined) return []
  // An advance liquidated with a shortfall and repaid since (a later repayment, or its job's settlement mined after
  // the liquidation): the entry names the shortfall now repaid and the liquidation that recorded it, so the
  // liquidated_with_shortfall entry before it is not left saying the debt stayed unpaid (money26).
  const shortfall = advance.recovery !== null && advance.recovery.shortfallAtomic > 0n
    ? { shortfallRepaidAtomic: advance.recovery.shortfallAtomic, liquidationTxHash: advance.recovery.txHash }
    : {}
  return service.passportWrites([{
    agent: advance.borrower,
    kind: 'advance_repaid',
    details: {
      advanceId: receipt.advanceId, jobId: advance.source.kind === 'job' ? advance.source.id : null, network: receipt.network, asset: receipt.asset,
      lender: receipt.lender, principalAtomic: receipt.principalAtomic, feeAtomic: receipt.feeAtomic,
      lenderAmountAtomic: receipt.lenderAmountAtomic, reserveAmountAtomic: receipt.reserveAmountAtomic, txHash: receipt.txHash, ...shortfall,
    },
  }])
}
