// Issue 9, case 2 over HTTP against the devnet: the principal only reaches a supplier the service can vouch for. A
// request naming a known domain with any other address (a fresh one, the credit contract, a lender's session key) or
// an unknown domain is declined; the directory's address is approved and paid. Operators manage the directory
// (GET public; PUT and DELETE operators only, bad input refused with nothing changed), and it survives a restart.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditRequest, fundedAccount, fundedJob, signedIn, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'
import type { CreditClient } from '../../src/client/client.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

let h: Harness
let doc: Json
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  ({ h, lender, operator } = await lenderHarness(t, {}, { minFeeBps: 300, liquidityAtomic: usdc(5_000) }))
  doc = await openApiDocument(h.url)
})

const fresh = () => privateKeyToAccount(generatePrivateKey()).address
const directory = async (client: CreditClient) => (await client.get('/suppliers', { token: '' })).body as Json[]

t.test('case 2: a known domain with another address, or an unknown domain, is declined; the directory\'s address is approved and paid', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_sup_1', receivableAtomic: usdc(1000) })
  const base = creditRequest(h, borrower.address, 'job_sup_1', usdc(100), usdc(10))
  const declined: [string, Json, string][] = [
    ['a fresh address under supplier.devnet', { supplierAddress: fresh() }, 'supplier_address_unverified'],
    ['the credit contract', { supplierAddress: h.network.creditContract }, 'supplier_not_allowed'],
    ['the lender\'s session key', { supplierAddress: lender.session.address }, 'supplier_not_allowed'],
    ['the lender itself', { supplierAddress: lender.account.address }, 'supplier_not_allowed'],
    ['an unknown domain', { supplierDomain: 'unknown.example' }, 'supplier_unknown'],
    ['an unknown domain with the directory\'s address', { supplierDomain: 'unknown.example', supplierAddress: h.devnet.accounts.supplier.address }, 'supplier_unknown'],
  ]
  for (const [what, over, code] of declined) {
    const reply = await borrowerClient.post('/credit/request', { ...base, ...over })
    t.equal(reply.status, 200, what)
    expectDocumented(t, doc, 'post', '/credit/request', reply)
    t.equal(reply.body.decision, 'declined', what)
    t.same(reply.body.reasons.map((r: Json) => r.code), [code], what)
    t.equal(reply.body.offer, null, `${what}: no offer`)
  }
  t.equal((await borrowerClient.get('/credit/state')).body.counts.liveOffers, 0, 'no offer was made')
  expectProblem(t, await borrowerClient.post('/credit/request', { ...base, supplierAddress: borrower.address }), 422, 'supplier_is_borrower')

  const explicit = await borrowerClient.post('/credit/request', { ...base, supplierAddress: h.devnet.accounts.supplier.address.toLowerCase() })
  t.equal(explicit.body.decision, 'approved', 'the directory\'s address (any case)')
  t.equal(explicit.body.offer.supplierAddress, h.devnet.accounts.supplier.address)
  const paid = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_sup_1', amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  t.equal(paid.decision.offer.supplierAddress, h.devnet.accounts.supplier.address, 'no address: the domain\'s first on the network')
  t.equal(paid.advance.supplierAddress, h.devnet.accounts.supplier.address, 'the lender paid the directory\'s address')
})

