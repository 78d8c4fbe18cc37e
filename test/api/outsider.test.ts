// An outsider against the money path, over HTTP and the contracts only: what an agent reading the published documents
// can do to a lender's money. The supplier directory must not take an address the contract refuses to pay (the zero
// address): credit to it is leased to lenders who cannot pay, and each lease expires unpaid at its lender's cost. A
// repayment reported again (at once, or after the chain follower counted it) answers the same receipt, as the
// published description of the route says. An amount beyond 2^256-1 is bad input everywhere (the unsigned-transaction
// reads answered 500). A payment mined at the lease's deadline, in a later block with the deadline's timestamp, still
// funds the offer.
import t from 'tap'
import { createPublicClient, createTestClient, http, zeroAddress } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, signedIn, usdc, waitForChainTime, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { actionFor, expectProblem, fundAdvance, openApiDocument, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

let h: Harness
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  // Leases long enough that the test, not the wall clock, decides when the chain reaches a deadline.
  ({ h, lender, operator } = await lenderHarness(t, { config: { leaseTtlSeconds: 120 } }))
})

t.test('the zero address is never a supplier: the directory refuses it, a request naming it is declined', async (t) => {
  const before = (await operator.get('/suppliers')).body as Json[]
  const put = await operator.call('PUT', '/suppliers/burn.example', { name: 'Burn', addresses: { [h.network.slug]: [zeroAddress] } })
  expectProblem(t, put, 422, 'supplier_not_allowed', 'a directory entry paying the zero address')
  t.same((await operator.get('/suppliers')).body, before, 'the directory is unchanged')

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_zero', receivableAtomic: usdc(1000) })
  const reply = await borrowerClient.post('/credit/request', { ...creditRequest(h, borrower.address, 'job_outsider_zero', usdc(10), usdc(1)), supplierAddress: zeroAddress })
  t.equal(reply.status, 200)
  t.match(reply.body, { decision: 'declined', offer: null, reasons: [{ code: 'supplier_not_allowed' }] }, 'declined, nothing to lease')
})

t.test('a repayment reported again, at once or after the follower counted it, answers the same receipt as documented', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_repay', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_outsider_repay', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const payer = await fundedAccount(h.devnet, h.network, usdc(10))
  const payerClient = await signedIn(h.url, payer)
  const served = await payerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions?amountAtomic=${usdc(10)}&from=${payer.address}`)
  const hashes = await new ChainAgent(h.network, payer).sendAll(served.body.transactions)
  const repayTx = hashes[hashes.length - 1]
  const reports = await Promise.all([1, 2, 3].map(() => payerClient.post(`/credit/advances/${advance.advanceId}/repay`, { txHash: repayTx })))
  t.same(reports.map((r) => r.status), [200, 200, 200], 'three reports at once: each answered')
  t.same(reports[1]?.body, reports[0]?.body, 'the same receipt')
  t.same(reports[2]?.body, reports[0]?.body, 'the same receipt')
  await until(async () => (await payerClient.get(`/credit/advances/${advance.advanceId}`)).body.repayments.length === 1, 10_000, 'the repayment counted')
  const later = await payerClient.post(`/credit/advances/${advance.advanceId}/repay`, { txHash: repayTx })
  t.equal(later.status, 200)
  t.same(later.body, reports[0]?.body, 'reported again later: the same receipt')
  const counted = (await payerClient.get(`/credit/advances/${advance.advanceId}`)).body
  t.equal(counted.repayments.length, 1, 'counted once')
  t.equal(BigInt(counted.lenderOwedAtomic), BigInt(advance.lenderOwedAtomic) - usdc(10), 'what is owed fell by the payment, once')

  const description = (await openApiDocument(h.url))['paths']['/credit/advances/{advanceId}/repay']['post']['description'] as string
  t.match(description, /the same transaction again[^.]*answers the same receipt/, 'the route\'s description says what happens')
})

t.test('an amount beyond 2^256-1 is refused 400 on every route that takes one, and changes nothing', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_huge', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_outsider_huge', amountAtomic: usdc(10), maximumFeeAtomic: usdc(1) })
  const over = (2n ** 256n).toString()
  const max = (2n ** 256n - 1n).toString()
  const reads = (amount: string) => [
    `/credit/jobs/job_outsider_huge/collateral-transactions?amountAtomic=${amount}`,
    `/credit/advances/${advance.advanceId}/repay-transactions?amountAtomic=${amount}`,
    `/credit/jobs/job_outsider_fresh/funding-transactions?network=${h.network.slug}&asset=USDC&receivableAtomic=${amount}&agent=${borrower.address}&client=${lender.account.address}`,
  ]
  for (const path of reads(over)) expectProblem(t, await borrowerClient.get(path), 400, 'validation_failed', path.split('?')[0])
  for (const path of reads(max)) t.equal((await borrowerClient.get(path)).status, 200, `2^256-1 is served: ${path.split('?')[0]}`)

  const before = (await lender.client.get(`/lenders/${lender.account.address}/wallet`)).body
  expectProblem(t, await lender.client.post(`/lenders/${lender.account.address}/withdraw`, { amountAtomic: over }), 400, 'validation_failed', 'a withdrawal of 2^256')
  t.same((await lender.client.get(`/lenders/${lender.account.address}/wallet`)).body.activity, before.activity, 'the lender is unchanged')
})

t.test('a payment mined at the deadline, in a later block with the same timestamp, funds the offer', async (t) => {
  const chain = networkChain(h.network)
  const transport = http(h.network.rpcUrl)
  const anvil = createTestClient({ chain, transport, mode: 'anvil' })
  const reader = createPublicClient({ chain, transport })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_outsider_deadline', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_outsider_deadline', usdc(100), usdc(5)))
  const offerId = decision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address)
  const action = await actionFor(lender, offerId)
  const deadline = BigInt(action['authorization'].deadline)
  // Only this test mines blocks until the payment (the devnet's block a second would pass the deadline meanwhile);
  // transactions are still mined at once. Last in this file: the devnet keeps this mode.
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(true)

  // The chain reaches the deadline with an empty block; the service observes it and dispatches: the lease is live.
  await anvil.setNextBlockTimestamp({ timestamp: deadline })
  await anvil.mine({ blocks: 1 })
  await waitForChainTime(h, Number(deadline) * 1000)
  await borrowerClient.post('/credit/dispatch', {})
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'leased', 'a block at the deadline is not past it')

  // The payment is mined in the next block, whose timestamp is the deadline too: the contract takes it.
  await anvil.setNextBlockTimestamp({ timestamp: deadline })
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const receipt = await reader.getTransactionReceipt({ hash: paid })
  t.equal((await reader.getBlock({ blockNumber: receipt.blockNumber })).timestamp, deadline, 'mined at the deadline')
  const advance = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(advance.status, 200, JSON.stringify(advance.body))
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'funded')
})
