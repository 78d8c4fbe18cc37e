// An outsider as a browser-based agent paying /credit-score from a page of another origin, as x402's fetch wrapper
// does: the preflight must allow the PAYMENT-SIGNATURE request header, and the answers must let the script read
// PAYMENT-REQUIRED (what to pay, on the 402) and PAYMENT-RESPONSE (the settlement, on the 200). Without them the
// browser refuses to send the payment and hides what the 402 asks for: CORS_ORIGINS=* would serve every route
// to browsers but the paid one.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { fundedAccount, signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

let h: Harness
let subject: string
t.before(async () => {
  h = await startHarness()
  // A borrower the service knows (one attested backing source): its score is what the 402 asks payment for.
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'cors-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(`backing source: ${source.status} ${JSON.stringify(source.body)}`)
  subject = borrower.address
})
t.teardown(() => h.stop())

const ORIGIN = 'https://agent.example'
const listed = (value: string | null): string[] => (value ?? '').split(',').map((name) => name.trim().toLowerCase())

t.test('the preflight of a paid POST /credit-score allows the PAYMENT-SIGNATURE header', async (t) => {
  const preflight = await fetch(`${h.url}/credit-score`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, payment-signature' },
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), '*')
  const allowed = listed(preflight.headers.get('access-control-allow-headers'))
  for (const header of ['content-type', 'payment-signature']) t.ok(allowed.includes(header), `${header} may be sent (${allowed.join(', ')})`)
})

t.test('a cross-origin 402 lets the script read PAYMENT-REQUIRED, and PAYMENT-RESPONSE is readable too', async (t) => {
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })
  const body = JSON.stringify({ subject, publicKey: await exportJWK(publicKey) })
  const answer = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' }, body })
  t.equal(answer.status, 402)
  t.ok(answer.headers.get('payment-required'), 'the 402 carries PAYMENT-REQUIRED')
  t.equal(answer.headers.get('access-control-allow-origin'), '*')
  const exposed = listed(answer.headers.get('access-control-expose-headers'))
  for (const header of ['payment-required', 'payment-response']) t.ok(exposed.includes(header), `${header} is exposed (${exposed.join(', ')})`)
})
