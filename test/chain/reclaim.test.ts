// CreditFacilityV2.reclaimJob against anvil, by direct calls (an outsider's finding: a borrower that never registers its
// job, or a service that stops, left the client's escrow locked forever; outsider29: a silent client left its borrower's
// collateral so). The job's client or its borrower ends it, the escrow back to the client and the collateral to the
// borrower, only from fundedAt + reclaimDelay on, only while the job is open and only while none of
// its advances owes anything. Payment and reclaim are ordered on chain: a payment first refuses the reclaim until that
// advance is paid off, a reclaim first makes every payment on the job revert. Chain time moves with evm_increaseTime and evm_mine.
import t, { type Test } from 'tap'
import { toFunctionSelector, zeroHash, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { deployCreditFacilityV2 } from '../../src/chain/devnet.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import type { LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { JobStatus, rejectsWith, setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'

const reclaimDelaySeconds = 1_000n
let f: V2Fixture
const salt = newKeySalt()
let sequence = 0

t.before(async () => {
  f = await setupFacilityV2(t, { reclaimDelaySeconds })
  // Blocks only when a transaction comes or the test mines one: a block the interval miner made meanwhile would take
  // the timestamp the boundary test sets for its own.
  await f.testClient.setIntervalMining({ interval: 0 })
  await f.testClient.setAutomine(true)
})

type JobSetup = { jobKey: Hex; client: Wallet; borrower: Wallet; fundedAt: bigint }

async function openJob(escrow: bigint, collateral = 0n): Promise<JobSetup> {
  const client = await f.wallet(escrow)
  const borrower = await f.wallet(collateral)
  const jobKey = jobKeyOf(`job_reclaim_${++sequence}`)
  await f.call(client, 'fundJob', [jobKey, f.token, escrow, borrower.account.address])
  if (collateral > 0n) await f.call(borrower, 'postCollateral', [jobKey, f.token, collateral])
  f.jobKeys.add(jobKey)
  return { jobKey, client, borrower, fundedAt: (await f.job(jobKey)).fundedAt }
}

/** A lease on `jobKey` for a fresh lender, due in an hour of chain time, its deadline in ten minutes. */
async function lease(jobKey: Hex): Promise<{ lender: Wallet; a: LeaseAuthorization }> {
  const lender = await f.wallet(1_000n * USDC)
  const now = await f.chainNow()
  const a: LeaseAuthorization = {
    offerKey: offerKeyOf(salt, `off_reclaim_${++sequence}`), jobKey, payer: lender.account.address,
    supplier: privateKeyToAccount(generatePrivateKey()).address, asset: f.token, amount: 100n * USDC, fee: 10n * USDC,
    reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n,
  }
  return { lender, a }
}

/** Chain time just past the job's reclaim time. */
async function pastReclaimTime(job: JobSetup): Promise<void> {
  const wait = job.fundedAt + reclaimDelaySeconds - (await f.chainNow())
  if (wait > 0n) await f.advanceTime(Number(wait))
}

t.test('the delay is a constructor argument, public, and never zero', async (t) => {
  t.equal(await f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' }), reclaimDelaySeconds)
  const deployer = await f.wallet()
  await t.rejects(
    deployCreditFacilityV2(deployer.wallet, f.publicClient, { operator: f.operator.account.address, leaseSigner: f.signer.address, reclaimDelaySeconds: 0n }),
    new RegExp(toFunctionSelector('ZeroDelay()')),
    'a client able to reclaim at once is refused',
  )
})

t.test('fundJob records the funding time; the job is not advanced', async (t) => {
  const job = await openJob(100n * USDC)
  const block = await f.publicClient.getBlock({ blockTag: 'latest' })
  t.equal(job.fundedAt, block.timestamp, 'fundedAt is the funding block\'s timestamp')
  t.equal((await f.job(job.jobKey)).advanced, false)
})

/** Sends reclaimJob as `who` in a block of timestamp `timestamp`, unsimulated (so a revert is mined): its status. */
async function reclaimAt(who: Wallet, jobKey: Hex, timestamp: bigint): Promise<'success' | 'reverted'> {
  await f.testClient.setNextBlockTimestamp({ timestamp })
  const hash = await who.wallet.writeContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey], gas: 500_000n })
  return (await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status
}

