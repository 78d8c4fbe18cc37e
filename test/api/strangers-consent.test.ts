// Issue 10, hole 3 over HTTP: a stranger cannot suspend a borrower. A job names a borrower only when the borrower
// registers it or the client carries the borrower's EIP-712 consent; only the job's client or an operator fails it;
// the suspension lifts in dispatch once nothing is owed on a default and borrowerSuspensionMinSeconds have passed.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { consentDomainOf, signBorrowerConsent, verifyBorrowerConsent } from '../../src/chain/consent.ts'
import { ChainRpcError } from '../../src/chain/proofs.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { deployOwnerWallet } from '../fixtures/owner-wallet.ts'
import { expectDocumented, expectProblem, openApiDocument } from './fixtures/api.ts'

const DAY_MS = 24 * 3600 * 1000
const WEEK_MS = 7 * DAY_MS
let now = Math.floor(Date.now() / 1000) * 1000
// The service's clock is this variable: the tests move time themselves.
const h = await startHarness({ clock: () => now })
t.teardown(() => h.stop())
const { app, devnet, network } = h

async function agent(tokens = 0n): Promise<{ account: PrivateKeyAccount; api: CreditClient }> {
  const account = await fundedAccount(devnet, network, tokens)
  const api = new CreditClient(app.url)
  await api.signIn(account)
  return { account, api }
}

/**
 * The client escrows `amount` on chain for `borrower`; returns the body of POST /credit/jobs, due in `dueInMs` on the
 * service's clock: by default 9 days, after the week the suspension test moves that clock by, and before the devnet
 * contract's reclaim time (10 days after funding, on the chain's clock, which that move leaves behind).
 */
async function funded(client: PrivateKeyAccount, borrower: `0x${string}`, jobId: string, amount: bigint, dueInMs = 9 * DAY_MS) {
  const fundingTxHash = await new ChainAgent(network, client).fundJob(jobId, USDC, amount, borrower)
  return { jobId, network: network.slug, asset: USDC, agent: borrower, receivableAtomic: amount.toString(), dueAt: new Date(now + dueInMs).toISOString(), fundingTxHash }
}

const consent = (borrower: PrivateKeyAccount, body: Awaited<ReturnType<typeof funded>>, client: `0x${string}`, overrides: { receivableAtomic?: bigint } = {}) =>
  signBorrowerConsent(borrower, {
    jobId: body.jobId, network: body.network, asset: body.asset, receivableAtomic: overrides.receivableAtomic ?? BigInt(body.receivableAtomic), client, dueAtMs: Date.parse(body.dueAt),
  }, consentDomainOf(network))

const victim = await agent()
const victimJob = await agent(usdc(5000))

t.test('the stranger attack: a 1-unit job naming the victim is refused; the victim\'s own job is untouched', async (t) => {
  const stranger = await agent(1n)
  const evil = await funded(stranger.account, victim.account.address, 'job_evil', 1n)
  expectProblem(t, await stranger.api.post('/credit/jobs', evil), 403, 'borrower_consent_required', 'no consent')
  const forged = await consent(stranger.account, evil, stranger.account.address)
  expectProblem(t, await stranger.api.post('/credit/jobs', { ...evil, borrowerConsent: forged }), 403, 'borrower_consent_invalid', 'signed by the stranger')
  expectProblem(t, await stranger.api.post('/credit/jobs/job_evil/fail', { reason: 'not_delivered' }), 404, 'job_not_found', 'nothing to fail')
  const real = await funded(victimJob.account, victim.account.address, 'job_real', usdc(5000))
  t.equal((await victim.api.post('/credit/jobs', real)).status, 201, 'the victim registers its real job')
  const decision = await victim.api.post('/credit/request', creditRequest(h, victim.account.address, 'job_real', usdc(1000), usdc(100)))
  t.equal(decision.body.decision, 'approved', 'and gets credit', { body: decision.body })
})

