// CreditFacilityV2 against recipients the token refuses (USDC's blacklist, which TestStablecoin has as FiatToken does)
// and its cap on a job's advances, on a real anvil. Before held payments, one blacklisted lender or borrower made
// settleJob revert for the whole job, a blacklisted lender made every repay of its advance revert, and a blacklisted
// borrower kept a failed job's collateral for good; before the cap, a lease signer could sign any number of advances on
// one job, past what one settleJob can pay.
import t from 'tap'
import { zeroHash, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import type { LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { ascendingKeys } from '../../src/chain/operator.ts'
import { gasLimitsV2 } from '../../src/chain/transactions-v2.ts'
import { JobStatus, rejectsWith, setupFacilityV2, USDC, type V2Fixture } from './fixtures/facility-v2.ts'

const salt = newKeySalt()
let sequence = 0
const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address
const refused = ['Blacklistable: account is blacklisted']

const openJob = (f: V2Fixture, escrow: bigint, collateral = 0n) => f.openJob(`job_held_${++sequence}`, escrow, collateral)

/** A fresh lender pays an advance of `amount` (fee amount/10, reserve share 1) on `jobKey`. */
async function advance(f: V2Fixture, jobKey: Hex, amount = 100n * USDC, overrides: Partial<LeaseAuthorization> = {}) {
  const lender = await f.wallet(10_000n * USDC)
  const now = await f.chainNow()
  const a: LeaseAuthorization = {
    offerKey: offerKeyOf(salt, `off_held_${++sequence}`), jobKey, payer: lender.account.address, supplier: freshAddress(), asset: f.token,
    amount, fee: amount / 10n, reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n, ...overrides,
  }
  await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  return { lender: lender.account.address, offerKey: a.offerKey }
}

t.test('a refused recipient holds up nobody else: its payment is held for it, and claimed once the token accepts it', async (t) => {
  const f = await setupFacilityV2(t)

  t.test('settleJob pays the other lenders and holds the blacklisted lender\'s and borrower\'s parts', async (t) => {
    const { jobKey, borrower } = await openJob(f, 300n * USDC, 50n * USDC)
    const good = await advance(f, jobKey, 100n * USDC)
    const bad = await advance(f, jobKey, 80n * USDC)
    await f.blacklist(bad.lender, true)
    await f.blacklist(borrower.account.address, true)
    const before = await Promise.all([good.lender, bad.lender, borrower.account.address].map((a) => f.balance(a)))
    const hash = await f.call(f.operator, 'settleJob', [jobKey, ascendingKeys([good.offerKey, bad.offerKey])])
    // held 350; owed 110 + 88: lenders 109 and 87, reserve 2, borrower 152.
    t.equal((await f.balance(good.lender)) - (before[0] as bigint), 109n * USDC, 'the accepted lender is paid at once')
    t.equal(await f.balance(bad.lender), before[1], 'nothing reaches the refused lender')
    t.equal(await f.balance(borrower.account.address), before[2], 'nothing reaches the refused borrower')
    t.equal(await f.held(bad.lender), 87n * USDC, 'the refused lender\'s part is held for it')
    t.equal(await f.held(borrower.account.address), 152n * USDC, 'the borrower\'s rest is held for it')
    t.equal(await f.held(good.lender), 0n)
    const events = await f.events(hash)
    const held = events.flatMap((e) => (e.eventName === 'PaymentHeld' ? [e.args] : []))
    t.same(held, [
      { asset: f.token, to: bad.lender, amount: 87n * USDC },
      { asset: f.token, to: borrower.account.address, amount: 152n * USDC },
    ], 'one PaymentHeld per refused transfer')
    t.match(events.find((e) => e.eventName === 'JobSettled')?.args, { toLenders: 196n * USDC, toReserve: 2n * USDC, toBorrower: 152n * USDC },
      'the settlement is the same: what is held is still the lender\'s and the borrower\'s')
    t.match(await f.job(jobKey), { status: JobStatus.Settled, escrow: 0n, collateral: 0n })
    await f.checkConservation(t)

    await rejectsWith(t, f.call(f.operator, 'claimHeld', [f.token, bad.lender]), 'Error', 'a claim while the token still refuses reverts', refused)
    t.equal(await f.held(bad.lender), 87n * USDC, 'and changes nothing')
    await f.blacklist(bad.lender, false)
    const stranger = await f.wallet(0n)
    const claim = await f.call(stranger, 'claimHeld', [f.token, bad.lender])
    t.equal((await f.balance(bad.lender)) - (before[1] as bigint), 87n * USDC, 'anyone claims it, and it goes to the recipient')
    t.equal(await f.balance(stranger.account.address), 0n, 'never to the caller')
    t.same((await f.events(claim)).map((e) => [e.eventName, e.args]), [
      ['HeldPaymentClaimed', { asset: f.token, to: bad.lender, caller: stranger.account.address, amount: 87n * USDC }],
    ])
    t.equal(await f.held(bad.lender), 0n)
    await rejectsWith(t, f.call(stranger, 'claimHeld', [f.token, bad.lender]), 'NothingHeld', 'claimed once', [f.token, bad.lender])
    await f.checkConservation(t)
  })

  t.test('repay to a blacklisted lender: the payer pays, the advance is repaid, the lender\'s part is held', async (t) => {
    const { jobKey } = await openJob(f, 300n * USDC)
    const adv = await advance(f, jobKey, 100n * USDC)
    await f.blacklist(adv.lender, true)
    const payer = await f.wallet(200n * USDC)
    const lenderBefore = await f.balance(adv.lender)
    const hash = await f.call(payer, 'repay', [adv.offerKey, 110n * USDC])
    t.equal(await f.balance(payer.account.address), 90n * USDC, 'the payer paid what was owed')
    t.equal(await f.balance(adv.lender), lenderBefore)
    t.equal(await f.held(adv.lender), 109n * USDC, 'the lender\'s part is held for it')
    t.match(await f.advance(adv.offerKey), { lenderOwed: 0n, reserveOwed: 0n })
    t.match(await f.job(jobKey), { outstanding: 0n, unresolved: 0n })
    t.same((await f.events(hash)).map((e) => e.eventName), ['PaymentHeld', 'Repaid'])
    await f.checkConservation(t)
    // A payer the token refuses is refused as before: nothing is taken, nothing held.
    const blocked = await f.wallet(200n * USDC)
    const other = await advance(f, jobKey, 10n * USDC)
    await f.blacklist(blocked.account.address, true)
    await rejectsWith(t, f.call(blocked, 'repay', [other.offerKey, 11n * USDC]), 'Error', 'a blacklisted payer', refused)
    t.equal(await f.held(other.lender), 0n)
  })

  t.test('paySupplier to a supplier the token refuses: the lender pays, the advance is born, the principal is held for the supplier', async (t) => {
    // An outsider's finding (outsider14): paySupplier reverted, so every lender leased an offer naming such a supplier
    // lost reliability for a lease it could not pay, and any borrower could push the cheapest lenders out of matching.
    const { jobKey } = await openJob(f, 300n * USDC)
    const lender = await f.wallet(1_000n * USDC)
    const supplier = freshAddress()
    await f.blacklist(supplier, true)
    const now = await f.chainNow()
    const a: LeaseAuthorization = {
      offerKey: offerKeyOf(salt, `off_held_${++sequence}`), jobKey, payer: lender.account.address, supplier, asset: f.token,
      amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n,
    }
    const hash = await f.call(lender, 'paySupplier', [a, f.authorize(a)])
    t.equal(await f.balance(lender.account.address), 900n * USDC, 'the lender paid the principal')
    t.equal(await f.held(supplier), 100n * USDC, 'held for the supplier')
    t.match(await f.advance(a.offerKey), { lenderOwed: 109n * USDC, reserveOwed: 1n * USDC }, 'the advance is owed as any other')
    t.match(await f.job(jobKey), { outstanding: 1n, unresolved: 1n })
    t.same((await f.events(hash)).map((e) => e.eventName), ['PaymentHeld', 'SupplierPaid'])
    const { gasUsed } = await f.publicClient.getTransactionReceipt({ hash })
    t.ok(gasUsed < gasLimitsV2.paySupplier, `the held path (${gasUsed} gas) fits the served gas limit (${gasLimitsV2.paySupplier})`)
    await f.checkConservation(t)
    await f.blacklist(supplier, false)
    await f.call(await f.wallet(0n), 'claimHeld', [f.token, supplier])
    t.equal(await f.balance(supplier), 100n * USDC, 'the supplier has it once the token takes it')

    // A payer the token refuses, or one without the balance, is refused as before: nothing is taken, no advance.
    const blocked = await f.wallet(1_000n * USDC)
    await f.blacklist(blocked.account.address, true)
    const b = { ...a, offerKey: offerKeyOf(salt, `off_held_${++sequence}`), payer: blocked.account.address, supplier: freshAddress() }
    await rejectsWith(t, f.call(blocked, 'paySupplier', [b, f.authorize(b)]), 'Error', 'a blacklisted payer', refused)
    const poor = await f.wallet(10n * USDC)
    const c = { ...a, offerKey: offerKeyOf(salt, `off_held_${++sequence}`), payer: poor.account.address, supplier }
    await f.blacklist(supplier, true)
    await t.rejects(f.call(poor, 'paySupplier', [c, f.authorize(c)]), 'a payer short of the principal, to a refused supplier')
    t.equal(await f.balance(poor.account.address), 10n * USDC, 'nothing taken')
    t.equal(await f.held(supplier), 0n, 'nothing held')
    await f.checkConservation(t)
  })

  t.test('a failed job with a blacklisted client, lender and borrower still ends, and its collateral leaves', async (t) => {
    const { jobKey, client, borrower } = await openJob(f, 100n * USDC, 200n * USDC)
    const adv = await advance(f, jobKey, 50n * USDC)
    for (const who of [client.account.address, adv.lender, borrower.account.address]) await f.blacklist(who, true)
    await f.call(f.operator, 'failJob', [jobKey])
    t.equal(await f.held(client.account.address), 100n * USDC, 'the client\'s refund is held')
    const hash = await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    t.same((await f.events(hash)).map((e) => e.eventName), ['Liquidated', 'PaymentHeld', 'JobClosed', 'PaymentHeld'])
    // owed 55 - 1 + 1: the lender's 54 and the reserve's 1 from collateral; the borrower's 145 left.
    t.equal(await f.held(adv.lender), 54n * USDC)
    t.equal(await f.held(borrower.account.address), 145n * USDC)
    t.match(await f.job(jobKey), { status: JobStatus.Closed, escrow: 0n, collateral: 0n })
    await f.checkConservation(t)
  })

  t.test('reclaimJob: a blacklisted borrower does not keep the client from its escrow', async (t) => {
    const { jobKey, client, borrower } = await openJob(f, 40n * USDC, 5n * USDC)
    await f.blacklist(borrower.account.address, true)
    await f.advanceTime(Number(await f.publicClient.readContract({ address: f.facility, abi: [{ type: 'function', name: 'reclaimDelay', inputs: [], outputs: [{ type: 'uint256' }], stateMutability: 'view' }], functionName: 'reclaimDelay' })))
    await f.call(client, 'reclaimJob', [jobKey])
    t.equal(await f.balance(client.account.address), 40n * USDC)
    t.equal(await f.held(borrower.account.address), 5n * USDC)
    await f.checkConservation(t)
  })
})

t.test('advancesPerJobMax: paySupplier refuses an advance past the job\'s cap on advances that owe', async (t) => {
  const f = await setupFacilityV2(t, { advancesPerJobMax: 2n })
  t.equal(await f.publicClient.readContract({ address: f.facility, abi: [{ type: 'function', name: 'advancesPerJobMax', inputs: [], outputs: [{ type: 'uint256' }], stateMutability: 'view' }], functionName: 'advancesPerJobMax' }), 2n)
  const { jobKey } = await openJob(f, 1_000n * USDC)
  const first = await advance(f, jobKey, 10n * USDC)
  await advance(f, jobKey, 10n * USDC)
  await rejectsWith(t, advance(f, jobKey, 10n * USDC), 'TooManyAdvances', 'a third advance on the job', [jobKey, 2n])
  t.match(await f.job(jobKey), { outstanding: 2n })
  // An advance repaid in full owes nothing and leaves settleJob's list: its place is free again.
  const payer = await f.wallet(11n * USDC)
  await f.call(payer, 'repay', [first.offerKey, 11n * USDC])
  await advance(f, jobKey, 10n * USDC)
  t.match(await f.job(jobKey), { outstanding: 2n })
  await rejectsWith(t, advance(f, jobKey, 10n * USDC), 'TooManyAdvances', 'full again', [jobKey, 2n])
  // A backing source's advances name no job: no settleJob pays them, and no cap counts them.
  for (let i = 0; i < 3; i++) await advance(f, zeroHash, 10n * USDC)
})
