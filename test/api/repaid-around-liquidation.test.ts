// Repayments around a shortfall liquidation. The contract takes a repayment of a liquidated advance that still owes
// (the shortfall, and what the reserve paid for it), and anyone may repay. A repayment mined after a liquidation and
// applied by the chain follower before the service recorded that liquidation (mined, recorded later by the operator
// repair or a retry of the route) does not follow on from what the engine holds owed: before, it was dropped as a
// mismatch, and the service's books lacked tokens the contract had moved for good (fails on fac6b96: the advance
// kept owing the repayment, and the reconciliation showed it). Now the follower keeps it until the liquidation is
// recorded, and it is applied after it, in chain order. The reverse order, and a repayment mined before the
// liquidation, are guarded here too.
import t, { type Test } from 'tap'
import { createTestClient, createWalletClient, http, maxUint256 } from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { createNetworkClients, networkChain } from '../../src/chain/clients.ts'
import { sendLiquidate } from '../../src/chain/operator.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, fundedJob, signedIn, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectProblem, expectReconciled, fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

let h: Harness
let lender: ReadyLender
let operator: CreditClient
let payer: CreditClient
let payerAgent: ChainAgent
let payerAccount: PrivateKeyAccount
t.before(async () => {
  ({ h, lender, operator } = await lenderHarness(t, { config: { operatorRepairIntervalMs: 1000 } }))
  payerAccount = await fundedAccount(h.devnet, h.network, usdc(1000))
  payer = await signedIn(h.url, payerAccount)
  payerAgent = new ChainAgent(h.network, payerAccount)
})

const follower = () => h.app.service.followers.get(h.network.slug)!

/** Repays `amountAtomic` of the advance on chain, from the payer (anyone may), without reporting it. */
async function repayUnreported(advanceId: string, amountAtomic: bigint): Promise<`0x${string}`> {
  const served = await payer.get(`/credit/advances/${advanceId}/repay-transactions?amountAtomic=${amountAtomic}&from=${payerAgent.account.address}`)
  if (served.status !== 200) throw new Error(`repay-transactions: ${served.status} ${JSON.stringify(served.body)}`)
  const sent = await payerAgent.sendAll(served.body.transactions)
  return sent[sent.length - 1] as `0x${string}`
}

/** After a restart (the service at a new address): the test's clients sign in again. */
async function signInAgain(): Promise<void> {
  payer = await signedIn(h.url, payerAccount)
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  lender = { ...lender, client: await signedIn(h.url, lender.account) }
}

async function owedOnChain(advanceKey: `0x${string}`): Promise<{ lenderOwed: bigint; reserveOwed: bigint; liquidated: boolean }> {
  return await payerAgent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advanceKey] }) as never
}

/** An advance of 100 on a job with no collateral. */
async function openAdvance(jobId: string): Promise<Json & { jobClientApi: CreditClient }> {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  return { ...advance, jobClientApi }
}

/** That advance, its job failed by its client: the advance is defaulted and will fall short. */
async function defaultedAdvance(jobId: string): Promise<Json> {
  const { jobClientApi, ...advance } = await openAdvance(jobId)
  const failed = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })
  if (failed.status !== 200) throw new Error(`fail: ${failed.status} ${JSON.stringify(failed.body)}`)
  return advance
}

async function expectAsOnChain(t: Test, advance: Json, repaymentsCount: number): Promise<void> {
  const recorded = (await payer.get(`/credit/advances/${advance['advanceId']}`)).body
  const chain = await owedOnChain(advance['advanceKey'])
  t.equal(recorded.state, 'shortfall', 'liquidated with a shortfall, still owing, as on chain')
  t.ok(chain.liquidated)
  t.equal(recorded.lenderOwedAtomic, chain.lenderOwed.toString(), 'the lender is owed what the contract says')
  t.equal(recorded.reserveOwedAtomic, chain.reserveOwed.toString(), 'the reserve is owed what the contract says')
  t.equal(recorded.repayments.filter((r: Json) => r['kind'] === 'repaid').length, repaymentsCount, 'every repayment counted once')
  await expectReconciled(t, operator, h.network.slug)
}

t.test('a repayment mined after an unrecorded liquidation is applied after it, once it is recorded', async (t) => {
  const advance = await defaultedAdvance('job_repaid_after_unrecorded_liq')
  await follower().stop()
  // The previous block: counted before the liquidation, as the contract did.
  await repayUnreported(advance['advanceId'], usdc(10))
  // Mined and never recorded by the route (a crash, a lost receipt): the operator repair records it.
  const liquidated = await sendLiquidate(createNetworkClients(h.network), { offerKey: advance['advanceKey'], backingCoveredAtomic: 0n })
  t.ok((liquidated.facts.find((f) => f.name === 'Liquidated')!.args as { shortfall: bigint }).shortfall > 0n, 'a shortfall on chain')
  await repayUnreported(advance['advanceId'], usdc(20))
  // One batch: Repaid, Liquidated, Repaid, in chain order.
  follower().start()
  await until(async () => (await payer.get(`/credit/advances/${advance['advanceId']}`)).body.repayments.length === 2, 20_000, 'both repayments counted')
  await until(() => h.app.service.operatorRepairs.pending().length === 0, 20_000, 'the repair done')
  await expectAsOnChain(t, advance, 2)
})

t.test('a repayment mined after a liquidation the route recorded is counted by the follower', async (t) => {
  const advance = await defaultedAdvance('job_repaid_after_recorded_liq')
  const liquidated = await (await signedIn(h.url, lender.account)).post(`/credit/advances/${advance['advanceId']}/liquidate`, {})
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  t.not(liquidated.body.shortfallAtomic, '0', 'a shortfall')
  await repayUnreported(advance['advanceId'], usdc(20))
  await until(async () => (await payer.get(`/credit/advances/${advance['advanceId']}`)).body.repayments.length === 1, 20_000, 'the repayment counted')
  await expectAsOnChain(t, advance, 1)
})

