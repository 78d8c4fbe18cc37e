// Issue 9 case 4 over HTTP against the devnet: repayments of any amount count. The borrower repays the principal only,
// then the rest with an overpayment; each POST /credit/advances/{id}/repay answers what is still owed, the lender's
// session wallet receives exactly what the Repaid events say, and only what is owed ever leaves the payer's wallet.
// Reported out of chain order, a later repayment waits for the earlier one; a job settlement pays only what is left.
import t from 'tap'
import { parseEventLogs, type Hash } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { backingSourceBody, expectDocumented, expectProblem, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let lender: ReadyLender
let borrower: PrivateKeyAccount
let borrowerClient: CreditClient
let chain: ChainAgent

t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  lender = await readyLender(h, { minFeeBps: 200, liquidityAtomic: usdc(5000) })
  borrower = await fundedAccount(h.devnet, h.network, usdc(6000))
  borrowerClient = await signedIn(h.url, borrower)
  chain = new ChainAgent(h.network, borrower)
  const fields = { sourceId: 'src-partial', valueAtomic: usdc(8000), liquidationValueAtomic: usdc(5000), advanceRateBps: 5000 }
  const created = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, fields))
  if (created.status !== 201) throw new Error(`source: ${created.status} ${JSON.stringify(created.body)}`)
})
t.teardown(async () => {
  await h.stop()
})

/** The Repaid event of a repay transaction, as the contract emitted it. */
async function repaidEvent(txHash: Hash) {
  const receipt = await chain.publicClient.getTransactionReceipt({ hash: txHash })
  const [event] = parseEventLogs({ abi: creditFacilityV2Abi, logs: receipt.logs, eventName: 'Repaid' })
  if (event === undefined) throw new Error(`no Repaid in ${txHash}`)
  return event.args as { toLender: bigint; toReserve: bigint; lenderOwed: bigint; reserveOwed: bigint }
}

const reserveOnChain = () =>
  chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reserveOf', args: [chain.token(USDC)] }) as Promise<bigint>

t.test('principal only, then the rest with an overpayment: each counts, the advance is repaid after the second', async (t) => {
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'src-partial', amountAtomic: usdc(1000), maximumFeeAtomic: usdc(50), productType: 'asset-backed' })
  const advanceId = funded.advance['advanceId'] as string
  const advanceKey = funded.advance['advanceKey'] as Hash
  const principal = BigInt(funded.advance['principalAtomic'])
  const fee = BigInt(funded.advance['feeAtomic'])
  const insurance = BigInt(funded.advance['insuranceAtomic'])
  t.match(funded.advance, { lenderOwedAtomic: (principal + fee - insurance).toString(), reserveOwedAtomic: insurance.toString(), repayments: [] }, 'a new advance owes its terms')

  // 1. The principal only (what the case 4 reported: 422 on the old code).
  const sessionBefore = await chain.balanceOf(USDC, lender.session.address)
  const reserveBefore = await reserveOnChain()
  const first = await chain.repay(advanceKey, USDC, principal)
  const firstEvent = await repaidEvent(first)
  t.match(firstEvent, { toLender: principal, toReserve: 0n, lenderOwed: fee - insurance, reserveOwed: insurance })
  const firstReply = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: first })
  t.equal(firstReply.status, 200, JSON.stringify(firstReply.body))
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/repay', firstReply)
  t.match(firstReply.body, {
    advanceId, lenderAmountAtomic: principal.toString(), reserveAmountAtomic: '0', txHash: first,
    lenderOwedAtomic: (fee - insurance).toString(), reserveOwedAtomic: insurance.toString(), repaid: false,
  })
  t.equal(await chain.balanceOf(USDC, lender.session.address), sessionBefore + firstEvent.toLender, 'the session wallet received what the event says')
  const live = await borrowerClient.get(`/credit/advances/${advanceId}`)
  expectDocumented(t, doc, 'get', '/credit/advances/{advanceId}', live)
  t.match(live.body, { state: 'active', lenderOwedAtomic: (fee - insurance).toString(), reserveOwedAtomic: insurance.toString() })
  t.match(live.body.repayments, [{ kind: 'repaid', txHash: first, lenderAmountAtomic: principal.toString(), reserveAmountAtomic: '0', lenderOwedAfterAtomic: (fee - insurance).toString() }])
  let wallet = await borrowerClient.get(`/lenders/${lender.account.address}/wallet`)
  t.match(wallet.body.activity, { deployedAtomic: '0', feesEarnedAtomic: '0', advancesRepaid: 0 }, 'the principal is back; no fee yet')
  // The same payment reported twice (or after the chain follower counted it) answers the same receipt and counts once.
  const twice = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: first })
  t.equal(twice.status, 200, 'the same payment twice: the same receipt, not an error')
  t.match(twice.body, { advanceId, txHash: first, lenderAmountAtomic: principal.toString(), repaid: false })
  t.match((await borrowerClient.get(`/credit/advances/${advanceId}`)).body, { lenderOwedAtomic: (fee - insurance).toString(), repayments: [{ txHash: first }] }, 'and counts once')

  // 2. The rest, overpaid by 100 USDC: the contract takes only what is owed.
  const payerBefore = await chain.balanceOf(USDC, borrower.address)
  const sessionMid = await chain.balanceOf(USDC, lender.session.address)
  const second = await chain.repay(advanceKey, USDC, fee + usdc(100))
  const secondEvent = await repaidEvent(second)
  t.match(secondEvent, { toLender: fee - insurance, toReserve: insurance, lenderOwed: 0n, reserveOwed: 0n })
  t.equal(await chain.balanceOf(USDC, borrower.address), payerBefore - fee, 'only what was owed left the payer\'s wallet')
  t.equal(await chain.balanceOf(USDC, lender.session.address), sessionMid + secondEvent.toLender, 'the lender received what the event says')
  t.equal(await reserveOnChain(), reserveBefore + insurance, "the reserve's share reached the contract's reserve")
  const secondReply = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: second })
  t.equal(secondReply.status, 200, JSON.stringify(secondReply.body))
  t.match(secondReply.body, {
    lenderAmountAtomic: (fee - insurance).toString(), reserveAmountAtomic: insurance.toString(), lenderOwedAtomic: '0', reserveOwedAtomic: '0', repaid: true,
  })
  const done = await borrowerClient.get(`/credit/advances/${advanceId}`)
  t.match(done.body, { state: 'repaid', lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
  t.equal(done.body.repayments.length, 2, 'both payments, in chain order')
  wallet = await borrowerClient.get(`/lenders/${lender.account.address}/wallet`)
  t.match(wallet.body.activity, { deployedAtomic: '0', feesEarnedAtomic: (fee - insurance).toString(), advancesRepaid: 1 })
  const state = await borrowerClient.get('/credit/state')
  t.equal(state.body.reserves.find((r: Json) => r['asset'] === USDC)?.balanceAtomic, (reserveBefore + insurance).toString(), "the service's reserve equals the contract's")
  // The repaid advance is closed: its last payment reported again still answers its receipt (nothing else can be: the
  // contract refuses a repay of an advance that owes nothing).
  const again = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: second })
  t.equal(again.status, 200, 'a repaid advance answers its last payment again')
  t.match(again.body, { advanceId, txHash: second, repaid: true })
  t.equal((await borrowerClient.get(`/credit/advances/${advanceId}`)).body.repayments.length, 2, 'and counts nothing more')
})

