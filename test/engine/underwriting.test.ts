// Underwriting: ownership, suspension, due time, capacity and risk bands.
import t from 'tap'
import type { Engine } from '../../src/engine/index.ts'
import { ASSET, BORROWER, CLIENT, NET, T0, addr, createJob, creditRequest, fundAdvance, hash, lenderInput, newEngine, registerBacking, repaidFact, unwrap } from './fixtures/world.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

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

t.test('the source must belong to the borrower; a job past due, due within the minimum credit period plus a lease TTL or on another asset is declined', async (t) => {
  const { engine } = newEngine()
  const creditMinMs = engine.config.creditPeriodMinMs
  const ttlMs = engine.config.leaseTtlMs
  const dueAtMs = T0 + creditMinMs + ttlMs + 60_000
  createJob(engine, 'job_1', 10_000n, dueAtMs)
  const other = addr(0xabc)
  t.same(unwrap(engine.requestCredit(creditRequest({ agent: other, repaymentSource: 'job_1' }), T0)).reasons.map((r) => r.code), ['source_not_owned'])
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), dueAtMs)).reasons.map((r) => r.code), ['job_past_due'])
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), dueAtMs - creditMinMs)).reasons.map((r) => r.code), ['job_due_too_soon'])
  // A lease granted now would end at the credit end (due time less creditPeriodMinMs) or after it: declined.
  const soon = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), dueAtMs - creditMinMs - ttlMs))
  t.same(soon.reasons.map((r) => r.code), ['job_due_too_soon'], 'a whole lease TTL no longer fits before the credit end')
  t.match(soon.reasons[0]?.message, /minimum credit period of 60 s plus a lease's TTL of 30 s/, 'the message names both')
  t.same(unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', asset: 'DAI' }), T0)).reasons.map((r) => r.code), ['asset_mismatch'])
  const lastMs = dueAtMs - creditMinMs - ttlMs - 1
  const approved = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), lastMs))
  t.equal(approved.decision, 'approved', 'a whole lease fits, 1 ms to spare')
  t.equal(approved.durationSeconds, Math.ceil((dueAtMs - lastMs) / 1000), 'a job advance runs until the job is due')
  t.equal(approved.offer?.dueAtMs, dueAtMs)
  t.equal(approved.offer?.expiresAtMs, lastMs + 1, 'open for the last instant a whole lease fits in')
})

t.test('an offer expires when a whole lease no longer fits before its job\'s credit end (due time less the minimum credit period), when that comes before its TTL; every lease gets the whole TTL', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  const ttlMs = engine.config.leaseTtlMs
  const creditEndMs = T0 + ttlMs + 4_000
  createJob(engine, 'job_1', 10_000n, creditEndMs + engine.config.creditPeriodMinMs)
  const offer = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  t.equal(offer.expiresAtMs, creditEndMs - ttlMs, 'credit end in TTL + 4 s: the offer is open 4 s, not its TTL')
  const leased = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  const lease = unwrap(engine.matchOffer({ offerId: leased.offerId, caller: BORROWER }, T0 + 3_999)).lease
  t.equal(lease?.expiresAtMs, T0 + 3_999 + ttlMs, 'a lease granted 1 ms before the offer\'s expiry lasts its whole TTL')
  const late = unwrap(engine.matchOffer({ offerId: offer.offerId, caller: BORROWER }, creditEndMs - ttlMs))
  t.equal(late.lease, null, 'no lease once a whole one does not fit')
  t.equal(late.offerExpired, true)
  t.equal(late.offer.endReason, 'stale')
  createJob(engine, 'job_2', 10_000n, T0 + 3_600_000)
  const far = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_2' }), T0)).offer!
  t.equal(far.expiresAtMs, T0 + engine.config.offerTtlMs, 'due later than the TTL: the TTL')
  t.not(unwrap(engine.matchOffer({ offerId: far.offerId, caller: BORROWER }, T0 + 1_000)).lease, null, 'and it is leased before then')
  engine.checkInvariants()
})

