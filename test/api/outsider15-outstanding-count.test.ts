// An outsider's probe (outsider15): today's reclaim rule trusts the job's `outstanding` (its advances that still owe
// anything). Three advances on one job, then every way an advance stops owing (a repayment of the lender's part, then
// a liquidation paying the reserve's share from the collateral; a full repayment) and one that keeps owing (a
// liquidation with a shortfall), with the retries that must change nothing: after each step `outstanding` equals the
// number of advances that still owe, so the client's reclaim is refused while any does.
import t from 'tap'
import { createWalletClient, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, fund, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance } from './fixtures/api.ts'

let h: Harness
let lender: ReadyLender
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs, config: { offerTtlSeconds: 3600 } })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const reader = () => new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.operator.privateKey)).publicClient
const contract = () => ({ address: h.network.creditContract, abi: creditFacilityV2Abi }) as const

t.test('the job\'s outstanding counts exactly the advances that still owe, through partial repayment, liquidation and retries', async (t) => {
  const jobId = 'job_o15_outstanding'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  await fund(h.devnet, h.network, borrower.address, usdc(200))
  const borrowerAgent = new ChainAgent(h.network, borrower)
  const posted = await borrowerAgent.postCollateral(jobId, USDC, usdc(5))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(5).toString(), txHash: posted })).status, 201)
  const advances: { id: string; key: Hex }[] = []
  for (const amount of [10, 20, 30]) {
    const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(amount), maximumFeeAtomic: usdc(1) })
    advances.push({ id: advance.advanceId as string, key: (await borrowerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions`)).body.key as Hex })
  }
  const owing = async () => {
    let count = 0n
    for (const a of advances) {
      const advance = await reader().readContract({ ...contract(), functionName: 'getAdvance', args: [a.key] })
      if (advance.lenderOwed + advance.reserveOwed > 0n) count += 1n
    }
    return count
  }
  const expectCount = async (what: string, expected: bigint) => {
    const job = await reader().readContract({ ...contract(), functionName: 'getJob', args: [jobKey(h.network, jobId)] })
    t.equal(await owing(), expected, `${what}: ${expected} advances owe`)
    t.equal(job.outstanding, expected, `${what}: outstanding counts them`)
  }
  const reverts = (p: Promise<unknown>) => p.then(() => 'succeeded', (error: Error) => error.message)
  await expectCount('three advances', 3n)

  // A1: the lender's part repaid, the reserve's share owed.
  const a1 = await reader().readContract({ ...contract(), functionName: 'getAdvance', args: [advances[0]!.key] })
  await borrowerAgent.repay(advances[0]!.key, USDC, a1.lenderOwed)
  await expectCount('A1 lender part repaid', 3n)
  // A2: repaid in full, then a retry of the repayment.
  const a2 = await reader().readContract({ ...contract(), functionName: 'getAdvance', args: [advances[1]!.key] })
  await borrowerAgent.repay(advances[1]!.key, USDC, a2.lenderOwed + a2.reserveOwed)
  await expectCount('A2 repaid', 2n)
  t.match(await reverts(borrowerAgent.repay(advances[1]!.key, USDC, 1n)), /reverted/, 'A2: nothing more to repay')
  await expectCount('A2 repaid again', 2n)

  // Past due (and past the reclaim delay): A1's liquidation pays the reserve's share from the collateral.
  const chainTimeMs = await advanceChainTime(h, Number(devnetReclaimDelaySeconds) + 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  const lenderClient = await signedIn(h.url, lender.account)
  const liquidated1 = await lenderClient.post(`/credit/advances/${advances[0]!.id}/liquidate`, {})
  t.equal(liquidated1.status, 200, JSON.stringify(liquidated1.body))
  t.equal(liquidated1.body.shortfallAtomic, '0')
  await expectCount('A1 liquidated', 1n)
  t.not((await lenderClient.post(`/credit/advances/${advances[0]!.id}/liquidate`, {})).status, 200, 'A1: no second liquidation')
  const operatorWallet = createWalletClient({ account: privateKeyToAccount(h.devnet.accounts.operator.privateKey), chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  t.match(await reverts(reader().simulateContract({ account: operatorWallet.account, ...contract(), functionName: 'liquidate', args: [advances[0]!.key, 0n] })), /AlreadyLiquidated|NothingOwed/, 'A1: nor on chain')
  await expectCount('A1 liquidated again', 1n)

  // A3: liquidated with what collateral is left, a shortfall: still owed, the reclaim refused.
  const liquidated3 = await lenderClient.post(`/credit/advances/${advances[2]!.id}/liquidate`, {})
  t.equal(liquidated3.status, 200, JSON.stringify(liquidated3.body))
  t.not(liquidated3.body.shortfallAtomic, '0', 'A3: a shortfall')
  await expectCount('A3 liquidated with a shortfall', 1n)
  t.match(await reverts(reader().simulateContract({ account: jobClient, ...contract(), functionName: 'reclaimJob', args: [jobKey(h.network, jobId)] })), /AdvancesOwed/, 'the client cannot reclaim while A3 owes')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})
