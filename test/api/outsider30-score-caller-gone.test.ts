// An outsider's finding (outsider30): a /credit-score caller whose connection closed before its answer (its client's
// timeout, a reverse proxy's, a dropped connection) was charged and never served. The service went on: it settled the
// payment and wrote the score to the closed connection, and the same payment sent again with the same body was refused
// 402 payment_already_used (test/api/outsider30-scripts/score-caller-gone.ts reproduces it with a plain fetch aborted
// 30 ms after it was sent). Now a caller gone before the settlement is not charged (the payment is not settled, and
// buys the score when sent again), and one gone while its settlement was sent keeps that settlement owed to its call:
// the same payment with the same subject and key buys the score once, and nobody else's body does.
// Fails without the fix: in both tests the payer is charged on the first call and its retry is refused 402.
import t from 'tap'
import { decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { exportJWK, generateKeyPair } from 'jose'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { fund } from '../fixtures/service.ts'
import { proxiedScoreService } from '../x402/fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from '../x402/fixtures/score-payment.ts'
import { until } from './fixtures/api.ts'
import { postScore, type ScoreReply } from './fixtures/undelivered-score.ts'

const service = await proxiedScoreService(t)
const { h, b, proxy, balance } = service

/** A paid call about a fresh borrower, signed by a fresh payer holding one price and a little more. */
async function paidCall(sourceId: string) {
  const body = (await creditScoreBody(h, sourceId)) as { subject: string; publicKey: Record<string, string> }
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  return { body, header, payer, before: await balance(payer) }
}

/** Sends the call and closes its connection once `held` says the service is at the step to interrupt. */
async function goneDuring(body: unknown, header: string, held: () => boolean): Promise<void> {
  const abort = new AbortController()
  const sent = fetch(`${h.url}/credit-score`, { method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify(body) })
  const outcome = sent.then(() => 'answered', () => 'aborted')
  await until(held, 20_000, 'the call to reach the step held')
  abort.abort()
  if ((await outcome) !== 'aborted') throw new Error('the call was answered before its connection closed')
}

/** The same call again, once the first one's request is over (409 payment_in_flight until then). */
async function again(body: unknown, header: string): Promise<ScoreReply> {
  for (;;) {
    const reply = await postScore(h.url, body, header)
    if (reply.status !== 409) return reply
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Resolves once the service is done with the call `header` paid (409 payment_in_flight until then): asks with the
 * same signature in a payload for another amount, which is refused before anything is verified or settled.
 */
async function over(body: unknown, header: string): Promise<void> {
  const payload = decodePaymentSignatureHeader(header)
  const probe = encodePaymentSignatureHeader({ ...payload, accepted: { ...payload.accepted, amount: (BigInt(payload.accepted.amount) + 1n).toString() } })
  await until(async () => (await postScore(h.url, body, probe)).status !== 409, 20_000, 'the first call to be over')
}

t.test('a caller gone before its payment is settled is not charged; the same payment buys the score', async (t) => {
  const { body, header, payer, before } = await paidCall('o30-gone-before-src')
  // The payment's verification reads the token on chain (eth_call): held there, the call is under way when it closes.
  proxy.setHoldOf(['eth_call'])
  await goneDuring(body, header, () => proxy.heldOf() > 0)
  proxy.setHoldOf(undefined)
  await proxy.releaseHeldOf()
  proxy.reset()
  await over(body, header)
  t.equal(proxy.count('eth_sendRawTransaction'), 0, 'nothing was sent for the call whose caller went away')
  t.equal(await balance(payer), before, 'nor charged')
  const retry = await again(body, header)
  t.equal(retry.status, 200, `the same payment sent again buys the score: ${retry.status} ${retry.body.code ?? ''}`)
  t.equal(retry.body.subject, body.subject)
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
  const third = await postScore(h.url, body, header)
  t.equal(third.status, 402, 'and only once')
})

t.test('a caller gone while its settlement is sent: the settlement buys its score once, for its subject and key only', async (t) => {
  const { body, header, payer, before } = await paidCall('o30-gone-during-src')
  proxy.setHoldOf(['eth_sendRawTransaction'])
  await goneDuring(body, header, () => proxy.heldOf() > 0)
  proxy.setHoldOf(undefined)
  await proxy.releaseHeldOf()
  await until(async () => (await balance(payer)) === before - DEVNET_PRICE_ATOMIC, 20_000, 'the settlement mined: the payer charged')

  const other = (await creditScoreBody(h, 'o30-gone-during-other')) as { subject: string }
  const stranger = { subject: other.subject, publicKey: await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })).publicKey) }
  const stolen = await again(stranger, header)
  t.equal(stolen.status, 402, `another subject and key with the payment rebuilt from the chain: refused (${stolen.status} ${stolen.body.code ?? ''})`)
  const retry = await again(body, header)
  t.equal(retry.status, 200, `the payer's retry buys its score: ${retry.status} ${retry.body.code ?? ''}`)
  t.equal(retry.body.subject, body.subject)
  t.type(retry.body.jwe, 'string')
  const third = await postScore(h.url, body, header)
  t.equal(third.status, 402, 'once')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
