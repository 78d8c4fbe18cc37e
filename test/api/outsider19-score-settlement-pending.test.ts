// An outsider's finding (outsider19): a /credit-score payment the service's own facilitator settled, while the
// request that sent it delivered nothing, is charged and never buys the score. The facilitator broadcasts the
// payer's transferWithAuthorization and waits for its receipt; when the receipt cannot be read (here the RPC answers
// eth_getTransactionReceipt 503 for a moment, as a provider's rate limit or a blip does; the same after the 60 s
// receipt wait on a congested chain) the official facilitator answers `settlement_pending` with the hash. The route
// answered 402 payment_settlement_failed, "nothing was delivered", and the settlement was mined: the payer paid the
// price. The same payment sent again found its nonce used and the settlement sent by the facilitator's own signer,
// which the front-run lookup never honours (a settlement the facilitator sent "was already answered by the request
// it settled"): 402 payment_already_used, "sign a new one", the price taken a second time if it did. The rule: a
// payment is charged only for a score delivered; one the service settled itself without delivering buys the score
// when sent again, once. What it cost the payer: the price per lost answer, with nobody to blame but an RPC.
// Fails on the code before the fix: the first answer is 402 payment_settlement_failed and the second 402
// payment_already_used, the payer charged.
import t from 'tap'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { fund } from '../fixtures/service.ts'
import { proxiedScoreService } from '../x402/fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from '../x402/fixtures/score-payment.ts'
import { until } from './fixtures/api.ts'

t.test('a score payment the facilitator settled while its request delivered nothing buys the score when sent again, once', async (t) => {
  // The service reads network b through a proxy that can fail one method; the test reads b directly.
  const { h, b, proxy, chain, balance } = await proxiedScoreService(t)
  t.ok(b.x402SelfFacilitate, 'the score is paid on the network whose facilitator the service runs')
  const payee = h.devnet.accounts.scorePayee.address
  const facilitator = h.devnet.accounts.facilitator.address

  const body = JSON.stringify(await creditScoreBody(h, 'o19-pending-src'))
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, h.devnet.networks[1] as NetworkConfig, JSON.parse(body), payerKey)
  const post = () => fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body })
  const [payerBefore, payeeBefore] = [await balance(payer), await balance(payee)]

  // The settlement is broadcast; its receipt cannot be read while the request waits for it.
  proxy.setFailing(['eth_getTransactionReceipt'])
  const first = await post()
  const firstBody = (await first.json()) as { code?: string }
  proxy.setFailing(undefined)
  t.not(first.status, 200, 'nothing delivered on the first request')
  t.equal(first.status, 503, `told to send the same payment again, not to sign a new one: ${first.status} ${firstBody.code}`)
  t.ok(first.headers.get('retry-after'), 'with Retry-After')
  t.ok(proxy.count('eth_sendRawTransaction') >= 1, 'the facilitator broadcast the settlement')
  await until(async () => (await balance(payer)) === payerBefore - DEVNET_PRICE_ATOMIC, 20_000, 'the settlement mined: the payer charged')

  // The same payment again: the score, on that settlement.
  const second = await post()
  const secondBody = (await second.json()) as { subject?: string; jwe?: string; code?: string }
  t.equal(second.status, 200, `the same payment buys the score: ${second.status} ${secondBody.code}`)
  t.equal(secondBody.subject, JSON.parse(body).subject)
  t.type(secondBody.jwe, 'string')
  const response = decodePaymentResponseHeader(second.headers.get('payment-response') ?? '')
  const receipt = await chain.getTransactionReceipt({ hash: response.transaction as `0x${string}` })
  t.equal(receipt.from.toLowerCase(), facilitator.toLowerCase(), 'the settlement answered is the facilitator\'s own')

  // Once: a third use is spent, and the payer paid the price once.
  const third = await post()
  t.equal(third.status, 402)
  t.equal(((await third.json()) as { code?: string }).code, 'payment_already_used', 'no second score on it')
  t.equal(await balance(payer), payerBefore - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
  t.equal(await balance(payee), payeeBefore + DEVNET_PRICE_ATOMIC, 'the payee got it once')
})