t.test('an offer whose chain time lags the clock past the last whole lease is not leased: the match is refused, dispatch passes over it, and it expires stale on chain time', async (t) => {
  const { engine } = newEngine()
  const ttlMs = engine.config.leaseTtlMs
  const observe = (chainTimeMs: number, nowMs: number) =>
    unwrap(engine.observeChain({ network: NET, toBlock: BigInt(chainTimeMs), toBlockHash: '0x', toBlockTimeMs: chainTimeMs, events: [] }, nowMs))
  observe(T0, T0)
  const creditEndMs = T0 + ttlMs + 10_000
  createJob(engine, 'job_1', 10_000n, creditEndMs + engine.config.creditPeriodMinMs)
  const offer = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  t.equal(offer.expiresAtMs, T0 + 10_000, 'on chain time: the last instant a whole lease fits')
  const other = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1' }), T0)).offer!
  // The chain is not observed again (an outage). The last instant a whole lease fits on the clock: granted, its whole
  // TTL ending at the credit end.
  const nowMs = creditEndMs - ttlMs + 1
  unwrap(engine.registerLender(lenderInput(2), nowMs - 1))
  t.equal(unwrap(engine.matchOffer({ offerId: other.offerId, caller: BORROWER }, nowMs - 1)).lease?.expiresAtMs, creditEndMs, 'the last whole lease')
  // A ms later on the clock a whole lease no longer fits; on chain time the offer is fresh. A lender arrives.
  unwrap(engine.registerLender(lenderInput(1), nowMs))
  const refused = engine.matchOffer({ offerId: offer.offerId, caller: BORROWER }, nowMs)
  t.match(refused, { ok: false, error: { class: 'conflict', code: 'offer_credit_ending' } }, 'refused with its code')
  t.equal(engine.getOffer(offer.offerId)?.state, 'offered', 'the offer waits for its expiry')
  t.equal(engine.getLender(lenderInput(1).address)?.leasesGranted, 0, 'no lease granted')
  const idle = unwrap(engine.dispatch(nowMs))
  t.same([idle.matches, idle.expiredOffers], [[], []], 'dispatch passes over it')
  t.equal(engine.dispatchDue(nowMs), false, 'and has nothing due: no loop')
  observe(T0 + 10_000, nowMs + 1)
  const out = unwrap(engine.dispatch(nowMs + 1))
  t.same(out.expiredOffers.map((o) => [o.offerId, o.endReason]), [[offer.offerId, 'stale']], 'expired stale once the chain passes its expiry')
  engine.checkInvariants()
})

t.test('invalid requests are typed errors', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  t.match(engine.requestCredit(creditRequest({ supplierAddress: BORROWER }), T0), { ok: false, error: { code: 'supplier_is_borrower', class: 'invalid' } })
  t.match(engine.requestCredit(creditRequest({ repaymentSource: 'nope' }), T0), { ok: false, error: { code: 'repayment_source_not_found', class: 'not_found' } })
  t.match(engine.requestCredit(creditRequest({ amountAtomic: 0n }), T0), { ok: false, error: { code: 'invalid_amount' } })
  t.match(engine.createJob({ jobId: 'bad id', jobKey: legacyJobKey('bad id'), client: CLIENT, borrower: BORROWER, network: NET, asset: 'USDC', receivableAtomic: 1n, dueAtMs: T0 + 1, funding: { network: NET, txHash: hash(1), logIndex: 0 }, caller: CLIENT }, T0), { ok: false, error: { code: 'invalid_job_id' } })
})

t.test('risk bands: A at coverage >= 200%, B at >= 125%, else C; a default in history lowers one band', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  // Each request on a source of its own: a live offer holds part of its source's value (see below).
  let sources = 0
  const band = (amountAtomic: bigint, agent = BORROWER, value = 2000n) => {
    const repaymentSource = `src_b${++sources}`
    registerBacking(engine, repaymentSource, value, agent)
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
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: lenderInput(1).address }, T0 + 3_601_000))
  unwrap(engine.liquidate({
 advanceId, caller: lenderInput(1).address, network: NET, txHash: hash(4) }, T0 + 3_601_000))
  t.equal(plan.stoppedAt, 'backing_liquidation')
  t.same(band(1000n, other), ['B', 20_000])
  t.same(band(1600n, other), ['C', 12_500])
  t.same(band(1700n, other), ['C', 11_764])
})

/** Request credit on a source and answer [decision, band, coverage]. */
function decide(engine: Engine, repaymentSource: string, amountAtomic: bigint, over: Partial<Parameters<Engine['requestCredit']>[0]> = {}): [string, string | null, number | null] {
  const d = unwrap(engine.requestCredit(creditRequest({ repaymentSource, amountAtomic, ...over }), T0))
  return [d.decision, d.riskBand, d.coverageBps]
}

/** The borrower repays an advance of `principalAtomic` on a backing source in full: that much principal proven. */
function repayOnBacking(engine: Engine, principalAtomic: bigint, n: number): void {
  if (!engine.getSource('src_r')) registerBacking(engine, 'src_r', 10_000_000n)
  const advanceId = fundAdvance(engine, { repaymentSource: 'src_r', amountAtomic: principalAtomic }, T0, n)
  unwrap(engine.repayAdvance(repaidFact(engine, advanceId, hash(500 + n)), T0))
}

