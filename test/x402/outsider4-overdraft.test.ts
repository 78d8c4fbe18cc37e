// An outsider against the x402 facilitator's gas: a payer that holds the price of one payment signs several distinct
// authorizations and sends them at once, to the public settle route or as payments of /credit-score. Each verifies
// alone (the balance covers each of them), so without care each is sent, and all but one are mined reverted: gas the
// facilitator pays for nothing, as often as the payer likes, at the cost of one payment (or none, if it moves its
// balance away). The facilitator sends one payer's settlements one at a time, each verified against the chain as the
// one before it left it: the overdrafts are refused unsent.
import t from 'tap'
import { generateKeyPair, exportJWK } from 'jose'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentRequirements } from '@x402/core/types'
import { createPublicClient, http, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { fund, fundedAccount, signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'
import { exactRequirements, pay, postJson } from './fixtures/payments.ts'

const AT_ONCE = 5
/** The devnet's self-facilitated network, and a payee configured for its facilitator (anyone: it only receives). */
const FACILITATED = 'devnet-b'
const PAYEE = privateKeyToAccount(generatePrivateKey()).address

let h: Harness
let networkB: NetworkConfig
let sentBy: (address: Address) => Promise<number>
let subject: Address
t.before(async () => {
  // The public settle route settles for a configured payee: the credit score's own payee is settled only by the
  // score (src/x402/routes.ts resourceOnlyPayees), so this test's settles pay a payee configured for the facilitator.
  h = await startHarness({ config: { x402FacilitatorPayees: { [FACILITATED]: [PAYEE] } } })
  networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const chain = createPublicClient({ chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
  sentBy = (address) => chain.getTransactionCount({ address, blockTag: 'latest' })
  // A borrower the service knows, for /credit-score: one attested backing source.
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'overdraft-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(`backing source: ${source.status} ${JSON.stringify(source.body)}`)
  subject = borrower.address
})
t.teardown(() => h.stop())

/** The key of a fresh payer on the score's network holding exactly one price. */
async function payerOfOnePrice(): Promise<Hex> {
  const key = generatePrivateKey()
  await fund(h.devnet, networkB, privateKeyToAccount(key).address, DEVNET_PRICE_ATOMIC)
  return key
}

t.test('settle: distinct authorizations of one payer that can cover only one send one transaction', async (t) => {
  const facilitator = h.devnet.accounts.facilitator.address
  const requirements = exactRequirements({ network: networkB, payTo: PAYEE, amountAtomic: DEVNET_PRICE_ATOMIC })
  const payer = await payerOfOnePrice()
  const payloads = await Promise.all(Array.from({ length: AT_ONCE }, () => pay(payer, requirements)))
  const before = await sentBy(facilitator)
  const url = `${h.url}/x402/${networkB.slug}-facilitator/settle`
  const answers = await Promise.all(payloads.map((paymentPayload) => postJson(url, { x402Version: 2, paymentPayload, paymentRequirements: requirements })))
  t.strictSame(answers.map((a) => a.status), Array(AT_ONCE).fill(200), 'every answer is a 200 (a refusal is success: false)')
  t.equal(answers.filter((a) => a.body.success === true).length, 1, 'one settles')
  t.same(answers.filter((a) => a.body.success !== true).map((a) => a.body.transaction), Array(AT_ONCE - 1).fill(''), 'the others were sent nowhere')
  t.equal((await sentBy(facilitator)) - before, 1, 'the facilitator sent one transaction, none mined reverted')
})

t.test('/credit-score: the same payments at once buy one score and cost the facilitator one transaction', async (t) => {
  const facilitator = h.devnet.accounts.facilitator.address
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })
  const body = JSON.stringify({ subject, publicKey: await exportJWK(publicKey) })
  const post = (headers: Record<string, string> = {}) => fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const required = decodePaymentRequiredHeader((await post()).headers.get('payment-required') as string)
  const payer = await payerOfOnePrice()
  const signatures = await Promise.all(Array.from({ length: AT_ONCE }, async () => encodePaymentSignatureHeader(await pay(payer, required.accepts[0] as PaymentRequirements))))
  const before = await sentBy(facilitator)
  const answers = await Promise.all(signatures.map(async (signature) => {
    const response = await post({ 'payment-signature': signature })
    return { status: response.status, body: (await response.json()) as { code?: string } }
  }))
  t.equal(answers.filter((a) => a.status === 200).length, 1, 'one score is sold')
  t.same(answers.filter((a) => a.status !== 200).map((a) => a.status), Array(AT_ONCE - 1).fill(402), 'the others are refused 402')
  t.equal((await sentBy(facilitator)) - before, 1, 'the facilitator sent one transaction, none mined reverted')
})
