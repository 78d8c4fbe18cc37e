// Lender endpoints (register, list, wallets, one wallet against the chain, pending actions), the public reads
// (/health, /credit/state, /credit/backing-sources), /credit-score needing no session, and the SIWE routes.
import t from 'tap'
import { createSiweMessage } from 'viem/siwe'
import { erc20Abi } from 'viem'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, openApiDocument, until, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let a: ReadyLender
let b: ReadyLender
let anonymous: CreditClient
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  a = await readyLender(h, { minFeeBps: 120, liquidityAtomic: usdc(3000), walletAtomic: usdc(1000) })
  b = await readyLender(h, { minFeeBps: 80, liquidityAtomic: usdc(500), riskBands: ['A'] })
  anonymous = new CreditClient(h.url)
})
t.teardown(async () => {
  await h.stop()
})

t.test('POST /lenders/register: 201 with session key, policy, funding address and setup transaction; 401, 400, 409', async (t) => {
  const reg = a.registration
  t.match(reg.lender, { address: a.account.address, sessionAddress: a.session.address, askBps: 120, registeredAtomic: usdc(3000).toString(), policyAvailableAtomic: usdc(3000).toString(), availableAtomic: '0', networks: [h.network.slug] })
  t.same(reg.fundingAddresses, [{ network: h.network.slug, asset: USDC, token: new ChainAgent(h.network, a.account).token(USDC), address: a.session.address }])
  t.match(reg.spendPolicy, { perPaymentCapAtomic: usdc(3000).toString(), totalCapAtomic: usdc(3000).toString(), allowedContracts: { [h.network.slug]: h.network.creditContract } })
  t.match(reg.setupTransactions, [{ network: h.network.slug, chainId: h.network.chainId, from: a.session.address }])

  const fresh = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, fresh)
  const policy = { availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A', 'B'] }
  expectProblem(t, await client.post('/lenders/register', policy, { token: '' }), 401, 'unauthorized')
  expectProblem(t, await client.post('/lenders/register', { ...policy, networks: ['network-z'] }), 400, 'unknown_network')
  expectProblem(t, await client.post('/lenders/register', { ...policy, asset: 'WETH' }), 400, 'unknown_asset')
  expectProblem(t, await client.post('/lenders/register', { ...policy, availableLiquidityAtomic: '0' }), 400, 'invalid_liquidity')
  expectProblem(t, await client.post('/lenders/register', { ...policy, minFeeBps: 10_001 }), 400, 'validation_failed')
  expectProblem(t, await client.post('/lenders/register', { ...policy, acceptedRiskBands: ['Z'] }), 400, 'validation_failed')
  expectProblem(t, await client.post('/lenders/register', { ...policy, assets: { 'devnet-b': USDC } }), 400, 'asset_network_not_supported')
  const created = await client.post('/lenders/register', policy)
  t.equal(created.status, 201)
  expectDocumented(t, doc, 'post', '/lenders/register', created)
  t.match(created.body.sessionKey.privateKey, /^0x[0-9a-f]{64}$/)
  const twice = await client.post('/lenders/register', policy)
  expectProblem(t, twice, 409, 'lender_exists', 'a wallet registers once')
  expectDocumented(t, doc, 'post', '/lenders/register', twice)
})

