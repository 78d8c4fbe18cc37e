// An adversary's finding (contracts9, attest3): a backing attestation (EIP-712 BackingSource, domain version 2) named
// no service, so one attestation from an attester that two deployments both trust registered the same off-chain asset
// at both: one asset backing credit twice (a double pledge). Version 3 signs `service`, the host the deployment is
// reached at (its SIWE domain), published as the catalog's attestation.service. An attester that signs from a
// deployment's catalog alone makes an attestation registered there and refused (422 attestation_invalid, nothing
// written) at another deployment trusting the same attester; a version-2 attestation is refused as well.
import t from 'tap'
import { getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { attestationTypes } from '../../src/chain/attestation.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startHarness, type Harness } from '../fixtures/service.ts'
import { attester, expectProblem, type Json } from './fixtures/api.ts'

const a = await startHarness()
t.teardown(() => a.stop())
// Deployment B: another service on the same devnet, trusting the same attester.
const b = await startHarness({ devnet: a.devnet })
t.teardown(() => b.stop())

const borrower = privateKeyToAccount(generatePrivateKey())
const validUntilMs = Math.floor(Date.now() / 1000 + 30 * 24 * 3600) * 1000
const source = { sourceId: 'src-pledged', productType: 'asset-backed', agent: getAddress(borrower.address), valueAtomic: 10_000_000n, liquidationValueAtomic: 10_000_000n, advanceRateBps: 5000 }
const body = (evidenceId: string) => ({
  ...source,
  valueAtomic: source.valueAtomic.toString(),
  liquidationValueAtomic: source.liquidationValueAtomic.toString(),
  validUntil: new Date(validUntilMs).toISOString(),
  evidenceId,
})

/** What an attester signs for deployment `h`, learnt from its catalog alone (domain, types, service). */
async function attestFor(h: Harness): Promise<string> {
  const catalog = (await new CreditClient(h.url).get('/.well-known/service.json')).body as Json
  const { domain, types, primaryType, service } = catalog['attestation']
  return attester(h).signTypedData({ domain, types, primaryType, message: { service, ...source, validUntil: BigInt(validUntilMs / 1000) } })
}

t.test('the catalog and llms.txt name the service an attestation signs: the deployment\'s host', async (t) => {
  for (const h of [a, b]) {
    const catalog = (await new CreditClient(h.url).get('/.well-known/service.json')).body as Json
    t.same(catalog['attestation'].domain, { name: 'agent-credit backing attestation', version: '3' })
    t.equal(catalog['attestation'].service, new URL(h.url).host)
    t.equal(catalog['attestation'].service, catalog['auth'].domain, 'the SIWE domain')
    t.same(catalog['attestation'].types.BackingSource[0], { name: 'service', type: 'string' })
    const llms = await (await fetch(`${h.url}/llms.txt`)).text()
    t.ok(llms.includes(`service field "${new URL(h.url).host}"`), 'llms.txt names it')
  }
  t.not(new URL(a.url).host, new URL(b.url).host, 'two deployments, two services')
})

t.test('an attestation for deployment A registers at A and is refused at B; one for B registers at B', async (t) => {
  const clientA = new CreditClient(a.url)
  await clientA.signIn(borrower)
  const clientB = new CreditClient(b.url)
  await clientB.signIn(borrower)

  const forA = await attestFor(a)
  const registered = await clientA.post('/credit/backing-sources', body(forA))
  t.equal(registered.status, 201, 'A takes the attestation made for it', { body: registered.body })

  const before = b.app.service.store.stats().commits
  expectProblem(t, await clientB.post('/credit/backing-sources', body(forA)), 422, 'attestation_invalid', 'A\'s attestation at B')
  // Version 2: the same fields, in the same order, without a service: valid at every deployment before.
  const v2 = await attester(b).signTypedData({
    domain: { name: 'agent-credit backing attestation', version: '2' },
    types: { BackingSource: attestationTypes.BackingSource.filter((f) => f.name !== 'service') },
    primaryType: 'BackingSource',
    message: { ...source, validUntil: BigInt(validUntilMs / 1000) },
  })
  expectProblem(t, await clientB.post('/credit/backing-sources', body(v2)), 422, 'attestation_invalid', 'a version-2 attestation')
  t.equal(b.app.service.store.stats().commits, before, 'the refusals wrote nothing at B')
  t.same((await clientB.get('/credit/backing-sources')).body, [], 'B holds no source')

  const forB = await attestFor(b)
  const atB = await clientB.post('/credit/backing-sources', body(forB))
  t.equal(atB.status, 201, 'B takes the attestation made for it', { body: atB.body })
})
