// The x402 facilitator's verify and settle take one chain read each as the payer's (src/x402/facilitator.ts). The
// payer is the `from` the payload names: anyone can name any wallet, with a signature of their own. Charged to the
// named wallet's share, a stranger spent a payer's share with requests that verified nothing, and the payer's own
// payment was then refused (503 chain_reads_exhausted). A payload whose authorization its `from` signed (recovered
// locally: an EOA's) is charged as that payer's; any other one to one share of all such payloads
// (ChainReadBudget.takeUnproven). A review's finding: on the old code the honest payer's verify answers 503.
// The real service on a real devnet.
import t from 'tap'
import { generatePrivateKey } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { facilitatorUrl } from '../../src/x402/facilitator-url.ts'
import { expectProblem } from '../api/fixtures/api.ts'
import { startHarness } from '../fixtures/service.ts'
import { exactRequirements, pay } from './fixtures/payments.ts'

// The smallest rate, so that no read of a share comes back while the test runs; a share of 2.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

const devnet = await startDevnet()
const networkB = devnet.networks[1] as NetworkConfig
const h = await startHarness({ devnet, config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, x402FacilitatorPayees: { [networkB.slug]: [devnet.accounts.supplier.address] } } })
t.teardown(async () => {
  await h.stop()
  await devnet.stop()
})

async function post(url: string, body: unknown) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> }
}

t.test('a stranger\'s payloads naming a payer spend none of that payer\'s share', async (t) => {
  const base = facilitatorUrl(networkB, { baseUrl: h.url })
  const requirements = exactRequirements({ network: networkB, payTo: devnet.accounts.supplier.address, amountAtomic: 10_000n })
  // The victim holds the token on the network (as in facilitator-budget.test.ts); the stranger holds nothing.
  const victim = devnet.accounts.borrower
  const strangerKey = generatePrivateKey()

  // The stranger's own authorizations, with the victim named as their payer: signed by the stranger, not the victim.
  const forged = await Promise.all(Array.from({ length: WALLET_SHARE + 2 }, async () => {
    const payload = await pay(strangerKey, requirements)
    const inner = payload.payload as { authorization: { from: string } }
    return { x402Version: 2, paymentPayload: { ...payload, payload: { ...inner, authorization: { ...inner.authorization, from: victim.address } } }, paymentRequirements: requirements }
  }))
  const replies = await Promise.all(forged.map((body) => post(`${base}/verify`, body)))
  for (const reply of replies) t.not(reply.body['isValid'], true, 'nothing the stranger sent verifies')
  t.ok(replies.some((reply) => reply.status === 503), 'the unproven payloads\' share was spent')
  for (const reply of replies.filter((r) => r.status === 503)) expectProblem(t, reply, 503, 'chain_reads_exhausted', 'past the unproven payloads\' share')

  const honest = { x402Version: 2, paymentPayload: await pay(victim.privateKey, requirements), paymentRequirements: requirements }
  const verified = await post(`${base}/verify`, honest)
  t.equal(verified.status, 200, 'the payer\'s own payment verifies', { body: verified.body })
  t.equal(verified.body['isValid'], true, JSON.stringify(verified.body))
})