t.test('GET /lenders lists active lenders; /lenders/wallets and /lenders/{address}/wallet match the chain', async (t) => {
  const list = await anonymous.get('/lenders')
  t.equal(list.status, 200)
  expectDocumented(t, doc, 'get', '/lenders', list)
  const addresses = (list.body as Json[]).map((l) => l['address'])
  t.ok(addresses.includes(a.account.address) && addresses.includes(b.account.address), 'both lenders are listed, checksummed')
  t.ok(addresses.indexOf(a.account.address) < addresses.indexOf(b.account.address), 'in registration order')
  t.notOk(JSON.stringify(list.body).includes('privateKey'), 'no key material')

  const chain = new ChainAgent(h.network, a.account)
  const readAllowance = (owner: `0x${string}`) =>
    chain.publicClient.readContract({ address: chain.token(USDC), abi: erc20Abi, functionName: 'allowance', args: [owner, h.network.creditContract] })
  const wallets = await anonymous.get('/lenders/wallets')
  t.equal(wallets.status, 200)
  expectDocumented(t, doc, 'get', '/lenders/wallets', wallets)
  for (const lender of [a, b]) {
    const entry = (wallets.body as Json[]).find((w) => w['lender'] === lender.account.address)
    t.ok(entry, `${lender.account.address} has a wallet entry`)
    const holding = entry!['holdings'][0]
    t.equal(holding.balanceAtomic, (await chain.balanceOf(USDC, lender.session.address)).toString(), 'balance as on chain')
    t.equal(holding.allowanceAtomic, (await readAllowance(lender.session.address)).toString(), 'allowance as on chain')
  }

  // One wallet, read after the session key spends on chain: the watcher follows the chain.
  await new ChainAgent(h.network, a.session).transferToken(USDC, a.account.address, usdc(1))
  const expected = (await chain.balanceOf(USDC, a.session.address)).toString()
  t.equal(expected, usdc(999).toString())
  let wallet = await anonymous.get(`/lenders/${a.account.address.toLowerCase()}/wallet`)
  await until(async () => {
    wallet = await anonymous.get(`/lenders/${a.account.address}/wallet`)
    return wallet.body.holdings[0].balanceAtomic === expected
  }, 10_000, 'the watcher to see the transfer')
  t.equal(wallet.status, 200)
  expectDocumented(t, doc, 'get', '/lenders/{address}/wallet', wallet)
  t.match(wallet.body, { lender: a.account.address, sessionAddress: a.session.address, holdings: [{ network: h.network.slug, asset: USDC, balanceAtomic: expected, allowanceAtomic: usdc(3000).toString(), spendableAtomic: expected }] })
  t.match(wallet.body.activity, { availableAtomic: expected, policyAvailableAtomic: usdc(3000).toString(), reservedAtomic: '0', liveLeases: 0 }, 'available: no more than the session wallet can pay')
  const lower = await anonymous.get(`/lenders/${a.account.address.toLowerCase()}/wallet`)
  t.equal(lower.body.lender, a.account.address, 'any letter case on input, checksummed on output')

  const unknown = await anonymous.get('/lenders/0x000000000000000000000000000000000000dEaD/wallet')
  expectProblem(t, unknown, 404, 'lender_not_found')
  expectDocumented(t, doc, 'get', '/lenders/{address}/wallet', unknown)
  expectProblem(t, await anonymous.get('/lenders/not-an-address/wallet'), 400, 'validation_failed')
  expectProblem(t, await anonymous.get('/lenders?colour=blue'), 400, 'validation_failed', 'an unknown query parameter')
})

