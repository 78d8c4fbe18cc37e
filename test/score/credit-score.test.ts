// POST /credit-score against the devnet, with the official clients: @x402/fetch pays it end to end and the caller
// decrypts the answer with its private key; the payer's and the payee's balances move by the price on chain; a
// payment is spent once; a failed computation settles nothing; with compute disabled the answer is 503 and nothing
// moves; malformed requests and wrong payments get a clear 4xx or 402 and move no money.
import t from 'tap'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { compactDecrypt, exportJWK, generateKeyPair, type CryptoKey as JoseKey } from 'jose'
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { compileSchema } from '../../src/http/validate.ts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { ComputeFailedError, type CreditScoreCompute } from '../../src/score/compute.ts'
import { creditScore, type CreditScoreInputs } from '../../src/score/formula.ts'
import { LocalScoreCompute } from '../../src/score/local-compute.ts'
import type { RecipientKey } from '../../src/score/recipient-key.ts'
import { CreditScorePlaintext } from '../../src/score/schemas.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { startApp, type App } from '../../src/app/app.ts'
import { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, signedIn, startHarness, tempDataDir, testConfig, type Harness } from '../fixtures/service.ts'
import { backingSourceBody, expectDocumented, expectProblem, openApiDocument, type Json } from '../api/fixtures/api.ts'

const PRICE = DEVNET_PRICE_ATOMIC

let h: Harness
let doc: Json
let networkB: NetworkConfig
let payee: Address
let borrower: PrivateKeyAccount
let balanceOf: (holder: Address) => Promise<bigint>
const checkPlaintext = compileSchema(CreditScorePlaintext)

t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  payee = h.devnet.accounts.scorePayee.address
  const chain = createPublicClient({ chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
  const token = networkB.tokens[0]?.address as Address
  balanceOf = (holder) => chain.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
  // A borrower the service knows: one attested backing source.
  borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, borrower)
  const source = await client.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'score-src-1', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(`backing source: ${source.status} ${JSON.stringify(source.body)}`)
})
t.teardown(() => h.stop())

/** A payer with gas and `tokensAtomic` on the network of the score's price. */
async function payer(tokensAtomic = 1_000_000n): Promise<PrivateKeyAccount> {
  return fundedAccount(h.devnet, networkB, tokensAtomic)
}

/** The official x402 client for `account`, opted in to the devnet tokens (no default x402 assets). */
function x402For(account: PrivateKeyAccount): x402Client {
  const client = new x402Client()
  for (const network of h.devnet.networks) client.register(network.caip2, new ExactEvmScheme(account))
  return client.setSpendControls({ allowedAssets: h.devnet.networks.map((n) => ({ network: n.caip2, asset: n.tokens[0]?.address as string })) })
}

async function keyPair(crv: 'P-256' | 'X25519' = 'P-256'): Promise<{ jwk: RecipientKey; privateKey: JoseKey }> {
  const { publicKey, privateKey } = await generateKeyPair('ECDH-ES', { crv, extractable: true })
  return { jwk: (await exportJWK(publicKey)) as RecipientKey, privateKey }
}

type Answer = { status: number; headers: Headers; body: any }

