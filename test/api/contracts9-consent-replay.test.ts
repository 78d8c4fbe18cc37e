// An adversary's finding (contracts9): the borrower's consent (EIP-712 BorrowerConsent) had a domain of a name and a
// version only, so the consent a borrower gave one deployment of this service was valid at every other with a network
// of the same name: the job's client funded the same job id on the other deployment's credit contract (job keys are
// per contract), registered it there with that consent and could fail it, suspending the borrower there. The domain
// now binds the network's chainId and credit contract (verifyingContract): a consent for another contract, or one
// without them, is refused 403 borrower_consent_invalid and changes nothing; one for this contract registers the job.
import t from 'tap'
import { getAddress, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { consentTypes } from '../../src/chain/consent.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectProblem } from './fixtures/api.ts'

const h = await startHarness()
// The domain as the catalog describes it: its fixed part, and the network's chainId and creditContract.
const domainOf = (network: { chainId: number; creditContract: Address }) =>
  ({ name: 'agent-credit borrower consent', version: '2', chainId: network.chainId, verifyingContract: network.creditContract })
t.teardown(() => h.stop())

t.test('a consent is valid on its network\'s credit contract only', async (t) => {
  const borrower = privateKeyToAccount(generatePrivateKey())
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const api = await signedIn(h.url, client)
  const dueAtMs = Math.floor(Date.now() / 1000) * 1000 + 7 * 24 * 3600 * 1000
  const fundingTxHash = await new ChainAgent(h.network, client).fundJob('job_replayed', USDC, usdc(100), borrower.address)
  const body = { jobId: 'job_replayed', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(), dueAt: new Date(dueAtMs).toISOString(), fundingTxHash }
  const message = { jobId: 'job_replayed', network: h.network.slug, asset: USDC, receivableAtomic: usdc(100), client: getAddress(client.address), dueAt: BigInt(dueAtMs / 1000) }
  const sign = (signer: PrivateKeyAccount, domain: { name: string; version: string; chainId?: number; verifyingContract?: Address }) =>
    signer.signTypedData({ domain, types: consentTypes, primaryType: 'BorrowerConsent', message })

  const before = h.app.service.store.stats().commits
  // What the borrower signed for any deployment before: valid wherever a network has this name.
  const portable = await sign(borrower, { name: 'agent-credit borrower consent', version: '1' })
  expectProblem(t, await api.post('/credit/jobs', { ...body, borrowerConsent: portable }), 403, 'borrower_consent_invalid', 'a consent bound to no contract')
  const elsewhere = await sign(borrower, domainOf({ chainId: h.network.chainId, creditContract: privateKeyToAccount(generatePrivateKey()).address }))
  expectProblem(t, await api.post('/credit/jobs', { ...body, borrowerConsent: elsewhere }), 403, 'borrower_consent_invalid', 'a consent for another deployment\'s contract')
  const otherChain = await sign(borrower, domainOf({ chainId: h.network.chainId + 1, creditContract: h.network.creditContract }))
  expectProblem(t, await api.post('/credit/jobs', { ...body, borrowerConsent: otherChain }), 403, 'borrower_consent_invalid', 'a consent for another chain')
  t.equal(h.app.service.store.stats().commits, before, 'the refusals wrote nothing')

  const own = await sign(borrower, domainOf(h.network))
  const created = await api.post('/credit/jobs', { ...body, borrowerConsent: own })
  t.equal(created.status, 201, 'the consent for this network\'s contract registers the job', { body: created.body })
})