t.test('GET /lenders/{address}/actions: the lender\'s own session only; 200 with the paySupplier of a live lease', async (t) => {
  expectProblem(t, await anonymous.get(`/lenders/${a.account.address}/actions`), 401, 'unauthorized', 'without a session')
  const forbidden = await b.client.get(`/lenders/${a.account.address}/actions`)
  expectProblem(t, forbidden, 403, 'forbidden', 'another lender\'s session')
  expectDocumented(t, doc, 'get', '/lenders/{address}/actions', forbidden)
  const notLender = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  expectProblem(t, await notLender.get(`/lenders/${notLender.address}/actions`), 404, 'lender_not_found', 'a session that is no lender')
  const empty = await a.client.get(`/lenders/${a.account.address}/actions`)
  t.same(empty.body.filter((action: Json) => action['kind'] === 'pay_supplier'), [], 'no lease to pay')
  t.match(empty.body, [{ kind: 'top_up', signer: 'lender', amountAtomic: (usdc(3000) - usdc(999)).toString(), transaction: { from: a.account.address } }], 'the wallet short of the policy: a top-up')

  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_actions', receivableAtomic: usdc(1000) })
  // Coverage 1000/500 = 2.0: band A; b (cheapest) accepts A but its 500 liquidity is short of 600, so a wins.
  const offer = (await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_actions', usdc(600), usdc(60)))).body.offer
  const match = await borrowerClient.post('/credit/match', { offerId: offer.offerId })
  t.equal(match.body.lease.lender, a.account.address, 'the cheaper lender lacks liquidity: the next one is selected')
  const actions = await a.client.get(`/lenders/${a.account.address.toLowerCase()}/actions`)
  t.equal(actions.status, 200)
  expectDocumented(t, doc, 'get', '/lenders/{address}/actions', actions)
  t.equal(actions.body.filter((action: Json) => action['kind'] === 'pay_supplier').length, 1)
  t.match(actions.body[0], {
    kind: 'pay_supplier',
    lease: { leaseId: match.body.lease.leaseId, offerId: offer.offerId },
    authorization: { offerKey: offer.offerKey, payer: a.session.address, amount: usdc(600).toString(), fee: match.body.lease.feeAtomic },
    transaction: { network: h.network.slug, chainId: h.network.chainId, from: a.session.address, to: h.network.creditContract, value: '0' },
  })
  t.equal(BigInt(actions.body[0].authorization.deadline), BigInt(Math.floor(Date.parse(match.body.lease.expiresAt) / 1000)), 'the on-chain deadline is the lease expiry')
  const mine = await b.client.get(`/lenders/${b.account.address}/actions`)
  t.same(mine.body, [], 'leases are listed to their lender only')
})

t.test('/health, /credit/state, /credit/backing-sources and /credit-score are public', async (t) => {
  const health = await anonymous.get('/health')
  t.equal(health.status, 200)
  expectDocumented(t, doc, 'get', '/health', health)
  t.equal(health.body.status, 'ok')
  t.same(health.body.networks.map((n: Json) => [n.network, n.chainId]), h.devnet.networks.map((n) => [n.slug, n.chainId]))
  t.equal(health.body.version, doc['info']['version'])

  const state = await anonymous.get('/credit/state')
  t.equal(state.status, 200)
  expectDocumented(t, doc, 'get', '/credit/state', state)
  t.equal(state.body.counts.lenders, 3)
  t.equal(state.body.counts.liveLeases, 1)
  t.equal(state.body.counts.liveJobs, 1)
  t.equal(state.body.totals.registeredAtomic, usdc(3000 + 500 + 100).toString())
  t.equal(state.body.totals.reservedAtomic, usdc(600).toString(), 'the live lease reserves its amount')
  t.equal(health.body.live.leases, state.body.counts.liveLeases)

  const sources = await anonymous.get('/credit/backing-sources')
  t.equal(sources.status, 200)
  t.same(sources.body, [])

  // Paid, not session-bound: without a session a malformed request is refused for what it is (the paid flow and
  // the disabled 503 are in test/score/credit-score.test.ts).
  for (const body of [{}, { input: 'x' }]) {
    const score = await anonymous.post('/credit-score', body)
    expectProblem(t, score, 400, 'validation_failed', 'no subject, no key')
    expectDocumented(t, doc, 'post', '/credit-score', score)
  }
})

t.test('GET /auth/nonce and POST /auth/session: 200/201; 400 malformed; 401 a signature of another wallet or a reused nonce', async (t) => {
  const nonce = await anonymous.get('/auth/nonce')
  t.equal(nonce.status, 200)
  expectDocumented(t, doc, 'get', '/auth/nonce', nonce)
  t.same(nonce.body.chainIds, h.devnet.networks.map((n) => n.chainId))
  const account = await fundedAccount(h.devnet, h.network, 0n)
  const message = createSiweMessage({ domain: nonce.body.domain, address: account.address, uri: `${h.url}/`, version: '1', chainId: h.network.chainId, nonce: nonce.body.nonce, issuedAt: new Date() })
  const impostor = await fundedAccount(h.devnet, h.network, 0n)
  const wrong = await anonymous.post('/auth/session', { message, signature: await impostor.signMessage({ message }) })
  expectProblem(t, wrong, 401, 'siwe_signature_invalid')
  expectDocumented(t, doc, 'post', '/auth/session', wrong)
  expectProblem(t, await anonymous.post('/auth/session', { message: 'hello', signature: '0x00' }), 400)
  expectProblem(t, await anonymous.post('/auth/session', { message }), 400, 'validation_failed')
  const session = await anonymous.post('/auth/session', { message, signature: await account.signMessage({ message }) })
  t.equal(session.status, 201)
  expectDocumented(t, doc, 'post', '/auth/session', session)
  t.equal(session.body.address, account.address)
  const reused = await anonymous.post('/auth/session', { message, signature: await account.signMessage({ message }) })
  expectProblem(t, reused, 401, 'siwe_nonce_invalid', 'a nonce is used once')
  const dispatch = await anonymous.post('/credit/dispatch', {}, { token: session.body.token })
  t.equal(dispatch.status, 200, 'the token opens the mutations')
})
