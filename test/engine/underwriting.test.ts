// Underwriting: ownership, suspension, due time, capacity and risk bands.
import t from 'tap'
import { BORROWER, CLIENT, NET, T0, addr, createJob, creditRequest, fundAdvance, hash, lenderInput, newEngine, registerBacking, repaidFact, unwrap } from './fixtures/world.ts'

t.test('over capacity is declined with a reason and changes nothing', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 10_000n) // capacity 8000, for the amount and its maximum fee (100)
  const declined = engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 7901n }), T0)
  const d = unwrap(declined)
  t.equal(d.decision, 'declined')
  t.same(d.reasons.map((r) => r.code), ['over_capacity'])
  t.equal(d.capacityAtomic, 8000n)
  t.equal(d.offer, null)
  t.same(declined.ok && declined.changes, [], 'a declined decision changes nothing')
  const ok = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 7900n }), T0))
  t.equal(ok.decision, 'approved', 'amount and maximum fee exactly at capacity is approved')
  const next = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 1n }), T0))
  t.same(next.reasons.map((r) => r.code), ['over_capacity'], 'a live offer uses capacity')
})

t.test('job_advances_limit is checked before underwriting: refused whatever the decision would be, changing nothing; another borrower is declined as before', async (t) => {
  // A job's open advances plus its borrower's live offers reach advancesPerJobMax (2): the third request is refused.
  const { engine } = newEngine({ advancesPerJobMax: 2 })
  createJob(engine, 'job_1', 10_000n) // capacity 8000
  for (let i = 0; i < 2; i++) t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 100n }), T0)).decision, 'approved')
  const fitting = engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 100n }), T0)
  t.match(fitting, { ok: false, error: { class: 'conflict', code: 'job_advances_limit' } }, 'a request that would be approved is refused')
  const overCapacity = engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 9000n }), T0)
  t.match(overCapacity, { ok: false, error: { class: 'conflict', code: 'job_advances_limit' } }, 'so is one underwriting would decline (over_capacity): the limit comes first')
  t.equal(engine.creditState().counts.liveOffers, 2, 'no offer was made')
  // Another borrower's request on the job is declined for its ownership, its own live offers notwithstanding.
  const other = addr(0xabc)
  registerBacking(engine, 'src_other', 10_000_000n, other)
  for (let i = 0; i < 2; i++) t.equal(unwrap(engine.requestCredit(creditRequest({ agent: other, repaymentSource: 'src_other' }), T0)).decision, 'approved')
  t.same(unwrap(engine.requestCredit(creditRequest({ agent: other, repaymentSource: 'job_1' }), T0)).reasons.map((r) => r.code), ['source_not_owned'])
  engine.checkInvariants()
})

t.test('backing source capacity = min(value x rate, liquidation value) - outstanding', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerSource({ sourceId: 'src_x', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10_000n, liquidationValueAtomic: 4_000n, advanceRateBps: 5000, evidenceId: 'e', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'src_x', amountAtomic: 4001n }), T0)).capacityAtomic, 4000n)
  unwrap(engine.registerSource({ sourceId: 'src_y', productType: 'asset-backed', agent: BORROWER, valueAtomic: 10_000n, liquidationValueAtomic: 9_000n, advanceRateBps: 3000, evidenceId: 'e', validUntilMs: 8_000_000_000_000, caller: BORROWER }, T0))
  t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'src_y', amountAtomic: 3001n }), T0)).decision, 'declined')
  t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'src_y', amountAtomic: 3000n }), T0)).decision, 'approved')
})

