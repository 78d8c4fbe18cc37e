// validbefore26 (after review29): nothing bounded an EIP-3009 authorization's validBefore, which the payer chooses,
// while the credit score's in-flight mark lives UNDELIVERED_RETRY_SECONDS past it and its memory as settled the
// horizon past it. A validBefore a day ahead kept them a day longer; one past 10^20 s made the store refuse the mark's
// write (its expiry has at most 20 digits) and the settle answer 500. Now a payment valid longer than the 402's
// maxTimeoutSeconds plus VALID_BEFORE_SLACK_SECONDS past now is refused 402 payment_validity_too_long at admission,
// before any work, mark or settlement: nothing charged, nothing stored. One signed as the official client signs
// (now + maxTimeoutSeconds) still buys its score. Real anvil, real LMDB, real HTTP, the official x402 client. Fails
// without the bound: the far payment is 500 (store) or 200 (charged, its mark stored until long after).
import t from 'tap'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { x402Client } from '@x402/fetch'
import { authorizationTypes } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { exportJWK, generateKeyPair } from 'jose'
import type { Address, Hex, LocalAccount } from 'viem'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { HONOURED_SETTLEMENTS_COLLECTION, SETTLEMENTS_IN_FLIGHT_COLLECTION } from '../../src/x402/front-run.ts'
import { VALID_BEFORE_SLACK_SECONDS } from '../../src/x402/paid-resource.ts'
import { scoreNetwork } from '../fixtures/score-network.ts'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const { networkB, tokenConfig, token, balanceOf } = scoreNetwork(h)
const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }

const borrower = await fundedAccount(h.devnet, h.network, 0n)
const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'vb26-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
if (source.status !== 201) throw new Error(`backing source: ${source.status}`)
const body = JSON.stringify({ subject: borrower.address, publicKey: await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256' })).publicKey) })
const post = async (headers: Record<string, string> = {}) => {
  const reply = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  return { status: reply.status, headers: reply.headers, body: (await reply.json()) as { code?: string; detail?: string } }
}

/** The official client's payment of the score by `payer`, re-signed with `validBefore(asked maxTimeoutSeconds)` when given. */
async function payment(payer: LocalAccount, validBefore?: (maxTimeoutSeconds: number) => bigint): Promise<{ header: string; maxTimeoutSeconds: number }> {
  const unpaid = await post()
  const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') as string)
  const maxTimeoutSeconds = required.accepts[0]?.maxTimeoutSeconds as number
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const payload = await client.createPaymentPayload(required)
  if (validBefore !== undefined) {
    const inner = payload.payload as { authorization: Record<string, string>; signature: Hex }
    inner.authorization['validBefore'] = validBefore(maxTimeoutSeconds).toString()
    const a = inner.authorization
    const message = { from: a['from'] as Address, to: a['to'] as Address, value: BigInt(a['value'] as string), validAfter: BigInt(a['validAfter'] as string), validBefore: BigInt(a['validBefore'] as string), nonce: a['nonce'] as Hex }
    inner.signature = await payer.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message })
  }
  return { header: encodePaymentSignatureHeader(payload), maxTimeoutSeconds }
}

const stored = () => [...h.app.service.store.collection(SETTLEMENTS_IN_FLIGHT_COLLECTION).iterate(), ...h.app.service.store.collection(HONOURED_SETTLEMENTS_COLLECTION).iterate()].length
const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000))

const FAR: [string, (maxTimeoutSeconds: number) => bigint][] = [
  ['21 digits (past what the store keeps)', () => 10n ** 21n],
  ['a day ahead', () => nowSeconds() + 86_400n],
  ['just past maxTimeoutSeconds and the slack', (max) => nowSeconds() + BigInt(max + VALID_BEFORE_SLACK_SECONDS + 120)],
]

for (const [what, validBefore] of FAR) {
  t.test(`a payment valid until ${what} is refused before anything is charged`, async (t) => {
    const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
    const before = stored()
    const { header } = await payment(payer, validBefore)
    const reply = await post({ 'payment-signature': header })
    t.equal(reply.status, 402, `402, not ${reply.status} ${reply.body.code ?? ''}`)
    t.equal(reply.body.code, 'payment_validity_too_long')
    t.match(reply.body.detail, /validBefore/, 'the detail says why')
    t.ok(reply.headers.get('payment-required'), 'with PAYMENT-REQUIRED, to sign again')
    t.equal(await balanceOf(payer.address), 1_000_000n, 'nothing charged')
    t.equal(stored(), before, 'no mark nor record stored')
  })
}

t.test('payments valid up to the bound still buy the score', async (t) => {
  const official = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const paid = await post({ 'payment-signature': (await payment(official)).header })
  t.equal(paid.status, 200, `the official client's payment buys the score (got ${paid.status} ${paid.body.code ?? ''})`)
  t.equal(await balanceOf(official.address), 1_000_000n - DEVNET_PRICE_ATOMIC, 'charged the price')

  // A client clock a minute ahead: within the slack.
  const ahead = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const skewed = await post({ 'payment-signature': (await payment(ahead, (max) => nowSeconds() + BigInt(max + 60))).header })
  t.equal(skewed.status, 200, `a clock a minute ahead still pays (got ${skewed.status} ${skewed.body.code ?? ''})`)
})
