// review35 of outsider30's fix (a /credit-score caller gone before its answer is not charged for nothing): the settle
// checked the caller once, when the facilitator's settlement came back, and then wrote the delivery to the store (its
// in-flight mark consumed, durably, before the answer may be shown). A caller whose connection closed during that
// write was charged and never served: the answer went to the closed connection, and the same payment sent again was
// refused 402 payment_already_used. Now the caller is checked again once the delivery is written, and a caller gone
// meanwhile leaves its settlement owed to its subject and key (front-run.ts undeliver). Fails without the fix: the
// retry is 402 payment_already_used.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { decodePaymentSignatureHeader } from '@x402/core/http'
import { createWalletClient, http, type Address, type Hex } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import type { CommitInput } from '../../src/store/index.ts'
import { HONOURED_SETTLEMENTS_COLLECTION, SETTLEMENTS_IN_FLIGHT_COLLECTION } from '../../src/x402/front-run.ts'
import { fund } from '../fixtures/service.ts'
import { until } from '../api/fixtures/api.ts'
import { postScore, type ScoreReply } from '../api/fixtures/undelivered-score.ts'
import { proxiedScoreService } from './fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from './fixtures/score-payment.ts'
import { scoreCall, signedTransfer, transferWithAuthorizationAbi } from '../api/outsider30-scripts/transfer-authorization.ts'

const service = await proxiedScoreService(t)
const { h, b, balance } = service
const store = h.app.service.store

/** Holds the next commit `armed` picks (a delivery), until released. */
let armed: ((input: CommitInput) => boolean) | undefined
const gate: { held?: (() => void) | undefined } = {}
const commit = store.commit.bind(store)
store.commit = (input: CommitInput) => {
  if (armed === undefined || !armed(input)) return commit(input)
  armed = undefined
  return new Promise<void>((resolve) => (gate.held = resolve)).then(() => commit(input))
}
const writes = (input: CommitInput, op: 'put' | 'delete', collection: string) => (input.records ?? []).some((write) => write.op === op && write.collection === collection)

/**
 * Sends the call with `header` and closes its connection while the commit `armed` picks is held (after `during`), then
 * lets it through.
 */
async function goneAtDelivery(body: unknown, header: string, delivery: (input: CommitInput) => boolean, during?: () => Promise<void>): Promise<string> {
  armed = delivery
  const abort = new AbortController()
  const sent = fetch(`${h.url}/credit-score`, { method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify(body) })
  const outcome = sent.then(() => 'answered', () => 'aborted')
  await until(() => gate.held !== undefined, 20_000, 'the commit to be held')
  await during?.()
  abort.abort()
  const result = await outcome
  // uWS reports the closed connection on its next loop turn: the delivery's write ends after it.
  await new Promise((resolve) => setTimeout(resolve, 200))
  gate.held?.()
  gate.held = undefined
  return result
}

