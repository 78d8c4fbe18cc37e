// The unsigned v2 transactions, signed and sent as a client would on anvil: each does what it says (balances, the
// contract's state) and uses less gas than the limit it carries (fresh wallets and keys: cold storage, the costly case).
import t from 'tap'
import { erc20Abi, maxUint256, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import type { UnsignedTransaction } from '../../src/chain/transactions.ts'
import {
  buildFundJobTransactions,
  buildPaySupplierV2Transaction,
  buildPostCollateralTransactions,
  buildRepayTransactions,
  buildSessionSetupTransaction,
  buildTopUpTransaction,
  buildWithdrawalTransaction,
} from '../../src/chain/transactions-v2.ts'
import { setupFacilityV2, USDC, type Wallet } from './fixtures/facility-v2.ts'

t.test('every unsigned v2 transaction works as sent and stays under its gas limit', async (t) => {
  const f = await setupFacilityV2(t)
  const used: Record<string, bigint> = {}
  const send = async (who: Wallet, txs: UnsignedTransaction[], label: string): Promise<void> => {
    for (const [i, tx] of txs.entries()) {
      t.equal(tx.from, who.account.address, `${label}: from the signer`)
      t.equal(tx.chainId, f.network.chainId)
      const hash: Hex = await who.wallet.sendTransaction({ to: tx.to, data: tx.data, value: tx.value, gas: tx.gas })
      const receipt = await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 })
      t.equal(receipt.status, 'success', `${label} #${i} succeeds`)
      t.ok(receipt.gasUsed < tx.gas, `${label} #${i} used ${receipt.gasUsed} gas, under its limit ${tx.gas}`)
      used[`${label} #${i}`] = receipt.gasUsed
    }
  }
  const asset = f.network.tokens[0]?.symbol as string
  const party = (who: Wallet) => ({ network: f.network, contract: f.facility, from: who.account.address })
  const client = await f.wallet(500n * USDC)
  const borrower = await f.wallet(500n * USDC)
  const main = await f.wallet(1_000n * USDC)
  const session = await f.wallet(0n)
  const supplier: Address = privateKeyToAccount(generatePrivateKey()).address
  const jobKey = jobKeyOf('job_tx_v2')

  await send(client, buildFundJobTransactions(party(client), { jobKey, asset, amountAtomic: 500n * USDC, borrower: borrower.account.address }), 'fundJob')
  await send(borrower, buildPostCollateralTransactions(party(borrower), { jobKey, asset, amountAtomic: 50n * USDC }), 'postCollateral')
  t.match(await f.job(jobKey), { escrow: 500n * USDC, collateral: 50n * USDC }, 'the job holds escrow and collateral')

  await send(session, [buildSessionSetupTransaction(party(session), { asset })], 'session setup')
  t.equal(
    await f.publicClient.readContract({ address: f.token, abi: erc20Abi, functionName: 'allowance', args: [session.account.address, f.facility] }),
    maxUint256,
    'the session wallet approved the maximum',
  )
  await send(main, [buildTopUpTransaction(party(main), { asset, sessionWallet: session.account.address, amountAtomic: 300n * USDC })], 'top-up')
  t.equal(await f.balance(session.account.address), 300n * USDC, 'the top-up reached the session wallet')

  const now = await f.chainNow()
  const authorization = {
    offerKey: offerKeyOf(newKeySalt(), 'off_tx'), jobKey, payer: session.account.address, supplier, asset: f.token,
    amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n,
  }
  const pay = buildPaySupplierV2Transaction({ network: f.network, contract: f.facility }, { authorization, signature: f.authorize(authorization) })
  await send(session, [pay], 'paySupplier')
  t.equal(await f.balance(supplier), 100n * USDC, 'the supplier was paid')

  const owed = 110n * USDC
  await send(borrower, buildRepayTransactions(party(borrower), { offerKey: authorization.offerKey, asset, amountOwedAtomic: owed }), 'repay')
  t.match(await f.advance(authorization.offerKey), { lenderOwed: 0n, reserveOwed: 0n }, 'the exact amount owed repays the advance')
  t.equal(await f.balance(session.account.address), 200n * USDC + 109n * USDC, 'the capital came back to the session wallet')

  await send(session, [buildWithdrawalTransaction(party(session), { asset, mainWallet: main.account.address, amountAtomic: 309n * USDC })], 'withdrawal')
  t.equal(await f.balance(main.account.address), 1_009n * USDC, 'the withdrawal reached the main wallet')
  t.comment(Object.entries(used).map(([k, v]) => `${k}: ${v}`).join('; '))
})