t.test('a repayment mined before the liquidation in the same block is counted before it', async (t) => {
  const advance = await defaultedAdvance('job_repaid_same_block')
  const chain = networkChain(h.network)
  const transport = http(h.network.rpcUrl)
  const anvil = createTestClient({ chain, transport, mode: 'anvil' })
  const contract = { address: h.network.creditContract, abi: creditFacilityV2Abi } as const
  const payerWallet = createWalletClient({ account: payerAccount, chain, transport })
  const operatorWallet = createWalletClient({ account: privateKeyToAccount(h.devnet.accounts.operator.privateKey), chain, transport })
  const usdcAddress = h.network.tokens[0]!.address
  const approve = await payerWallet.writeContract({ address: usdcAddress, abi: [{ type: 'function', name: 'approve', stateMutability: 'nonpayable', inputs: [{ name: 's', type: 'address' }, { name: 'a', type: 'uint256' }], outputs: [{ type: 'bool' }] }], functionName: 'approve', args: [h.network.creditContract, maxUint256] })
  await payerAgent.publicClient.waitForTransactionReceipt({ hash: approve, pollingInterval: 50 })
  // Both in one block, the repayment first: mining paused while they are sent.
  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  let hashes: `0x${string}`[]
  try {
    hashes = [
      await payerWallet.writeContract({ ...contract, functionName: 'repay', args: [advance['advanceKey'], usdc(10)], gas: 300_000n }),
      await operatorWallet.writeContract({ ...contract, functionName: 'liquidate', args: [advance['advanceKey'], 0n], gas: 500_000n }),
    ]
    await anvil.mine({ blocks: 1 })
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }
  const receipts = await Promise.all(hashes.map((hash) => payerAgent.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })))
  t.same(receipts.map((r) => r.status), ['success', 'success'])
  t.equal(receipts[0]!.blockNumber, receipts[1]!.blockNumber, 'one block')
  t.ok(receipts[0]!.transactionIndex < receipts[1]!.transactionIndex, 'the repayment first')
  await until(async () => (await payer.get(`/credit/advances/${advance['advanceId']}`)).body.state === 'shortfall', 20_000, 'the liquidation recorded')
  await expectAsOnChain(t, advance, 1)
})

t.test('with the reserve paying in the liquidation, a repayment after it is held, refused as a report until then, and counted once', async (t) => {
  // An advance repaid in full funds the reserve with its share: the next liquidation draws on it (fromReserve > 0), so
  // a repayment after it no longer follows on from the figures before it (before: dropped as a mismatch).
  const funding = await openAdvance('job_reserve_funding')
  await repayUnreported(funding['advanceId'], BigInt(funding['lenderOwedAtomic']) + BigInt(funding['reserveOwedAtomic']))
  await until(async () => (await payer.get(`/credit/advances/${funding['advanceId']}`)).body.state === 'repaid', 20_000, 'the funding advance repaid')
  const advance = await defaultedAdvance('job_repaid_after_reserve_liq')
  // Repairs off: the liquidation stays unrecorded, deterministically, while the report is tried.
  await h.restart({ operatorRepairIntervalMs: 0 })
  await signInAgain()
  const liquidated = await sendLiquidate(createNetworkClients(h.network), { offerKey: advance['advanceKey'], backingCoveredAtomic: 0n })
  t.ok((liquidated.facts.find((f) => f.name === 'Liquidated')!.args as { fromReserve: bigint }).fromReserve > 0n, 'the reserve paid')
  const after = await repayUnreported(advance['advanceId'], usdc(20))
  await until(() => h.app.service.operatorRepairs.heldRepayments().length === 1, 20_000, 'the repayment held behind the liquidation')
  expectProblem(t, await payer.post(`/credit/advances/${advance['advanceId']}/repay`, { txHash: after }), 503, 'chain_unavailable', 'a report before the liquidation is recorded')
  t.equal((await payer.get(`/credit/advances/${advance['advanceId']}`)).body.repayments.length, 0, 'nothing counted yet')

  await h.restart({ operatorRepairIntervalMs: 1000 })
  await signInAgain()
  await until(() => h.app.service.operatorRepairs.heldRepayments().length === 0, 20_000, 'the held repayment counted')
  const reported = await payer.post(`/credit/advances/${advance['advanceId']}/repay`, { txHash: after })
  t.equal(reported.status, 200, 'the report answers the counted receipt')
  t.equal(reported.body.lenderOwedAtomic, (await owedOnChain(advance['advanceKey'])).lenderOwed.toString())
  await expectAsOnChain(t, advance, 1)
})

t.test('a liquidation recorded by a retry of its route counts the repayments held behind it before it answers', async (t) => {
  const advance = await defaultedAdvance('job_repaid_route_retry')
  // Repairs off: only the route's retry records the liquidation.
  await h.restart({ operatorRepairIntervalMs: 0 })
  await signInAgain()
  await sendLiquidate(createNetworkClients(h.network), { offerKey: advance['advanceKey'], backingCoveredAtomic: 0n })
  await repayUnreported(advance['advanceId'], usdc(20))
  await until(() => h.app.service.operatorRepairs.heldRepayments().length === 1, 20_000, 'the repayment held behind the liquidation')
  const retried = await (await signedIn(h.url, lender.account)).post(`/credit/advances/${advance['advanceId']}/liquidate`, {})
  t.equal(retried.status, 200, JSON.stringify(retried.body))
  t.same(h.app.service.operatorRepairs.heldRepayments(), [], 'nothing held any more')
  await expectAsOnChain(t, advance, 1)
})
