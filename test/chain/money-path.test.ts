// The whole money path on chain, balances exact to the atomic unit after each step:
// setup approve (session key) -> fundJob -> postCollateral -> paySupplier -> repay -> settleJob -> liquidate.
import t from 'tap'
import type { Address } from 'viem'
import { creditFacilityAbi } from '../../src/chain/artifacts.ts'
import { idKey } from '../../src/chain/ids.ts'
import { sendLiquidate, sendSettleJob } from '../../src/chain/operator.ts'
import { buildPaySupplierTransaction } from '../../src/chain/transactions.ts'
import { newSessionKey } from '../../src/service/session-keys.ts'
import { setupDevnet, USDC } from './fixtures/devnet.ts'

t.test('money path: approve, fund, collateral, pay supplier, repay, settle, liquidate', async (t) => {
  const f = await setupDevnet(t)
  const { accounts, network, token } = f
  const facility = network.creditContract
  const client = f.actor('jobClient')
  const borrower = f.actor('borrower')
  const lender = f.actor('lender')
  const supplier = accounts.supplier.address

  const snapshot = async (addresses: Address[]): Promise<bigint[]> => Promise.all(addresses.map((a) => f.balance(a)))
  const deltas = async (addresses: Address[], before: bigint[]): Promise<bigint[]> =>
    (await snapshot(addresses)).map((after, i) => after - (before[i] as bigint))

  // Session key: registration output, funded by the lender, setup approve sent by the key itself.
  const { privateKey, sessionKey } = newSessionKey(f.accounts.lender.address, [network], { [network.slug]: 'USDC' }, 5_000n * USDC, Date.now())
  const session = sessionKey.address
  await f.fundGas(session)
  await f.transfer(lender, session, 3_000n * USDC)
  const setup = sessionKey.setupTransactions[0]
  if (setup === undefined) throw new Error('no setup transaction')
  t.equal(setup.to, token, 'setup approve goes to the token')
  t.equal(setup.from, session, 'and is sent by the session key, the address the lender funds')
  t.equal(setup.chainId, network.chainId)
  await f.waitSuccess(await f.signAndSend(privateKey, setup))
  t.equal(await f.allowance(session), 5_000n * USDC, 'allowance to the credit contract = total cap')

  // fundJob: the client escrows 1,000 USDC for the borrower.
  const job1 = idKey('job_one')
  await f.approve(client, 1_000n * USDC)
  let before = await snapshot([client.account.address, facility])
  await f.call(client, 'fundJob', [job1, token, 1_000n * USDC, borrower.account.address])
  t.strictSame(await deltas([client.account.address, facility], before), [-1_000n * USDC, 1_000n * USDC], 'fundJob moves the receivable into escrow')

  // postCollateral: the borrower locks 200 USDC.
  await f.approve(borrower, 10_000n * USDC)
  before = await snapshot([borrower.account.address, facility])
  await f.call(borrower, 'postCollateral', [job1, token, 200n * USDC])
  t.strictSame(await deltas([borrower.account.address, facility], before), [-200n * USDC, 200n * USDC], 'postCollateral locks collateral')

  // paySupplier by the session key, from the unsigned transaction the service builds for the lease.
  const pay = buildPaySupplierTransaction(network, {
    offerId: 'off_1',
    payer: session,
    supplier,
    asset: 'USDC',
    amountAtomic: 800n * USDC + 1n,
    expiresAtMs: Date.now() + 60_000,
  })
  before = await snapshot([session, supplier, facility])
  const payHash = await f.signAndSend(privateKey, pay)
  await f.waitSuccess(payHash)
  t.strictSame(await deltas([session, supplier, facility], before), [-(800n * USDC + 1n), 800n * USDC + 1n, 0n], 'the supplier is paid from the session key')
  t.equal(await f.allowance(session), 5_000n * USDC - (800n * USDC + 1n), 'the payment spends the allowance')

  // repay: the borrower repays 820 USDC + 1 of which 4 USDC go to the reserve.
  before = await snapshot([borrower.account.address, session, facility])
  await f.call(borrower, 'repay', [idKey('adv_1'), session, token, 820n * USDC + 1n, 4n * USDC])
  t.strictSame(
    await deltas([borrower.account.address, session, facility], before),
    [-(820n * USDC + 1n), 816n * USDC + 1n, 4n * USDC],
    'repay pays the lender and routes the reserve share into the contract',
  )
  t.equal(await f.reserve(), 4n * USDC, 'reserve holds the insurance share')

  // settleJob: lender first (300), reserve share (5), the rest of escrow + collateral back to the borrower.
  before = await snapshot([lender.account.address, borrower.account.address, facility])
  const settled = await sendSettleJob(f.clients, {
    jobId: 'job_one',
    payouts: [{ advanceId: 'adv_2', lender: lender.account.address, amountAtomic: 300n * USDC }],
    reserveAtomic: 5n * USDC,
  })
  t.strictSame(
    await deltas([lender.account.address, borrower.account.address, facility], before),
    [300n * USDC, 895n * USDC, -1_195n * USDC],
    'settleJob pays the lender, keeps the reserve share, returns the remainder to the borrower',
  )
  t.equal(await f.reserve(), 9n * USDC)
  const jobSettled = settled.logs.find((l) => l.eventName === 'JobSettled')
  t.strictSame(jobSettled?.args, { jobKey: job1, borrower: borrower.account.address, toLenders: 300n * USDC, toReserve: 5n * USDC, toBorrower: 895n * USDC })
  const lenderPaid = settled.logs.find((l) => l.eventName === 'LenderPaid')
  t.strictSame(lenderPaid?.args, { jobKey: job1, advanceKey: idKey('adv_2'), lender: lender.account.address, amount: 300n * USDC })

  // liquidate: a second job defaults; the lender recovers from revenue, collateral and the reserve.
  const job2 = idKey('job_two')
  await f.approve(client, 500n * USDC)
  await f.call(client, 'fundJob', [job2, token, 500n * USDC, borrower.account.address])
  await f.call(borrower, 'postCollateral', [job2, token, 100n * USDC])
  before = await snapshot([lender.account.address, facility])
  const liquidated = await sendLiquidate(f.clients, {
    advanceId: 'adv_3',
    jobId: 'job_two',
    lender: lender.account.address,
    asset: 'USDC',
    fromRevenueAtomic: 300n * USDC,
    fromCollateralAtomic: 50n * USDC,
    fromReserveAtomic: 7n * USDC,
  })
  t.strictSame(await deltas([lender.account.address, facility], before), [357n * USDC, -357n * USDC], 'liquidate pays the three steps')
  t.equal(await f.reserve(), 2n * USDC, 'the reserve step came out of the reserve')
  const event = liquidated.logs.find((l) => l.eventName === 'Liquidated')
  t.strictSame(event?.args, {
    advanceKey: idKey('adv_3'),
    jobKey: job2,
    lender: lender.account.address,
    asset: token,
    fromRevenue: 300n * USDC,
    fromCollateral: 50n * USDC,
    fromReserve: 7n * USDC,
  })
  const job = await f.clients.publicClient.readContract({ address: facility, abi: creditFacilityAbi, functionName: 'getJob', args: [job2] })
  t.equal(job.escrowAmount, 200n * USDC, 'escrow left after recovery')
  t.equal(job.collateralAmount, 50n * USDC, 'collateral left after recovery')

  // An advance without a job is recovered from the reserve alone.
  before = await snapshot([lender.account.address])
  await sendLiquidate(f.clients, {
    advanceId: 'adv_4',
    jobId: null,
    lender: lender.account.address,
    asset: 'USDC',
    fromRevenueAtomic: 0n,
    fromCollateralAtomic: 0n,
    fromReserveAtomic: 2n * USDC,
  })
  t.strictSame(await deltas([lender.account.address], before), [2n * USDC])
  t.equal(await f.reserve(), 0n)

  // Settling the defaulted job afterwards returns what the recovery left to the borrower.
  before = await snapshot([borrower.account.address, facility])
  await sendSettleJob(f.clients, { jobId: 'job_two', payouts: [], reserveAtomic: 0n })
  t.strictSame(await deltas([borrower.account.address, facility], before), [250n * USDC, -250n * USDC])
  t.equal(await f.balance(facility), 0n, 'the contract holds nothing once every job is settled and the reserve spent')
})