t.test('collateral adds to a job capacity', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 1000n)
  t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 1300n }), T0)).decision, 'declined')
  const pos = unwrap(engine.postCollateral({ jobId: 'job_1', caller: BORROWER, borrower: BORROWER, amountAtomic: 500n, proof: { network: NET, txHash: hash(2), logIndex: 0 } }, T0))
  t.equal(pos.totalCollateralAtomic, 500n)
  t.equal(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 1200n }), T0)).decision, 'approved', '800 + 500 = 1,300 of capacity: 1,200 and its maximum fee of 100')
  t.match(engine.postCollateral({ jobId: 'job_1', caller: BORROWER, borrower: CLIENT, amountAtomic: 1n, proof: { network: NET, txHash: hash(3), logIndex: 0 } }, T0), { ok: false, error: { code: 'not_job_borrower', class: 'forbidden' } })
})

t.test('a suspended borrower is declined', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_1', 10_000n)
  createJob(engine, 'job_2', 10_000n)
  registerBacking(engine)
  const pending = unwrap(engine.requestCredit(creditRequest(), T0)).offer!.offerId
  const passport = unwrap(engine.failJob({ jobId: 'job_1', reason: 'not_delivered', caller: CLIENT }, T0 + 5))
  t.equal(passport.type, 'job_failed')
  t.equal(passport.borrowerSuspended, true)
  t.same(passport.declinedOfferIds, [pending], 'the borrower\'s live offers are withdrawn')
  t.equal(engine.getSource('src_1')?.committedAtomic, 0n)
  const d = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_2' }), T0 + 6))
  t.equal(d.decision, 'declined')
  t.same(d.reasons.map((r) => r.code), ['borrower_suspended'])
  engine.checkInvariants()
})

t.test('the source must belong to the borrower; a job past due, due within the minimum credit period or on another asset is declined', async (t) => {
  const { engine } = newEngine()
  const creditMinMs = engine.config.creditPeriodMinMs
  const dueAtMs = T0 + creditMinMs + 60_000
  createJob(engine, 'job_1', 10_000n, dueAtMs)
  const other = addr(0xabc)
  t.same(unwrap(engine.requestCredit(creditRequest({ agent: other, repaymentSource: 'job_1' }), T0)).reasons.map((r) => r.code), ['source_not_owned'])
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), dueAtMs)).reasons.map((r) => r.code), ['job_past_due'])
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), dueAtMs - creditMinMs)).reasons.map((r) => r.code), ['job_due_too_soon'])
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', asset: 'DAI' }), T0)).reasons.map((r) => r.code), ['asset_mismatch'])
  const approved = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0 + 30_000))
  t.equal(approved.durationSeconds, (dueAtMs - T0 - 30_000) / 1000, 'a job advance runs until the job is due')
  t.equal(approved.offer?.dueAtMs, dueAtMs)
})

t.test('an offer expires at its job\'s credit end (due time less the minimum credit period) when that comes before its TTL: it is never leased past it, nor is its lease payable past it', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  const creditEndMs = T0 + 4_000
  createJob(engine, 'job_1', 10_000n, creditEndMs + engine.config.creditPeriodMinMs)
  const offer = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  t.equal(offer.expiresAtMs, creditEndMs, 'credit end in 4 s: the offer is open 4 s, not its TTL')
  const leased = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  const lease = unwrap(engine.matchOffer({ offerId: leased.offerId, caller: BORROWER }, T0 + 1_000)).lease
  t.equal(lease?.expiresAtMs, creditEndMs, 'a lease granted 3 s before the credit end lasts 3 s, not its TTL')
  const late = unwrap(engine.matchOffer({ offerId: offer.offerId, caller: BORROWER }, creditEndMs))
  t.equal(late.lease, null, 'no lease at the credit end')
  t.equal(late.offerExpired, true)
  t.equal(late.offer.endReason, 'stale')
  createJob(engine, 'job_2', 10_000n, T0 + 3_600_000)
  const far = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_2' }), T0)).offer!
  t.equal(far.expiresAtMs, T0 + engine.config.offerTtlMs, 'due later than the TTL: the TTL')
  t.not(unwrap(engine.matchOffer({ offerId: far.offerId, caller: BORROWER }, T0 + 1_000)).lease, null, 'and it is leased before then')
  engine.checkInvariants()
})