t.test('before the delay a reclaim reverts, up to the last second; from fundedAt + reclaimDelay on it goes through', async (t) => {
  const job = await openJob(100n * USDC)
  const reclaimableAt = job.fundedAt + reclaimDelaySeconds
  await rejectsWith(t, f.call(job.client, 'reclaimJob', [job.jobKey]), 'ReclaimTooEarly', 'right after funding')
  t.equal(await reclaimAt(job.client, job.jobKey, reclaimableAt - 1n), 'reverted', 'one second before the reclaim time')
  t.equal((await f.job(job.jobKey)).status, JobStatus.Open, 'the job is still open')
  t.equal(await reclaimAt(job.client, job.jobKey, reclaimableAt), 'success', 'at the reclaim time')
  t.equal((await f.job(job.jobKey)).status, JobStatus.Reclaimed)
})

t.test('only the job\'s client or its borrower may reclaim', async (t) => {
  const job = await openJob(100n * USDC, 10n * USDC)
  await pastReclaimTime(job)
  const stranger = await f.wallet()
  await rejectsWith(t, f.call(stranger, 'reclaimJob', [job.jobKey]), 'NotClient', 'a stranger', [stranger.account.address])
  await rejectsWith(t, f.call(f.operator, 'reclaimJob', [job.jobKey]), 'NotClient', 'the operator', [f.operator.account.address])
  await rejectsWith(t, f.call(job.client, 'reclaimJob', [jobKeyOf('job_reclaim_never_funded')]), 'UnknownJob', 'a job never funded')
})

// Which rule a deployment has (review34): a deployment from before outsider29 takes a reclaim from the client only and has
// no BORROWER_MAY_RECLAIM() (a call reverts without data); this release's answers true, and its borrower's reclaim is taken.
t.test('this release\'s contract says its borrower may reclaim: BORROWER_MAY_RECLAIM() is true', async (t) => {
  t.equal(await f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'BORROWER_MAY_RECLAIM' }), true)
})

// An outsider's finding (outsider29): only the client could reclaim, so a client that went silent (never completed,
// failed nor reclaimed its job) kept its borrower's collateral in the contract for good, nothing advanced, nobody owed,
// unless the operator stepped in; the client's cost, an escrow it could take back (with that collateral) whenever it liked.
t.test('the borrower of a job nobody ended reclaims it: its collateral back, the escrow to the client, by the same rules', async (t) => {
  const job = await openJob(1n * USDC, 40n * USDC)
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'ReclaimTooEarly', 'the borrower, before the delay')
  const { lender, a } = await lease(job.jobKey)
  await f.call(lender, 'paySupplier', [{ ...a, amount: 10n * USDC }, f.authorize({ ...a, amount: 10n * USDC })])
  await pastReclaimTime(job)
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'the borrower, while an advance owes', [job.jobKey, 1n])
  const payer = await f.wallet(50n * USDC)
  await f.call(payer, 'repay', [a.offerKey, 50n * USDC])

  const holders: Address[] = [job.client.account.address, job.borrower.account.address, f.facility]
  const before = await Promise.all(holders.map((h) => f.balance(h)))
  const hash = await f.call(job.borrower, 'reclaimJob', [job.jobKey])
  const after = await Promise.all(holders.map((h) => f.balance(h)))
  t.same(after.map((b, i) => b - (before[i] as bigint)), [1n * USDC, 40n * USDC, -41n * USDC], 'client +escrow, borrower +collateral, contract -both')
  t.same(
    (await f.events(hash)).map((e) => ({ name: e.eventName, args: e.args })),
    [{ name: 'JobReclaimed', args: { jobKey: job.jobKey, client: job.client.account.address, escrowRefunded: 1n * USDC, collateralReleased: 40n * USDC } }],
    'the same event as the client\'s reclaim: it names the job\'s client',
  )
  t.match(await f.job(job.jobKey), { status: JobStatus.Reclaimed, escrow: 0n, collateral: 0n })
  await rejectsWith(t, f.call(job.client, 'reclaimJob', [job.jobKey]), 'JobNotOpen', 'the client after the borrower', [job.jobKey, JobStatus.Reclaimed])
})

