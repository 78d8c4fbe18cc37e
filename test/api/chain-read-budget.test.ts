// Reports that make the service read the chain are budgeted (src/service/chain-read-budget.ts): a free wallet
// reporting repayments with random transaction hashes made one eth_getTransactionReceipt per request, bounded only by
// the per-wallet rate limit, so a few wallets could spend the operator's RPC quota that the chain follower and the
// wallet watcher share (an adversary's finding). Now one wallet gets a quarter of the network's reads: past it, 503
// chain_reads_exhausted with Retry-After and nothing changed, while another wallet's real report still counts.
import t from 'tap'
import { toHex, type Hash } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { randomBytes } from 'node:crypto'
import { ChainAgent } from '../../src/client/chain.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, fundAdvance, openApiDocument, postFrom } from './fixtures/api.ts'

// The smallest rate, so that no read of the wallet's share comes back while the test runs; a burst whose share is 4:
// the borrower's own reads before its report may take 2 of it (its job registration's, and the funding's proof when
// the follower has not read that transaction yet), and its report one more.
const BURST = 16
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

let h: Harness
t.before(async () => {
  // The test's connection a trusted proxy: the stranger's reports come from client addresses of their own (x-forwarded-for).
  h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a wallet past its share of chain reads gets 503 chain_reads_exhausted; another wallet\'s real repayment counts', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_read_budget', receivableAtomic: usdc(500), borrower: await fundedAccount(h.devnet, h.network, usdc(300)) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_read_budget', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const path = `/credit/advances/${advance.advanceId}/repay`
  const doc = await openApiDocument(h.url)

  // A fresh wallet: signing in costs nothing.
  const stranger = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const before = (await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body
  // At once, so that the share cannot refill in between; each from a client address of its own, so that the wallet's
  // share refuses them, not an address's part (CLIENT_PART_DIVISOR), nor the part the borrower's address uses.
  const replies = await Promise.all(Array.from({ length: WALLET_SHARE + 4 }, (_, i) => postFrom(stranger, `198.51.100.${i + 1}`, path, { txHash: toHex(randomBytes(32)) })))
  const read = replies.filter((r) => r.status === 422)
  const refused = replies.filter((r) => r.status === 503)
  t.equal(read.length, WALLET_SHARE, 'the wallet\'s share was read on chain (each hash not found)')
  for (const r of read) expectProblem(t, r, 422, 'proof_not_found', 'within the share')
  t.equal(refused.length, replies.length - WALLET_SHARE, 'every report past the share was refused')
  for (const r of refused) {
    expectProblem(t, r, 503, 'chain_reads_exhausted', 'past the share')
    t.match(r.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
    expectDocumented(t, doc, 'post', '/credit/advances/{advanceId}/repay', r)
  }
  t.same((await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body, before, 'nothing changed')

  // The borrower's wallet has its own share, and the network's budget was not spent by the refused reports.
  const paid: Hash = await new ChainAgent(h.network, borrower).repay(advance.advanceKey, USDC, usdc(40))
  const reply = await borrowerClient.post(path, { txHash: paid })
  t.equal(reply.status, 200, JSON.stringify(reply.body))
  t.match(reply.body, { advanceId: advance.advanceId, txHash: paid, lenderAmountAtomic: usdc(40).toString(), repaid: false })
})
