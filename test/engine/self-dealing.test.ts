// Self-dealing (an outsider's finding): nobody lends to itself. A borrower that is its own job's
// client is declined (client_is_borrower: it could fail the job and have the escrow back at once); matching never
// leases an offer to a lender whose wallet or session key is the borrower, nor, on a job, the job's client (on a
// default the insurance reserve, funded by everyone's fees, would pay its own claim); on a job, its client is never
// the supplier (paid as the supplier, it could fail the job and have the escrow back).
import t, { type Test } from 'tap'
import {
  ASSET, BORROWER, CLIENT, NET, SUPPLIER, T0, createJob, hash, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap,
} from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

type TestEngine = ReturnType<typeof newEngine>['engine']

/**
 * A job of BORROWER funded by `client`, and a credit request on it (paying SUPPLIER): the decision, which must be a
 * decline that changes nothing, by the reason given; then the same request on a job another client funded is approved.
 */
function declinedOnJobFundedBy(t: Test, engine: TestEngine, client: `0x${string}`, reason: string): void {
  unwrap(engine.createJob({
    jobId: 'job_suspect', jobKey: legacyJobKey('job_suspect'), client, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 100_000n, dueAtMs: T0 + 86_400_000,
    funding: { network: NET, txHash: hash(1), logIndex: 0 }, caller: BORROWER,
  }, T0))
  const before = engine.snapshots()
  const decision = unwrap(engine.requestCredit({
    agent: BORROWER, network: NET, asset: ASSET, productType: 'job', amountAtomic: 1000n, purpose: 'inference', supplier: 'Supplier',
    supplierDomain: 'supplier.example', supplierAddress: SUPPLIER, repaymentSource: 'job_suspect', maximumFeeAtomic: 100n, caller: BORROWER,
  }, T0))
  t.equal(decision.decision, 'declined')
  t.same(decision.reasons.map((r) => r.code), [reason])
  t.equal(decision.offer, null)
  t.same(engine.snapshots(), before, 'nothing changed')
  createJob(engine, 'job_other', 100_000n)
  t.ok(offerFor(engine, { repaymentSource: 'job_other', productType: 'job' }), 'the same request on a job another client funded')
}

t.test('a borrower that is its own job\'s client is declined: client_is_borrower, nothing changes', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  declinedOnJobFundedBy(t, engine, BORROWER, 'client_is_borrower')
})

t.test('a lender whose wallet is the borrower is never leased the borrower\'s offer, however cheap', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { address: BORROWER, minFeeBps: 10 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(2).address, 'the next eligible lender')
  engine.checkInvariants()
})

t.test('a lender whose session key is the borrower is never leased the borrower\'s offer', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { sessionAddress: BORROWER, minFeeBps: 10 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), null, 'no lender: the offer waits')
})

t.test('the job\'s client is never the lender on that job, and lends elsewhere as any lender', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  createJob(engine, 'job_1', 100_000n)
  unwrap(engine.registerLender(lenderInput(1, { address: CLIENT, minFeeBps: 10 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))
  t.equal(matchedLender(engine, offerFor(engine, { repaymentSource: 'job_1', productType: 'job' })), lenderInput(2).address, 'not the job\'s own client')
  t.equal(matchedLender(engine, offerFor(engine)), CLIENT, 'on a backing source it is a stranger and the cheapest')
})

t.test('the job\'s client is never its supplier: paid as the supplier, it could fail the job and have the escrow back', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  declinedOnJobFundedBy(t, engine, SUPPLIER, 'supplier_not_allowed')
})
