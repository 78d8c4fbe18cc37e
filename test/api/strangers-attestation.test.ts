// Issue 10, hole 9 over HTTP: backing attestations carry an expiry. The EIP-712 type signs validUntil; an expired
// attestation is refused at registration, an altered validUntil breaks the signature, and a source whose attestation
// has expired since gets no new credit (declined source_attestation_expired).
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, startHarness } from '../fixtures/service.ts'
import { backingSourceBody, expectDocumented, expectProblem, openApiDocument } from './fixtures/api.ts'

let now = Math.floor(Date.now() / 1000) * 1000
// The service's clock is this variable: the tests move time themselves.
const h = await startHarness({ clock: () => now })
t.teardown(() => h.stop())
const { app } = h
const fields = (sourceId: string, validUntilMs: number) => ({ sourceId, valueAtomic: 10_000_000n, liquidationValueAtomic: 10_000_000n, advanceRateBps: 5000, validUntilMs })

const borrower = privateKeyToAccount(generatePrivateKey())
const client = new CreditClient(app.url)
await client.signIn(borrower)

t.test('the catalog publishes the attestation type with validUntil (domain version 3, which added service)', async (t) => {
  const catalog = (await client.get('/.well-known/service.json')).body
  t.same(catalog.attestation.domain, { name: 'agent-credit backing attestation', version: '3' })
  t.same(catalog.attestation.types.BackingSource.at(-1), { name: 'validUntil', type: 'uint64' })
})

t.test('an expired attestation, or an altered validUntil, is refused at registration', async (t) => {
  const expired = await backingSourceBody(h, borrower.address, fields('src-expired', now - 1000))
  expectProblem(t, await client.post('/credit/backing-sources', expired), 422, 'attestation_expired', 'expired')
  const signed = await backingSourceBody(h, borrower.address, fields('src-altered', now + 60_000))
  const altered = { ...signed, validUntil: new Date(now + 3600_000).toISOString() }
  expectProblem(t, await client.post('/credit/backing-sources', altered), 422, 'attestation_invalid', 'validUntil changed after signing')
})

t.test('a source gets credit until its attestation expires, then declined source_attestation_expired', async (t) => {
  const document = await openApiDocument(app.url)
  const validUntilMs = now + 60_000
  const registered = await client.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, fields('src-short', validUntilMs)))
  t.equal(registered.status, 201, 'registered', { body: registered.body })
  t.equal(registered.body.validUntil, new Date(validUntilMs).toISOString(), 'the source shows its expiry')
  expectDocumented(t, document, 'post', '/credit/backing-sources', registered)
  const ask = () => client.post('/credit/request', creditRequest(h, borrower.address, 'src-short', 1_000_000n, 100_000n))
  const before = await ask()
  t.equal(before.body.decision, 'approved', 'before the expiry', { body: before.body })
  now = validUntilMs
  const after = await ask()
  t.equal(after.status, 200)
  t.equal(after.body.decision, 'declined', 'at the expiry')
  t.same(after.body.reasons.map((r: { code: string }) => r.code), ['source_attestation_expired'])
  t.equal(after.body.offer, null, 'no offer')
  expectDocumented(t, document, 'post', '/credit/request', after)
})
