// The x402 facilitator's verify and settle read the chain for anyone who asks (the payer's balance, the
// authorization's state, a simulation): each is charged one read of the network's chain read budget, as the payer's
// (src/service/chain-read-budget.ts), and so is a /credit-score payment, which that facilitator verifies in process.
// Past a payer's share, 503 chain_reads_exhausted with Retry-After, nothing read and nothing sent, while another
// payer's payment still verifies and settles. The real service on a real devnet.
import t from 'tap'
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { facilitatorUrl } from '../../src/x402/facilitator-url.ts'
import { expectDocumented, expectProblem, openApiDocument } from '../api/fixtures/api.ts'
import { startHarness } from '../fixtures/service.ts'
import { exactRequirements, pay } from './fixtures/payments.ts'
import { creditScoreBody, creditScoreSignature } from './fixtures/score-payment.ts'

// The smallest rate, so that no read of a payer's share comes back while the test runs; a share of 2.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

const devnet = await startDevnet()
const networkB = devnet.networks[1] as NetworkConfig
// A payee the facilitator serves besides the credit score's: the supplier. The test's connection a trusted proxy: the
// calls that spend a share come from client addresses of their own (x-forwarded-for), so that the share refuses them,
// not an address's part of the budget (CLIENT_PART_DIVISOR), nor the part the honest payer's address uses.
const h = await startHarness({ devnet, config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'], x402FacilitatorPayees: { [networkB.slug]: [devnet.accounts.supplier.address] } } })
let addresses = 0
const ownAddress = () => ({ 'x-forwarded-for': `198.51.100.${++addresses}` })
t.teardown(async () => {
  await h.stop()
  await devnet.stop()
})

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> }
}

t.test('verify and settle past a payer\'s share are 503 chain_reads_exhausted; another payer\'s payment verifies and settles', async (t) => {
  const { accounts } = h.devnet
  const base = facilitatorUrl(networkB, { baseUrl: h.url })
  const template = (operation: string) => `/x402/${networkB.slug}-facilitator/${operation}`
  const document = await openApiDocument(h.url)
  const token = networkB.tokens[0]?.address as Address
  const chain = createPublicClient({ chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
  const balanceOf = (holder: Address) => chain.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
  const requirements = exactRequirements({ network: networkB, payTo: accounts.supplier.address, amountAtomic: 10_000n })
  const body = async (payerKey: `0x${string}`) => ({ x402Version: 2, paymentPayload: await pay(payerKey, requirements), paymentRequirements: requirements })

  const spender = await body(accounts.borrower.privateKey)
  const scoreBody = await creditScoreBody(h, 'budget-src-1')
  const scorePayment = { body: scoreBody, signature: await creditScoreSignature(h, networkB, scoreBody, accounts.borrower.privateKey) }
  const before = await balanceOf(accounts.supplier.address)
  // At once, so that the share cannot refill in between.
  const replies = await Promise.all(Array.from({ length: WALLET_SHARE + 2 }, () => post(`${base}/verify`, spender, ownAddress())))
  const valid = replies.filter((r) => r.status === 200)
  const refused = replies.filter((r) => r.status === 503)
  t.equal(valid.length, WALLET_SHARE, 'the payer\'s share was verified on chain')
  for (const r of valid) t.equal(r.body['isValid'], true, 'a valid payment')
  t.equal(refused.length, replies.length - WALLET_SHARE, 'every verify past the share was refused')
  for (const r of refused) {
    expectProblem(t, r, 503, 'chain_reads_exhausted', 'verify past the share')
    t.match(r.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
    expectDocumented(t, document, 'post', template('verify'), r)
  }
  const settleRefused = await post(`${base}/settle`, spender, ownAddress())
  expectProblem(t, settleRefused, 503, 'chain_reads_exhausted', 'settle past the share')
  t.match(settleRefused.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
  expectDocumented(t, document, 'post', template('settle'), settleRefused)
  t.equal(await balanceOf(accounts.supplier.address), before, 'nothing was sent')
  const score = await post(`${h.url}/credit-score`, scorePayment.body, { 'payment-signature': scorePayment.signature })
  expectProblem(t, score, 503, 'chain_reads_exhausted', '/credit-score paid by that payer')
  t.match(score.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
  expectDocumented(t, document, 'post', '/credit-score', score)

  // Another payer has its own share, and the network's budget was not spent by the refused calls.
  const other = await body(accounts.jobClient.privateKey)
  const verified = await post(`${base}/verify`, other)
  t.equal(verified.status, 200, 'another payer\'s verify answers', { body: verified.body })
  t.equal(verified.body['isValid'], true)
  const settled = await post(`${base}/settle`, other)
  t.equal(settled.status, 200, 'and its settle', { body: settled.body })
  t.equal(settled.body['success'], true, JSON.stringify(settled.body))
  t.equal((await balanceOf(accounts.supplier.address)) - before, 10_000n, 'the other payer\'s payment moved exactly its amount')
})

// The payer is the `from` a payload names: anyone can name any wallet, with a signature of their own. Charged to the
// named wallet's share, a stranger spent a payer's share with payloads that verified nothing, and the payer's own
// payment was then refused (a review's finding: this test fails on the old code, the honest verify answering 503). A
// payload whose `from` signed its authorization (recovered locally: an EOA's) is charged as that payer's; any other
// one to one share of all such payloads (ChainReadBudget.takeUnproven).
t.test('a stranger\'s payloads naming a payer spend none of that payer\'s share', async (t) => {
  const base = facilitatorUrl(networkB, { baseUrl: h.url })
  const requirements = exactRequirements({ network: networkB, payTo: devnet.accounts.supplier.address, amountAtomic: 10_000n })
  // A payer whose share the test above left whole, holding the token on the network; the stranger holds nothing.
  const victim = devnet.accounts.lender
  const strangerKey = generatePrivateKey()

  // The stranger's own authorizations, with the victim named as their payer: signed by the stranger, not the victim.
  const forged = await Promise.all(Array.from({ length: WALLET_SHARE + 2 }, async () => {
    const payload = await pay(strangerKey, requirements)
    const inner = payload.payload as { authorization: { from: string } }
    return { x402Version: 2, paymentPayload: { ...payload, payload: { ...inner, authorization: { ...inner.authorization, from: victim.address } } }, paymentRequirements: requirements }
  }))
  const replies = await Promise.all(forged.map((body) => post(`${base}/verify`, body, ownAddress())))
  for (const reply of replies) t.not(reply.body['isValid'], true, 'nothing the stranger sent verifies')
  t.ok(replies.some((reply) => reply.status === 503), 'the unproven payloads\' share was spent')
  for (const reply of replies.filter((r) => r.status === 503)) expectProblem(t, reply, 503, 'chain_reads_exhausted', 'past the unproven payloads\' share')

  const honest = { x402Version: 2, paymentPayload: await pay(victim.privateKey, requirements), paymentRequirements: requirements }
  const verified = await post(`${base}/verify`, honest, ownAddress())
  t.equal(verified.status, 200, 'the payer\'s own payment verifies', { body: verified.body })
  t.equal(verified.body['isValid'], true, JSON.stringify(verified.body))
})
