// Matching: the lowest ask among eligible lenders wins; reputation, liquidity, registration order break ties.
import t from 'tap'
import { Engine, feeAtomic } from '../../src/engine/index.ts'
import {
  ASSET, BORROWER, FakeWallets, NET, SUPPLIER, T0, addr, lenderInput, matchedLender, newEngine, offerFor, registerBacking, unwrap,
} from './fixtures/world.ts'

t.test('spec example: max fee 10%, A asks 9%, B asks 2.5%: B is selected', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 900 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 250 }), T0))
  const offerId = offerFor(engine, { amountAtomic: 10_000n, maximumFeeAtomic: 1000n })
  const outcome = unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0))
  t.equal(outcome.lease?.lender, lenderInput(2).address)
  t.equal(outcome.lease?.feeAtomic, 250n, 'fee = ceil(10000 * 250 / 10000)')
  t.equal(outcome.offer.state, 'leased')
  engine.checkInvariants()
})

t.test('fee is ceil(amount * ask / 10000)', async (t) => {
  t.equal(feeAtomic(1001n, 250), 26n, '25.025 rounds up')
  t.equal(feeAtomic(1000n, 250), 25n)
  t.equal(feeAtomic(1n, 1), 1n)
  t.equal(feeAtomic(0n, 10000), 0n)
})

t.test('equal asks: higher reputation wins', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { reputationBps: 6000 }), T0))
  unwrap(engine.registerLender(lenderInput(2, { reputationBps: 7000 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(2).address)
})

t.test('equal asks and reputation: more available liquidity wins', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 5000n }), T0))
  unwrap(engine.registerLender(lenderInput(2, { availableLiquidityAtomic: 9000n }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(2).address)
  // liquidity changes on every lease, and the book follows: after this lease lender 2 has 8000 available
  unwrap(engine.registerLender(lenderInput(3, { availableLiquidityAtomic: 8500n }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(3).address, 'lender 2 has 8000 left, lender 3 8500')
  engine.checkInvariants()
})

t.test('all equal: registration order wins', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(7), T0))
  unwrap(engine.registerLender(lenderInput(3), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(7).address)
})

t.test('price beats reputation and liquidity', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 101, reputationBps: 10_000, availableLiquidityAtomic: 10n ** 12n }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 100, reputationBps: 0 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(2).address)
})

// Each filter: a cheap lender that the filter excludes, and a dearer one it admits.
const filters: { name: string; cheap: Parameters<typeof lenderInput>[1]; request?: Parameters<typeof offerFor>[1] }[] = [
  { name: 'network', cheap: { networks: ['net-b'] } },
  { name: 'asset on the network', cheap: { assets: { [NET]: 'DAI' } } },
  { name: 'risk band', cheap: { acceptedRiskBands: ['B', 'C'] } },
  { name: 'maximum duration', cheap: { maxDurationSeconds: 3600 } },
  { name: 'available liquidity', cheap: { availableLiquidityAtomic: 999n } },
  { name: 'reliability floor', cheap: { reliabilityBps: 999 } },
]
for (const f of filters) {
  t.test(`filter: ${f.name}`, async (t) => {
    const { engine } = newEngine()
    registerBacking(engine)
    unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 10, ...f.cheap }), T0))
    unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 500 }), T0))
    t.equal(matchedLender(engine, offerFor(engine, f.request)), lenderInput(2).address, 'excluded: the dearer lender wins')

    const admitted = newEngine().engine
    registerBacking(admitted)
    unwrap(admitted.registerLender(lenderInput(1, { minFeeBps: 10 }), T0))
    unwrap(admitted.registerLender(lenderInput(2, { minFeeBps: 500 }), T0))
    t.equal(matchedLender(admitted, offerFor(admitted)), lenderInput(1).address, 'admitted: the cheap lender wins')
  })
}

