// outsider13: the chain read budget of the facilitator's network, emptied by free wallets from one client address.
// The x402 facilitator's verify and settle take one read each "as the payer's when its key signed the payload's
// authorization" (README, "Chain reads a request can force"): a wallet at most a quarter of its network's budget. A
// payer is any key: a stranger signs each payment with a fresh key (no tokens, no gas, no sign-in), to the score's
// payee for the price, and posts it to the public verify. Each verify read the chain (the payer's balance) on the
// fresh wallet's own share, so the network's whole budget went, from one client address, within the rate limit; then
// a paying agent's verify (and every transaction proof on that network) was 503 chain_reads_exhausted. Now each read
// also takes from its client address's part of the budget (a quarter, src/service/chain-read-budget.ts), so the
// stranger's address is refused past its part and an agent at another address is verified. The addresses are
// x-forwarded-for's (the test's connection a trusted proxy). Fails on 36aa11c (the agent's verify is 503).
// The same with free signed-in wallets' transaction proofs: test/api/outsider13-free-proofs-budget.test.ts.
import t from 'tap'
import { generatePrivateKey } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { facilitatorUrl } from '../../src/x402/facilitator-url.ts'
import { startHarness } from '../fixtures/service.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { exactRequirements, pay } from './fixtures/payments.ts'
import { creditScoreBody, creditScoreSignature } from './fixtures/score-payment.ts'

// The smallest rate, so that nothing comes back while the test runs: a burst of 8, a wallet's share and an address's part 2.
const BURST = 8
const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] } })
t.teardown(() => h.stop())
const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig

async function post(url: string, body: unknown, from: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers }, body: JSON.stringify(body) })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

t.test('fresh payers from one address take at most its part of the network\'s chain read budget', async (t) => {
  const base = facilitatorUrl(networkB, { baseUrl: h.url })
  const requirements = exactRequirements({ network: networkB, payTo: h.devnet.accounts.scorePayee.address, amountAtomic: DEVNET_PRICE_ATOMIC })
  const body = async (payerKey: `0x${string}`) => ({ x402Version: 2, paymentPayload: await pay(payerKey, requirements), paymentRequirements: requirements })
  const strangers = await Promise.all(Array.from({ length: BURST }, () => body(generatePrivateKey())))
  const replies = await Promise.all(strangers.map((s) => post(`${base}/verify`, s, '198.51.100.1')))
  t.comment(`strangers' verifies: ${JSON.stringify(replies.map((r) => `${r.status} ${r.body['invalidReason'] ?? r.body['code'] ?? r.body['isValid']}`))}`)
  const refused = replies.filter((r) => r.status === 503)
  t.equal(refused.length, BURST - BURST / 4, 'past its address\'s part (a quarter of the burst), the stranger is refused')
  t.ok(refused.every((r) => r.body['code'] === 'chain_reads_exhausted' && /this client address used its part/.test(String(r.body['detail']))), 'as its address\'s')
  // A real payer with the price in its wallet (the devnet's borrower), at another address: its first payment.
  const honest = await post(`${base}/verify`, await body(h.devnet.accounts.borrower.privateKey), '198.51.100.2')
  t.comment(`honest payer: ${honest.status} ${JSON.stringify(honest.body).slice(0, 200)}`)
  t.equal(honest.status, 200, `a paying wallet's first payment is verified, whatever free wallets from one address did (got ${honest.status} ${honest.body['code'] ?? ''})`)
  t.equal(honest.body['isValid'], true)
})

// The same payments sent to /credit-score, whose verify the official resource server makes through the in-process
// facilitator (no client address there): the route takes the read from the caller's address's part first.
t.test('fresh payers of /credit-score from one address take at most its part of the network\'s chain read budget', async (t) => {
  await h.restart() // a full budget again (it is the process's)
  const body = await creditScoreBody(h, 'o13-src-1')
  const signatures = await Promise.all(Array.from({ length: BURST }, () => creditScoreSignature(h, networkB, body, generatePrivateKey())))
  const score = (signature: string, from: string) => post(`${h.url}/credit-score`, body, from, { 'payment-signature': signature })
  const replies = await Promise.all(signatures.map((signature) => score(signature, '198.51.100.3')))
  t.comment(`strangers' payments: ${JSON.stringify(replies.map((r) => `${r.status} ${r.body['code'] ?? ''}`))}`)
  const refused = replies.filter((r) => r.status === 503)
  t.equal(refused.length, BURST - BURST / 4, 'past its address\'s part (a quarter of the burst), the stranger is refused')
  t.ok(refused.every((r) => r.body['code'] === 'chain_reads_exhausted' && /this client address used its part/.test(String(r.body['detail']))), 'as its address\'s')
  // A real payer's verify at another address (the facilitator's, as the devnet's borrower: its first payment).
  const requirements = exactRequirements({ network: networkB, payTo: h.devnet.accounts.scorePayee.address, amountAtomic: DEVNET_PRICE_ATOMIC })
  const honest = await post(`${facilitatorUrl(networkB, { baseUrl: h.url })}/verify`, { x402Version: 2, paymentPayload: await pay(h.devnet.accounts.borrower.privateKey, requirements), paymentRequirements: requirements }, '198.51.100.4')
  t.equal(honest.status, 200, `a paying wallet's first payment is verified (got ${honest.status} ${honest.body['code'] ?? ''})`)
})
