// outsider13: the chain read budget of the facilitator's network, emptied by free wallets from one client address.
// The x402 facilitator's verify and settle take one read each "as the payer's when its key signed the payload's
// authorization" (README, "Chain reads a request can force"): a wallet at most a quarter of its network's budget. A
// payer is any key: a stranger signs each payment with a fresh key (no tokens, no gas, no sign-in), to the score's
// payee for the price, and posts it to the public verify. Each verify reads the chain (the payer's balance) on the
// fresh wallet's own share, so the network's whole budget goes, from one client address, within the rate limit; then
// a paying agent's /credit-score (and every transaction proof on that network) is 503 chain_reads_exhausted. The
// forged sign-ins that did the same were bounded to an eighth per client address (outsider12); the payers are not.
// The second test: the same with transaction proofs of free signed-in wallets (a sign-in is free, 600 an hour per
// client address): four wallets of one address take the whole budget (each its quarter) with random hashes, and an
// agent's job registration on that network is 503 chain_reads_exhausted. At the defaults (400 a second, a wallet 100)
// four wallets, each far within its rate limit, hold it empty for as long as they go on. Both fail on 04104a7.
import t from 'tap'
import { generatePrivateKey } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { facilitatorUrl } from '../../src/x402/facilitator-url.ts'
import { startHarness } from '../fixtures/service.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { exactRequirements, pay } from './fixtures/payments.ts'

// The smallest rate, so that nothing comes back while the test runs: a burst of 8, a wallet's share 2.
const BURST = 8
const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST } })
t.teardown(() => h.stop())
const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig

async function post(url: string, body: unknown) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

t.test('fresh payers from one address take the network\'s whole chain read budget', async (t) => {
  const base = facilitatorUrl(networkB, { baseUrl: h.url })
  const requirements = exactRequirements({ network: networkB, payTo: h.devnet.accounts.scorePayee.address, amountAtomic: DEVNET_PRICE_ATOMIC })
  const body = async (payerKey: `0x${string}`) => ({ x402Version: 2, paymentPayload: await pay(payerKey, requirements), paymentRequirements: requirements })
  const strangers = await Promise.all(Array.from({ length: BURST }, () => body(generatePrivateKey())))
  const replies = await Promise.all(strangers.map((s) => post(`${base}/verify`, s)))
  t.comment(`strangers' verifies: ${JSON.stringify(replies.map((r) => `${r.status} ${r.body['invalidReason'] ?? r.body['code'] ?? r.body['isValid']}`))}`)
  // A real payer with the price in its wallet (the devnet's borrower): its first payment.
  const honest = await post(`${base}/verify`, await body(h.devnet.accounts.borrower.privateKey))
  t.comment(`honest payer: ${honest.status} ${JSON.stringify(honest.body).slice(0, 200)}`)
  t.equal(honest.status, 200, `a paying wallet's first payment is verified, whatever free wallets from one address did (got ${honest.status} ${honest.body['code'] ?? ''})`)
})

t.test('free signed-in wallets from one address take the network\'s whole chain read budget with transaction proofs', async (t) => {
  await h.restart() // a full budget again (it is the process's)
  const { signedIn } = await import('../fixtures/service.ts')
  const { privateKeyToAccount } = await import('viem/accounts')
  const { randomHash } = await import('../api/fixtures/api.ts')
  const job = (agent: string) => ({ jobId: `job_o13_${randomHash().slice(2, 14)}`, network: networkB.slug, asset: 'USDC', agent, receivableAtomic: '1000000', dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: randomHash() })
  const wallets = await Promise.all(Array.from({ length: 5 }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  const replies = await Promise.all(wallets.flatMap((w) => [0, 1].map(() => w.post('/credit/jobs', job(w.address!)))))
  t.comment(`strangers' proofs: ${JSON.stringify(replies.map((r) => `${r.status} ${r.body.code ?? ''}`))}`)
  const honest = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.borrower.privateKey))
  const reply = await honest.post('/credit/jobs', job(honest.address!))
  t.comment(`honest: ${reply.status} ${JSON.stringify(reply.body).slice(0, 400)}`)
  t.not(reply.body.code, 'chain_reads_exhausted', 'an agent\'s first proof is read, whatever free wallets of one address did')
})