t.test('after the delay: escrow to the client, collateral to the borrower, the event, the job ends Reclaimed', async (t) => {
  const job = await openJob(100n * USDC, 25n * USDC)
  await pastReclaimTime(job)
  const holders: Address[] = [job.client.account.address, job.borrower.account.address, f.facility]
  const before = await Promise.all(holders.map((h) => f.balance(h)))
  const hash = await f.call(job.client, 'reclaimJob', [job.jobKey])
  const after = await Promise.all(holders.map((h) => f.balance(h)))
  t.same(after.map((b, i) => b - (before[i] as bigint)), [100n * USDC, 25n * USDC, -125n * USDC], 'client +escrow, borrower +collateral, contract -both')
  const events = await f.events(hash)
  t.same(
    events.map((e) => ({ name: e.eventName, args: e.args })),
    [{ name: 'JobReclaimed', args: { jobKey: job.jobKey, client: job.client.account.address, escrowRefunded: 100n * USDC, collateralReleased: 25n * USDC } }],
  )
  const onChain = await f.job(job.jobKey)
  t.same([onChain.status, onChain.escrow, onChain.collateral], [JobStatus.Reclaimed, 0n, 0n], 'getJob tells it: Reclaimed, holding nothing')

  await rejectsWith(t, f.call(job.client, 'reclaimJob', [job.jobKey]), 'JobNotOpen', 'a second reclaim', [job.jobKey, JobStatus.Reclaimed])
  await rejectsWith(t, f.call(job.borrower, 'postCollateral', [job.jobKey, f.token, 1n]), 'JobNotOpen', 'collateral after the reclaim')
  await rejectsWith(t, f.call(f.operator, 'failJob', [job.jobKey]), 'JobNotOpen', 'the operator fails it after the reclaim')
  await rejectsWith(t, f.call(f.operator, 'settleJob', [job.jobKey, []]), 'JobNotOpen', 'the operator settles it after the reclaim')
})

t.test('a paySupplier after the reclaim reverts: a lender never pays into a reclaimed job', async (t) => {
  const job = await openJob(500n * USDC)
  const { lender, a } = await lease(job.jobKey)
  await pastReclaimTime(job)
  // An authorization still within its deadline: only the job's state refuses it.
  const live = { ...a, deadline: (await f.chainNow()) + 600n, dueAt: (await f.chainNow()) + 3_600n }
  await f.call(job.client, 'reclaimJob', [job.jobKey])
  const before = await f.balance(lender.account.address)
  await rejectsWith(t, f.call(lender, 'paySupplier', [live, f.authorize(live)]), 'JobNotOpen', 'payment on a reclaimed job', [job.jobKey, JobStatus.Reclaimed])
  t.equal(await f.balance(lender.account.address), before, 'the lender paid nothing')
})

