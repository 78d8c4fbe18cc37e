// outsider21: lenders that no offer can use, placed first in a book, fill the walk's scan bound
// (lendersScannedPerMatchMax, 4096) and every request in that book goes unmatched. Each is a fresh wallet's
// registration at 0 bps with maxDurationSeconds 1 (longer than no offer: every offer lasts more than a second), in the
// book once its session wallet holds 1 atomic unit (and the setup approve). The walk counts a lender scanned before
// asking whether it is eligible, so with SCAN (default 3, the engine's bound set that low) such lenders, an honest
// lender at 100 bps and a borrower asking 10 USDC: not matched. At the default bound the same takes 4096 of them:
// 4096 registrations (sign-ins are free) and, per lender, a transfer of 1 atomic unit and an approve, gas only.
// Exits 1 if the honest request went unmatched.
// node --import tsx test/api/outsider21-scripts/scan-cap-sybils.ts [SCAN] [SYBILS]
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../../fixtures/service.ts'

const scan = Number(process.argv[2] ?? 3)
// The control: one lender fewer than the bound, and the honest lender is leased.
const sybils = Number(process.argv[3] ?? scan)
const h = await startHarness({ config: { engine: { lendersScannedPerMatchMax: scan } } as never })
let unmatched = false
try {
  const honest = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  for (let i = 0; i < sybils; i++) {
    await readyLender(h, { minFeeBps: 0, liquidityAtomic: usdc(1_000_000), walletAtomic: 1n, maxDurationSeconds: 1 })
  }
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_o21_scan', receivableAtomic: usdc(1000) })
  const offer = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_o21_scan', usdc(10), usdc(1)))
  const match = await borrowerClient.post('/credit/match', { offerId: offer.body.offer.offerId })
  console.log('match:', { status: match.status, lease: match.body.lease, state: match.body.offer?.state, honest: honest.account.address })
  unmatched = match.body.lease === null
} finally {
  await h.stop()
}
console.log(unmatched ? `${sybils} lenders no offer can use kept the honest lender from every match` : 'the honest lender was leased')
process.exit(unmatched ? 1 : 0)
