// The score's inputs as the engine holds them: an unknown address has none; a borrower's open advance counts as
// exposure (principal + fee, per network and asset) and as past due once its due time passes; a repayment moves it
// from exposure to the repaid count; the history starts at the borrower's earliest activity the engine holds.
import t from 'tap'
import { scoreInputsOf } from '../../src/score/inputs.ts'
import { ASSET, BORROWER, addr, fundAdvance, hash, lenderInput, NET, newEngine, registerBacking, T0, unwrap , repaidFact } from '../engine/fixtures/world.ts'

t.test('an address the engine does not know as a borrower has no inputs', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  t.equal(scoreInputsOf(engine, BORROWER, T0), undefined)
  t.equal(scoreInputsOf(engine, lenderInput(1).address, T0), undefined, 'a lender is not a borrower')
})

t.test('open advances are exposure, past due after their due time; a repayment moves one to the repaid count', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  registerBacking(engine, 'src_1', 10_000_000n)
  const registered = scoreInputsOf(engine, BORROWER, T0 + 1000)
  t.match(registered, { subject: BORROWER, asOfMs: T0 + 1000, openAdvances: 0, pastDueAdvances: 0, outstanding: [], historyStartedAtMs: T0, repaidAdvances: 0 })
  t.equal(registered?.partialRepayments, 0, 'partial repayments: 0 until the service records them')
  t.equal(registered?.erc8004, null, 'ERC-8004 evidence: null until the service reads it')

  const advanceId = fundAdvance(engine, { amountAtomic: 1000n }, T0 + 5000)
  const advance = engine.getAdvance(advanceId)!
  const open = scoreInputsOf(engine, BORROWER, T0 + 6000)!
  t.equal(open.openAdvances, 1)
  t.equal(open.pastDueAdvances, 0)
  t.strictSame(open.outstanding, [{ network: NET, asset: ASSET, outstandingAtomic: advance.principalAtomic + advance.feeAtomic }])
  t.equal(open.historyStartedAtMs, T0, 'the source registration is the earliest activity')
  const late = scoreInputsOf(engine, BORROWER, advance.dueAtMs)!
  t.equal(late.pastDueAdvances, 1, 'past due at its due time')
  t.equal(scoreInputsOf(engine, addr(0xdead), T0), undefined)

  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(77)), T0 + 7000))
  const repaid = scoreInputsOf(engine, BORROWER, T0 + 8000)!
  t.match(repaid, { openAdvances: 0, pastDueAdvances: 0, outstanding: [], repaidAdvances: 1 })
})
