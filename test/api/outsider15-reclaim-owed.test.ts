// An outsider's probe (outsider15) of today's reclaim rule, from the published documents only: reclaimJob succeeds on a
// job advanced on once none of its advances owes anything (`outstanding` 0), and reverts AdvancesOwed otherwise. Every
// probe calls the contract directly as the job's client or a stranger, and checks what the service follows.
import t from 'tap'
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fund, fundedAccount, fundedJob, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim, tryReclaim } from './fixtures/reclaim.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

const JOB_OPEN = 0

let h: Harness
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  ({ h, lender, operator } = await lenderHarness(t, { config: { offerTtlSeconds: 3600 } }))
})

const reader = () => new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.operator.privateKey)).publicClient
const getJob = (jobId: string) => reader().readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })
const getAdvance = (key: Hex) => reader().readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [key] })
const reconciled = async () => ((await operator.post('/operator/reconcile', { network: h.network.slug })).body.networks[0]?.differences ?? [1]).length === 0

t.test('a repayment of the lender\'s part only (the reserve\'s share still owed) does not let the client reclaim; a full one does, once, and the key is spent', async (t) => {
  // Both jobs are advanced on before the chain's clock moves past the reclaim delay (a lease after it is past due).
  const partial = 'job_o15_reserve_owed'
  const a = await fundedJob(h, { jobId: partial, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const advanceA = (await fundAdvance(h, { borrower: a.borrower.address, borrowerClient: a.borrowerClient, lender, source: partial, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })).advance.advanceId as string
  const full = 'job_o15_refund'
  const b = await fundedJob(h, { jobId: full, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const advanceB = (await fundAdvance(h, { borrower: b.borrower.address, borrowerClient: b.borrowerClient, lender, source: full, amountAtomic: usdc(20), maximumFeeAtomic: usdc(2) })).advance.advanceId as string

  // A: the borrower repays exactly the lender's part, directly on chain: the reserve's share stays owed.
  const key = (await a.borrowerClient.get(`/credit/advances/${advanceA}/repay-transactions`)).body.key as Hex
  const owed = await getAdvance(key)
  t.ok(owed.reserveOwed > 0n, `the reserve is owed a share (${owed.reserveOwed})`)
  await fund(h.devnet, h.network, a.borrower.address, usdc(100))
  await new ChainAgent(h.network, a.borrower).repay(key, USDC, owed.lenderOwed)
  const after = await getAdvance(key)
  t.equal(after.lenderOwed, 0n, 'the lender is paid')
  t.equal(after.reserveOwed, owed.reserveOwed, 'the reserve is not')
  t.ok((await getJob(partial)).outstanding > 0n, 'the advance still owes something')
  // B: repaid in full through the service's route.
  await fund(h.devnet, h.network, b.borrower.address, usdc(100))
  const repayB = (await b.borrowerClient.get(`/credit/advances/${advanceB}/repay-transactions`)).body
  const keyB = repayB.key as Hex
  await new ChainAgent(h.network, b.borrower).sendAll(repayB.transactions)
  await until(async () => (await b.borrowerClient.get(`/credit/advances/${advanceB}`)).body.state === 'repaid', 20_000, 'the repayment to be applied')

  await pastReclaimDelay(h.network, 60)
  t.match(await tryReclaim(h.network, a.jobClient, partial), /AdvancesOwed/, 'A: the client cannot take the escrow that backs the reserve\'s share')
  await until(reconciled, 20_000, 'the follower to apply the partial repayment')
  t.not((await a.borrowerClient.get(`/credit/advances/${advanceA}`)).body.state, 'repaid', 'A: the service does not call it repaid')

  t.equal((await sendReclaim(h.network, b.jobClient, full)).status, 'success', 'B: reclaimed once repaid')
  await until(async () => (await b.borrowerClient.get(`/credit/jobs/${full}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  // A second reclaim, and a stranger's new funding of the same key, revert.
  t.match(await tryReclaim(h.network, b.jobClient, full), /JobNotOpen/, 'B: no second reclaim')
  const stranger = await fundedAccount(h.devnet, h.network, usdc(10))
  const refund = await new ChainAgent(h.network, stranger).fundJob(full, USDC, usdc(10), b.borrower.address).then(() => 'funded', (error: Error) => error.message)
  t.match(refund, /reverted/, 'B: the key is spent')
  t.not((await getJob(full)).status, JOB_OPEN)
  // Nor can the borrower post collateral to it, or anyone repay its repaid advance: no token enters the closed job.
  const borrowerAgent = new ChainAgent(h.network, b.borrower)
  const balance = await borrowerAgent.balanceOf(USDC, b.borrower.address)
  t.ok(balance > 0n)
  const posting = await borrowerAgent.postCollateral(full, USDC, 1n).then(() => 'posted', (error: Error) => error.message)
  t.match(posting, /reverted/, 'B: no collateral into the reclaimed job')
  t.match(await borrowerAgent.repay(keyB, USDC, 1n).then(() => 'repaid', (error: Error) => error.message), /reverted/, 'B: no repayment of nothing')
  t.equal(await borrowerAgent.balanceOf(USDC, b.borrower.address), balance, 'B: the borrower kept its tokens')
  t.equal((await b.borrowerClient.get(`/credit/jobs/${full}`)).body.state, 'failed')
  t.equal((await b.borrowerClient.get(`/credit/advances/${advanceB}`)).body.state, 'repaid')
  await expectReconciled(t, operator, h.network.slug)
})
