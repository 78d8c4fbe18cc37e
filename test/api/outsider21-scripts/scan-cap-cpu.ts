// outsider21: the engine's CPU per match attempt with 4,096 lenders no offer can use (0 bps, maxDurationSeconds 1) first in
// the book, against none: at the default lendersScannedPerMatchMax nobody is leased and each attempt scans them all.
// node --import tsx test/api/outsider21-scripts/scan-cap-cpu.ts
import { lenderInput, newEngine, offerFor, registerBacking, unwrap, T0, BORROWER } from '../../engine/fixtures/world.ts'
for (const sybils of [0, 4096]) {
  const { engine } = newEngine({ liveOffersPerBorrowerMax: 100000 } as never)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1, { minFeeBps: 100 }), T0))
  for (let i = 0; i < sybils; i++) unwrap(engine.registerLender(lenderInput(10 + i, { minFeeBps: 0, maxDurationSeconds: 1 }), T0))
  const offers: string[] = []
  for (let i = 0; i < 200; i++) offers.push(offerFor(engine, { amountAtomic: 10n, maximumFeeAtomic: 5n }))
  let matched = 0
  const start = process.cpuUsage()
  for (const offerId of offers) if (unwrap(engine.matchOffer({ offerId, caller: BORROWER }, T0)).lease) matched += 1
  const used = process.cpuUsage(start)
  console.log({ sybils, matched, usPerMatch: ((used.user + used.system) / offers.length).toFixed(1) })
}