t.test('operators manage the directory: GET is public, PUT and DELETE are operators\' only, bad input changes nothing', async (t) => {
  const listed = await operator.get('/suppliers', { token: '' })
  t.equal(listed.status, 200)
  expectDocumented(t, doc, 'get', '/suppliers', listed)
  t.match(listed.body, [{ domain: 'supplier.devnet', origin: 'config', addresses: { [h.network.slug]: [h.devnet.accounts.supplier.address] } }])
  const before = await directory(operator)
  const payout = fresh()
  const entry = { name: 'Parts Ltd', addresses: { [h.network.slug]: [payout] } }
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))

  const notOperator = await stranger.call('PUT', '/suppliers/parts.example', entry)
  expectProblem(t, notOperator, 403, 'forbidden', 'a stranger')
  expectDocumented(t, doc, 'put', '/suppliers/{domain}', notOperator)
  expectProblem(t, await lender.client.call('PUT', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [lender.session.address] } }), 403, 'forbidden', 'a lender naming its own session key')
  expectProblem(t, await operator.call('PUT', '/suppliers/parts.example', entry, { token: '' }), 401, 'unauthorized')
  const bad: [string, string, Json, number, string][] = [
    ['not a domain', '/suppliers/not_a_domain!', entry, 400, 'validation_failed'],
    ['no network', '/suppliers/parts.example', { ...entry, addresses: {} }, 400, 'validation_failed'],
    ['not an address', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: ['0x1234'] } }, 400, 'validation_failed'],
    ['an unknown network', '/suppliers/parts.example', { ...entry, addresses: { 'no-such-net': [payout] } }, 400, 'unknown_network'],
    ['a duplicate address', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [payout, payout] } }, 400, 'invalid_supplier_addresses'],
    ['the credit contract', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [h.network.creditContract] } }, 422, 'supplier_not_allowed'],
    ['the token contract', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [(h.network.tokens[0] as { address: string }).address] } }, 422, 'supplier_not_allowed'],
    ['the identity registry', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [h.network.identityRegistry] } }, 422, 'supplier_not_allowed'],
    ['a lender\'s session key', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [payout, lender.session.address] } }, 422, 'supplier_not_allowed'],
    ['a lender', '/suppliers/parts.example', { ...entry, addresses: { [h.network.slug]: [lender.account.address] } }, 422, 'supplier_not_allowed'],
  ]
  for (const [what, path, body, status, code] of bad) {
    const reply = await operator.call('PUT', path, body)
    expectProblem(t, reply, status, code, what)
    expectDocumented(t, doc, 'put', '/suppliers/{domain}', reply)
  }
  t.same(await directory(operator), before, 'nothing changed')

  const put = await operator.call('PUT', '/suppliers/Parts.Example', entry)
  t.equal(put.status, 200, JSON.stringify(put.body))
  expectDocumented(t, doc, 'put', '/suppliers/{domain}', put)
  t.match(put.body, { domain: 'parts.example', name: 'Parts Ltd', origin: 'operator', removedAt: null, addresses: { [h.network.slug]: [payout] } })
  t.same((await directory(operator)).map((e) => e.domain), ['parts.example', 'supplier.devnet'])

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_sup_2', receivableAtomic: usdc(1000) })
  const request = { ...creditRequest(h, borrower.address, 'job_sup_2', usdc(50), usdc(10)), supplier: 'Parts Ltd', supplierDomain: 'parts.example' }
  const approved = await borrowerClient.post('/credit/request', request)
  t.equal(approved.body.decision, 'approved', 'the new domain takes credit')
  t.equal(approved.body.offer.supplierAddress, payout)

  const notOperatorDelete = await stranger.call('DELETE', '/suppliers/parts.example')
  expectProblem(t, notOperatorDelete, 403, 'forbidden')
  expectDocumented(t, doc, 'delete', '/suppliers/{domain}', notOperatorDelete)
  const removed = await operator.call('DELETE', '/suppliers/parts.example')
  t.equal(removed.status, 200)
  expectDocumented(t, doc, 'delete', '/suppliers/{domain}', removed)
  t.match(removed.body, { domain: 'parts.example', origin: 'operator', removedAt: String })
  const gone = await operator.call('DELETE', '/suppliers/parts.example')
  expectProblem(t, gone, 404, 'supplier_not_found')
  expectDocumented(t, doc, 'delete', '/suppliers/{domain}', gone)
  const after = await borrowerClient.post('/credit/request', request)
  t.same(after.body.reasons.map((r: Json) => r.code), ['supplier_unknown'], 'no new credit goes to a removed domain')
  const offer = await borrowerClient.get(`/credit/offers/${approved.body.offer.offerId}`)
  t.match(offer.body, { state: 'offered', supplierAddress: payout }, 'the live offer keeps its supplier')
})

t.test('the directory survives a restart; the configuration does not bring back what an operator removed', async (t) => {
  const payout = fresh()
  t.equal((await operator.call('PUT', '/suppliers/tools.example', { name: 'Tools', addresses: { [h.network.slug]: [payout] } })).status, 200)
  t.equal((await operator.call('DELETE', '/suppliers/supplier.devnet')).status, 200)
  const before = await directory(operator)
  t.same(before.map((e) => e.domain), ['tools.example'])
  await h.restart()
  const after = await directory(await signedIn(h.url, privateKeyToAccount(generatePrivateKey())))
  t.same(after, before, 'the same entries after the restart, supplier.devnet still removed')
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_sup_3', receivableAtomic: usdc(1000) })
  const base = creditRequest(h, borrower.address, 'job_sup_3', usdc(50), usdc(10))
  t.same((await borrowerClient.post('/credit/request', base)).body.reasons.map((r: Json) => r.code), ['supplier_unknown'])
  const approved = await borrowerClient.post('/credit/request', { ...base, supplierDomain: 'tools.example' })
  t.equal(approved.body.offer.supplierAddress, payout)
})