t.test('after a paySupplier the reclaim reverts while the advance owes anything, and takes the job back once it is repaid', async (t) => {
  const job = await openJob(500n * USDC, 50n * USDC)
  const { lender, a } = await lease(job.jobKey)
  await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  t.equal((await f.job(job.jobKey)).advanced, true, 'the first payment marks the job advanced')
  await pastReclaimTime(job)
  await rejectsWith(t, f.call(job.client, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'while the advance is owed', [job.jobKey, 1n])

  // Part of it repaid: the lender is still owed, the escrow still backs it.
  const payer = await f.wallet(200n * USDC)
  await f.call(payer, 'repay', [a.offerKey, 50n * USDC])
  await rejectsWith(t, f.call(job.client, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'while part of it is owed', [job.jobKey, 1n])

  // Repaid in full (an outsider's finding: before, the escrow and collateral then waited on the operator alone, for
  // good if the service stopped): the client takes its escrow back, the borrower its collateral.
  await f.call(payer, 'repay', [a.offerKey, 200n * USDC])
  const repaid = await f.job(job.jobKey)
  t.same([repaid.outstanding, repaid.unresolved, repaid.advanced], [0n, 0n, true], 'nothing owed, still advanced')
  const clientBefore = await f.balance(job.client.account.address)
  const borrowerBefore = await f.balance(job.borrower.account.address)
  await f.call(job.client, 'reclaimJob', [job.jobKey])
  t.equal(await f.balance(job.client.account.address) - clientBefore, 500n * USDC, 'the whole escrow back to the client')
  t.equal(await f.balance(job.borrower.account.address) - borrowerBefore, 50n * USDC, 'the collateral back to the borrower')
  t.match(await f.job(job.jobKey), { status: JobStatus.Reclaimed, escrow: 0n, collateral: 0n })

  // No lender pays into it afterwards.
  const next = await lease(job.jobKey)
  await rejectsWith(t, f.call(next.lender, 'paySupplier', [next.a, f.authorize(next.a)]), 'JobNotOpen', 'payment on the reclaimed job', [job.jobKey, JobStatus.Reclaimed])
})

t.test('a backing advance does not mark any job advanced', async (t) => {
  const job = await openJob(100n * USDC)
  const { lender, a } = await lease(zeroHash)
  await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  await pastReclaimTime(job)
  await f.call(job.client, 'reclaimJob', [job.jobKey])
  t.equal((await f.job(job.jobKey)).status, JobStatus.Reclaimed)
})

// review34, an adversary's review of outsider29's change by direct calls: the borrower's reclaim never takes what backs a
// lender or the insurance reserve. "Nothing owed" is the job's `outstanding` 0: an advance whose lender part is repaid
// while the reserve's share is not, one past due waiting for its liquidation, and one liquidated with a shortfall (or a
// reserve's subrogated claim) each keep the job from its borrower until paid whole. A lender is a stranger to it too.

/** A lease on the job paid: 100 USDC to a supplier, 109 owed to the lender and 1 to the reserve, due an hour on. */
async function advanced(job: JobSetup): Promise<{ lender: Wallet; a: LeaseAuthorization }> {
  const leased = await lease(job.jobKey)
  await f.call(leased.lender, 'paySupplier', [leased.a, f.authorize(leased.a)])
  return leased
}

/** Chain time past the advance's due time (the reclaim time, 1,000 s after the funding, comes first). */
async function pastDue(a: LeaseAuthorization): Promise<void> {
  await f.advanceTime(Number(a.dueAt - (await f.chainNow()) + 1n))
}

async function repay(offerKey: Hex, amount: bigint): Promise<void> {
  await f.call(await f.wallet(amount), 'repay', [offerKey, amount])
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

t.test('review34: an advance whose lender is repaid while the reserve\'s share is not keeps the job from its borrower', async (t) => {
  const job = await openJob(200n * USDC)
  const { a } = await advanced(job)
  await pastReclaimTime(job)
  await repay(a.offerKey, 109n * USDC)
  t.match(await f.advance(a.offerKey), { lenderOwed: 0n, reserveOwed: 1n * USDC })
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'the reserve\'s share owed', [job.jobKey, 1n])
  const reserveBefore = await f.reserve()
  await repay(a.offerKey, 1n * USDC)
  t.equal(await f.reserve() - reserveBefore, 1n * USDC, 'the reserve has its share')
  await borrowerReclaims(t, job)
})

t.test('review34: an advance past due waits for its liquidation; once the collateral covered it whole, the borrower reclaims the rest', async (t) => {
  const job = await openJob(200n * USDC, 150n * USDC)
  const { lender, a } = await advanced(job)
  await pastDue(a)
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'a liquidation pending', [job.jobKey, 1n])
  const lenderBefore = await f.balance(lender.account.address)
  await f.call(f.operator, 'liquidate', [a.offerKey, 0n])
  t.equal(await f.balance(lender.account.address) - lenderBefore, 109n * USDC, 'the lender is paid from the collateral')
  t.match(await f.job(job.jobKey), { outstanding: 0n, collateral: 40n * USDC })
  await borrowerReclaims(t, job)
})

t.test('review34: two advances, one liquidated with a shortfall: the job stays with the lenders until it is repaid', async (t) => {
  const job = await openJob(300n * USDC, 5n * USDC)
  const first = await advanced(job)
  const second = await advanced(job)
  await pastDue(second.a)
  await f.call(f.operator, 'liquidate', [first.a.offerKey, 0n])
  const liquidated = await f.advance(first.a.offerKey)
  t.ok(liquidated.liquidated && liquidated.lenderOwed + liquidated.reserveOwed > 0n, 'the collateral did not cover it: a shortfall, or the reserve\'s subrogated claim')
  await repay(second.a.offerKey, 110n * USDC)
  t.match(await f.job(job.jobKey), { outstanding: 1n, unresolved: 0n, collateral: 0n }, 'one advance owes; none is unresolved')
  await rejectsWith(t, f.call(job.borrower, 'reclaimJob', [job.jobKey]), 'AdvancesOwed', 'the borrower, while the shortfall is owed', [job.jobKey, 1n])
  await rejectsWith(t, f.call(first.lender, 'reclaimJob', [job.jobKey]), 'NotClient', 'its lender', [first.lender.account.address])
  await repay(first.a.offerKey, liquidated.lenderOwed + liquidated.reserveOwed)
  t.match(await f.advance(first.a.offerKey), { lenderOwed: 0n, reserveOwed: 0n })
  await borrowerReclaims(t, job)
})

t.test('token conservation', (t) => f.checkConservation(t))
