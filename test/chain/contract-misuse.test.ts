// Every misuse of the credit contract reverts with its named custom error, against anvil.
import t from 'tap'
import { zeroAddress, zeroHash } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { creditFacilityAbi } from '../../src/chain/artifacts.ts'
import { idKey } from '../../src/chain/ids.ts'
import { sendLiquidate, sendSettleJob } from '../../src/chain/operator.ts'
import { rejectsWith, setupDevnet, USDC } from './fixtures/devnet.ts'

t.test('credit contract misuse', async (t) => {
  const f = await setupDevnet(t)
  const { accounts, network, token } = f
  const client = f.actor('jobClient')
  const borrower = f.actor('borrower')
  const lender = f.actor('lender')
  const stranger = f.actor('attester')
  const operator = f.actor('operator')
  const supplier = accounts.supplier.address
  const job = idKey('job_misuse')
  const otherAsset = network.identityRegistry

  await f.approve(client, 10_000n * USDC)
  await f.approve(borrower, 10_000n * USDC)
  await f.approve(lender, 10_000n * USDC)
  await f.approve(stranger, 10_000n * USDC)

  t.test('fundJob', async (t) => {
    await rejectsWith(t, f.call(client, 'fundJob', [job, token, 0n, borrower.account.address]), 'ZeroAmount', 'zero amount')
    await rejectsWith(t, f.call(client, 'fundJob', [zeroHash, token, 1n, borrower.account.address]), 'ZeroKey', 'zero job key')
    await rejectsWith(t, f.call(client, 'fundJob', [job, token, 1n, zeroAddress]), 'ZeroAddress', 'no borrower')
    await rejectsWith(t, f.call(client, 'fundJob', [job, zeroAddress, 1n, borrower.account.address]), 'ZeroAddress', 'no asset')
    const poor = f.actor(generatePrivateKey())
    await f.fundGas(poor.account.address)
    await f.approve(poor, 10n * USDC)
    await rejectsWith(
      t,
      f.call(poor, 'fundJob', [idKey('job_poor'), token, 10n * USDC, borrower.account.address]),
      'ERC20InsufficientBalance',
      'more than the client holds',
    )
    await f.call(client, 'fundJob', [job, token, 1_000n * USDC, borrower.account.address])
    await rejectsWith(t, f.call(client, 'fundJob', [job, token, 1n, borrower.account.address]), 'JobAlreadyFunded', 'double funding')
    await rejectsWith(t, f.call(stranger, 'fundJob', [job, token, 1n, borrower.account.address]), 'JobAlreadyFunded', 'double funding by another client')
  })

  t.test('postCollateral', async (t) => {
    await rejectsWith(t, f.call(borrower, 'postCollateral', [idKey('job_unknown'), token, 1n]), 'UnknownJob', 'unknown job')
    await rejectsWith(t, f.call(stranger, 'postCollateral', [job, token, 1n]), 'NotBorrower', 'wrong caller')
    await rejectsWith(t, f.call(borrower, 'postCollateral', [job, otherAsset, 1n]), 'AssetMismatch', 'other asset')
    await rejectsWith(t, f.call(borrower, 'postCollateral', [job, token, 0n]), 'ZeroAmount', 'zero amount')
    await f.call(borrower, 'postCollateral', [job, token, 100n * USDC])
  })

  t.test('paySupplier', async (t) => {
    const future = BigInt(Math.floor(Date.now() / 1000) + 600)
    const past = BigInt(Math.floor(Date.now() / 1000) - 600)
    await rejectsWith(t, f.call(lender, 'paySupplier', [idKey('off_a'), supplier, token, 1n, past]), 'DeadlinePassed', 'deadline passed')
    await rejectsWith(t, f.call(lender, 'paySupplier', [idKey('off_a'), supplier, token, 0n, future]), 'ZeroAmount', 'zero amount')
    await rejectsWith(t, f.call(lender, 'paySupplier', [idKey('off_a'), zeroAddress, token, 1n, future]), 'ZeroAddress', 'no supplier')
    await rejectsWith(t, f.call(lender, 'paySupplier', [zeroHash, supplier, token, 1n, future]), 'ZeroKey', 'zero offer key')
    await rejectsWith(
      t,
      f.call(lender, 'paySupplier', [idKey('off_a'), supplier, token, 20_000n * USDC, future]),
      'ERC20InsufficientAllowance',
      'over the allowance of the setup transaction',
    )
    await f.call(lender, 'paySupplier', [idKey('off_a'), supplier, token, 5n * USDC, future])
    await rejectsWith(t, f.call(lender, 'paySupplier', [idKey('off_a'), supplier, token, 5n * USDC, future]), 'OfferAlreadyPaid', 'second payment of an offer')
    // The revert also happens on chain, not only in simulation.
    const hash = await f.sendRaw(lender, 'paySupplier', [idKey('off_b'), supplier, token, 1n, past])
    const receipt = await f.clients.publicClient.getTransactionReceipt({ hash })
    t.equal(receipt.status, 'reverted', 'a late paySupplier reverts on chain')
  })

  t.test('repay', async (t) => {
    await rejectsWith(t, f.call(borrower, 'repay', [idKey('adv_a'), lender.account.address, token, 0n, 0n]), 'ZeroAmount', 'zero amount')
    await rejectsWith(t, f.call(borrower, 'repay', [idKey('adv_a'), lender.account.address, token, 5n, 6n]), 'ReserveOverAmount', 'reserve over amount')
    await rejectsWith(t, f.call(borrower, 'repay', [idKey('adv_a'), zeroAddress, token, 5n, 1n]), 'ZeroAddress', 'no lender')
    await rejectsWith(t, f.call(borrower, 'repay', [zeroHash, lender.account.address, token, 5n, 1n]), 'ZeroKey', 'zero advance key')
    await f.call(borrower, 'repay', [idKey('adv_a'), lender.account.address, token, 10n * USDC, 3n * USDC])
    t.equal(await f.reserve(), 3n * USDC)
  })

  t.test('settleJob', async (t) => {
    const args = [job, [idKey('adv_s')], [lender.account.address], [100n * USDC], 1n * USDC] as const
    await rejectsWith(t, f.call(stranger, 'settleJob', [...args]), 'NotOperator', 'not the operator')
    await rejectsWith(t, f.call(borrower, 'settleJob', [...args]), 'NotOperator', 'the borrower is not the operator')
    await rejectsWith(
      t,
      sendSettleJob(f.clients, { jobId: 'job_unknown', payouts: [], reserveAtomic: 0n }),
      'UnknownJob',
      'unknown job',
    )
    await rejectsWith(
      t,
      f.call(operator, 'settleJob', [job, [idKey('adv_s')], [lender.account.address], [1n, 2n], 0n]),
      'LengthMismatch',
      'arrays of different lengths',
    )
    await rejectsWith(
      t,
      sendSettleJob(f.clients, { jobId: 'job_misuse', payouts: [{ advanceId: 'adv_s', lender: lender.account.address, amountAtomic: 0n }], reserveAtomic: 0n }),
      'ZeroAmount',
      'zero payout',
    )
    await rejectsWith(
      t,
      sendSettleJob(f.clients, {
        jobId: 'job_misuse',
        payouts: [{ advanceId: 'adv_s', lender: lender.account.address, amountAtomic: 1_000n * USDC }],
        reserveAtomic: 100n * USDC + 1n,
      }),
      'OverHeld',
      'more than escrow + collateral',
    )
    await sendSettleJob(f.clients, {
      jobId: 'job_misuse',
      payouts: [{ advanceId: 'adv_s', lender: lender.account.address, amountAtomic: 1_000n * USDC }],
      reserveAtomic: 100n * USDC,
    })
    await rejectsWith(t, sendSettleJob(f.clients, { jobId: 'job_misuse', payouts: [], reserveAtomic: 0n }), 'JobAlreadySettled', 'double settlement')
    await rejectsWith(t, f.call(borrower, 'postCollateral', [job, token, 1n]), 'JobAlreadySettled', 'collateral after settlement')
  })

  t.test('liquidate', async (t) => {
    const job2 = 'job_liq'
    await f.call(client, 'fundJob', [idKey(job2), token, 50n * USDC, borrower.account.address])
    await f.call(borrower, 'postCollateral', [idKey(job2), token, 20n * USDC])
    const base = {
      advanceId: 'adv_l',
      jobId: job2 as string | null,
      lender: lender.account.address,
      asset: 'USDC',
      fromRevenueAtomic: 0n,
      fromCollateralAtomic: 0n,
      fromReserveAtomic: 0n,
    }
    await rejectsWith(
      t,
      f.call(stranger, 'liquidate', [idKey('adv_l'), idKey(job2), lender.account.address, token, 1n, 0n, 0n]),
      'NotOperator',
      'not the operator',
    )
    await rejectsWith(t, sendLiquidate(f.clients, base), 'ZeroAmount', 'nothing to recover')
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, jobId: 'job_none', fromRevenueAtomic: 1n }), 'UnknownJob', 'unknown job')
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, jobId: 'job_misuse', fromRevenueAtomic: 1n }), 'JobAlreadySettled', 'settled job')
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, fromRevenueAtomic: 50n * USDC + 1n }), 'OverHeld', 'more than the escrow')
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, fromCollateralAtomic: 20n * USDC + 1n }), 'OverHeld', 'more than the collateral')
    const reserve = await f.reserve()
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, fromReserveAtomic: reserve + 1n }), 'OverHeld', 'more than the reserve')
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, jobId: null, fromRevenueAtomic: 1n }), 'NoJobForRevenue', 'revenue without a job')
    await rejectsWith(
      t,
      f.call(operator, 'liquidate', [idKey('adv_l'), idKey(job2), lender.account.address, otherAsset, 1n, 0n, 0n]),
      'AssetMismatch',
      'asset other than the job asset',
    )
    await rejectsWith(
      t,
      f.call(operator, 'liquidate', [zeroHash, idKey(job2), lender.account.address, token, 1n, 0n, 0n]),
      'ZeroKey',
      'zero advance key',
    )
    await sendLiquidate(f.clients, { ...base, fromRevenueAtomic: 50n * USDC, fromCollateralAtomic: 20n * USDC, fromReserveAtomic: reserve })
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, fromReserveAtomic: 0n, fromRevenueAtomic: 0n, fromCollateralAtomic: 0n, jobId: null }), 'ZeroAmount', 'zero again')
    await f.call(borrower, 'repay', [idKey('adv_b'), lender.account.address, token, 2n, 1n])
    await rejectsWith(t, sendLiquidate(f.clients, { ...base, jobId: null, fromReserveAtomic: 1n }), 'AdvanceAlreadyLiquidated', 'second liquidation')
  })

  t.test('the operator is fixed at deployment', async (t) => {
    const operatorAddress = await f.clients.publicClient.readContract({
      address: network.creditContract,
      abi: creditFacilityAbi,
      functionName: 'operator',
    })
    t.equal(operatorAddress, accounts.operator.address)
  })
})