t.test('a job\'s receivable counts in the band only up to the principal the borrower has repaid: one tiny repaid advance opens nothing', async (t) => {
  // Outsiders' findings: a client and a borrower of one party took band A credit on a job's escrow alone, spent it at
  // a supplier, and the client failed the job and had the whole escrow back (outsider10: 399.7 of 400 lost). Then one
  // repaid advance of any size opened it (outsider11): repay 1 atomic unit, then draw band A on any escrow.
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  repayOnBacking(engine, 1n, 1)
  t.equal(engine.getBorrower(BORROWER)?.advancesRepaid, 1, 'one advance repaid')
  t.same(engine.getBorrower(BORROWER)?.repaidPrincipalAtomic, { [NET]: { [ASSET]: 1n } }, 'of 1 atomic unit')
  createJob(engine, 'job_1', 10_000n)
  t.same(decide(engine, 'job_1', 500n), ['approved', 'C', 0], 'band C: 1 repaid does not vouch for 500 on an escrow its client may take back')
  engine.checkInvariants()
})

t.test('the honest path: repaid principal >= the request gets band A; live offers and advances on jobs use that room until repaid', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  repayOnBacking(engine, 1000n, 1)
  createJob(engine, 'job_1', 10_000n)
  createJob(engine, 'job_2', 10_000n)
  const offerId = unwrap(engine.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 1000n }), T0)).offer!.offerId
  t.equal(engine.getOffer(offerId)?.riskBand, 'A', 'as much as it repaid: the receivable counts, band A')
  t.same(decide(engine, 'job_2', 1n), ['approved', 'C', 0], 'a live offer on a job asks the room it proved: the next one is band C')
  const lease = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease!
  const advance = unwrap(engine.recordSupplierPayment({
    network: NET, txHash: hash(700), logIndex: 0, offerId, payer: lease.payer, supplier: lease.supplierAddress, asset: ASSET, amountAtomic: 1000n, caller: lease.lender,
  }, T0))
  t.same(engine.getBorrower(BORROWER)?.receivableOwedAtomic, { [NET]: { [ASSET]: 1000n } }, 'funded: its principal is owed on the receivable')
  // 1,000 repaid, 1,000 owed, 1 asked by the live offer of band C.
  t.same(decide(engine, 'job_2', 1n).slice(0, 2), ['approved', 'C'], 'and still uses the room')
  unwrap(engine.repayAdvance(repaidFact(engine, advance.advanceId, hash(701), 400n), T0))
  // 1,400 repaid, 600 owed, 2 asked.
  // Its coverage reads the escrow less what the job's two live offers of 1 hold (amount and maximum fee, 202).
  t.same(decide(engine, 'job_2', 798n), ['approved', 'A', 122_781], 'a partial repayment frees the principal it paid (and proves it)')
  t.same(decide(engine, 'job_2', 1n).slice(0, 2), ['approved', 'C'], 'up to the unit')
  unwrap(engine.repayAdvance(repaidFact(engine, advance.advanceId, hash(702)), T0))
  t.match(engine.getBorrower(BORROWER), { repaidPrincipalAtomic: { [NET]: { [ASSET]: 2000n } }, receivableOwedAtomic: { [NET]: { [ASSET]: 0n } } })
  // 2,000 repaid, 801 asked by the live offers on jobs.
  t.same(decide(engine, 'job_2', 1199n).slice(0, 2), ['approved', 'A'], 'repaid in full: its room grows by what it repaid')
  t.same(decide(engine, 'job_2', 1n).slice(0, 2), ['approved', 'C'])
  engine.checkInvariants()
})

t.test('the collateral secures what it covers: only the rest of the amount must be within the repaid principal', async (t) => {
  const requested = (amountAtomic: bigint) => {
    const { engine } = newEngine()
    unwrap(engine.registerLender(lenderInput(1), T0))
    repayOnBacking(engine, 200n, 1)
    createJob(engine, 'job_1', 10_000n)
    unwrap(engine.postCollateral({ jobId: 'job_1', caller: BORROWER, borrower: BORROWER, amountAtomic: 300n, proof: { network: NET, txHash: hash(2), logIndex: 0 } }, T0))
    return decide(engine, 'job_1', amountAtomic)
  }
  t.same(requested(501n), ['approved', 'C', 5988], '201 unsecured, 200 repaid: the collateral alone')
  t.same(requested(500n), ['approved', 'A', 206_000], '200 unsecured, 200 repaid: the receivable counts')
})

