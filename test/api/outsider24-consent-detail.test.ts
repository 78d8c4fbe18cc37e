// outsider24: a job's client registering it for its borrower (llms.txt: "or the client with the borrower's consent")
// signs the borrower's consent as the catalog's consent gives it, {name, version} for a domain: refused 403
// borrower_consent_invalid, "not the borrower's EIP-712 BorrowerConsent signature over these terms", with nothing
// saying the domain also needs the job's network's chainId and creditContract (only the OpenAPI description of the
// catalog's consent.domain said so), and llms.txt named no borrowerConsent field. Now the detail gives the whole
// domain and llms.txt the field; signed with that domain, the registration is 201. Fails on 022db7b (the detail).
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('a consent signed over the catalog\'s domain alone is refused with a detail naming the whole domain', async (t) => {
  const catalog = (await anyone.get('/.well-known/service.json')).body
  const network = catalog.networks.find((n: { slug: string }) => n.slug === h.network.slug)
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const jobId = `job_${crypto.randomUUID()}`
  const dueAt = Math.floor(Date.now() / 1000) + 7 * 86400
  const fundingTxHash = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(100), borrower.address)
  const message = { jobId, network: h.network.slug, asset: USDC, receivableAtomic: usdc(100), client: client.address, dueAt: BigInt(dueAt) }
  const sign = (domain: Record<string, unknown>) => borrower.signTypedData({ domain, types: catalog.consent.types, primaryType: catalog.consent.primaryType, message })
  const body = (borrowerConsent: string) => ({ jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(), dueAt: new Date(dueAt * 1000).toISOString(), fundingTxHash, borrowerConsent })
  const api = await signedIn(h.url, client)

  const asGiven = await api.post('/credit/jobs', body(await sign(catalog.consent.domain)))
  t.equal(asGiven.status, 403)
  t.equal(asGiven.body.code, 'borrower_consent_invalid')
  t.match(asGiven.body.detail, `chainId: ${network.chainId}, verifyingContract: ${network.creditContract}`, 'the detail names the chain id and contract the domain needs')
  t.match(asGiven.body.detail, 'dueAt in unix seconds')

  const whole = await api.post('/credit/jobs', body(await sign({ ...catalog.consent.domain, chainId: network.chainId, verifyingContract: network.creditContract })))
  t.equal(whole.status, 201, 'signed under the domain the detail names, the client registers the job')

  const llms: string = (await anyone.get('/llms.txt')).body
  t.match(llms, /"borrowerConsent", the borrower's EIP-712\s+signature of the catalog's consent, its domain plus the network's chainId and creditContract as verifyingContract/)
})