/** The same call again, once the first one's request is over (409 payment_in_flight until then). */
async function again(body: unknown, header: string): Promise<ScoreReply> {
  for (;;) {
    const reply = await postScore(h.url, body, header)
    if (reply.status !== 409) return reply
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test('a caller gone while its delivery is written: the settlement buys its score once, for its subject and key only', async (t) => {
  const body = (await creditScoreBody(h, 'r35-gone-at-delivery')) as { subject: string; publicKey: Record<string, string> }
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  const before = await balance(payer)

  // The service's own settlement delivered: its in-flight mark deleted.
  const outcome = await goneAtDelivery(body, header, (input) => writes(input, 'delete', SETTLEMENTS_IN_FLIGHT_COLLECTION))
  t.equal(outcome, 'aborted', 'the connection closed before any answer')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer was charged')

  const stranger = (await creditScoreBody(h, 'r35-gone-at-delivery-other')) as { subject: string }
  const stolen = await again({ ...body, subject: stranger.subject }, header)
  t.equal(stolen.status, 402, `another subject with the payment: refused (${stolen.status} ${stolen.body.code ?? ''})`)
  const retry = await again(body, header)
  t.equal(retry.status, 200, `the payer's retry buys its score: ${retry.status} ${retry.body.code ?? ''}`)
  t.equal(retry.body.subject, body.subject)
  const third = await postScore(h.url, body, header)
  t.equal(third.status, 402, 'once')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

t.test('a caller gone while the delivery on a settlement someone else sent is written: that settlement still buys its score once', async (t) => {
  const { body, required, accepted, payer } = await scoreCall(h, 'r35-gone-at-honour', 1_000_000n)
  const { authorization, signature, header } = await signedTransfer(payer, required, b.chainId, BigInt(accepted.amount))
  const before = await balance(payer.address)
  // Settled by someone else than the service (here the payer itself), as a front-runner would: honoured once.
  const wallet = createWalletClient({ account: payer, chain: networkChain(b), transport: http(b.rpcUrl) })
  const { from, to, value, validAfter, validBefore, nonce } = authorization
  await wallet.writeContract({ address: accepted.asset as Address, abi: transferWithAuthorizationAbi, functionName: 'transferWithAuthorization', args: [from, to, value, validAfter, validBefore, nonce, signature] })
  await until(async () => (await balance(payer.address)) === before - DEVNET_PRICE_ATOMIC, 20_000, 'the settlement mined')
  const scored = { ...body, publicKey: await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })).publicKey) }

  // The honoured settlement delivered: written among the honoured ones.
  const outcome = await goneAtDelivery(scored, header, (input) => writes(input, 'put', HONOURED_SETTLEMENTS_COLLECTION))
  t.equal(outcome, 'aborted', 'the connection closed before any answer')
  const retry = await again(scored, header)
  t.equal(retry.status, 200, `the payer's retry buys its score: ${retry.status} ${retry.body.code ?? ''}`)
  const third = await postScore(h.url, scored, header)
  t.equal(third.status, 402, 'once')
  t.equal(await balance(payer.address), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

t.test('a caller gone while a stranger\'s settlement of its payment is looked up: owed to its subject and key, not to whoever comes next', async (t) => {
  const body = (await creditScoreBody(h, 'r35-gone-at-lookup')) as { subject: string; publicKey: Record<string, string> }
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey)
  await fund(h.devnet, b, payer.address, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  const before = await balance(payer.address)
  const { authorization: a, signature } = decodePaymentSignatureHeader(header).payload as { authorization: Record<string, string>; signature: Hex }

  // Held while its in-flight mark is written (verified, about to be settled): a stranger who saw the payment on its way
  // settles it meanwhile, and the caller leaves. The facilitator then finds the nonce used and the service finds the
  // stranger's settlement, its caller gone.
  const outcome = await goneAtDelivery(body, header, (input) => writes(input, 'put', SETTLEMENTS_IN_FLIGHT_COLLECTION), async () => {
    const stranger = createWalletClient({ account: privateKeyToAccount(generatePrivateKey()), chain: networkChain(b), transport: http(b.rpcUrl) })
    await fund(h.devnet, b, stranger.account.address, 0n)
    await stranger.writeContract({
      address: b.tokens[0]?.address as Address, abi: transferWithAuthorizationAbi, functionName: 'transferWithAuthorization',
      args: [a.from as Address, a.to as Address, BigInt(a.value as string), BigInt(a.validAfter as string), BigInt(a.validBefore as string), a.nonce as Hex, signature],
    })
    await until(async () => (await balance(payer.address)) === before - DEVNET_PRICE_ATOMIC, 20_000, 'the stranger\'s settlement mined')
  })
  t.equal(outcome, 'aborted', 'the connection closed before any answer')

  const other = (await creditScoreBody(h, 'r35-gone-at-lookup-other')) as { subject: string }
  const stolen = await again({ ...body, subject: other.subject }, header)
  t.equal(stolen.status, 402, `another subject with the payment: refused (${stolen.status} ${stolen.body.code ?? ''})`)
  const retry = await again(body, header)
  t.equal(retry.status, 200, `the payer's retry buys its score: ${retry.status} ${retry.body.code ?? ''}`)
  const third = await postScore(h.url, body, header)
  t.equal(third.status, 402, 'once')
  t.equal(await balance(payer.address), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