async function post(url: string, body: unknown, headers: Record<string, string> = {}, fetcher: typeof fetch = fetch): Promise<Answer> {
  const response = await fetcher(`${url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) }
}

/** What the 402 asks for, as the official client reads it. */
function paymentRequiredOf(answer: Answer): PaymentRequired {
  const header = answer.headers.get('payment-required')
  if (header === null) throw new Error(`no PAYMENT-REQUIRED header on ${answer.status}`)
  return decodePaymentRequiredHeader(header)
}

/** A signed payment for `requirements` (possibly altered), made by the official client, as a PAYMENT-SIGNATURE value. */
async function signedPayment(account: PrivateKeyAccount, required: PaymentRequired, requirements: PaymentRequirements = required.accepts[0] as PaymentRequirements): Promise<string> {
  const payload: PaymentPayload = await x402For(account).createPaymentPayload({ ...required, accepts: [requirements] })
  return encodePaymentSignatureHeader(payload)
}

async function balances<const T extends readonly Address[]>(...holders: T): Promise<{ -readonly [K in keyof T]: bigint }> {
  return (await Promise.all(holders.map((holder) => balanceOf(holder)))) as { -readonly [K in keyof T]: bigint }
}

async function decrypt(jwe: string, privateKey: JoseKey): Promise<any> {
  const { plaintext } = await compactDecrypt(jwe, privateKey)
  return JSON.parse(new TextDecoder().decode(plaintext))
}

/** The plaintext's inputs back in the formula's form, to recompute the score from what the answer says. */
function inputsOf(plain: any): CreditScoreInputs {
  const i = plain.inputs
  return {
    ...i,
    asOfMs: Date.parse(i.asOf),
    historyStartedAtMs: i.historyStartedAt === null ? null : Date.parse(i.historyStartedAt),
    shortfallAtomic: BigInt(i.shortfallAtomic),
    outstanding: i.outstanding.map((o: any) => ({ ...o, outstandingAtomic: BigInt(o.outstandingAtomic) })),
    scoredRepayments: i.scoredRepayments.map((r: any) => ({ ...r, principalAtomic: BigInt(r.principalAtomic) })),
    repaymentMinimums: i.repaymentMinimums.map((m: any) => ({ ...m, minPrincipalAtomic: BigInt(m.minPrincipalAtomic) })),
    asOf: undefined,
    historyStartedAt: undefined,
  }
}

t.test('the official @x402/fetch client pays end to end; the caller decrypts the score; payer and payee move by the price', async (t) => {
  const account = await payer()
  const { jwk, privateKey } = await keyPair()
  const [payerBefore, payeeBefore] = await balances(account.address, payee)
  const paying = wrapFetchWithPayment(fetch, x402For(account))
  const answer = await post(h.url, { subject: borrower.address.toLowerCase(), publicKey: jwk }, {}, paying)
  t.equal(answer.status, 200, JSON.stringify(answer.body))
  expectDocumented(t, doc, 'post', '/credit-score', { status: answer.status, headers: answer.headers, body: answer.body })
  t.equal(answer.body.subject, borrower.address, 'the subject, checksummed')
  t.strictSame(answer.body.compute, { component: 'local-process', attestation: null })

  const receipt = decodePaymentResponseHeader(answer.headers.get('payment-response') as string)
  t.equal(receipt.success, true)
  t.equal(receipt.network, networkB.caip2)
  t.equal(receipt.payer, account.address)
  t.match(receipt.transaction, /^0x[0-9a-f]{64}$/)
  const [payerAfter, payeeAfter] = await balances(account.address, payee)
  t.equal(payerBefore - payerAfter, PRICE, 'the payer paid exactly the price')
  t.equal(payeeAfter - payeeBefore, PRICE, 'the payee received exactly the price')

  const plain = await decrypt(answer.body.jwe, privateKey)
  t.ok(checkPlaintext.check(plain), 'the plaintext is what the document describes', { errors: checkPlaintext.issues(plain, '') })
  t.equal(plain.subject, borrower.address)
  t.match(plain.inputs, { repaidAdvances: 0, scoredRepayments: [], defaultedAdvances: 0, suspended: false, openAdvances: 0, partialRepayments: 0, erc8004: null })
  t.match(plain.inputs.repaymentMinimums, [{ network: h.network.slug, asset: 'USDC', minPrincipalAtomic: '100000000' }], 'the minimum a repaid advance must reach: 100 whole USDC')
  t.equal(plain.formulaVersion, 2)
  t.ok(plain.inputs.historyStartedAt !== null, 'the backing source starts the history')
  t.equal(plain.score, creditScore(inputsOf(plain)).score, 'the score is the formula of the inputs it names')
  t.equal(plain.score, 500, 'a fresh borrower: the base')
  const other = await keyPair()
  await t.rejects(compactDecrypt(answer.body.jwe, other.privateKey), 'no other key opens it')
})

t.test('without payment: 402 with PAYMENT-REQUIRED (x402 v2) matching the catalog, a problem+json body, nothing moved', async (t) => {
  const { jwk } = await keyPair('X25519')
  const answer = await post(h.url, { subject: borrower.address, publicKey: jwk })
  expectProblem(t, { status: answer.status, headers: answer.headers, body: answer.body }, 402, 'payment_required')
  expectDocumented(t, doc, 'post', '/credit-score', { status: answer.status, headers: answer.headers, body: answer.body })
  const required = paymentRequiredOf(answer)
  t.equal(required.x402Version, 2)
  t.equal(required.resource.url, `${h.url}/credit-score`)
  const token = networkB.tokens[0]!
  t.strictSame(required.accepts, [
    { scheme: 'exact', network: networkB.caip2, asset: token.address, amount: PRICE.toString(), payTo: payee, maxTimeoutSeconds: 60, extra: { name: token.eip712Name, version: token.eip712Version } },
  ])
  const catalog = (await new CreditClient(h.url).get('/.well-known/service.json')).body
  t.match(catalog.creditScore, {
    enabled: true,
    path: '/credit-score',
    payment: { x402Version: 2, scheme: 'exact', network: networkB.slug, caip2: networkB.caip2, asset: token.symbol, assetAddress: token.address, amountAtomic: PRICE.toString(), payTo: payee, facilitator: `${h.url}/x402/${networkB.slug}-facilitator` },
    encryption: { format: 'compact-jwe', alg: 'ECDH-ES', enc: 'A256GCM' },
    compute: { component: 'local-process', attestation: 'none' },
    score: { min: 0, max: 1000, formulaVersion: 2 },
  })
  // The facilitator settles only for the payees it serves; the score's is one of them, and the catalog says so.
  const facilitator = catalog.networks.find((n: Json) => n.slug === networkB.slug).facilitator
  t.strictSame(facilitator.payees, [{ payTo: payee, minAmountAtomic: PRICE.toString() }], 'the self-hosted facilitator serves the score\'s payee from its price up (no others configured)')
  const supported = (await new CreditClient(h.url).get(`/x402/${networkB.slug}-facilitator/supported`)).body
  t.strictSame(supported.kinds[0].extra, { payees: facilitator.payees }, 'and so does its GET supported')
  const llms = (await new CreditClient(h.url).get('/llms.txt')).body as string
  t.ok(llms.includes(`amount ${PRICE} (atomic), payTo ${payee}`), 'llms.txt names the price and payee')
  t.ok(llms.includes('compactDecrypt(jwe, privateKey)'), 'llms.txt shows how to decrypt')
})

t.test('a payment is spent once: a replay is refused with 402 payment_already_used, a concurrent duplicate too', async (t) => {
  const account = await payer()
  const { jwk } = await keyPair()
  const body = { subject: borrower.address, publicKey: jwk }
  const required = paymentRequiredOf(await post(h.url, body))
  const signature = await signedPayment(account, required)
  const [payerBefore, payeeBefore] = await balances(account.address, payee)
  const first = await post(h.url, body, { 'payment-signature': signature })
  t.equal(first.status, 200, JSON.stringify(first.body))
  const replay = await post(h.url, body, { 'payment-signature': signature })
  expectProblem(t, replay, 402, 'payment_already_used', 'the same payment again')
  t.ok(replay.headers.get('payment-required'), 'with what to pay instead')
  const [payerAfter, payeeAfter] = await balances(account.address, payee)
  t.equal(payerBefore - payerAfter, PRICE, 'charged once')
  t.equal(payeeAfter - payeeBefore, PRICE)

  const fresh = await signedPayment(account, required)
  const both = await Promise.all([post(h.url, body, { 'payment-signature': fresh }), post(h.url, body, { 'payment-signature': fresh })])
  const statuses = both.map((a) => a.status).sort()
  t.equal(statuses.filter((s) => s === 200).length, 1, `exactly one of two concurrent uses succeeds (${statuses.join(', ')})`)
  const refused = both.find((a) => a.status !== 200) as Answer
  t.ok(['payment_in_flight', 'payment_already_used'].includes(refused.body.code), `the other is refused: ${refused.body.code}`)
  t.equal(payerAfter - (await balanceOf(account.address)), PRICE, 'charged once more, not twice')
})

t.test('malformed requests and wrong payments get a clear 4xx or 402 and move no money', async (t) => {
  const account = await payer()
  const broke = await payer(0n)
  const { jwk } = await keyPair()
  const body = { subject: borrower.address, publicKey: jwk }
  const required = paymentRequiredOf(await post(h.url, body))
  const good = await signedPayment(account, required)
  const asked = required.accepts[0] as PaymentRequirements
  const networkA = h.devnet.networks.find((n) => n !== networkB) as NetworkConfig
  const before = await balances(account.address, payee, broke.address)
  const offCurve = { ...jwk, y: Buffer.from(Buffer.from(jwk.y as string, 'base64url').map((b, i, all) => (i === all.length - 1 ? b ^ 1 : b))).toString('base64url') }

  const cases: Array<[string, Answer, number, string]> = [
    ['no key', await post(h.url, { subject: borrower.address }, { 'payment-signature': good }), 400, 'validation_failed'],
    ['a private JWK', await post(h.url, { subject: borrower.address, publicKey: { ...jwk, d: 'AAAA' } }, { 'payment-signature': good }), 400, 'validation_failed'],
    ['a JWK of an unknown curve', await post(h.url, { subject: borrower.address, publicKey: { ...jwk, crv: 'secp256k1' } }, { 'payment-signature': good }), 400, 'validation_failed'],
    ['an off-curve JWK', await post(h.url, { subject: borrower.address, publicKey: offCurve }, { 'payment-signature': good }), 400, 'invalid_public_key'],
    ['a truncated JWK', await post(h.url, { subject: borrower.address, publicKey: { ...jwk, x: (jwk.x as string).slice(2) } }, { 'payment-signature': good }), 400, 'invalid_public_key'],
    ['not an address', await post(h.url, { subject: 'alice', publicKey: jwk }, { 'payment-signature': good }), 400, 'validation_failed'],
    ['a payment for another network', await post(h.url, body, { 'payment-signature': await signedPayment(account, required, { ...asked, network: networkA.caip2, asset: networkA.tokens[0]!.address }) }), 402, 'payment_not_accepted'],
    ['a payment of a smaller amount', await post(h.url, body, { 'payment-signature': await signedPayment(account, required, { ...asked, amount: (PRICE - 1n).toString() }) }), 402, 'payment_not_accepted'],
    ['a payment to another payee', await post(h.url, body, { 'payment-signature': await signedPayment(account, required, { ...asked, payTo: account.address }) }), 402, 'payment_not_accepted'],
    ['a payment its payer cannot cover', await post(h.url, body, { 'payment-signature': await signedPayment(broke, required) }), 402, 'payment_invalid'],
    ['a PAYMENT-SIGNATURE that is not a payment', await post(h.url, body, { 'payment-signature': 'not-base64-json' }), 402, 'payment_invalid'],
  ]
  for (const [what, answer, status, code] of cases) {
    expectProblem(t, answer, status, code, what)
    expectDocumented(t, doc, 'post', '/credit-score', answer)
    if (status === 402) t.ok(answer.headers.get('payment-required'), `${what}: PAYMENT-REQUIRED says what to pay`)
  }
  t.strictSame(await balances(account.address, payee, broke.address), before, 'no money moved')
  const spent = await post(h.url, body, { 'payment-signature': good })
  t.equal(spent.status, 200, 'the good payment was never used by the refused requests')
})

t.test('an address the service holds no borrower record of costs what a borrower does: the same 402 first, then, paid, a no-history score', async (t) => {
  const stranger = await payer(0n)
  const account = await payer()
  const { jwk, privateKey } = await keyPair()
  // Without payment, the answers to a borrower and to a stranger are alike but for the subject: nothing tells them apart for free.
  const known = await post(h.url, { subject: borrower.address, publicKey: jwk })
  const unknown = await post(h.url, { subject: stranger.address, publicKey: jwk })
  expectProblem(t, unknown, 402, 'payment_required', 'an unknown subject is asked the payment')
  expectDocumented(t, doc, 'post', '/credit-score', unknown)
  t.equal(unknown.headers.get('payment-required'), known.headers.get('payment-required'), 'the same PAYMENT-REQUIRED as for a borrower')
  t.strictSame(unknown.body, known.body, 'the same problem body')
  const [payerBefore, payeeBefore] = await balances(account.address, payee)
  const paid = await post(h.url, { subject: stranger.address, publicKey: jwk }, { 'payment-signature': await signedPayment(account, paymentRequiredOf(unknown)) })
  t.equal(paid.status, 200, JSON.stringify(paid.body))
  expectDocumented(t, doc, 'post', '/credit-score', paid)
  const [payerAfter, payeeAfter] = await balances(account.address, payee)
  t.equal(payerBefore - payerAfter, PRICE, 'charged the price, as for a borrower')
  t.equal(payeeAfter - payeeBefore, PRICE)
  t.ok(paid.headers.get('payment-response'), 'with the settlement')
  const plain = await decrypt(paid.body.jwe, privateKey)
  t.ok(checkPlaintext.check(plain), 'the plaintext is what the document describes', { errors: checkPlaintext.issues(plain, '') })
  t.equal(plain.subject, stranger.address)
  t.match(plain.inputs, { repaidAdvances: 0, scoredRepayments: [], defaultedAdvances: 0, shortfallAtomic: '0', suspended: false, openAdvances: 0, pastDueAdvances: 0, outstanding: [], partialRepayments: 0, historyStartedAt: null, erc8004: null })
  t.equal(plain.score, 500, 'no history: the base')
  t.equal(plain.score, creditScore(inputsOf(plain)).score, 'the formula of the inputs it names')
})

/** A component that fails its first `failures` calls (before computing anything), then computes with the local one. */
class FailingFirst implements CreditScoreCompute {
  readonly component = 'failing-first'
  readonly local = new LocalScoreCompute()
  calls = 0
  constructor(private failures: number) {}
  async score(call: Parameters<CreditScoreCompute['score']>[0]) {
    this.calls += 1
    if (this.failures > 0) {
      this.failures -= 1
      throw new ComputeFailedError('injected failure')
    }
    return this.local.score(call)
  }
  close() {
    return this.local.close()
  }
}

t.test('a computation that fails settles nothing; the same payment then buys the score once', async (t) => {
  const compute = new FailingFirst(1)
  const dataDir = tempDataDir()
  const app: App = await startApp(testConfig(dataDir), { devnet: h.devnet, validateResponses: true, creditScoreCompute: compute })
  t.teardown(() => app.stop())
  const client = await signedIn(app.url, borrower)
  await client.post('/credit/backing-sources', await backingSourceBody({ devnet: h.devnet, url: app.url }, borrower.address, { sourceId: 'score-src-2', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))

  const account = await payer()
  const { jwk, privateKey } = await keyPair()
  const body = { subject: borrower.address, publicKey: jwk }
  const required = paymentRequiredOf(await post(app.url, body))
  const signature = await signedPayment(account, required)
  const before = await balances(account.address, payee)
  const failed = await post(app.url, body, { 'payment-signature': signature })
  expectProblem(t, failed, 503, 'compute_failed', 'the component threw')
  t.equal(failed.headers.get('payment-response'), null, 'no settlement to report')
  t.strictSame(await balances(account.address, payee), before, 'the payer\'s balance is unchanged, and the payee\'s')

  const retried = await post(app.url, body, { 'payment-signature': signature })
  t.equal(retried.status, 200, JSON.stringify(retried.body))
  t.equal(retried.body.compute.component, 'failing-first')
  t.equal((await decrypt(retried.body.jwe, privateKey)).subject, borrower.address)
  const [payerAfter, payeeAfter] = await balances(account.address, payee)
  t.equal(before[0] - payerAfter, PRICE, 'charged once, for the answer delivered')
  t.equal(payeeAfter - before[1], PRICE)
  t.equal(compute.calls, 2)
})

t.test('with compute disabled: 503 compute_disabled before any payment, even with one attached; nothing moves', async (t) => {
  const dataDir = tempDataDir()
  const app: App = await startApp(testConfig(dataDir, { creditScore: { enabled: false } }), { devnet: h.devnet, validateResponses: true })
  t.teardown(() => app.stop())
  const disabledDoc = await openApiDocument(app.url)
  const account = await payer()
  const { jwk } = await keyPair()
  const body = { subject: borrower.address, publicKey: jwk }
  const required = paymentRequiredOf(await post(h.url, body))
  const signature = await signedPayment(account, required)
  const before = await balances(account.address, payee)
  for (const headers of [{}, { 'payment-signature': signature }] as Record<string, string>[]) {
    const answer = await post(app.url, body, headers)
    expectProblem(t, answer, 503, 'compute_disabled')
    expectDocumented(t, disabledDoc, 'post', '/credit-score', answer)
    t.ok(answer.headers.get('retry-after'), 'with Retry-After')
    t.equal(answer.headers.get('payment-required'), null, 'no payment is asked')
  }
  t.strictSame(await balances(account.address, payee), before, 'nothing moved')
  const catalog = (await new CreditClient(app.url).get('/.well-known/service.json')).body
  t.match(catalog.creditScore, { enabled: false, payment: null, compute: null })
  t.ok(((await new CreditClient(app.url).get('/llms.txt')).body as string).includes('503 compute_disabled'))
  const spent = await post(h.url, body, { 'payment-signature': signature })
  t.equal(spent.status, 200, 'the payment shown to the disabled service was not used')
})