t.test('reported out of chain order: the later repayment is never counted before the earlier one; then both count', async (t) => {
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'src-partial', amountAtomic: usdc(200), maximumFeeAtomic: usdc(50), productType: 'asset-backed' })
  const advanceId = funded.advance['advanceId'] as string
  const advanceKey = funded.advance['advanceKey'] as Hash
  const owed = BigInt(funded.advance['lenderOwedAtomic']) + BigInt(funded.advance['reserveOwedAtomic'])
  const first = await chain.repay(advanceKey, USDC, usdc(50))
  const second = await chain.repay(advanceKey, USDC, owed - usdc(50))
  // The chain follower counts both in chain order on its own; a report of the second that arrives before the first
  // is counted is refused (and counts nothing), one that arrives after answers what the follower counted.
  const early = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: second })
  expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/repay', early)
  if (early.status === 409) {
    expectProblem(t, early, 409, 'repayment_mismatch', 'the second before the first')
  } else {
    t.equal(early.status, 200, JSON.stringify(early.body))
    t.match(early.body, { txHash: second, repaid: true }, 'the follower had counted both, in chain order')
  }
  const counted = (await borrowerClient.get(`/credit/advances/${advanceId}`)).body
  t.ok(counted.repayments.length === 0 || counted.repayments[0].txHash === first, 'whatever is counted starts with the first payment')
  t.match((await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: first })).body, { lenderAmountAtomic: usdc(50).toString(), repaid: false })
  const last = await borrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: second })
  t.equal(last.status, 200, JSON.stringify(last.body))
  t.match(last.body, { repaid: true, lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
})

t.test('a job advance repaid in part: the settlement pays only what is still owed, the rest goes to the borrower', async (t) => {
  const { borrower: jobBorrower, borrowerClient: jobBorrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_partial_1', receivableAtomic: usdc(2000), borrower: await fundedAccount(h.devnet, h.network, usdc(1000)) })
  const funded = await fundAdvance(h, { borrower: jobBorrower.address, borrowerClient: jobBorrowerClient, lender, source: 'job_partial_1', amountAtomic: usdc(500), maximumFeeAtomic: usdc(50) })
  const advanceId = funded.advance['advanceId'] as string
  const lenderOwed = BigInt(funded.advance['lenderOwedAtomic'])
  const reserveOwed = BigInt(funded.advance['reserveOwedAtomic'])
  const jobChain = new ChainAgent(h.network, jobBorrower)
  const paid = await jobChain.repay(funded.advance['advanceKey'] as Hash, USDC, usdc(300))
  t.match((await jobBorrowerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: paid })).body, { lenderOwedAtomic: (lenderOwed - usdc(300)).toString(), repaid: false })
  const borrowerBefore = await jobChain.balanceOf(USDC, jobBorrower.address)
  const sessionBefore = await jobChain.balanceOf(USDC, lender.session.address)
  const settled = await jobClientApi.post('/credit/jobs/job_partial_1/complete', {})
  t.equal(settled.status, 200, JSON.stringify(settled.body))
  t.match(settled.body, {
    toLendersAtomic: (lenderOwed - usdc(300)).toString(), toReserveAtomic: reserveOwed.toString(),
    toBorrowerAtomic: (usdc(2000) - (lenderOwed - usdc(300)) - reserveOwed).toString(),
  }, 'the settlement pays what is left, not principal + fee again')
  t.equal(await jobChain.balanceOf(USDC, lender.session.address), sessionBefore + lenderOwed - usdc(300), 'the lender received the rest of its part')
  t.equal(await jobChain.balanceOf(USDC, jobBorrower.address), borrowerBefore + usdc(2000) - (lenderOwed - usdc(300)) - reserveOwed, 'the borrower received the rest of the escrow')
  t.match((await jobBorrowerClient.get(`/credit/advances/${advanceId}`)).body, { state: 'repaid', lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
})