const OPERATOR = addr(0x0e)
// Underwriting declines a supplier that is a lender or a session key (supplier_not_allowed, underwriting.test.ts);
// one that registers as a lender after the offer was made is still never leased its own supplier's offer.
for (const [name, supplierOf] of [['the lender', lenderInput(1).address], ['the lender session key', lenderInput(1).sessionAddress]] as const) {
  t.test(`filter: supplier is ${name} (registered after the offer)`, async (t) => {
    const { engine } = newEngine({ operators: [OPERATOR] })
    registerBacking(engine)
    unwrap(engine.putSupplier({ domain: 'late.example', name: 'Late', addresses: { [NET]: [supplierOf] }, caller: OPERATOR }, T0))
    const offerId = offerFor(engine, { supplierDomain: 'late.example', supplierAddress: supplierOf })
    unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 10 }), T0))
    unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 500 }), T0))
    t.equal(matchedLender(engine, offerId), lenderInput(2).address, 'excluded: the dearer lender wins')
  })
}

t.test('filter: accepted risk band admits a matching band', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine, 'src_1', 1500n) // coverage 1500/1000 = 15000 bps: band B
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 10, acceptedRiskBands: ['A'] }), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 20, acceptedRiskBands: ['B'] }), T0))
  const decision = unwrap(engine.requestCredit({ ...baseRequest(), amountAtomic: 1000n, caller: BORROWER }, T0))
  t.equal(decision.riskBand, 'B')
  t.equal(matchedLender(engine, decision.offer!.offerId), lenderInput(2).address)
})

t.test('filter: maximum fee, at the edge and one atom over', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 1000 }), T0)) // fee on 1000 = 100
  t.equal(matchedLender(engine, offerFor(engine, { maximumFeeAtomic: 100n })), lenderInput(1).address, 'fee == max: eligible')
  t.equal(matchedLender(engine, offerFor(engine, { maximumFeeAtomic: 99n })), null, 'fee > max: not eligible')
  t.equal(engine.getOffer('off_2')?.state, 'offered', 'the unmatched offer keeps waiting')
  engine.checkInvariants()
})

t.test('filter: maximum duration admits at the edge', async (t) => {
  const { engine } = newEngine({ backingDurationSecondsDefault: 3600 })
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { maxDurationSeconds: 3600 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(1).address)
})

t.test('filter: liquidity admits exactly the amount', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { availableLiquidityAtomic: 1000n }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), lenderInput(1).address)
  t.equal(engine.getLender(lenderInput(1).address)?.availableAtomic, 0n)
  t.equal(engine.getLender(lenderInput(1).address)?.reservedAtomic, 1000n)
  t.equal(matchedLender(engine, offerFor(engine)), null, 'no liquidity left for a second offer')
  engine.checkInvariants()
})

t.test('lender assets per network route the offer to the right book', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { networks: [NET, 'net-b'], assets: { 'net-b': 'DAI' } }), T0))
  t.equal(matchedLender(engine, offerFor(engine, { network: 'net-b', asset: 'DAI' })), lenderInput(1).address)
  t.equal(matchedLender(engine, offerFor(engine, { network: 'net-b', asset: ASSET })), null)
})

t.test('scan limit: lenders beyond lendersScannedPerMatchMax are not considered', async (t) => {
  const { engine } = newEngine({ lendersScannedPerMatchMax: 3 })
  registerBacking(engine)
  for (let i = 1; i <= 3; i++) unwrap(engine.registerLender(lenderInput(i, { minFeeBps: 10, acceptedRiskBands: ['C'] }), T0))
  unwrap(engine.registerLender(lenderInput(4, { minFeeBps: 20 }), T0))
  t.equal(matchedLender(engine, offerFor(engine)), null, 'the fourth lender is past the limit')
  const { engine: wide } = newEngine({ lendersScannedPerMatchMax: 4 })
  registerBacking(wide)
  for (let i = 1; i <= 3; i++) unwrap(wide.registerLender(lenderInput(i, { minFeeBps: 10, acceptedRiskBands: ['C'] }), T0))
  unwrap(wide.registerLender(lenderInput(4, { minFeeBps: 20 }), T0))
  t.equal(matchedLender(wide, offerFor(wide)), lenderInput(4).address)
})

