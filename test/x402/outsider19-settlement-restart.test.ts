// A /credit-score payment the service's own facilitator broadcast while its request delivered nothing (the receipt
// unreadable: here the RPC answers eth_getTransactionReceipt 503, as a provider's blip does) buys the score when sent
// again, once (test/api/outsider19-score-settlement-pending.test.ts), and still does after a restart of the service
// between the broadcast and the resend (a crash, a deploy): the mark "sent for settling, not delivered" is written to
// the store (collection x402-settlements-in-flight) before the facilitator broadcasts, read back at start-up, and
// consumed by the commit that delivers the score. Real anvil, real LMDB, real HTTP, a real restart on the same data
// directory. Fails on c2470e0: the mark was kept in memory only, so after the restart the same payment was refused as
// the facilitator's settlement (402 payment_already_used), the payer charged and never served.
import t from 'tap'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { SETTLEMENTS_IN_FLIGHT_COLLECTION } from '../../src/x402/front-run.ts'
import { fund } from '../fixtures/service.ts'
import { proxiedScoreService } from './fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from './fixtures/score-payment.ts'
import { until } from '../api/fixtures/api.ts'

const { h, b, proxy, balance } = await proxiedScoreService(t)
const payee = h.devnet.accounts.scorePayee.address
const inFlight = (key: string) => h.app.service.store.collection(SETTLEMENTS_IN_FLIGHT_COLLECTION).get(key)

/** A funded payer's payment of the score for `sourceId`'s borrower: its header, payer, in-flight key and a poster. */
async function payment(sourceId: string) {
  const body = JSON.stringify(await creditScoreBody(h, sourceId))
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, h.devnet.networks[1] as NetworkConfig, JSON.parse(body), payerKey)
  const nonce = (JSON.parse(Buffer.from(header, 'base64').toString()) as { payload: { authorization: { nonce: string } } }).payload.authorization.nonce
  const post = () => fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body })
  return { payer, key: `${payer}:${nonce}`.toLowerCase(), post, subject: (JSON.parse(body) as { subject: string }).subject }
}

t.test('a payment settled while its request delivered nothing buys the score once after a restart', async (t) => {
  const { payer, key, post, subject } = await payment('o19-restart-src')
  const [payerBefore, payeeBefore] = [await balance(payer), await balance(payee)]

  // The settlement is broadcast; its receipt cannot be read while the request waits for it.
  proxy.setFailing(['eth_getTransactionReceipt'])
  const first = await post()
  const firstBody = (await first.json()) as { code?: string }
  proxy.setFailing(undefined)
  t.not(first.status, 200, `nothing delivered on the first request: ${first.status} ${firstBody.code}`)
  t.ok(proxy.count('eth_sendRawTransaction') >= 1, 'the facilitator broadcast the settlement')
  await until(async () => (await balance(payer)) === payerBefore - DEVNET_PRICE_ATOMIC, 20_000, 'the settlement mined: the payer charged')
  t.ok(inFlight(key), 'the payment is marked in flight in the store')

  await h.restart()
  const second = await post()
  const secondBody = (await second.json()) as { subject?: string; jwe?: string; code?: string }
  t.equal(second.status, 200, `after the restart the same payment buys the score: ${second.status} ${secondBody.code}`)
  t.equal(secondBody.subject, subject)
  t.type(secondBody.jwe, 'string')
  t.ok(decodePaymentResponseHeader(second.headers.get('payment-response') ?? '').transaction, 'answered with the settlement')
  t.equal(inFlight(key), undefined, 'its mark consumed by the delivery')

  const third = await post()
  t.equal(third.status, 402)
  t.equal(((await third.json()) as { code?: string }).code, 'payment_already_used', 'no second score on it')
  await h.restart()
  const fourth = await post()
  t.equal(fourth.status, 402, 'nor after another restart')
  t.equal(((await fourth.json()) as { code?: string }).code, 'payment_already_used')
  t.equal(await balance(payer), payerBefore - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
  t.equal(await balance(payee), payeeBefore + DEVNET_PRICE_ATOMIC, 'the payee got it once')
})

t.test('a payment delivered on its own settle leaves no mark: no second score after a restart', async (t) => {
  const { payer, key, post } = await payment('o19-restart-src2')
  const payerBefore = await balance(payer)
  const paid = await post()
  t.equal(paid.status, 200, 'paid and served')
  await paid.body?.cancel()
  t.equal(inFlight(key), undefined, 'its mark deleted before the answer')
  await h.restart()
  const again = await post()
  t.equal(again.status, 402, 'the same payment after a restart buys nothing')
  t.equal(((await again.json()) as { code?: string }).code, 'payment_already_used')
  t.equal(await balance(payer), payerBefore - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

t.test('a payment marked but never broadcast (the service died between) is settled when sent after the restart', async (t) => {
  const { payer, key, post } = await payment('o19-restart-src3')
  const payerBefore = await balance(payer)
  // What the service writes before the broadcast, as a crash right after it leaves it.
  const store = h.app.service.store
  await store.commit({ records: [store.collection(SETTLEMENTS_IN_FLIGHT_COLLECTION).putOp(key, { expires: String(Math.floor(Date.now() / 1000) + 3600) })] })
  await h.restart()
  const paid = await post()
  t.equal(paid.status, 200, 'its nonce unused: settled then, and served')
  await paid.body?.cancel()
  t.equal(inFlight(key), undefined, 'its mark consumed')
  const again = await post()
  t.equal(again.status, 402, 'once')
  await again.body?.cancel()
  t.equal(await balance(payer), payerBefore - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
