// supplierPaymentHeldAt (src/chain/proofs-v2.ts): a SupplierPaid paid into the contract is the one whose PaymentHeld
// paySupplier emitted right before it (_hold, then the SupplierPaid: consecutive logs). A PaymentHeld of an earlier
// call of the same transaction (a multicall: a repay closing a failed job holds its collateral for the borrower,
// JobClosed then PaymentHeld, then a paySupplier to that address that the token took, its Transfer between) is not
// this payment's: review25's finding (it said supplierPaymentHeld true, the contract events being adjacent once the
// token's Transfer is filtered out).
import t from 'tap'
import { zeroHash, type Address, type Hex } from 'viem'
import type { FacilityFact } from '../../src/chain/events-v2.ts'
import { supplierPaymentHeldAt } from '../../src/chain/proofs-v2.ts'

const txHash = `0x${'ab'.repeat(32)}` as Hex
const asset = '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Address
const supplier = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as Address
const payer = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' as Address
const amount = 5_000_000n

function fact(name: string, logIndex: number, args: Record<string, unknown>): FacilityFact {
  return { name, args, txHash, logIndex, blockNumber: 7n, blockTimeMs: 0, network: 'devnet-a', proofKey: `devnet-a:${txHash}:${logIndex}` } as unknown as FacilityFact
}
const held = (logIndex: number): FacilityFact => fact('PaymentHeld', logIndex, { asset, to: supplier, amount })
const paid = (logIndex: number): FacilityFact =>
  fact('SupplierPaid', logIndex, { offerKey: zeroHash, payer, supplier, jobKey: zeroHash, asset, amount, fee: 1n, reserveShare: 0n, dueAt: 9n })

t.test("paySupplier's own PaymentHeld, the log right before its SupplierPaid: held", async (t) => {
  // Transfer(payer -> contract) at 4 is the token's, not a fact.
  t.equal(supplierPaymentHeldAt([held(5), paid(6)], 1), true)
})

t.test("an earlier call's PaymentHeld to the same address and amount, the token's Transfer between: not held", async (t) => {
  const facts = [fact('JobClosed', 1, { jobKey: zeroHash, borrower: supplier, released: amount }), held(2), paid(4)]
  t.equal(supplierPaymentHeldAt(facts, 2), false)
})