t.test('principal repaid on another asset or network proves nothing here', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  repayOnBacking(engine, 5000n, 1)
  unwrap(engine.createJob({
    jobId: 'job_e', jobKey: legacyJobKey('job_e'), client: CLIENT, borrower: BORROWER, network: NET, asset: 'EURC', receivableAtomic: 10_000n, dueAtMs: T0 + 7 * 86_400_000,
    funding: { network: NET, txHash: hash(9001), logIndex: 0 }, caller: CLIENT,
  }, T0))
  t.same(decide(engine, 'job_e', 500n, { asset: 'EURC' }), ['approved', 'C', 0], '5,000 USDC repaid, 500 EURC asked')
  createJob(engine, 'job_u', 10_000n)
  t.same(decide(engine, 'job_u', 500n).slice(0, 2), ['approved', 'A'], '500 USDC asked')
})

t.test('a liquidation\'s recovery frees the principal it recovered on the receivable, without proving any', async (t) => {
  const { engine } = newEngine()
  const lender = lenderInput(1).address
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_l', 1000n)
  unwrap(engine.postCollateral({ jobId: 'job_l', caller: BORROWER, borrower: BORROWER, amountAtomic: 500n, proof: { network: NET, txHash: hash(80), logIndex: 0 } }, T0))
  const advanceId = fundAdvance(engine, { repaymentSource: 'job_l', amountAtomic: 800n, maximumFeeAtomic: 100n })
  t.same(engine.getBorrower(BORROWER)?.receivableOwedAtomic, { [NET]: { [ASSET]: 800n } })
  unwrap(engine.failJob({ jobId: 'job_l', reason: 'not_delivered', caller: CLIENT }, T0 + 2))
  const plan = unwrap(engine.planLiquidation({ advanceId, caller: lender }, T0 + 3))
  unwrap(engine.liquidate({ advanceId, caller: lender, network: NET, txHash: hash(82), executed: { fromCollateralAtomic: 500n, fromBackingAtomic: 0n, fromReserveAtomic: 0n, shortfallAtomic: plan.owedAtomic - 500n } }, T0 + 4))
  const { repaidPrincipalAtomic, receivableOwedAtomic } = engine.getBorrower(BORROWER)!
  t.same([repaidPrincipalAtomic, receivableOwedAtomic], [{}, { [NET]: { [ASSET]: 300n } }], 'the collateral paid 500 of the principal, proving nothing; 300 lost stays owed')
  engine.checkInvariants()
})

t.test('a job\'s collateral backs the band of what it covers once: later offers read what the live offers and advances leave (outsider27)', async (t) => {
  // A fresh borrower (nothing repaid: the receivable does not count) with 10 of collateral on an escrow of 100. Before,
  // every request read the whole collateral: offers of 5 were each band A (coverage 20000 bps), as many as the
  // capacity took, so a party's client failed the job and its band-A lenders recovered 10 of what they lent.
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  createJob(engine, 'job_c', 100n)
  unwrap(engine.postCollateral({ jobId: 'job_c', caller: BORROWER, borrower: BORROWER, amountAtomic: 10n, proof: { network: NET, txHash: hash(90), logIndex: 0 } }, T0))
  t.same(decide(engine, 'job_c', 5n, { maximumFeeAtomic: 0n }), ['approved', 'A', 220_000], 'the first: the collateral covers it whole, so the receivable counts too')
  t.same(decide(engine, 'job_c', 5n, { maximumFeeAtomic: 0n }), ['approved', 'C', 10_000], 'the second: the 5 the live offer holds are not there for it')
  t.same(decide(engine, 'job_c', 5n, { maximumFeeAtomic: 0n }), ['approved', 'C', 0], 'the third: nothing left')
  // The same on a funded advance: what it owes (principal and fee) holds the collateral until it closes.
  const { engine: funded } = newEngine()
  unwrap(funded.registerLender(lenderInput(1), T0))
  createJob(funded, 'job_f', 100n)
  unwrap(funded.postCollateral({ jobId: 'job_f', caller: BORROWER, borrower: BORROWER, amountAtomic: 10n, proof: { network: NET, txHash: hash(91), logIndex: 0 } }, T0))
  fundAdvance(funded, { repaymentSource: 'job_f', amountAtomic: 4n, maximumFeeAtomic: 1n })
  const [decision, band] = decide(funded, 'job_f', 3n, { maximumFeeAtomic: 0n })
  t.same([decision, band], ['approved', 'B'], 'an advance of 4 (and its fee) leaves at most 6 of 10 for 3: not band A')
  engine.checkInvariants()
  funded.checkInvariants()
})

t.test('a backing source\'s value backs the band of what it covers once (outsider27)', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine, 'src_c', 4000n) // advance rate 10000 bps: capacity 4000
  t.same(decide(engine, 'src_c', 1600n).slice(0, 2), ['approved', 'A'], '4000 for 1600')
  t.same(decide(engine, 'src_c', 1600n), ['approved', 'B', 15_000], '2400 left for the second 1600 (25000 bps, A, before)')
})