t.test('invalid requests are typed errors', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  t.match(engine.requestCredit(creditRequest({ supplierAddress: BORROWER }), T0), { ok: false, error: { code: 'supplier_is_borrower', class: 'invalid' } })
  t.match(engine.requestCredit(creditRequest({ repaymentSource: 'nope' }), T0), { ok: false, error: { code: 'repayment_source_not_found', class: 'not_found' } })
  t.match(engine.requestCredit(creditRequest({ amountAtomic: 0n }), T0), { ok: false, error: { code: 'invalid_amount' } })
  t.match(engine.createJob({ jobId: 'bad id', client: CLIENT, borrower: BORROWER, network: NET, asset: 'USDC', receivableAtomic: 1n, dueAtMs: T0 + 1, funding: { network: NET, txHash: hash(1), logIndex: 0 }, caller: CLIENT }, T0), { ok: false, error: { code: 'invalid_job_id' } })
})

t.test('risk bands: A at coverage >= 200%, B at >= 125%, else C; a default in history lowers one band', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  registerBacking(engine, 'src_1', 2000n)
  const band = (amountAtomic: bigint, agent = BORROWER, repaymentSource = 'src_1') => {
    const d = unwrap(engine.requestCredit(creditRequest({ amountAtomic, agent, repaymentSource }), T0))
    return [d.riskBand, d.coverageBps]
  }
  t.same(band(1000n), ['A', 20_000])
  t.same(band(1001n), ['B', 19_980])
  t.same(band(1600n), ['B', 12_500])
  t.same(band(1601n), ['C', 12_492])
  // a borrower with a recorded default: its A becomes B, its B becomes C, C stays C
  const other = addr(0xdd)
  unwrap(engine.registerLender(lenderInput(1), T0))
  registerBacking(engine, 'src_o', 1000n, other)
  const advanceId = fundAdvance(engine, { agent: other, repaymentSource: 'src_o', amountAtomic: 500n }, T0)
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, T0 + 3_600_000))
  unwrap(engine.liquidate({
 advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(4) }, T0 + 3_600_000))
  t.equal(plan.stoppedAt, 'backing_liquidation')
  registerBacking(engine, 'src_o2', 2000n, other)
  t.same(band(1000n, other, 'src_o2'), ['B', 20_000])
  t.same(band(1600n, other, 'src_o2'), ['C', 12_500])
  t.same(band(1700n, other, 'src_o2'), ['C', 11_764])
})

t.test('a job\'s receivable counts in the band only once the borrower has repaid an advance: before, only its collateral does', async (t) => {
  // An outsider's finding: a client and a borrower of one party took band A credit on a job's escrow alone, spent it
  // at a supplier, and the client failed the job and had the whole escrow back; the lender lost what the collateral
  // and the reserve did not cover.
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_1', 10_000n)
  const decide = (amountAtomic: bigint) => {
    const d = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic }), T0))
    return [d.decision, d.riskBand, d.coverageBps]
  }
  t.same(decide(500n), ['approved', 'C', 0], 'a receivable 20 times the amount, no collateral, no history: band C')
  unwrap(engine.postCollateral({ jobId: 'job_1', caller: BORROWER, borrower: BORROWER, amountAtomic: 1000n, proof: { network: NET, txHash: hash(2), logIndex: 0 } }, T0))
  t.same(decide(500n), ['approved', 'A', 20_000], 'collateral of twice the amount: band A')
  // The borrower repays an advance on a backing source: from then on the receivable counts.
  registerBacking(engine, 'src_1', 10_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_1', amountAtomic: 100n })
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(31)), T0))
  t.equal(engine.getBorrower(BORROWER)?.advancesRepaid, 1)
  createJob(engine, 'job_2', 10_000n)
  const proven = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_2', amountAtomic: 500n }), T0))
  t.same([proven.riskBand, proven.coverageBps], ['A', 200_000], 'a proven borrower: the receivable counts')
})
