// review34, an adversary's review of outsider29's change (the job's borrower may call reclaimJob too), by direct calls:
// the borrower's reclaim must never take what backs a lender or the insurance reserve. "Nothing owed" is the job's
// `outstanding` 0: no advance of the job owes anything, to its lender or to the reserve, so an advance whose lender part
// is repaid while the reserve's share is not, one past due waiting for its liquidation, and one liquidated with a
// shortfall (or a reserve's subrogated claim) each keep the job from the borrower's reclaim until they are paid in full.
// A lender or a supplier is as much a stranger to reclaimJob as anyone (NotClient).
import t, { type Test } from 'tap'
import { type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { jobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import type { LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { JobStatus, rejectsWith, setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'

const reclaimDelaySeconds = 1_000n
let f: V2Fixture
const salt = newKeySalt()
let sequence = 0

t.before(async () => {
  f = await setupFacilityV2(t, { reclaimDelaySeconds })
  await f.testClient.setIntervalMining({ interval: 0 })
  await f.testClient.setAutomine(true)
})

type JobSetup = { jobKey: Hex; client: Wallet; borrower: Wallet; fundedAt: bigint }

async function openJob(escrow: bigint, collateral: bigint): Promise<JobSetup> {
  const client = await f.wallet(escrow)
  const borrower = await f.wallet(collateral + 1_000n * USDC)
  const jobKey = jobKeyOf(`job_reclaim_borrower_${++sequence}`)
  await f.call(client, 'fundJob', [jobKey, f.token, escrow, borrower.account.address])
  if (collateral > 0n) await f.call(borrower, 'postCollateral', [jobKey, f.token, collateral])
  f.jobKeys.add(jobKey)
  return { jobKey, client, borrower, fundedAt: (await f.job(jobKey)).fundedAt }
}

/** An advance of 10 USDC on the job (fee 2, of which 1 is the reserve's share: 11 to the lender, 1 to the reserve), due in 100 s. */
async function advance(job: JobSetup): Promise<{ offerKey: Hex; lender: Wallet; supplier: Address }> {
  const lender = await f.wallet(100n * USDC)
  const now = await f.chainNow()
  const supplier = privateKeyToAccount(generatePrivateKey()).address
  const a: LeaseAuthorization = {
    offerKey: offerKeyOf(salt, `off_reclaim_borrower_${++sequence}`), jobKey: job.jobKey, payer: lender.account.address,
    supplier, asset: f.token, amount: 10n * USDC, fee: 2n * USDC, reserveShare: 1n * USDC, deadline: now + 60n, dueAt: now + 100n,
  }
  await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  return { offerKey: a.offerKey, lender, supplier }
}

async function pastReclaimTime(job: JobSetup): Promise<void> {
  const wait = job.fundedAt + reclaimDelaySeconds - (await f.chainNow())
  if (wait > 0n) await f.advanceTime(Number(wait))
}

/** The borrower reclaims: the client gets the escrow, the borrower the collateral, the contract gives both. */
async function borrowerReclaims(t: Test, job: JobSetup): Promise<void> {
  const { escrow, collateral } = await f.job(job.jobKey)
  const holders = [job.client.account.address, job.borrower.account.address, f.facility]
  const before = await Promise.all(holders.map((h) => f.balance(h)))
  await f.call(job.borrower, 'reclaimJob', [job.jobKey])
  const after = await Promise.all(holders.map((h) => f.balance(h)))
  t.same(after.map((b, i) => b - (before[i] as bigint)), [escrow, collateral, -(escrow + collateral)], 'the borrower\'s reclaim: escrow to the client, collateral to the borrower')
  t.match(await f.job(job.jobKey), { status: JobStatus.Reclaimed, escrow: 0n, collateral: 0n })
}

t.test('an advance whose lender is repaid while the reserve\'s share is not still keeps the job from its borrower', async (t) => {
  const job = await openJob(100n * USDC, 0n)
  const { offerKey } = await advance(job)
  await pastReclaimTime(job)
  await f.call(job.borrower, 'repay', [offerKey, 11n * USDC])
  t.match(await f.advance(offerKey), { lenderOwed: 0n, reserveOwed: 1n * USDC })
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'the reserve\'s share owed', [job.jobKey, 1n])
  const reserveBefore = await f.reserve()
  await f.call(job.borrower, 'repay', [offerKey, 1n * USDC])
  t.equal(await f.reserve() - reserveBefore, 1n * USDC, 'the reserve has its share')
  await borrowerReclaims(t, job)
})

t.test('an advance past due waits for its liquidation; once the collateral covered it whole, the borrower reclaims the rest', async (t) => {
  const job = await openJob(100n * USDC, 50n * USDC)
  const { offerKey, lender } = await advance(job)
  await pastReclaimTime(job)
  t.ok(await f.chainNow() > (await f.advance(offerKey)).dueAt, 'past due')
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'a liquidation pending', [job.jobKey, 1n])
  const lenderBefore = await f.balance(lender.account.address)
  await f.call(f.operator, 'liquidate', [offerKey, 0n])
  t.equal(await f.balance(lender.account.address) - lenderBefore, 11n * USDC, 'the lender is paid from the collateral')
  t.match(await f.job(job.jobKey), { outstanding: 0n, collateral: 38n * USDC })
  await borrowerReclaims(t, job)
})

t.test('several advances, one liquidated with a shortfall: the job stays with the lenders until the shortfall is repaid', async (t) => {
  const job = await openJob(100n * USDC, 5n * USDC)
  const first = await advance(job)
  const second = await advance(job)
  await pastReclaimTime(job)
  await f.call(f.operator, 'liquidate', [first.offerKey, 0n])
  const liquidated = await f.advance(first.offerKey)
  t.ok(liquidated.liquidated && liquidated.lenderOwed + liquidated.reserveOwed > 0n, 'the collateral did not cover it: a shortfall, or the reserve\'s subrogated claim')
  await f.call(job.borrower, 'repay', [second.offerKey, 12n * USDC])
  t.match(await f.job(job.jobKey), { outstanding: 1n, unresolved: 0n, collateral: 0n }, 'one advance owes; none is unresolved')
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'the borrower, while the shortfall is owed', [job.jobKey, 1n])
  await rejectsWith(t, f.call(first.lender, 'reclaimJob', [job.jobKey]), 'NotClient', 'its lender', [first.lender.account.address])
  const supplier = await f.wallet()
  await rejectsWith(t, f.call(supplier, 'reclaimJob', [job.jobKey]), 'NotClient', 'a stranger', [supplier.account.address])
  await f.call(job.borrower, 'repay', [first.offerKey, liquidated.lenderOwed + liquidated.reserveOwed])
  t.match(await f.advance(first.offerKey), { lenderOwed: 0n, reserveOwed: 0n })
  await borrowerReclaims(t, job)
})

t.test('token conservation', (t) => f.checkConservation(t))