t.test('a consented job works; its client fails it; the suspension lifts on a moved clock', async (t) => {
  const document = await openApiDocument(app.url)
  const borrower = await agent()
  const client = await agent(usdc(100))
  const body = await funded(client.account, borrower.account.address, 'job_consented', usdc(100))
  const tampered = await consent(borrower.account, body, client.account.address, { receivableAtomic: usdc(1) })
  expectProblem(t, await client.api.post('/credit/jobs', { ...body, borrowerConsent: tampered }), 403, 'borrower_consent_invalid', 'consent to other terms')
  const created = await client.api.post('/credit/jobs', { ...body, borrowerConsent: await consent(borrower.account, body, client.account.address) })
  t.equal(created.status, 201, 'the client registers the job with the borrower\'s consent', { body: created.body })
  expectDocumented(t, document, 'post', '/credit/jobs', created)
  const catalog = (await client.api.get('/.well-known/service.json')).body
  t.same(catalog.consent.domain, { name: 'agent-credit borrower consent', version: '2' }, 'the catalog publishes the consent domain')
  t.equal(catalog.limits.borrowerSuspensionMinSeconds, 7 * 24 * 3600)

  // A second job the borrower registers itself: its source of credit after the first one fails.
  const otherClient = await agent(usdc(100))
  const own = await funded(otherClient.account, borrower.account.address, 'job_own', usdc(100))
  t.equal((await borrower.api.post('/credit/jobs', own)).status, 201)
  expectProblem(t, await borrower.api.post('/credit/jobs/job_consented/fail', { reason: 'not_delivered' }), 403, 'forbidden', 'the borrower may not fail its own job')
  const failed = await client.api.post('/credit/jobs/job_consented/fail', { reason: 'not_delivered' })
  t.equal(failed.status, 200)
  t.equal(failed.body.borrowerSuspended, true)
  const ask = () => borrower.api.post('/credit/request', creditRequest(h, borrower.account.address, 'job_own', usdc(10), usdc(1)))
  t.same((await ask()).body.reasons?.map((r: { code: string }) => r.code), ['borrower_suspended'], 'suspended')

  now += WEEK_MS - 1000
  // Sessions last a day: sign in again on the moved clock.
  await client.api.signIn(client.account)
  await borrower.api.signIn(borrower.account)
  const early = await client.api.post('/credit/dispatch', {})
  t.same(early.body.suspensionsLifted, [], 'not before borrowerSuspensionMinSeconds', { body: early.body })
  now += 1000
  const lifted = await client.api.post('/credit/dispatch', {})
  expectDocumented(t, document, 'post', '/credit/dispatch', lifted)
  t.same(lifted.body.suspensionsLifted.map((e: { type: string; borrower: string }) => [e.type, e.borrower]), [['suspension_lifted', borrower.account.address]], 'the lift is a passport event')
  t.equal((await ask()).body.decision, 'approved', 'the borrower gets credit again')
})

t.test('a contract-wallet borrower consents with ERC-1271: its owner\'s signature is accepted, a stranger\'s refused', async (t) => {
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = await deployOwnerWallet(network, await fundedAccount(devnet, network, 0n), owner.address)
  t.ok(wallet, 'the wallet is deployed')

  const client = await agent(usdc(20))
  const refused = await funded(client.account, wallet, 'job_1271_refused', usdc(10))
  const stranger = privateKeyToAccount(generatePrivateKey())
  expectProblem(t, await client.api.post('/credit/jobs', { ...refused, borrowerConsent: await consent(stranger, refused, client.account.address) }), 403, 'borrower_consent_invalid', 'a stranger signed for the wallet')
  t.equal(app.service.engine.getJob('job_1271_refused'), undefined, 'nothing recorded')

  const accepted = await funded(client.account, wallet, 'job_1271', usdc(10), DAY_MS)
  const created = await client.api.post('/credit/jobs', { ...accepted, borrowerConsent: await consent(owner, accepted, client.account.address) })
  t.equal(created.status, 201, 'the wallet\'s owner signed: the wallet consents', { body: created.body })
  t.equal(app.service.engine.getJob('job_1271')?.borrower, getAddress(wallet))
})

t.test('consent on a chain that does not answer: chain_unavailable within the read deadline, not a refusal; an EOA needs no read', async (t) => {
  // A loopback RPC that accepts and never answers: a stalled chain.
  const server = createServer(() => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const rpcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const stalled = createNetworkClients({ ...network, rpcUrl, rpcTimeoutMs: 200, operatorPrivateKey: undefined }).publicClient
  const borrower = privateKeyToAccount(generatePrivateKey())
  const fields = { jobId: 'job_x', network: network.slug, asset: USDC, receivableAtomic: 5n, client: borrower.address, dueAtMs: 1_900_000_000_000 }
  t.equal(await verifyBorrowerConsent(stalled, network.slug, consentDomainOf(network), borrower.address, fields, await signBorrowerConsent(borrower, fields, consentDomainOf(network))), true, 'an EOA\'s own signature is recovered without the chain')
  const contractWallet = privateKeyToAccount(generatePrivateKey()).address
  await t.rejects(verifyBorrowerConsent(stalled, network.slug, consentDomainOf(network), contractWallet, fields, await signBorrowerConsent(borrower, fields, consentDomainOf(network))), ChainRpcError, 'a wallet must be asked: the stalled chain is ChainRpcError (503 chain_unavailable)')
  t.equal(await verifyBorrowerConsent(stalled, network.slug, consentDomainOf(network), contractWallet, fields, 'not hex'), false, 'a malformed signature is refused without the chain')
})