t.test('matching a leased offer is a conflict and changes nothing', async (t) => {
  const { engine } = newEngine()
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  const offerId = offerFor(engine)
  matchedLender(engine, offerId)
  const again = engine.matchOffer({ offerId, caller: BORROWER }, T0)
  t.equal(again.ok, false)
  if (!again.ok) t.same(again.error, { code: 'offer_not_offered', class: 'conflict', message: again.error.message })
  t.equal(engine.matchOffer({ offerId: 'off_99', caller: BORROWER }, T0).ok, false)
})

t.test('registration errors are typed and change nothing', async (t) => {
  const { engine } = newEngine()
  unwrap(engine.registerLender(lenderInput(1), T0))
  const dup = engine.registerLender(lenderInput(1), T0)
  t.match(dup, { ok: false, error: { code: 'lender_exists', class: 'conflict' } })
  t.match(engine.registerLender(lenderInput(2, { minFeeBps: 10_001 }), T0), { ok: false, error: { code: 'invalid_bps', class: 'invalid' } })
  t.match(engine.registerLender(lenderInput(3, { acceptedRiskBands: ['Z'] }), T0), { ok: false, error: { code: 'invalid_risk_band' } })
  t.match(engine.registerLender(lenderInput(4, { sessionAddress: lenderInput(1).sessionAddress }), T0), { ok: false, error: { code: 'session_in_use' } })
  t.equal(engine.lendersPage(0, 10, 10).items.length, 1)
  t.equal(engine.lendersPage(0, 10, 10).items[0]?.registrationSeq, 1)
  void addr; void SUPPLIER; void BORROWER
})

function baseRequest() {
  return {
    agent: BORROWER, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic: 1000n, purpose: 'p',
    supplier: 's', supplierDomain: 's.example', supplierAddress: SUPPLIER, repaymentSource: 'src_1', maximumFeeAtomic: 100n,
  } as const
}

t.test('a page of lenders looks at no more than it may, whatever the number of lenders, and survives a restore', async (t) => {
  const { engine } = newEngine()
  for (let i = 1; i <= 600; i++) unwrap(engine.registerLender(lenderInput(i), T0))
  let looked = 0
  const count = () => { looked += 1; return true }
  const first = engine.lendersPage(0, 50, 50, count)
  t.same(first.items.map((l) => l.registrationSeq), Array.from({ length: 50 }, (_, i) => i + 1))
  t.equal(first.nextAfterSeq, 50)
  t.equal(looked, 50, 'a page of 50 is built from 50 lenders, not 600')
  looked = 0
  const deep = engine.lendersPage(550, 50, 50, count)
  t.same([deep.items[0]?.registrationSeq, deep.items.length, deep.nextAfterSeq], [551, 50, undefined], 'the last page says so')
  t.equal(looked, 50, 'a deep page does not walk the lenders before it')
  looked = 0
  const picky = engine.lendersPage(0, 10, 100, (l) => { looked += 1; return l.registrationSeq % 100 === 0 })
  t.same(picky.items.map((l) => l.registrationSeq), [100], 'a filtered page stops at its scan bound')
  t.equal(picky.nextAfterSeq, 100, 'and names where the next page starts')
  t.equal(looked, 100)
  const copy = engine.lendersPage(0, 1, 1).items[0] as { availableAtomic: bigint }
  copy.availableAtomic = 0n
  t.not(engine.lendersPage(0, 1, 1).items[0]?.availableAtomic, 0n, 'pages hand out copies')
  const restored = new Engine(engine.config, new FakeWallets(), engine.snapshots())
  t.same(restored.lendersPage(299, 3, 3).items.map((l) => l.address), engine.lendersPage(299, 3, 3).items.map((l) => l.address))
  restored.checkInvariants()
})
